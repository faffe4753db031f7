#!/usr/bin/env python3
"""Whose bug is a sanitizer report? (scripts/sanitize.sh, tests/fuzz/run_fuzzer.py)

Every stack of a report is attributed by its innermost frame that is not the sanitizer / libFuzzer
runtime, the C library or the C++ runtime:
  tessera   source under the repository (src/, kernels/, tests/), or the fuzz target
  hdf5      libhdf5, or a compression library only HDF5 calls (libz, libsz, libaec)
  unloaded  "<unknown module>": a library already unloaded when the report was printed (Open MPI
            unloads its components in MPI_Finalize, before the leak check at exit)
  other     any other library (Open MPI, OpenBLAS, ...) or code without line information

A crash or undefined behaviour (one report: the access stack, and where the memory was allocated
or freed) is libhdf5's when all its stacks are in HDF5, else tessera's. A leak report lists one
stack per leak: tessera's when any leak was allocated by tessera's code.

    triage.py --source-dir REPO DIR   sorts the report files in DIR (ASAN_OPTIONS=log_path=DIR/x);
                                      exit status 1 if any is tessera's
"""
import argparse
import os
import re
import sys

FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+\s+(?P<rest>.*)$")
MODULE = re.compile(r"\((/[^()\s]+?)\+0x[0-9a-f]+\)")
SOURCE = re.compile(r" (\S+?):\d+(?::\d+)?$")
RUNTIME_FUNC = re.compile(r"^(__asan|__ubsan|__lsan|__sanitizer|__interceptor_|__interception|fuzzer::|"
                          r"__libc_|__GI_|_start|raise|abort|malloc|calloc|realloc|free|strdup|operator new|"
                          r"operator delete|__cxa_|__gxx_|_Unwind_|std::terminate|__memcpy|__memmove|__memset|"
                          r"memcpy|memmove|memset|strlen|strnlen|strcmp|strncmp|__strlen|__strnlen|__strcmp)\b")
SYSTEM_MODULE = re.compile(r"/(libc\.so|libc-|ld-linux|libstdc\+\+\.so|libgcc_s\.so|libm\.so|libpthread|"
                           r"libasan\.so|libubsan\.so|liblsan\.so)")
HDF5_MODULE = re.compile(r"/(libhdf5[^/]*|libz\.so[^/]*|libsz\.so[^/]*|libaec\.so[^/]*)$")
ERROR_LINE = re.compile(r"(==\d+==\s*ERROR: |runtime error: |ERROR: libFuzzer: |tessera-fuzz: FINDING|"
                        r"ALARM: working on the last Unit)")


def parse_frame(line):
    """(function, source file, module, unknown module?) of a stack frame line; None if it is not one."""
    m = FRAME.match(line)
    if not m:
        return None
    rest = re.sub(r"\s*\(BuildId: [0-9a-f]+\)\s*$", "", m.group("rest"))
    module = MODULE.search(rest)
    source = SOURCE.search(rest)
    end = min(x.start() for x in (module, source) if x) if (module or source) else len(rest)
    func = rest[3:end].strip() if rest.startswith("in ") else ""
    return (func, source.group(1) if source else None, module.group(1) if module else None,
            "<unknown module>" in rest)


def owner(frame, source_dir, binaries=(), through_std=False):
    """Who a frame belongs to. `through_std`: a C++ standard-library template compiled into the
    target (std::vector growing, zero-filling) counts as its caller's, as the C++ runtime does."""
    func, path, module, unknown = frame
    if RUNTIME_FUNC.match(func):
        return "runtime"
    if through_std and (func.startswith("std::") or (path and "/include/c++/" in path)):
        return "runtime"
    if path:
        if any(p in path for p in ("compiler-rt", "/sanitizer_common/", "/libsanitizer/", "/libfuzzer/")):
            return "runtime"
        if path.startswith(source_dir):
            return "tessera"
        if re.match(r"(\./|\.\./|csu/|elf/|libio/|nptl/|dlfcn/|stdlib/|string/|sysdeps/)", path):
            return "runtime"  # glibc, by its own relative source paths
        return "other"
    if unknown:
        return "unloaded"
    if module:
        if HDF5_MODULE.search(module):
            return "hdf5"
        if SYSTEM_MODULE.search(module):
            return "runtime"
        if os.path.realpath(module) in binaries and (not func or func.startswith(("fuzzer::", "__"))):
            return "runtime"  # libFuzzer and the sanitizer runtime, linked into the fuzz target
    return "other"


def innermost(stack, source_dir, binaries=(), through_std=False):
    return next((o for o in (owner(f, source_dir, binaries, through_std) for f in stack) if o != "runtime"), "other")


def read_report(log):
    """(kind, first error line, stacks, lines to show) of the first report in a log; None if none."""
    lines = log.splitlines()
    start = next((i for i, l in enumerate(lines) if ERROR_LINE.search(l)), None)
    if start is None:
        return None
    head = lines[start].strip()
    # ASan's next line says how the memory was touched; verdict() needs it.
    if start + 1 < len(lines) and re.match(r"^(READ|WRITE) of size", lines[start + 1].strip()):
        head += " | " + lines[start + 1].strip()
    summary = re.search(r"^SUMMARY: \w+: ([\w-]+)", log, re.M)
    fuzzer = re.search(r"ERROR: libFuzzer: ([\w-]+(?: \(malloc\(\d+\)\))?)", log)
    if "tessera-fuzz: FINDING" in head:
        kind = "tessera-fuzz finding"
    elif "runtime error" in head:
        kind = "undefined-behaviour"
    elif "LeakSanitizer" in head:
        kind = "memory-leak"
    elif "ALARM" in head:
        kind = "timeout"
    elif summary:
        kind = summary.group(1)
    elif fuzzer:
        kind = fuzzer.group(1)
    else:
        kind = head
    stacks, current = [], []
    for l in lines[start:]:
        if l.startswith("SUMMARY:") or l.startswith("Shadow bytes"):
            break
        f = parse_frame(l)
        if f:
            current.append(f)
        elif current:
            stacks.append(current)
            current = []
    if current:
        stacks.append(current)
    shown = [l for l in lines[start:start + 60] if l.strip()]
    return kind, head, stacks, shown


