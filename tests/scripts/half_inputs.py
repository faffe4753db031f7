"""Half-precision inputs (issue 43 item 1, the reading side): A and B stored as float16 (h5py's
numpy float16, IEEE binary16) or bfloat16 (an HDF5 float of 1 + 8 + 7 bits, as ml_dtypes users
declare it), contiguous or gzip-chunked, whole or as a window (--slice: A[5:50, 3:40] of a bigger
dataset, B stored transposed), are read widened to float32 by tessera's own reader (pread or its
chunk decoder, not HDF5's slow conversion; exactly: every half value is a float32 value) and multiplied in float32 (C float32) or, with --dtype f64, in float64; numpy
checks C against the float64 product of the stored values (read back through h5py)."""
import json

import h5py
import numpy as np

from common import forced_env, bfloat16_type, check, check_product, parser, Runner, skip_without_gpus

p = parser(__doc__)
p.add_argument("--store", default="float16", choices=["float16", "bfloat16", "e5m10-bias14"],
               help="e5m10-bias14: float16's fields with another exponent bias: read through HDF5's conversion, "
                    "but not float16 (C float32 by default, never the float16 tensor cores)")
p.add_argument("--layout", default="contiguous", choices=["contiguous", "gzip"])
p.add_argument("--dtype", default="auto", choices=["auto", "f64"])
p.add_argument("--slice", action="store_true",
               help="A as a window of a larger half dataset, B stored transposed (--transpose-b): the "
                    "reader's strided and transposed blocks of half data")
p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"],
               help="cuda: `auto` must pick the tensor-core GEMM (cublas-f16 / cublas-bf16) for float32 "
                    "products of half data, and full precision again with an alpha other than 1")
p.add_argument("--need-gpus", type=int, default=0)
p.add_argument("--big", action="store_true", help="A 1600 x 1700 (11 MB as float32: read by 2 threads)")
p.add_argument("--staged", action="store_true",
               help="the staged GEMM (forced, in small pieces): with cuda, A and B of the tensor-core kernel are "
                    "read and uploaded as stored (2 bytes an element, the report's read bytes say so)")
args = p.parse_args()
skip_without_gpus(args)  # --need-gpus N with --backend cuda: SKIP visibly where there are fewer

r = Runner(args)
rng = np.random.default_rng(16)
m, k, n = (45, 37, 29) if args.backend == "cpu" else (300, 2000, 260)  # GPU: a K the accumulation shows in
if args.big:  # A widened by several reader threads, each in several bands
    m, k, n = 1600, 1700, 8
a32 = (rng.random((m, k)) * 2 - 1).astype(np.float32)
b32 = (rng.random((k, n)) * 2 - 1).astype(np.float32)
kw = dict(chunks=(8, 16), compression="gzip") if args.layout == "gzip" else {}


stored = {"A": a32, "B": b32}
if args.slice:  # A inside a bigger dataset (rows 5..50, cols 3..40), B as its transpose
    big = (rng.random((m + 16, k + 10)) * 2 - 1).astype(np.float32)
    big[5:5 + m, 3:3 + k] = a32
    stored = {"A": big, "B": np.ascontiguousarray(b32.T)}
with h5py.File(r.path("in.h5"), "w") as f:
    for name, x in stored.items():
        if args.store == "float16":
            f.create_dataset(name, data=x.astype(np.float16), **kw)
        else:  # HDF5 rounds the float32 values to the declared bfloat16 type as it writes them
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            if kw:
                dcpl.set_chunk(kw["chunks"])
                dcpl.set_deflate(4)
            t = bfloat16_type()
            if args.store == "e5m10-bias14":
                t = h5py.h5t.IEEE_F32LE.copy()
                t.set_fields(15, 10, 5, 0, 10)
                t.set_size(2)
                t.set_ebias(14)
            d = h5py.h5d.create(f.id, name.encode(), t, h5py.h5s.create_simple(x.shape), dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, x)
with h5py.File(r.path("in.h5"), "r") as f:  # the stored values, widened (exactly) by HDF5
    a = f["A"].astype(np.float64)[...]
    b = f["B"].astype(np.float64)[...]
if args.slice:
    a, b = a[5:5 + m, 3:3 + k], b.T
check(not np.array_equal(a, a32.astype(np.float64)), "the inputs were stored in half precision (rounded)")

