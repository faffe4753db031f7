#!/usr/bin/env python3
"""Runs one libFuzzer target for a bounded time and sorts what it finds (scripts/sanitize.sh).

A finding is attributed by the innermost stack frame that is neither the sanitizer / libFuzzer
runtime nor the C/C++ runtime:
  * in libhdf5 (or a compression library HDF5 calls): a libhdf5 bug. Reported with the input
    (saved, and printed base64-encoded when small), not a failure; fuzzing goes on for the rest
    of the time (up to --max-restarts findings).
  * anywhere else (tessera's code, the fuzz target, CLI11 compiled into it), or no usable stack,
    or the fuzz target's own "tessera-fuzz: FINDING" (an unexpected exception, an HDF5 handle
    left open): a tessera finding. Exit status 1.
Exit status 0: no tessera finding (libhdf5 ones are listed in the summary).
"""
import argparse
import base64
import gzip
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time

FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+\s+(?P<rest>.*)$")
MODULE = re.compile(r"\((/[^()\s]+?)\+0x[0-9a-f]+\)")
SOURCE = re.compile(r" (\S+?):\d+(?::\d+)?$")
RUNTIME_FUNC = re.compile(r"^(__asan|__ubsan|__lsan|__sanitizer|__interceptor_|__interception|__sanitizer_|fuzzer::|"
                          r"__libc_|__GI_|_start|raise|abort|malloc|calloc|realloc|free|operator new|operator delete|"
                          r"__cxa_|__gxx_|_Unwind_|std::terminate|__memcpy|__memmove|__memset|memcpy|memmove|memset|"
                          r"strlen|strnlen|strcmp|strncmp|__strlen|__strnlen|__strcmp)")
SYSTEM_MODULE = re.compile(r"/(libc\.so|libc-|ld-linux|libstdc\+\+\.so|libgcc_s\.so|libm\.so|libpthread)")
HDF5_MODULE = re.compile(r"/(libhdf5[^/]*|libz\.so[^/]*|libsz\.so[^/]*|libaec\.so[^/]*)$")
ERROR_LINE = re.compile(r"(==\d+==\s*ERROR: |runtime error: |ERROR: libFuzzer: |tessera-fuzz: FINDING|"
                        r"==\d+== ERROR: libFuzzer|ALARM: working on the last Unit)")


def parse_frame(line):
    """(function, source file, module) of a sanitizer stack frame line; None if it is not one."""
    m = FRAME.match(line)
    if not m:
        return None
    rest = re.sub(r"\s*\(BuildId: [0-9a-f]+\)\s*$", "", m.group("rest"))
    module = MODULE.search(rest)
    source = SOURCE.search(rest)
    end = min(x.start() for x in (module, source) if x) if (module or source) else len(rest)
    func = rest[3:end].strip() if rest.startswith("in ") else ""
    return func, source.group(1) if source else None, module.group(1) if module else None


def owner(frame, source_dir, binary):
    func, path, module = frame
    if RUNTIME_FUNC.match(func):
        return "runtime"
    if path:
        if "compiler-rt" in path or "/sanitizer_common/" in path or "/libfuzzer/" in path:
            return "runtime"
        if path.startswith(source_dir):
            return "tessera"
        return "runtime" if re.match(r"(\./|csu/|\.\./)", path) else "other"  # glibc's own sources
    if module:
        if HDF5_MODULE.search(module):
            return "hdf5"
        if SYSTEM_MODULE.search(module):
            return "runtime"
        if os.path.realpath(module) == os.path.realpath(binary):
            return "runtime" if not func or func.startswith(("fuzzer::", "__")) else "other"
    return "other"


def classify(log, source_dir, binary):
    """Returns (verdict, kind, first error line, stack lines): verdict 'tessera' or 'hdf5'."""
    lines = log.splitlines()
    start = next((i for i, l in enumerate(lines) if ERROR_LINE.search(l)), None)
    if start is None:
        return "tessera", "unknown failure (no sanitizer report)", "", []
    head = lines[start].strip()
    if "tessera-fuzz: FINDING" in head:
        return "tessera", "tessera-fuzz finding", head, lines[start:start + 40]
    kind = head
    summary = re.search(r"^SUMMARY: \w+: ([\w-]+)", log, re.M)
    fuzzer = re.search(r"ERROR: libFuzzer: ([\w-]+(?: \(malloc\(\d+\)\))?)", log)
    if "runtime error" in head:
        kind = "undefined behaviour"
    elif "LeakSanitizer" in head:
        kind = "memory-leak"
    elif "ALARM" in head:
        kind = "timeout"
    elif summary:
        kind = summary.group(1)
    elif fuzzer:
        kind = fuzzer.group(1)
    # The first stack after the error line; a leak report has one per leak: any non-HDF5 one counts.
    stacks, current = [], []
    for l in lines[start:]:
        f = parse_frame(l)
        if f:
            current.append(f)
        elif current:
            stacks.append(current)
            current = []
            if "leak" not in kind.lower():
                break
    if current:
        stacks.append(current)
    shown = [l for l in lines[start:start + 60] if l.strip()]
    if "runtime error" in head:  # UBSan names the place in the line itself
        loc = re.search(r"(/\S+?):\d+:\d+: runtime error", head)
        if loc:
            return ("tessera" if loc.group(1).startswith(source_dir) else "other"), kind, head, shown
    if not stacks:
        return "tessera", kind + " (no stack to attribute it)", head, shown
    verdicts = []
    for stack in stacks:
        who = next((o for o in (owner(f, source_dir, binary) for f in stack) if o != "runtime"), "other")
        verdicts.append(who)
    return ("hdf5" if all(v == "hdf5" for v in verdicts) else "tessera"), kind, head, shown