def verdict(kind, head, stacks, source_dir, binaries=(), context=()):
    """'tessera', 'hdf5', 'outside' (a leak allocated outside tessera and HDF5), 'other' (undefined
    behaviour in a header of another library, compiled into tessera) or 'unattributed' (no stack)."""
    if kind == "tessera-fuzz finding":
        return "tessera"
    if kind == "undefined-behaviour":  # UBSan names the place in the line itself
        loc = re.search(r"(\S+?):\d+:\d+: runtime error", head)
        return "tessera" if not loc or loc.group(1).startswith(source_dir) else "other"
    if not stacks:
        # tessera's code is instrumented: its faults come with a sanitizer stack. No stack (even
        # from gdb) means an abort outside it; reported with the input, not counted as tessera's.
        return "unattributed"
    owners = [innermost(s, source_dir, binaries) for s in stacks]
    # Resource findings (libFuzzer's RSS limit, a slow input, a signal) are tessera's only when
    # the first stack (the largest allocation, the hanging or crashing thread) is in its code;
    # else libhdf5, ASan's quarantine or libFuzzer itself grew: reported, not failed.
    # The standard library's frames count as their caller's here: a timeout in std::vector's
    # zero-fill of a buffer tessera sized from a corrupt chunk index (2026-12-07) is tessera's.
    if kind.startswith(("out-of-memory", "timeout", "deadly signal")):
        first = innermost(stacks[0], source_dir, binaries, through_std=True)
        return "tessera" if first == "tessera" else "unattributed"
    # A bad READ whose access stack is in libhdf5 is libhdf5 decoding a damaged file past its own
    # buffers (tessera hands HDF5 buffers only to fill, i.e. to WRITE). The other stacks of such a
    # report describe whatever block lies nearest the address, which may be one of tessera's.
    if "| READ of size" in head and owners and owners[0] == "hdf5":
        return "hdf5"
    # A bad WRITE from libhdf5 is tessera's only when it lands in or just past a block tessera
    # allocated (a buffer too small for what tessera asked HDF5 to read into it).
    if "| WRITE of size" in head and owners and owners[0] == "hdf5":
        ours = len(owners) > 1 and owners[-1] == "tessera"
        return "tessera" if ours and re.search(r"bytes (to the right of|inside of)", " ".join(context)) else "hdf5"
    if kind == "memory-leak":
        if "tessera" in owners:
            return "tessera"
        return "hdf5" if all(o == "hdf5" for o in owners) else "outside"
    return "hdf5" if all(o == "hdf5" for o in owners) else "tessera"


GDB_FRAME = re.compile(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(?P<func>\S+) \(.*?\)(?: at (?P<src>\S+?):\d+| from (?P<lib>\S+))?\s*$")


def gdb_backtrace(binary, unit, timeout=120):
    """Frames (function, source, module, False) of the crash of `binary unit` under gdb, innermost
    first, without the abort machinery; [] when gdb is missing or gives nothing."""
    import shutil
    import subprocess
    if not shutil.which("gdb"):
        return []
    try:
        out = subprocess.run(["gdb", "-batch", "-ex", "run", "-ex", "bt", "--args", binary, unit],
                             capture_output=True, text=True, timeout=timeout).stdout
    except subprocess.TimeoutExpired:
        return []
    frames = []
    for line in out.splitlines():
        m = GDB_FRAME.match(line.strip())
        if not m or m.group("func") == "??":
            continue
        lib = m.group("lib")
        src = m.group("src")
        frames.append((m.group("func"), src if src and src.startswith("/") else None, lib, False))
    # Drop the abort path (raise, abort, __stack_chk_fail, ...): glibc frames come first.
    while frames and (frames[0][2] is None and frames[0][1] is None or
                      RUNTIME_FUNC.match(frames[0][0]) or frames[0][0].startswith(("__", "raise", "abort"))):
        frames.pop(0)
    return frames


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source-dir", required=True)
    p.add_argument("dir", help="folder of report files")
    a = p.parse_args()
    source_dir = os.path.realpath(a.source_dir) + "/"
    counts = {}
    failed = False
    for name in sorted(os.listdir(a.dir)):
        path = os.path.join(a.dir, name)
        with open(path, errors="replace") as f:
            report = read_report(f.read())
        if report is None:
            continue
        kind, head, stacks, shown = report
        who = verdict(kind, head, stacks, source_dir)
        counts[who] = counts.get(who, 0) + 1
        if who in ("tessera", "other"):
            failed = True
            print(f"---- {kind} in tessera's code{'' if who == 'tessera' else ' (or a library compiled into it)'}: {path}")
            print("\n".join(shown))
        elif who != "outside" or counts[who] <= 1:
            print(f"---- {kind} outside tessera's code ({who}; not a failure): {path}"
                  + (" (more like it are counted, not shown)" if who == "outside" else ""))
            print("\n".join(shown[:12]))
    print("sanitizer reports: " + (", ".join(f"{n} {w}" for w, n in sorted(counts.items())) or "none"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
