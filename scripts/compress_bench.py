#!/usr/bin/env python3
"""Issue 43 item 4's done-when on the GPU machine: C 16384^2 float32 written compressed by 1 rank.
Usage: scripts/compress_bench.py OUTDIR TESSERA  (e.g. build-gpu/tessera; data in /tmp/cb)
A 16384x64, B 64x16384 (K = 64: the GEMM is nothing), whole `mpirun -np 1 tessera run` processes,
each variant 3 times alternated, a fresh C file each run; the rate is C's uncompressed bytes over the
report's write phase (and over the whole process)."""
import json, os, statistics, subprocess, sys, time
if len(sys.argv) != 3:
    sys.exit(__doc__)
out, tessera = sys.argv[1], os.path.abspath(sys.argv[2])
os.makedirs(out, exist_ok=True)
d = "/tmp/cb"; os.makedirs(d, exist_ok=True)
env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
for name, rows, cols, seed in (("a", 16384, 64, 1), ("b", 64, 16384, 2)):
    subprocess.check_call([tessera, "generate", "--out", f"{d}/{name}.h5:/X", "--rows", str(rows), "--cols", str(cols),
                           "--seed", str(seed), "--overwrite"], stdout=subprocess.DEVNULL)
variants = {"none": [], "gzip1": ["--compression", "gzip", "--compression-level", "1"],
            "gzip1-shuffle": ["--compression", "gzip", "--compression-level", "1", "--shuffle"],
            "lz4": ["--compression", "lz4"], "lz4-shuffle": ["--compression", "lz4", "--shuffle"]}
res = {v: [] for v in variants}
cbytes = 16384 * 16384 * 4
for rep in range(3):
    for v, opts in variants.items():
        c = f"{d}/c-{v}.h5"
        if os.path.exists(c): os.remove(c)
        t0 = time.perf_counter()
        rc = subprocess.call(["mpirun", "--bind-to", "none", "-np", "1", tessera, "run", "--a", f"{d}/a.h5:/X", "--b",
                              f"{d}/b.h5:/X", "--c", f"{c}:/C", "-q", "--report", f"{out}/{v}-{rep}.json"] + opts,
                             env=env, stdout=open(f"{out}/{v}-{rep}.log", "w"), stderr=subprocess.STDOUT)
        wall = time.perf_counter() - t0
        if rc != 0:
            print(v, "failed", rc); continue
        r = json.load(open(f"{out}/{v}-{rep}.json"))
        ph = r["ranks"][0]["phases"]
        res[v].append(dict(wall=wall, write=ph.get("write"), size=os.path.getsize(c)))
for v, runs in res.items():
    if not runs: continue
    w = statistics.median(x["write"] for x in runs); t = statistics.median(x["wall"] for x in runs)
    print(f"{v}: whole process {t:.2f} s, write phase {w:.3f} s = {cbytes / w / 1e9:.2f} GB/s of C, "
          f"file {runs[0]['size'] / 1e6:.0f} MB ({runs[0]['size'] / cbytes:.2f} of C)")
