"""C stored as float16 or bfloat16 (issue 43 item 1, the writing side: `run --c-dtype`). With
half-precision A and B, C is stored in their type by default (half the bytes written); --c-dtype
f16/bf16 stores any product so, --c-dtype f32 keeps float32. The product is computed in float32
(or float64) and each element of C rounded to nearest, ties to even, once: the stored bits must be
exactly those of numpy's astype(np.float16) of the float32 C that --c-dtype f32 writes (bfloat16:
the same rounding of its bits), whatever the route (in place, gathered, gzip-compressed, a new
dataset in an existing file). Values beyond the stored type's range become Inf, are warned of as
a C's NaN/Inf are, and refused with --fail-on-nonfinite; a window of an existing dataset refuses
--c-dtype (it keeps its dataset's type).

--backend cuda: the staged GEMM (forced, in small pieces), which rounds C on the GPU and hands the
writer 2-byte values: the same bits as numpy's rounding of the float32 C the same staged GEMM
writes with --c-dtype f32, in a new file and in an existing one, and the report shows the
rounding's phase."""
import h5py
import numpy as np

from common import bfloat16_type, check, forced_env, parser, Runner, skip_without_gpus

p = parser(__doc__)
p.add_argument("--store", default="float16", choices=["float16", "bfloat16"])
p.add_argument("--case", default="routes", choices=["routes", "overflow"])
p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
p.add_argument("--need-gpus", type=int, default=0)
args = p.parse_args()
skip_without_gpus(args)  # --need-gpus N with --backend cuda: SKIP visibly where there are fewer

r = Runner(args)
rng = np.random.default_rng(61)
m, k, n = (45, 37, 29) if args.backend == "cpu" else (301, 517, 259)
# On a GPU: staged, A read in 4 pieces, C back in pieces of a few rows with remainders.
env = forced_env(stream_chunks=4, staged="on", stage_bytes=5000) if args.backend == "cuda" else None


def write(path, name, x, half):
    with h5py.File(path, "a") as f:
        if half == "float16":
            f.create_dataset(name, data=x.astype(np.float16))
        elif half == "bfloat16":
            d = h5py.h5d.create(f.id, name.encode(), bfloat16_type(), h5py.h5s.create_simple(x.shape))
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, x.astype(np.float32))
        else:
            f.create_dataset(name, data=x)


def stored_bits(path, name):
    """C's elements as stored: (their 16-bit patterns or values, the size of one)."""
    with h5py.File(path, "r") as f:
        d = f[name]
        size = d.id.get_type().get_size()
        if size != 2:
            return d[...], size
        bits = np.empty(d.shape, np.uint16)
        d.id.read(h5py.h5s.ALL, h5py.h5s.ALL, bits, mtype=d.id.get_type())
        return bits, size


def rounded(c32, half):
    """numpy's rounding of a float32 C to the half type, as bit patterns."""
    if half == "float16":
        return c32.astype(np.float16).view(np.uint16)
    raw = c32.astype(np.float32).view(np.uint32)
    return ((raw + 0x7FFF + ((raw >> 16) & 1)) >> 16).astype(np.uint16)


inp = r.path("in.h5")
a32 = (rng.random((m, k)) * 2 - 1).astype(np.float32)
b32 = (rng.random((k, n)) * 2 - 1).astype(np.float32)
write(inp, "A", a32, args.store)
write(inp, "B", b32, args.store)
base = ["run", "--a", inp + ":/A", "--b", inp + ":/B", "--backend", args.backend, "-q"]