a_ref = r.path("in.h5") + (f":/A[5:{5 + m}, 3:{3 + k}]" if args.slice else ":/A")
half_kernel = "cublas-" + ("f16" if args.store == "float16" else "bf16")
# (float16 inputs hold values exact in float16: their products are exact in float32, so the tensor
# cores' FP32 accumulation is the float32 GEMM's error; the bound allows for its truncating adds.)
safety = 4.0 if args.backend == "cuda" else 2.0
for alpha in (1.0, 0.75) if args.backend == "cuda" else (1.0,):
    env = forced_env(stream_chunks=4, staged="on", stage_bytes=3000) if args.staged else None
    res = r.run(["run", "--a", a_ref, "--b", r.path("in.h5") + ":/B", "--c", r.path("c.h5") + ":/C", "--overwrite",
                 "--backend", args.backend, "--dtype", args.dtype, "--report", r.path("report.json"),
                 "--alpha", str(alpha),
                 # C as computed (half_output.py checks C stored in half precision, the default here).
                 "--c-dtype", "f64" if args.dtype == "f64" else "f32"] + (["--transpose-b"] if args.slice else []),
                env=env)
    with h5py.File(r.path("c.h5"), "r") as f:
        c = f["C"][...]
    want_dtype = np.float64 if args.dtype == "f64" else np.float32
    check(c.dtype == want_dtype, f"C is {c.dtype}, expected {want_dtype}")
    rel = check_product(a, alpha * b, c, want_dtype, safety=safety)  # (alpha 0.75: exact in float64)
    report = json.load(open(r.path("report.json")))
    kernel = report["kernel"]
    if args.staged:
        busy = [e for e in report["ranks"] if e["active"]]
        check(busy and all(e["staged"] for e in busy), "the GEMM was not staged")
        # As stored (2 bytes) only for the tensor-core kernel of the stored type, untransposed.
        as_stored = kernel == half_kernel and not args.slice
        want = (m * k + k * n) * (2 if as_stored else np.dtype(want_dtype).itemsize)
        got = sum(e["read_bytes"] for e in busy)
        # (One rank reads A and B once; more read B once per block row.)
        check(len(busy) > 1 or got == want, f"read {got} bytes of A and B, expected {want} ({'as stored' if as_stored else 'widened'})")
    if args.backend == "cuda":
        tensor = args.dtype == "auto" and alpha == 1.0
        check((kernel == half_kernel) == (tensor and args.store != "e5m10-bias14"),
              f"alpha {alpha}, --dtype {args.dtype}: kernel {kernel}; expected {half_kernel if tensor else 'not ' + half_kernel}")
    if args.backend == "cuda" and args.store == "e5m10-bias14":
        check(kernel != "cublas-f16", "a 16-bit float of another bias is not float16: no float16 tensor cores")
    print(f"ok: C {c.shape} {c.dtype} from {args.store} inputs, alpha {alpha}, kernel {kernel}, relative error {rel:.3e}")
if args.backend == "cuda" and args.store != "e5m10-bias14" and not args.slice:
    # B's rows read ahead as stored while the GPU starts, for a GEMM that does not take them so
    # (not staged) or does (staged): two NaN in B are counted twice, once each, either way.
    with h5py.File(r.path("in.h5"), "a") as f:
        bn = f["B"][...]
        bn[0, 0] = np.nan
        bn[k - 1, n - 1] = np.nan
        del f["B"]
        if args.store == "float16":
            f.create_dataset("B", data=bn.astype(np.float16), **kw)
        else:
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            if kw:
                dcpl.set_chunk(kw["chunks"])
                dcpl.set_deflate(4)
            d = h5py.h5d.create(f.id, b"B", bfloat16_type(), h5py.h5s.create_simple(bn.shape), dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, bn.astype(np.float32))
    for staged in ("off", "on"):
        env = forced_env(stream_chunks=4, staged=staged, stage_bytes=3000, read_ahead=True)
        res = r.run(["run", "--a", a_ref, "--b", r.path("in.h5") + ":/B", "--c", r.path("nan.h5") + ":/C",
                     "--overwrite", "--backend", "cuda"], expect_ok=False, env=env)
        check(res.returncode != 0 and "holds 2 non-finite value(s)" in res.stderr,
              f"staged {staged}: the two NaN in B were not counted once each: {res.stderr[-400:]}")
    print("ok: NaN in B counted once each, B read ahead, staged and not")
if args.store == "e5m10-bias14":  # C as computed by default: the inputs are not float16
    r.run(["run", "--a", a_ref, "--b", r.path("in.h5") + ":/B", "--c", r.path("c2.h5") + ":/C", "--backend",
           args.backend] + (["--transpose-b"] if args.slice else []))
    with h5py.File(r.path("c2.h5"), "r") as f:
        check(f["C"].dtype == np.float32, f"C is {f['C'].dtype}: float32 expected for a non-IEEE 16-bit float")
    print("ok: a 16-bit float of bias 14 is read, and C defaults to float32")
print("PASS")
