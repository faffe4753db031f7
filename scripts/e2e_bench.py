#!/usr/bin/env python3
"""End to end, as a user waits for it: whole `mpirun ... tessera run` processes, HDF5 in -> HDF5 out,
on 1 and 2 GPUs, against the floor the machine allows and against an h5py + torch script.

    scripts/e2e_bench.py OUTDIR [--cases 16384,32768,f64,proj,gzip] [--repeats 3] [--nps 1,2]
                         (--nps: rank counts, 0 = one process without mpirun; a count may carry
                         environment variables and options: "1 TESSERA_STAGED=0", and
                         bin=PATH for another tessera build: "2 bin=build-old/tessera", and
                         cwd=DIR to run it in its own source folder (its configs/);
                         separate the variants with ";" where a value holds a comma)
                         [--tessera build-gpu/tessera] [--data /tmp/tessera-e2e]
                         [--gate PCT]  (fail, exit 1, when a case's median with --tessera is more than
                         PCT% slower than the same variant with a bin=PATH build: the A/B gate of
                         `scripts/gpu.sh e2e`, issue 39)

Cases (issue #14):
  16384   16384^3 float32              32768   32768^3 float32
  f64     8192^3 float64               proj    2,000,000 x 256 times 256 x 256 float32 (a projection)
  gzip    8192^2 float32 x 8192^2, both stored as h5py writes by default with
          chunks=True, compression="gzip"
  f16     16384^3 stored as float16 (h5py's), C float16: tensor cores on a GPU (issue 43)
  f16-32768  the same at 32768^3 (issue 43's done-when: against the 32768 case's job)

For each case, interleaved, REPEATS times: tessera on each rank count of --nps (default options,
`mpirun --bind-to none`), and scripts/torch_baseline.py; each timed as a whole process. The page
cache is warm for all (the inputs are read once first). The floor is measured in the same run:
  start-up  whole `mpirun -np P tessera info` processes (MPI, CUDA and teardown; P = 0: `tessera info` alone)
  read      `cat` of the input files to /dev/null (warm)
  write     `dd conv=fsync` of C's size into the output's directory
  compute   torch.matmul on one GPU (cuBLAS; float32 without TF32, float64), median of 5 after warm-up
  floor     start-up + max(read, compute, write)
Writes OUTDIR/e2e.md (a table for docs/performance.md), OUTDIR/e2e.json and every run's report.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = {
    "16384": dict(m=16384, n=16384, k=16384, dtype="f32", gzip=False, label="16384³ f32"),
    "32768": dict(m=32768, n=32768, k=32768, dtype="f32", gzip=False, label="32768³ f32"),
    "f64": dict(m=8192, n=8192, k=8192, dtype="f64", gzip=False, label="8192³ f64"),
    "proj": dict(m=2_000_000, n=256, k=256, dtype="f32", gzip=False, label="2,000,000×256 · 256×256 f32"),
    "gzip": dict(m=8192, n=8192, k=8192, dtype="f32", gzip=True, label="8192² f32, h5py gzip default"),
    "f16": dict(m=16384, n=16384, k=16384, dtype="f16", gzip=False, label="16384³ stored float16 (C float16)"),
    "f16-32768": dict(m=32768, n=32768, k=32768, dtype="f16", gzip=False, label="32768³ stored float16 (C float16)"),
    "small": dict(m=1031, n=517, k=263, dtype="f32", gzip=True, label="1031×263 · 263×517 f32 gzip (smoke test)"),
}


def run(cmd, env=None, log=None, cwd=None):
    """Runs cmd as a whole process (in cwd); returns (seconds, returncode)."""
    t0 = time.perf_counter()
    with open(log or os.devnull, "w") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    return time.perf_counter() - t0, rc


def make_inputs(case, data, tessera):
    import h5py
    import numpy as np
    c = CASES[case]
    a, b = f"{data}/{case}-a.h5", f"{data}/{case}-b.h5"
    if os.path.exists(a) and os.path.exists(b):
        return a, b
    if c["dtype"] == "f16":  # as numpy users store it (h5py's float16), in bands of rows
        rng = np.random.default_rng(7)
        for path, rows, cols in ((a, c["m"], c["k"]), (b, c["k"], c["n"])):
            with h5py.File(path + ".tmp", "w") as f:
                d = f.create_dataset("X", (rows, cols), dtype=np.float16)
                for r0 in range(0, rows, 2048):
                    r1 = min(rows, r0 + 2048)
                    d[r0:r1] = (rng.random((r1 - r0, cols), dtype=np.float32) * 2 - 1).astype(np.float16)
            os.replace(path + ".tmp", path)
        return a, b
    if c["gzip"]:
        rng = np.random.default_rng(7)
        for path, shape in ((a, (c["m"], c["k"])), (b, (c["k"], c["n"]))):
            x = rng.random(shape, dtype=np.float32) * 2 - 1
            with h5py.File(path + ".tmp", "w") as f:
                f.create_dataset("X", data=x, chunks=True, compression="gzip")
            os.replace(path + ".tmp", path)
        return a, b
    for path, rows, cols, seed in ((a, c["m"], c["k"], 1), (b, c["k"], c["n"], 2)):
        subprocess.check_call([tessera, "generate", "--out", f"{path}:/X", "--rows", str(rows), "--cols", str(cols),
                               "--dtype", c["dtype"], "--seed", str(seed), "--overwrite"], stdout=subprocess.DEVNULL)
    return a, b


def cublas_seconds(c):
    """Median seconds of torch.matmul (cuBLAS) on one GPU for the case's shape."""
    code = f"""
import torch, statistics
torch.backends.cuda.matmul.allow_tf32 = False
dt = {{"f32": torch.float32, "f64": torch.float64, "f16": torch.float16}}["{c['dtype']}"]
a = torch.rand({c['m']}, {c['k']}, device="cuda", dtype=dt); b = torch.rand({c['k']}, {c['n']}, device="cuda", dtype=dt)
for _ in range(2): a @ b
torch.cuda.synchronize(); ts = []
for _ in range(5):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); a @ b; e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e) / 1e3)
print(statistics.median(ts))
"""
    try:
        return float(subprocess.check_output([sys.executable, "-c", code], text=True, stderr=subprocess.DEVNULL).strip().splitlines()[-1])
    except (subprocess.CalledProcessError, ValueError):
        return float("nan")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--cases", default="16384,32768,f64,proj,gzip")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--nps", default="1,2")
    p.add_argument("--tessera", default=os.path.join(REPO, "build-gpu", "tessera"))
    p.add_argument("--data", default="/tmp/tessera-e2e")
    p.add_argument("--no-torch", action="store_true", help="skip the h5py + torch script")
    p.add_argument("--extra", default="", help="extra options for tessera run (e.g. --write gather)")
    p.add_argument("--gate", type=float, default=0,
                   help="percent the tree may be slower than each bin= build of the same variant (0: no gate)")
    args = p.parse_args()
    args.out, args.data, args.tessera = (os.path.abspath(x) for x in (args.out, args.data, args.tessera))
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.data, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", NCCL_NVLS_ENABLE="0")
    # A rank count, or a rank count followed by environment variables and options for tessera run
    # ("1 TESSERA_STAGED=0", "2 --algorithm=panels --grid=2x1"): a variant of its own, timed
    # interleaved with the others. Rank count 0: one process started without mpirun.
    # "bin=PATH" runs that variant with another tessera (a build of an older commit, for A/B).
    variants = []
    cwds = {}
    for item in args.nps.split(";" if ";" in args.nps else ","):
        count, *rest = item.split()
        binary = os.path.abspath(next((e[4:] for e in rest if e.startswith("bin=")), args.tessera))
        cwds[item] = next((e[4:] for e in rest if e.startswith("cwd=")), None)
        rest = [e for e in rest if not e.startswith(("bin=", "cwd="))]
        variants.append((item, int(count), dict(e.split("=", 1) for e in rest if not e.startswith("--")),
                         [e for e in rest if e.startswith("--")], binary))
    nps = [v[0] for v in variants]
    mpirun = ["mpirun", "--bind-to", "none", "-x", "NCCL_NVLS_ENABLE"]
    results = {}

    startup = {}
    launch = lambda count: mpirun + ["-np", str(count)] if count > 0 else []
    for np_ in sorted({v[1] for v in variants}):
        ts = [run(launch(np_) + [args.tessera, "info"], env)[0] for _ in range(3)]
        startup[np_] = statistics.median(ts)

    for case in args.cases.split(","):
        c = CASES[case]
        a, b = make_inputs(case, args.data, args.tessera)
        c_bytes = c["m"] * c["n"] * {"f32": 4, "f64": 8, "f16": 2}[c["dtype"]]
        out_c = f"{args.data}/{case}-c.h5"
        subprocess.call(["cat", a, b], stdout=subprocess.DEVNULL)  # warm the page cache
        read_s = statistics.median(run(["cat", a, b])[0] for _ in range(3))
        write_s = statistics.median(
            run(["dd", "if=/dev/zero", f"of={args.data}/dd.bin", "bs=64M", f"count={max(1, c_bytes >> 26)}",
                 "conv=fsync"])[0] for _ in range(2))
        os.remove(f"{args.data}/dd.bin")
        compute_s = cublas_seconds(c)
        times = {f"np{np_}": [] for np_ in nps}
        times["torch"] = []
        reports = {}
        for rep in range(args.repeats):
            for item, count, extra_env, options, binary in variants:
                name = f"{case}-np" + "".join(ch if ch.isalnum() else "-" for ch in item) + f"-{rep}"
                np_ = item
                forwarded = [x for var in extra_env for x in ("-x", var)]
                cmd = (mpirun + forwarded + ["-np", str(count)] if count > 0 else []) + [
                    binary, "run", "--a", f"{a}:/X", "--b", f"{b}:/X", "--c", f"{out_c}:/C", "--overwrite", "-q",
                    "--report", f"{args.out}/{name}.json"]
                cmd += args.extra.split() + options
                s, rc = run(cmd, dict(env, **extra_env), f"{args.out}/{name}.log", cwd=cwds[item])
                if rc == 0:
                    times[f"np{np_}"].append(s)
                    reports[f"np{np_}"] = json.load(open(f"{args.out}/{name}.json"))
                else:
                    print(f"{name} failed (rc {rc}): see {args.out}/{name}.log", file=sys.stderr)
            if not args.no_torch:
                s, rc = run([sys.executable, os.path.join(REPO, "scripts", "torch_baseline.py"), f"{a}:/X", f"{b}:/X",
                             f"{args.data}/{case}-torch.h5:/C"], env, f"{args.out}/{case}-torch-{rep}.log")
                if rc == 0:
                    times["torch"].append(s)
        hdf5_read = None
        if c["gzip"]:
            # The read as it was before the parallel chunk reader: HDF5 decompressing on one thread.
            name = f"{case}-np1-hdf5read"
            cmd = mpirun + ["-x", "TESSERA_HDF5_DIRECT", "-np", "1", args.tessera, "run", "--a", f"{a}:/X", "--b",
                            f"{b}:/X", "--c", f"{out_c}:/C", "--overwrite", "-q", "--report", f"{args.out}/{name}.json"]
            s, rc = run(cmd, dict(env, TESSERA_HDF5_DIRECT="0"), f"{args.out}/{name}.log")
            if rc == 0:
                hdf5_read = json.load(open(f"{args.out}/{name}.json"))["ranks"][0]["phases"].get("read")
        for f in (out_c, f"{args.data}/{case}-torch.h5"):
            if os.path.exists(f):
                os.remove(f)
        results[case] = dict(label=c["label"], read=read_s, write=write_s, compute=compute_s,
                             startup={v[0]: startup[v[1]] for v in variants},
                             times=times, reports=reports, hdf5_read=hdf5_read)
        print(case, {k: [round(x, 2) for x in v] for k, v in times.items()}, flush=True)

    json.dump(results, open(f"{args.out}/e2e.json", "w"), indent=1, default=str)
    print(table(results, nps))
    open(f"{args.out}/e2e.md", "w").write(table(results, nps) + "\n")
    if args.gate > 0:
        verdict, slower = gate(results, variants, args.tessera, args.gate)
        print(verdict)
        open(f"{args.out}/gate.md", "w").write(verdict + "\n")
        if slower:
            sys.exit(1)


