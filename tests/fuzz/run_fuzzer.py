#!/usr/bin/env python3
"""Runs one libFuzzer target for a bounded time and sorts what it finds (scripts/sanitize.sh).

A finding is attributed by triage.py (innermost frame outside the runtimes, for every stack of the
report: where it happened, where the memory was allocated or freed):
  * all in libhdf5 (or a compression library HDF5 calls): a libhdf5 bug. Reported with the input
    (saved, and printed base64-encoded when small), not a failure; fuzzing goes on for the rest
    of the time (up to --max-restarts findings).
  * anything else (tessera's code, the fuzz target, CLI11 compiled into it, no usable stack), and
    the fuzz target's own "tessera-fuzz: FINDING" (an unexpected exception, an HDF5 handle left
    open): a tessera finding. Exit status 1.
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

import triage


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
        cmd = [a.fuzzer, f"-max_total_time={left}", "-timeout=10", "-rss_limit_mb=4096", "-print_final_stats=1",
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
        report = triage.read_report(log)
        if report is None:
            kind, head, shown, verdict = "failure without a sanitizer report", "", log.splitlines()[-40:], "tessera"
        else:
            kind, head, stacks, shown = report
            verdict = triage.verdict(kind, head, stacks, source_dir, {os.path.realpath(a.fuzzer)}, shown)
        units = re.findall(r"Test unit written to (\S+)", log)
        unit = units[-1] if units else None
        if report is not None and not stacks and unit:
            # No stack from the sanitizer: an abort from outside the instrumented code, such as
            # glibc's stack protector ("stack smashing detected") in libhdf5, which is built with
            # it. Replay the input under gdb and attribute its backtrace instead.
            gdb_stack = triage.gdb_backtrace(a.fuzzer, unit)
            if gdb_stack:
                stacks = [gdb_stack]
                shown = shown + ["backtrace (gdb):"] + [f"    {f[0]} {f[2] or ''}" for f in gdb_stack[:12]]
                verdict = triage.verdict(kind, head, stacks, source_dir, {os.path.realpath(a.fuzzer)})
        if verdict in ("tessera", "other"):
            print(f"[{name}] FAIL: {kind} in tessera's code (log: {log_path})")
            print("\n".join(shown[:50]))
            if unit:
                print(f"[{name}] input saved: {unit}")
                print(f"[{name}] reproduce: {a.fuzzer} {unit}")
            print(f"[{name}] FAIL: {kind} in tessera's code after {runs} inputs (log: {log_path})")
            return 1
        # libhdf5's own bug: keep the input, say so, fuzz on.
        kept = None
        if unit and os.path.exists(unit):
            with open(unit, "rb") as f:
                data = f.read()
            kept = os.path.join(findings, f"libhdf5-{kind.split()[0].replace('/', '_')}-{hashlib.sha1(data).hexdigest()[:12]}")
            shutil.copyfile(unit, kept)
        hdf5_findings.append((kind, kept, head))
        where = {"hdf5": "libhdf5", "outside": "outside tessera's code"}.get(verdict, "not attributable to tessera's code")
        print(f"[{name}] {where}: {kind} (reported, not a tessera failure); input saved in {kept}")
        top = [l.strip() for l in shown if triage.FRAME.match(l)][:10]
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
