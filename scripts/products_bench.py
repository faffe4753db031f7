#!/usr/bin/env python3
"""Many products, one HDF5 file in and one out (issue 42): one `tessera run` launch over a pattern
against the process a user would write instead, h5py + torch (GPU) or h5py + numpy (CPU) in a loop,
whole processes timed, alternated in one call, medians of --repeats (a warm-up run of each first).

  products_bench.py --tessera build/tessera --cases 50x1024,10x4096 --dtype f32 --baseline torch
  products_bench.py --tessera build/tessera --cases 50x512 --dtype f64 --baseline numpy --backend cpu
  products_bench.py --tessera build/tessera --tessera-base build-ab/main/tessera ...   (A/B, same call)

Inputs: uniform [-1, 1) random A and B per group (/runs/NNN/A, /runs/NNN/B) in DATA/in-CASE.h5,
made once. tessera's C is durable when it exits (fsync before the rename); the baseline's is as
h5py leaves it (no fsync), as the script a user writes would. --np 0: tessera alone (no mpirun);
N: under mpirun -np N. Prints a table and writes --json."""
import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import time

import h5py
import numpy as np

BASELINES = {
    "torch": """
import sys, h5py, torch
torch.backends.cuda.matmul.allow_tf32 = False
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
    for i in range(n):
        a = torch.from_numpy(f[f"runs/{i:03d}/A"][...]).cuda()
        b = torch.from_numpy(f[f"runs/{i:03d}/B"][...]).cuda()
        g[f"runs/{i:03d}/C"] = (a @ b).cpu().numpy()
""",
    "numpy": """
import sys, h5py
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with h5py.File(src, "r") as f, h5py.File(dst, "w") as g:
    for i in range(n):
        g[f"runs/{i:03d}/C"] = f[f"runs/{i:03d}/A"][...] @ f[f"runs/{i:03d}/B"][...]
""",
}


def make_inputs(path, count, n, dtype):
    if os.path.exists(path):
        return
    rng = np.random.default_rng(42)
    with h5py.File(path + ".part", "w") as f:
        for i in range(count):
            for name in ("A", "B"):
                f[f"runs/{i:03d}/{name}"] = (rng.random((n, n), dtype=np.float64) * 2 - 1).astype(dtype)
    os.rename(path + ".part", path)


def timed(cmd, cwd):
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    s = time.perf_counter() - t
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return s, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", required=True)
    ap.add_argument("--cases", default="50x1024,10x4096")
    ap.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    ap.add_argument("--baseline", default="torch", choices=sorted(BASELINES))
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--np", type=int, default=0)
    ap.add_argument("--mpiexec", default="mpirun --allow-run-as-root")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--data", default="/tmp/tessera-products")
    ap.add_argument("--json", default="")
    ap.add_argument("--tessera-base", default="",
                    help="another tessera (e.g. the previous main's) run alternated with --tessera: an A/B")
    ap.add_argument("--reports", default="", help="keep each contender's last report (JSON) in this folder")
    a = ap.parse_args()
    os.makedirs(a.data, exist_ok=True)
    dtype = np.float32 if a.dtype == "f32" else np.float64
    tessera = os.path.abspath(a.tessera)
    results = []
    for case in a.cases.split(","):
        count, n = (int(x) for x in case.split("x"))
        src = os.path.join(a.data, f"in-{case}-{a.dtype}.h5")
        make_inputs(src, count, n, dtype)
        out_t, out_b = os.path.join(a.data, "out-tessera.h5"), os.path.join(a.data, "out-baseline.h5")
        launch = shlex.split(a.mpiexec) + ["-np", str(a.np)] if a.np > 0 else []
        def tessera_cmd(exe, report):
            return launch + [exe, "run", "--a", src + ":/runs/*/A", "--b", src + ":/runs/*/B", "--c",
                             out_t + ":/runs/*/C", "--backend", a.backend, "--quiet", "--report",
                             os.path.join(a.data, report)]
        contenders = [("tessera", tessera_cmd(tessera, "report.json"), out_t)]
        if a.tessera_base:
            contenders.append(("base", tessera_cmd(os.path.abspath(a.tessera_base), "report-base.json"), out_t))
        bcmd = [sys.executable, "-c", BASELINES[a.baseline], src, out_b, str(count)]
        contenders.append((a.baseline, bcmd, out_b))
        times = {name: [] for name, _, _ in contenders}
        for rep in range(a.repeats + 1):  # the first of each is a warm-up (page cache, libraries)
            for name, cmd, out in contenders:
                for f in (out, out + ".tessera-journal"):
                    if os.path.exists(f):
                        os.remove(f)
                s, _ = timed(cmd, a.data)
                if rep > 0:
                    times[name].append(s)
        if a.reports:
            os.makedirs(a.reports, exist_ok=True)
            for r in ("report.json", "report-base.json"):
                if os.path.exists(os.path.join(a.data, r)):
                    shutil.copy(os.path.join(a.data, r), os.path.join(a.reports, f"{case}-{a.dtype}-{r}"))
        with open(os.path.join(a.data, "report.json")) as f:
            rep = json.load(f)
        phases = {}
        for row in rep["products"]:
            for rank in row["report"]["ranks"]:
                for k, v in rank["phases"].items():
                    phases[k] = phases.get(k, 0.0) + v / max(1, len(row["report"]["ranks"]))
        med_t, med_b = statistics.median(times["tessera"]), statistics.median(times[a.baseline])
        results.append({"case": case, "dtype": a.dtype, "np": a.np, "tessera_seconds": times["tessera"],
                        "baseline": a.baseline, "baseline_seconds": times[a.baseline], "speedup": med_b / med_t,
                        "last_report_phase_sums": phases, "kernel": rep["products"][0]["report"]["kernel"]})
        if a.tessera_base:
            med_base = statistics.median(times["base"])
            results[-1].update({"base_seconds": times["base"], "tree_over_base": med_t / med_base})
            print(f"{case} {a.dtype}: base {med_base:.2f} s ({', '.join(f'{x:.2f}' for x in times['base'])}): "
                  f"tree / base {med_t / med_base:.3f}", flush=True)
        print(f"{case} {a.dtype}: tessera {med_t:.2f} s ({', '.join(f'{x:.2f}' for x in times['tessera'])}), "
              f"{a.baseline} {med_b:.2f} s ({', '.join(f'{x:.2f}' for x in times[a.baseline])}): "
              f"{med_b / med_t:.2f}x; kernel {results[-1]['kernel']}; phase sums "
              + ", ".join(f"{k} {v:.2f}" for k, v in phases.items()), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