def gate(results, variants, tree, pct):
    """The A/B verdict: each variant run with another build (bin=PATH) against the same variant run
    with the tree's build, median of the repeats of each; (text, whether any case is slower)."""
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    lines = [f"| case | variant | base (s) | tree (s) | tree / base | verdict (gate {pct:g}%) |", "|---|---|---|---|---|---|"]
    slower = False
    for case, r in results.items():
        for item, count, env, options, binary in variants:
            if binary == tree:
                continue
            # The same variant of the tree: without the build and its own tune file.
            same = " ".join(e for e in item.split() if not e.startswith(("bin=", "cwd=")))
            mine = next((v[0] for v in variants if v[4] == tree and v[0] == same), None)
            if mine is None:
                continue
            base_t, tree_t = r["times"][f"np{item}"], r["times"][f"np{mine}"]
            if len(base_t) < 3 or len(tree_t) < 3:
                verdict, bad = f"too few runs ({len(base_t)}, {len(tree_t)}; at least 3)", True
            else:
                ratio = med(tree_t) / med(base_t)
                bad = ratio > 1 + pct / 100
                verdict = f"SLOWER by {100 * (ratio - 1):.1f}%" if bad else "ok"
            slower = slower or bad
            lines.append(f"| {r['label']} | {same}: tree vs {os.path.basename(os.path.dirname(binary))} | {med(base_t):.3f} | {med(tree_t):.3f} | "
                         f"{med(tree_t) / med(base_t):.3f} | {verdict} |")
    return "\n".join(lines), slower


