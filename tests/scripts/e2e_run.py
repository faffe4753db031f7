"""End to end: h5py writes A and B, `mpiexec -np N tessera run` multiplies them, numpy checks C,
the attributes and the JSON report (one entry per rank, with its block and phase timings)."""
import json
import os

import h5py
import numpy as np

from common import check, check_product, forced_env, leftovers, parser, Runner, skip_without_gpus, write

p = parser(__doc__)
p.add_argument("--m", type=int, required=True)
p.add_argument("--n", type=int, required=True)
p.add_argument("--k", type=int, required=True)
p.add_argument("--dtype", default="f64", choices=["f32", "f64", "i32"])
p.add_argument("--layout", default="contiguous", choices=["contiguous", "chunked", "gzip"])
p.add_argument("--backend", default="cpu")
p.add_argument("--kernel", default="auto")
p.add_argument("--grid", default="")
p.add_argument("--algorithm", default="", help="passed to tessera run --algorithm (default: tessera's own)")
p.add_argument("--comm", default="", help="passed to tessera run --comm")
p.add_argument("--panel-width", type=int, default=0, help="passed to tessera run --panel-width")
p.add_argument("--expect-algorithm", default="", help="the algorithm the report must name (for --algorithm auto)")
p.add_argument("--expect-comm", default="", help="the comm path the report must name")
p.add_argument("--same-file", action="store_true", help="A and B in one file")
p.add_argument("--baseline", default="")
p.add_argument("--need-gpus", type=int, default=0)
p.add_argument("--expect-shared-gpu", action="store_true", help="more ranks than GPUs: a warning is expected")
p.add_argument("--gpu-memory", default="", help="--gpu-memory for tessera; the block must then run out of core")
p.add_argument("--bands", type=int, default=0,
               help="TESSERA_BANDS: summa's and ksplit's row bands of C (0: unset, the model's)")
p.add_argument("--write", default="", help="--write auto|in-place|gather")
p.add_argument("--stream-chunks", type=int, default=0,
               help="TESSERA_STREAM_CHUNKS for the run: A is read in this many pieces while the GEMM runs")
p.add_argument("--staged", default="", choices=["", "on", "off"],
               help="TESSERA_STAGED=1 / 0: A, B and C through the backend's staging buffers, or not")
p.add_argument("--read-ahead", action="store_true", help="TESSERA_READ_AHEAD=force: B's first half read ahead")
p.add_argument("--stage-bytes", type=int, default=0, help="TESSERA_STAGE_BYTES: the staged pieces' size")
p.add_argument("--expect-staged", default="", choices=["", "yes", "no"],
               help="whether the busy ranks' reports must say their GEMM was staged (--staged on: yes)")
args = p.parse_args()

skip_without_gpus(args)

r = Runner(args)
rng = np.random.default_rng(args.m * 7919 + args.n * 104729 + args.k)
np_dtype = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[args.dtype]
if args.dtype == "i32":
    a = rng.integers(-50, 50, size=(args.m, args.k), dtype=np.int32)
    b = rng.integers(-50, 50, size=(args.k, args.n), dtype=np.int32)
else:
    a = (rng.random((args.m, args.k)) * 2 - 1).astype(np_dtype)
    b = (rng.random((args.k, args.n)) * 2 - 1).astype(np_dtype)
chunks = {"contiguous": None, "chunked": True, "gzip": True}[args.layout]
compression = "gzip" if args.layout == "gzip" else None
a_file = r.path("inputs.h5" if args.same_file else "a.h5")
b_file = r.path("inputs.h5" if args.same_file else "b.h5")
write(a_file, "/mats/A", a, chunks, compression)
write(b_file, "/mats/B", b, chunks, compression)

c_file = r.path("out/c.h5")
os.makedirs(os.path.dirname(c_file))
report = r.path("report.json")
cmd = ["run", "--a", f"{a_file}:/mats/A", "--b", f"{b_file}:/mats/B", "--c", f"{c_file}:/result/C",
       "--backend", args.backend, "--kernel", args.kernel, "--report", report]
if args.grid:
    cmd += ["--grid", args.grid]
if args.baseline:
    cmd += ["--baseline", args.baseline]
if args.gpu_memory:
    cmd += ["--gpu-memory", args.gpu_memory]