if args.case == "overflow":
    big = np.full((4, 4), 300.0, np.float32)  # 300^2 * 4 = 360000: beyond float16 (65504)
    if args.backend == "cuda":  # rows enough to stage; the 4x4 corner as before, the rest small
        big = np.full((64, 64), 0.001, np.float32)
        big[:4, :4] = 300.0
    write(inp, "big", big, "float16")
    over = ["run", "--a", inp + ":/big", "--b", inp + ":/big", "--backend", args.backend, "-q"]
    res = r.run(over + ["--c", r.path("o.h5") + ":/C"], env=env)
    check("overflow float16 (C's stored type" in res.stderr, "the overflow to Inf was not warned of")
    bits, size = stored_bits(r.path("o.h5"), "/C")
    check(size == 2 and np.all(bits[:4, :4] == 0x7C00), "C is not float16 Inf where it overflowed")
    check(int((bits == 0x7C00).sum()) == 16, "C holds Inf where nothing overflowed")
    check("holds 16 non-finite value(s) (NaN/Inf), the first at (0, 0)" in res.stderr,
          "the warning does not count the 16 overflowed elements from (0, 0)")
    res = r.run(over + ["--c", r.path("o2.h5") + ":/C", "--fail-on-nonfinite"], expect_ok=False, env=env)
    check(res.returncode != 0 and "nothing written" in res.stderr, "--fail-on-nonfinite did not refuse")
    import os
    check(not os.path.exists(r.path("o2.h5")), "a refused C was written")
    # With --c-dtype f32 the same product is finite.
    r.run(over + ["--c", r.path("o3.h5") + ":/C", "--c-dtype", "f32"], env=env)
    with h5py.File(r.path("o3.h5"), "r") as f:
        check(f["C"].dtype == np.float32 and np.all(f["C"][:4, :4] >= 360000.0), "C in float32 is not 360000")
    # A window of an existing dataset keeps its type: --c-dtype refused, the file unchanged.
    res = r.run(over + ["--c", r.path("o3.h5") + ":/C[0:4, :]", "--overwrite", "--c-dtype", "f16"],
                expect_ok=False)
    check(res.returncode != 0 and "--c-dtype" in res.stderr, "a window took --c-dtype")
    print("PASS")
    raise SystemExit(0)

# The reference: the same product written as float32.
r.run(base + ["--c", r.path("ref.h5") + ":/C", "--c-dtype", "f32"], env=env)
with h5py.File(r.path("ref.h5"), "r") as f:
    c32 = f["C"][...]
check(c32.dtype == np.float32, f"--c-dtype f32 wrote {c32.dtype}")
want = rounded(c32, args.store)
with h5py.File(r.path("exist.h5"), "w") as f:
    f.create_dataset("keep", data=np.arange(3.0))
routes = [("default (auto)", [], "c1.h5"),
          ("gathered", ["--write", "gather"], "c2.h5"),
          ("gzip-compressed", ["--compression", "gzip", "--shuffle", "--chunk", "8x16"], "c3.h5"),
          ("a new dataset in an existing file", [], "exist.h5")]
if args.backend == "cuda":  # the staged routes (a gathered or compressed C is not staged)
    routes = [routes[0], routes[3]]
for what, extra, out in routes:
    target = r.path(out) + (":/results/C" if out == "exist.h5" else ":/C")
    r.run(base + ["--c", target, "--report", r.path("report.json")] + extra, env=env)
    bits, size = stored_bits(r.path(out), "/results/C" if out == "exist.h5" else "/C")
    check(size == 2, f"{what}: C's elements are {size} bytes, not 2")
    bad = int((bits != want).sum())
    check(bad == 0, f"{what}: {bad} elements of C differ from numpy's rounding of the float32 C")
    import json
    rep = json.load(open(r.path("report.json")))
    check(rep["c_dtype"] == args.store and rep["dtype"] == "float32", f"{what}: report says {rep['c_dtype']}")
    if args.backend == "cuda":
        busy = [e for e in rep["ranks"] if e["active"]]
        check(busy and all(e["staged"] and "round C" in e["phases"] for e in busy),
              f"{what}: C was not staged and rounded on the GPU: {[e['phases'] for e in busy]}")
    print(f"ok: {what}: C stored as {args.store}, every element numpy's rounding of the float32 product")
with h5py.File(r.path("exist.h5"), "r") as f:
    check(np.array_equal(f["keep"][...], np.arange(3.0)), "the existing file's other dataset changed")
if args.backend == "cuda":
    print("PASS")
    raise SystemExit(0)
# Any product stored in half precision on request: float32 inputs, --c-dtype f16 / bf16.
write(r.path("in32.h5"), "A", a32, None)
write(r.path("in32.h5"), "B", b32, None)
short = "f16" if args.store == "float16" else "bf16"
r.run(["run", "--a", r.path("in32.h5") + ":/A", "--b", r.path("in32.h5") + ":/B", "--backend", "cpu", "-q",
       "--c", r.path("c5.h5") + ":/C", "--c-dtype", short])
r.run(["run", "--a", r.path("in32.h5") + ":/A", "--b", r.path("in32.h5") + ":/B", "--backend", "cpu", "-q",
       "--c", r.path("c6.h5") + ":/C"])
with h5py.File(r.path("c6.h5"), "r") as f:
    c6 = f["C"][...]
bits, size = stored_bits(r.path("c5.h5"), "/C")
check(size == 2 and np.array_equal(bits, rounded(c6, args.store)), f"--c-dtype {short} of float32 inputs")
print(f"ok: float32 inputs stored as {args.store} on request")
print("PASS")