def final_stats(log):
    runs = re.findall(r"stat::number_of_executed_units: (\d+)", log) or re.findall(r"^#(\d+)\s", log, re.M)
    cov = re.findall(r"\bcov: (\d+)", log)
    return (int(runs[-1]) if runs else 0), (int(cov[-1]) if cov else 0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fuzzer", required=True, help="the fuzz target binary")
    p.add_argument("--seeds", required=True, help="seed corpus (read only)")
    p.add_argument("--work", required=True, help="folder for the growing corpus, logs and findings")
    p.add_argument("--source-dir", required=True, help="the repository: frames under it are tessera's")
    p.add_argument("--seconds", type=int, default=60, help="total fuzzing time")
    p.add_argument("--dict", help="libFuzzer dictionary")
    p.add_argument("--max-restarts", type=int, default=8, help="libhdf5 findings after which to stop")
    p.add_argument("extra", nargs="*", help="more libFuzzer options (after --)")
    a = p.parse_args()

    name = os.path.basename(a.fuzzer)
    source_dir = os.path.realpath(a.source_dir) + "/"
    corpus = os.path.join(a.work, "corpus")
    findings = os.path.join(a.work, "findings")
    os.makedirs(corpus, exist_ok=True)
    os.makedirs(findings, exist_ok=True)
    deadline = time.monotonic() + a.seconds
    hdf5_findings, runs, cov, attempt = [], 0, 0, 0

    while True:
        left = int(deadline - time.monotonic())
        if left < 3 or len(hdf5_findings) >= a.max_restarts:
            break
        attempt += 1
        artifacts = os.path.join(a.work, f"artifacts-{attempt}") + "/"
        os.makedirs(artifacts, exist_ok=True)
        cmd = [a.fuzzer, f"-max_total_time={left}", "-timeout=10", "-rss_limit_mb=2048", "-print_final_stats=1",
               f"-artifact_prefix={artifacts}"] + ([f"-dict={a.dict}"] if a.dict else []) + a.extra + [corpus, a.seeds]
        log_path = os.path.join(a.work, f"log-{attempt}.txt")
        with open(log_path, "w") as log_file:
            # Hard stop well past the time budget: a hang libFuzzer itself cannot break.
            try:
                rc = subprocess.run(cmd, stdout=log_file, stderr=subprocess.STDOUT, timeout=left + 60).returncode
            except subprocess.TimeoutExpired:
                rc = None
        with open(log_path, errors="replace") as f:
            log = f.read()
        r, c = final_stats(log)
        runs += r
        cov = max(cov, c)
        if rc == 0:
            break
        if rc is None:
            print(f"[{name}] FAIL: libFuzzer did not stop {left + 60} s into a {left} s run (log: {log_path})")
            return 1
        verdict, kind, head, shown = classify(log, source_dir, a.fuzzer)
        units = re.findall(r"Test unit written to (\S+)", log)
        unit = units[-1] if units else None
        if verdict != "hdf5":
            print(f"[{name}] FAIL: {kind} in tessera's code (log: {log_path})")
            print("\n".join(shown[:50]))
            if unit:
                print(f"[{name}] input saved: {unit}")
                print(f"[{name}] reproduce: {a.fuzzer} {unit}")
            return 1
        # libhdf5's own bug: keep the input, say so, fuzz on.
        kept = None
        if unit and os.path.exists(unit):
            with open(unit, "rb") as f:
                data = f.read()
            kept = os.path.join(findings, f"libhdf5-{kind.split()[0].replace('/', '_')}-{hashlib.sha1(data).hexdigest()[:12]}")
            shutil.copyfile(unit, kept)
        hdf5_findings.append((kind, kept, head))
        print(f"[{name}] libhdf5 {kind} (reported, not a tessera failure); input saved in {kept}")
        top = [l.strip() for l in shown if FRAME.match(l)][:10]
        for l in top:
            print(f"[{name}]     {l}")
        if kept and os.path.getsize(kept) <= 16384:
            with open(kept, "rb") as f:
                blob = base64.b64encode(gzip.compress(f.read())).decode()
            print(f"[{name}]   input (gzip+base64; `base64 -d | gunzip > x.h5`):")
            for i in range(0, len(blob), 120):
                print(f"[{name}]     {blob[i:i + 120]}")

    print(f"[{name}] {a.seconds} s: {runs} inputs, coverage {cov} edges, corpus {len(os.listdir(corpus))} files; "
          f"tessera findings 0, libhdf5 findings {len(hdf5_findings)}"
          + (f" (inputs in {findings})" if hdf5_findings else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