if args.algorithm:
    cmd += ["--algorithm", args.algorithm]
if args.comm:
    cmd += ["--comm", args.comm]
if args.panel_width:
    cmd += ["--panel-width", str(args.panel_width)]
if args.write:
    cmd += ["--write", args.write]
env = forced_env(args.stream_chunks, args.bands, args.staged, args.stage_bytes, args.read_ahead)
res = r.run(cmd, env=env)

with h5py.File(c_file, "r") as f:
    c = f["/result/C"][...]
    attrs = dict(f["/result/C"].attrs)
compute = np.float32 if args.dtype == "f32" else np.float64
check(c.dtype == compute, f"C dtype {c.dtype}, expected {np.dtype(compute)}")
rel = check_product(a, b, c, compute)
if compute == np.float64:
    check(rel <= 1e-12, f"float64 rel. Frobenius error {rel:.3e} > 1e-12")
check(list(attrs["shape"]) == [args.m, args.n], f"shape attribute {attrs.get('shape')}")
for key in ["dtype", "process_grid", "algorithm", "kernel", "tessera_version", "wall_seconds"]:
    check(key in attrs, f"attribute {key} missing from C")
check(not leftovers(os.path.dirname(c_file)), "temporary files left next to C")

rep = json.load(open(report))
check(rep["nranks"] == args.np, "report nranks")
check(len(rep["ranks"]) == args.np, "report must have one entry per rank")
if args.algorithm in ("panels", "summa", "ksplit"):
    check(rep["algorithm"] == args.algorithm, f"report algorithm {rep['algorithm']} != {args.algorithm}")
    algo_attr = attrs["algorithm"].decode() if isinstance(attrs["algorithm"], bytes) else str(attrs["algorithm"])
    check(algo_attr == args.algorithm, f"C attribute algorithm {algo_attr} != {args.algorithm}")
if args.expect_algorithm:
    check(rep["algorithm"] == args.expect_algorithm,
          f"--algorithm {args.algorithm or 'auto'} chose {rep['algorithm']}, expected {args.expect_algorithm}")
if args.expect_comm:
    check(rep["comm"] == args.expect_comm, f"report comm {rep['comm']}, expected {args.expect_comm}")
check(rep["comm"] in ("none", "host", "nccl", "cuda-aware"), f"report comm {rep['comm']!r}")
if args.stream_chunks > 1:
    # min(chunks, the most rows of any rank's block)
    check(rep["stream_chunks"] > 1, f"report stream_chunks {rep['stream_chunks']}, expected streaming")
    check("streaming: A read in" in res.stdout, "the table says A streamed")
elif args.stream_chunks == 1:
    check(rep["stream_chunks"] == 1, f"report stream_chunks {rep['stream_chunks']}, expected 1")
expect_staged = args.expect_staged or {"on": "yes", "off": "no"}.get(args.staged, "")
if expect_staged:
    busy = [e for e in rep["ranks"] if e["active"]]
    check(busy and all(e["staged"] == (expect_staged == "yes") for e in busy),
          f"busy ranks' staged {[e['staged'] for e in busy]}, expected {expect_staged}")
    check(all(not e["staged"] for e in rep["ranks"] if not e["active"]), "an idle rank says it staged")
    if expect_staged == "yes":
        read = sum(e["read_bytes"] for e in busy)
        check(read >= (args.m * args.k + args.k * args.n) * np.dtype(np_dtype).itemsize,
              f"staged ranks report {read} bytes read, fewer than A and B")
check(f"(comm {rep['comm']}" in res.stdout, "the table names the comm path")
if rep["comm"] == "nccl" and len({e["host"] for e in rep["ranks"]}) == 1 and not args.expect_shared_gpu:
    # One node, one GPU per rank, every GPU visible to every rank: NCCL links them directly.
    check(rep["nccl_transport"] in ("P2P/NVLink", "P2P/PCIe"), f"NCCL transport {rep['nccl_transport']!r}")
    check(f"nccl, {rep['nccl_transport']})" in res.stdout, "the table names the NCCL transport")
    peer_warnings = [w for e in rep["ranks"] for w in e["warnings"] if "cannot link their GPUs" in w]
    check(not peer_warnings, f"unexpected peer-access warnings: {peer_warnings}")
