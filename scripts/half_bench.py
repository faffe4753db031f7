#!/usr/bin/env python3
"""Half-precision storage, as a user waits for it (issue 43 item 1's done-when): the same product
stored as float16 (or bfloat16) and as float32, each run as a whole `tessera run` process, the two
alternated in this one call, and C's error against a float64 product of the stored values.

    scripts/half_bench.py OUTDIR [--size 32768] [--stores f16,bf16] [--repeats 3]
                          [--tessera build-gpu/tessera] [--data /tmp/tessera-half] [--np 1]
                          [--extra "--algorithm panels"] [--sample-rows 16] [--torch]

For each store S of --stores: A (n x n) and B (n x n) hold random values in [-1, 1) rounded to S
(numpy's float16; bfloat16 by rounding float32's bits to nearest, ties to even) in S-A.h5 and
S-B.h5, and the very same values widened (exactly) to float32 in f32-S-A.h5 / f32-S-B.h5. Then,
REPEATS times, alternated: `tessera run` on the S files (C stored as S, the default) and on the
float32 files (C float32). The page cache is warm for both (each file is read once first).

Accuracy: --sample-rows rows of C (spread over M) against the float64 product of the stored values
of those rows of A with all of B; printed as the largest |C - AB| / (|A||B|) and the relative
Frobenius error, next to the bound a float16 C can be held to: u_S (C's rounding to S) + gamma_K of
float32 (the accumulation) in units of |A||B|.

--accuracy-ks 256,4096,65536: before the timings, C's error by K (512 x K times K x 512, C stored as
float32 and as the half type) against the float64 product, in a table of its own (docs/usage.md's
accuracy figures).

--torch adds h5py + torch.matmul in the stored half type (what a user would write), timed as a
whole process. Writes OUTDIR/half.md and OUTDIR/half.json and each run's report.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import h5py
import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNIT = {"f16": 2.0**-11, "bf16": 2.0**-8}


def bf16_type():
    t = h5py.h5t.IEEE_F32LE.copy()
    t.set_fields(15, 7, 8, 0, 7)
    t.set_size(2)
    t.set_ebias(127)
    return t


def to_bf16_bits(x32):
    u = x32.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def make_inputs(store, n, data, band=2048):
    paths = {w: (f"{data}/{store}-{w}.h5", f"{data}/f32-{store}-{w}.h5") for w in "AB"}
    if all(os.path.exists(p) for pair in paths.values() for p in pair):
        return paths
    rng = np.random.default_rng(43)
    for w, (half_path, f32_path) in paths.items():
        with h5py.File(half_path + ".tmp", "w") as fh, h5py.File(f32_path + ".tmp", "w") as f32:
            space = h5py.h5s.create_simple((n, n))
            if store == "f16":
                dh = fh.create_dataset("X", (n, n), dtype=np.float16)
            else:
                dh = h5py.Dataset(h5py.h5d.create(fh.id, b"X", bf16_type(), space))
            d32 = f32.create_dataset("X", (n, n), dtype=np.float32)
            for r0 in range(0, n, band):
                r1 = min(n, r0 + band)
                x = rng.random((r1 - r0, n), dtype=np.float32) * 2 - 1
                if store == "f16":
                    h = x.astype(np.float16)
                    dh[r0:r1] = h
                    d32[r0:r1] = h.astype(np.float32)
                else:
                    bits = to_bf16_bits(x)
                    fs = dh.id.get_space()
                    fs.select_hyperslab((r0, 0), (r1 - r0, n))
                    dh.id.write(h5py.h5s.create_simple((r1 - r0, n)), fs, bits, mtype=bf16_type())
                    d32[r0:r1] = (bits.astype(np.uint32) << 16).view(np.float32)
        os.replace(half_path + ".tmp", half_path)
        os.replace(f32_path + ".tmp", f32_path)
    return paths


def run(cmd, env, log):
    t0 = time.perf_counter()
    with open(log, "w") as out:
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    return time.perf_counter() - t0, rc


def read_rows(path, rows):
    """Rows of a float16, bfloat16 or float32 dataset as float64. (h5py takes any 2-byte float for
    float16, so bfloat16 is read as its bits and widened here.)"""
    with h5py.File(path, "r") as f:
        d = f["X"] if "X" in f else f["C"]
        if d.id.get_type().get_size() != 2 or d.id.get_type().get_fields()[2] != 8:
            return np.stack([d[r] for r in rows]).astype(np.float64)
        out = np.empty((len(rows), d.shape[1]), dtype=np.uint16)
        for i, r in enumerate(rows):
            fs = d.id.get_space()
            fs.select_hyperslab((r, 0), (1, d.shape[1]))
            d.id.read(h5py.h5s.create_simple((1, d.shape[1])), fs, out[i:i + 1], mtype=bf16_type())
        return (out.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def accuracy(paths, c_path, store, rows):
    a = read_rows(paths["A"][1], rows)  # the float32 twin holds the stored values exactly
    with h5py.File(paths["B"][1], "r") as f:
        b = f["X"][...].astype(np.float64)
    ref = a @ b
    mag = np.abs(a) @ np.abs(b)
    c = read_rows(c_path, rows)
    k = b.shape[0]
    u32 = 2.0**-24
    bound = UNIT[store] + k * u32 / (1 - k * u32)
    err = np.abs(c - ref)
    return dict(max_scaled=float((err / mag).max()), rel_fro=float(np.linalg.norm(c - ref) / np.linalg.norm(ref)),
                bound=bound, rows=len(rows))


def write_half(path, x32, store):
    """x32 rounded to `store`, written as X; returns the stored values as float64."""
    with h5py.File(path, "w") as f:
        if store == "f16":
            h = x32.astype(np.float16)
            f.create_dataset("X", data=h)
            return h.astype(np.float64)
        bits = to_bf16_bits(x32)
        d = h5py.h5d.create(f.id, b"X", bf16_type(), h5py.h5s.create_simple(x32.shape))
        d.write(h5py.h5s.ALL, h5py.h5s.ALL, bits, mtype=bf16_type())
        return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def accuracy_by_k(args, out, data, env, mpirun, tessera):
    lines = ["| stored as | K | kernel | C float32: max err/(abs(A)abs(B)) | rel. Frobenius | C stored half: "
             "max err/(abs(A)abs(B)) | rel. Frobenius |", "|---|---|---|---|---|---|---|"]
    rng = np.random.default_rng(11)
    for store in args.stores.split(","):
        for k in (int(x) for x in args.accuracy_ks.split(",")):
            a = write_half(f"{data}/acc-a.h5", (rng.random((512, k), dtype=np.float32) * 2 - 1), store)
            b = write_half(f"{data}/acc-b.h5", (rng.random((k, 512), dtype=np.float32) * 2 - 1), store)
            ref, mag = a @ b, np.abs(a) @ np.abs(b)
            row = [store, str(k)]
            for c_dtype in ("f32", "auto"):
                c_path = f"{data}/acc-c.h5"
                cmd = mpirun + [tessera, "run", "--a", f"{data}/acc-a.h5:/X", "--b", f"{data}/acc-b.h5:/X", "--c",
                                f"{c_path}:/C", "--overwrite", "-q", "--c-dtype", c_dtype, "--report",
                                f"{out}/acc.json"] + args.extra.split()
                s, rc = run(cmd, env, f"{out}/acc-{store}-{k}-{c_dtype}.log")
                if rc != 0:
                    row += ["failed", "-"] if c_dtype == "auto" else ["-", "failed", "-"]
                    continue
                if c_dtype == "f32":
                    row.append(json.load(open(f"{out}/acc.json"))["kernel"])
                c = read_rows(c_path, range(512))
                row += [f"{(np.abs(c - ref) / mag).max():.2e}", f"{np.linalg.norm(c - ref) / np.linalg.norm(ref):.2e}"]
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    open(f"{out}/accuracy.md", "w").write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--size", type=int, default=32768)
    p.add_argument("--stores", default="f16,bf16")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--np", type=int, default=1)
    p.add_argument("--tessera", default=os.path.join(REPO, "build-gpu", "tessera"))
    p.add_argument("--data", default="/tmp/tessera-half")
    p.add_argument("--extra", default="")
    p.add_argument("--sample-rows", type=int, default=16)
    p.add_argument("--torch", action="store_true")
    p.add_argument("--accuracy-ks", default="")
    args = p.parse_args()
    out, data, tessera = (os.path.abspath(x) for x in (args.out, args.data, args.tessera))
    os.makedirs(out, exist_ok=True)
    os.makedirs(data, exist_ok=True)
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", NCCL_NVLS_ENABLE="0")
    mpirun = ["mpirun", "--bind-to", "none", "-np", str(args.np)]
    n = args.size
    if args.accuracy_ks:
        accuracy_by_k(args, out, data, env, mpirun, tessera)
    results = {}
    for store in args.stores.split(","):
        t0 = time.perf_counter()
        paths = make_inputs(store, n, data)
        print(f"{store}: inputs ready in {time.perf_counter() - t0:.1f} s", flush=True)
        for pair in paths.values():
            subprocess.call(["cat", *pair], stdout=subprocess.DEVNULL)  # warm the page cache
        variants = {store: (paths["A"][0], paths["B"][0]), "f32": (paths["A"][1], paths["B"][1])}
        times = {v: [] for v in variants}
        times["torch"] = []
        reports = {}
        for rep in range(args.repeats):
            for v, (a, b) in variants.items():
                c = f"{data}/{v}-{store}-C.h5"
                name = f"{store}-{v}-{rep}"
                cmd = mpirun + [tessera, "run", "--a", f"{a}:/X", "--b", f"{b}:/X", "--c", f"{c}:/C", "--overwrite",
                                "-q", "--report", f"{out}/{name}.json"] + args.extra.split()
                s, rc = run(cmd, env, f"{out}/{name}.log")
                if rc == 0:
                    times[v].append(s)
                    reports[v] = json.load(open(f"{out}/{name}.json"))
                else:
                    print(f"{name} failed (rc {rc}): see {out}/{name}.log", file=sys.stderr)
            if args.torch and store == "f16":  # (h5py reads bfloat16 as float16)
                s, rc = run([sys.executable, os.path.join(REPO, "scripts", "torch_baseline.py"),
                             f"{paths['A'][0]}:/X", f"{paths['B'][0]}:/X", f"{data}/torch-C.h5:/C"], env,
                            f"{out}/{store}-torch-{rep}.log")
                if rc == 0:
                    times["torch"].append(s)
        rows = sorted({int(r) for r in np.linspace(0, n - 1, args.sample_rows)})
        acc = accuracy(paths, f"{data}/{store}-{store}-C.h5", store, rows) if times[store] else None
        med = {v: statistics.median(t) if t else float("nan") for v, t in times.items()}
        results[store] = dict(times=times, median=med, ratio=med[store] / med["f32"], accuracy=acc,
                              kernel={v: r.get("kernel") for v, r in reports.items()},
                              phases={v: r["ranks"][0].get("phases") for v, r in reports.items()})
        print(store, json.dumps(results[store], default=str), flush=True)
        for v in variants:
            c = f"{data}/{v}-{store}-C.h5"
            if os.path.exists(c):
                os.remove(c)
    json.dump(results, open(f"{out}/half.json", "w"), indent=1, default=str)
    lines = [f"| {n}³ stored as | whole job (median of {args.repeats}) | same job stored f32 | ratio | kernel | "
             "C's error max / bound (units of abs(A)abs(B)) |", "|---|---|---|---|---|---|"]
    for store, r in results.items():
        acc = r["accuracy"]
        lines.append(f"| {store} | {r['median'][store]:.2f} s | {r['median']['f32']:.2f} s | **{r['ratio']:.3f}** | "
                     f"{r['kernel'].get(store)} / {r['kernel'].get('f32')} | "
                     + (f"{acc['max_scaled']:.2e} / {acc['bound']:.2e} (rel. Frobenius {acc['rel_fro']:.2e})" if acc else "-")
                     + " |")
    print("\n".join(lines))
    open(f"{out}/half.md", "w").write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