def phases_text(rep):
    """What rank 0's report says bounded the job, and its read/write rates."""
    if not rep:
        return ""
    r0 = rep["ranks"][0]["phases"]
    parts = [f"{k} {v:.2f}" for k, v in r0.items() if v >= 0.05]
    return ", ".join(parts)


def table(results, nps):
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    def heading(item):
        count, *rest = item.split()
        rest = [f"build {os.path.basename(os.path.dirname(e[4:]))}" if e.startswith("bin=") else e
                for e in rest if not e.startswith("cwd=")]
        if int(count) == 0:
            return "1 GPU, without mpirun" + (f", {' '.join(rest)}" if rest else "") + " (s)"
        return f"{count} GPU{'s' if int(count) > 1 else ''}" + (f", {' '.join(rest)}" if rest else "") + " (s)"
    lines = ["| case | " + " | ".join(heading(n) for n in nps) +
             " | h5py + torch (s) | floor (s): start-up + max(read, compute, write) | 1 GPU / floor | rank 0 phases, 1 GPU, last run (s) |",
             "|---|" + "---|" * len(nps) + "---|---|---|---|"]
    notes = []
    for case, r in results.items():
        floor1 = r["startup"][nps[0]] + max(r["read"], r["compute"], r["write"])
        cells = []
        for n in nps:
            xs = r["times"][f"np{n}"]
            cells.append(f"{med(xs):.2f} ({', '.join(f'{x:.2f}' for x in xs)})" if xs else "failed")
        t = r["times"]["torch"]
        torch_cell = f"{med(t):.2f}" if t else "–"
        one = med(r["times"][f"np{nps[0]}"])
        if r.get("hdf5_read") and r["reports"].get(f"np{nps[0]}"):
            now = r["reports"][f"np{nps[0]}"]["ranks"][0]["phases"].get("read", float("nan"))
            notes.append(f"{r['label']}: read phase {now:.2f} s, {r['hdf5_read']:.2f} s through HDF5 alone "
                         f"(TESSERA_HDF5_DIRECT=0): {r['hdf5_read'] / now:.1f}x faster")
        lines.append(f"| {r['label']} | " + " | ".join(cells) + f" | {torch_cell} | {floor1:.2f} = {r['startup'][nps[0]]:.2f} + "
                     f"max({r['read']:.2f}, {r['compute']:.2f}, {r['write']:.2f}) | {one / floor1:.2f}× | "
                     f"{phases_text(r['reports'].get(f'np{nps[0]}'))} |")
    return "\n".join(lines + ([""] + notes if notes else []))


if __name__ == "__main__":
    main()
