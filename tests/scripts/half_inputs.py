"""Half-precision inputs (issue 43 item 1, the reading side): A and B stored as float16 (h5py's
numpy float16, IEEE binary16) or bfloat16 (an HDF5 float of 1 + 8 + 7 bits, as ml_dtypes users
declare it), contiguous or gzip-chunked, whole or as a window (--slice: A[5:50, 3:40] of a bigger
dataset, B stored transposed), are read widened to float32 by tessera's own reader (pread or its
chunk decoder, not HDF5's slow conversion; exactly: every half value is a float32 value) and multiplied in float32 (C float32) or, with --dtype f64, in float64; numpy
checks C against the float64 product of the stored values (read back through h5py)."""
import h5py
import numpy as np

from common import bfloat16_type, check, check_product, parser, Runner

p = parser(__doc__)
p.add_argument("--store", default="float16", choices=["float16", "bfloat16"])
p.add_argument("--layout", default="contiguous", choices=["contiguous", "gzip"])
p.add_argument("--dtype", default="auto", choices=["auto", "f64"])
p.add_argument("--slice", action="store_true",
               help="A as a window of a larger half dataset, B stored transposed (--transpose-b): the "
                    "reader's strided and transposed blocks of half data")
args = p.parse_args()

r = Runner(args)
rng = np.random.default_rng(16)
a32 = (rng.random((45, 37)) * 2 - 1).astype(np.float32)
b32 = (rng.random((37, 29)) * 2 - 1).astype(np.float32)
kw = dict(chunks=(8, 16), compression="gzip") if args.layout == "gzip" else {}


stored = {"A": a32, "B": b32}
if args.slice:  # A inside a bigger dataset (rows 5..50, cols 3..40), B as its transpose
    big = (rng.random((61, 47)) * 2 - 1).astype(np.float32)
    big[5:50, 3:40] = a32
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
            d = h5py.h5d.create(f.id, name.encode(), bfloat16_type(), h5py.h5s.create_simple(x.shape), dcpl=dcpl)
            d.write(h5py.h5s.ALL, h5py.h5s.ALL, x)
with h5py.File(r.path("in.h5"), "r") as f:  # the stored values, widened (exactly) by HDF5
    a = f["A"].astype(np.float64)[...]
    b = f["B"].astype(np.float64)[...]
if args.slice:
    a, b = a[5:50, 3:40], b.T
check(not np.array_equal(a, a32.astype(np.float64)), "the inputs were stored in half precision (rounded)")

a_ref = r.path("in.h5") + (":/A[5:50, 3:40]" if args.slice else ":/A")
res = r.run(["run", "--a", a_ref, "--b", r.path("in.h5") + ":/B", "--c", r.path("c.h5") + ":/C",
             "--backend", "cpu", "--dtype", args.dtype, "--report", r.path("report.json"),
             # C as computed (half_output.py checks C stored in half precision, the default here).
             "--c-dtype", "f64" if args.dtype == "f64" else "f32"] + (["--transpose-b"] if args.slice else []))
with h5py.File(r.path("c.h5"), "r") as f:
    c = f["C"][...]
want_dtype = np.float64 if args.dtype == "f64" else np.float32
check(c.dtype == want_dtype, f"C is {c.dtype}, expected {want_dtype}")
rel = check_product(a, b, c, want_dtype)
print(f"ok: C {c.shape} {c.dtype} from {args.store} inputs, relative error {rel:.3e}")
print("PASS")