check(f"C written: {rep['write']}" in res.stdout, "the table says how C was written")
if args.write != "gather":
    check(rep["write"].startswith("in place"), f"C should be written in place here, report says {rep['write']!r}")
else:
    check(rep["write"].startswith("gather"), f"C should be gathered (--write gather), report says {rep['write']!r}")
# Every input word is read by some rank (a rank may read nothing: summa's with an empty K range).
read = sum(entry["read_bytes"] for entry in rep["ranks"])
check(read >= 8 * (args.m * args.k + args.k * args.n) // (2 if args.dtype == "f32" else 1),
      f"the ranks read {read} bytes, less than A and B")
check(rep.get("bound") in ("start-up", "read", "compute", "write"), f"report bound {rep.get('bound')!r}")
ksplit = rep["algorithm"] == "ksplit"
covered = 0
gpus_used = rep["provenance"]["gpus"]
for entry in rep["ranks"]:
    if not entry["active"]:
        # A rank left idle touches no device (no GPU driver started for nothing).
        check(entry["device"] == "idle" and entry["device_id"] == -1,
              f"idle rank {entry['rank']} names device {entry['device']!r} (id {entry['device_id']})")
        check(all(g["rank"] != entry["rank"] for g in gpus_used), f"idle rank {entry['rank']} listed as using a GPU")
        continue
    if args.backend == "cuda":
        # Each busy rank's GPU, named by its backend: the provenance lists it with its UUID.
        mine = [g for g in gpus_used if g["rank"] == entry["rank"]]
        check(len(mine) == 1 and mine[0]["device_id"] == entry["device_id"]
              and str(mine[0]["uuid"]).startswith("GPU-") and mine[0]["uuid"] == entry["device_uuid"],
              f"rank {entry['rank']}'s GPU in the provenance: {mine}, rank says {entry.get('device_uuid')!r}")
    rows, cols = entry["rows"], entry["cols"]
    covered += (rows[1] - rows[0]) * (cols[1] - cols[0])
    # ksplit: every rank holds a partial of all of C, summed by reduce-scatter (every rank writes its
    # rows: "write") or onto rank 0 ("reduce"). Otherwise each rank writes its own block in place
    # ("write") or sends it to rank 0 ("gather").
    in_place = rep["write"].startswith("in place")
    last = "write" if entry["rank"] == 0 or in_place else ("reduce" if ksplit else "gather")
    for phase in ["read", "compute", last] + (["reduce"] if ksplit else []):
        check(phase in entry["phases"], f"rank {entry['rank']} lacks phase {phase}")
    if args.baseline:
        check(entry["baseline"]["speedup"] > 0, "baseline speedup missing")
expected = args.m * args.n * (args.np if ksplit else 1)
check(covered == expected, "active ranks' blocks must cover C exactly (ksplit: each rank all of C)")
if args.gpu_memory:
    notes = [w for e in rep["ranks"] for w in e["warnings"]]
    check(any("out of core" in w for w in notes), f"expected the out-of-core note, got {notes}")
if args.expect_shared_gpu:
    warned = [w for e in rep["ranks"] for w in e["warnings"]]
    check(any("share" in w for w in warned), f"expected a GPU-sharing warning, got {warned}")
    check("warning" in res.stdout, "the table shows the warning")
elif args.backend == "cuda" and args.need_gpus >= args.np:
    busy = [e for e in rep["ranks"] if e["active"]]
    ids = [e["device_id"] for e in busy]
    names = [e["device"] for e in busy]
    check(len(set(names)) == len(busy), f"each busy rank must have its own GPU, got {names} (ids {ids})")
    check(not any("share" in w for e in rep["ranks"] for w in e["warnings"]), "no GPU-sharing warning expected")
grid = f"{rep['grid']['rows']}x{rep['grid']['cols']}"
if args.grid:
    check(grid == args.grid, f"grid {grid} != requested {args.grid}")
check(f"{grid} grid" in res.stdout, "the table names the grid")
check("total: wall" in res.stdout, "the table has totals")

# tessera verify agrees, on the same number of ranks.
v = r.run(["verify", "--a", f"{a_file}:/mats/A", "--b", f"{b_file}:/mats/B", "--c", f"{c_file}:/result/C"])
check("verify PASSED" in v.stdout, "tessera verify must pass on a correct C")
print("PASS")
