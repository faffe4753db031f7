#!/usr/bin/env python3
"""pdgemm_/psgemm_ through libtessera_scalapack against the system's ScaLAPACK (issue 44): the same
program (benchmarks/pgemm_bench.c) built both ways, whole mpirun processes alternated round by
round so that both see the same machine, each round the median of REPEATS timed calls after
WARMUP; the table gives the median over rounds and the ratio tessera / ScaLAPACK (< 1: tessera
faster). Random data, alpha = 1, beta = 0.5.

  python3 scripts/pgemm_bench.py --build build --grids 1x1,1x2,2x1 --sizes 512,1024,2048 \\
      --dtype d --nb 64 --rounds 3 [--markdown]

OPENBLAS_NUM_THREADS is 1 unless set: one core per process, as ScaLAPACK runs with a process per
core. TESSERA_SCALAPACK=tessera (nothing handed back) unless set.
"""
import argparse
import os
import shlex
import statistics
import subprocess
import sys


def run(binary, grid, dtype, n, nb, warmup, repeats, mpiexec, env):
    p, q = grid
    cmd = shlex.split(mpiexec) + ["-np", str(p * q), binary, str(p), str(q), dtype, str(n), str(n), str(n), str(nb),
                                  str(warmup), str(repeats)]
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    for line in out.stdout.splitlines():
        if line.startswith("pgemm_bench "):
            return float(line.split()[1])
    sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build")
    ap.add_argument("--grids", default="1x1,1x2,2x1")
    ap.add_argument("--sizes", default="512,1024,2048")
    ap.add_argument("--dtype", default="d", choices=["s", "d", "c", "z"])
    ap.add_argument("--nb", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--mpiexec", default="mpiexec --oversubscribe" + (" --allow-run-as-root" if os.getuid() == 0 else ""))
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("TESSERA_SCALAPACK", "tessera")
    bins = {w: os.path.join(a.build, f"pgemm_bench_{w}") for w in ("scalapack", "tessera")}
    for b in bins.values():
        if not os.access(b, os.X_OK):
            sys.exit(f"{b} is missing: cmake --build {a.build} --target pgemm_bench_scalapack pgemm_bench_tessera")
    rows = []
    for g in a.grids.split(","):
        grid = tuple(int(v) for v in g.split("x"))
        for n in (int(s) for s in a.sizes.split(",")):
            t = {"scalapack": [], "tessera": []}
            for r in range(a.rounds):
                order = ("scalapack", "tessera") if r % 2 == 0 else ("tessera", "scalapack")
                for w in order:
                    t[w].append(run(bins[w], grid, a.dtype, n, a.nb, a.warmup, a.repeats, a.mpiexec, env))
            s, x = statistics.median(t["scalapack"]), statistics.median(t["tessera"])
            flops = (8.0 if a.dtype in "cz" else 2.0) * n ** 3
            rows.append((g, n, s, x, flops / s * 1e-9, flops / x * 1e-9, x / s))
            print(f"{g:>4} {n:>6}  ScaLAPACK {s:.4f} s ({flops / s * 1e-9:6.1f} GFLOP/s)  "
                  f"tessera {x:.4f} s ({flops / x * 1e-9:6.1f} GFLOP/s)  ratio {x / s:.3f}", flush=True)
    if a.markdown:
        print(f"\n| grid | n | ScaLAPACK s | tessera s | ScaLAPACK GFLOP/s | tessera GFLOP/s | tessera / ScaLAPACK |")
        print("|---|---|---|---|---|---|---|")
        for g, n, s, x, gs, gx, ratio in rows:
            print(f"| {g} | {n} | {s:.4f} | {x:.4f} | {gs:.1f} | {gx:.1f} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
