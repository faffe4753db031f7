"""One matrix of a 3-D dataset as an input (issue 42 item 2, its reading side): `--a FILE:/A[i]`
names matrix i of a batch stored b x M x K (as torch and h5py users store batches; negative counts
from the end), `FILE:/A[i, r0:r1, c0:c1]` a window of it; from contiguous (read with pread) and
gzip-chunked storage (through HDF5), with --transpose-a/-b, on any rank count, and in a manifest
of many products, one per matrix; numpy checks every C in float64. With --case, the refusals: a
3-D dataset without an index, an index outside the batch, an index on a 2-D dataset."""
import h5py
import numpy as np

from common import check, check_product, parser, Runner, write

p = parser(__doc__)
p.add_argument("--layout", default="contiguous", choices=["contiguous", "gzip"])
p.add_argument("--ta", action="store_true")
p.add_argument("--case", default="", choices=["", "manifest", "no-index", "outside", "2d-index"])
args = p.parse_args()

r = Runner(args)
rng = np.random.default_rng(42)
batch_a = rng.random((4, 37, 29)) * 2 - 1    # 4 matrices of 37 x 29
if args.ta:
    batch_a = np.ascontiguousarray(batch_a.transpose(0, 2, 1))  # 4 x 29 x 37: op(A) = its transpose
batch_b = (rng.random((3, 29, 23)) * 2 - 1).astype(np.float32)
kw = dict(chunks=(2, 8, 16), compression="gzip") if args.layout == "gzip" else {}
with h5py.File(r.path("in.h5"), "w") as f:
    f.create_dataset("A", data=batch_a, **kw)
    f.create_dataset("B", data=batch_b, **kw)
write(r.path("in.h5"), "/flat", batch_a[0])
ta = ["--transpose-a"] if args.ta else []


def op_a(i):
    return batch_a[i].T if args.ta else batch_a[i]


if args.case in ("no-index", "outside", "2d-index"):
    a_ref, words = {"no-index": (":/A", ["is 3-D (4x", "A[0]"]),
                    "outside": (":/A[4]", ["the matrix 4 of", "holds 4 matrices (0 to 3)"]),
                    "2d-index": (":/flat[1]", ["is 2-D", "matrix index [1]"])}[args.case]
    res = r.run(["run", "--a", r.path("in.h5") + a_ref, "--b", r.path("in.h5") + ":/B[0]", "--c",
                 r.path("c.h5") + ":/C", "--backend", "cpu"] + ta, expect_ok=False)
    err = res.stderr + res.stdout
    check(res.returncode != 0, "the run must fail")
    for w in words:
        check(w in err, f"the message must name {w!r}: {err}")
    check("Abort" not in err and "MPI_ABORT" not in err, "a clean failure on every rank")
    print("PASS")
    raise SystemExit(0)

if args.case == "manifest":
    # One product per matrix of A, B's matrix i % 3, C's as datasets of one output file.
    lines = []
    for i in range(4):
        lines += ["[[product]]", f'a = "{r.path("in.h5")}:/A[{i}]"', f'b = "{r.path("in.h5")}:/B[{i % 3 - 3}]"',
                  f'c = "{r.path("c.h5")}:/C{i}"'] + (["transpose-a = true"] if args.ta else []) + [""]
    with open(r.path("products.toml"), "w") as f:
        f.write("\n".join(lines))
    r.run(["run", "--manifest", r.path("products.toml"), "--backend", "cpu"])
    with h5py.File(r.path("c.h5"), "r") as f:
        for i in range(4):
            rel = check_product(op_a(i), batch_b[i % 3].astype(np.float64), f[f"/C{i}"][...], np.float64)
            print(f"ok: C{i} relative error {rel:.3e}")
    print("PASS")
    raise SystemExit(0)

# Matrix 2 of A whole; a window of B's last matrix (rows 0:29 of 29, columns 3:20).
r.run(["run", "--a", r.path("in.h5") + ":/A[2]", "--b", r.path("in.h5") + ":/B[-1, :, 3:20]",
       "--c", r.path("c.h5") + ":/C", "--backend", "cpu", "--report", r.path("report.json")] + ta)
with h5py.File(r.path("c.h5"), "r") as f:
    c = f["/C"][...]
b = batch_b[2][:, 3:20].astype(np.float64)
check(c.shape == (37, 17), f"C has shape {c.shape}, expected (37, 17)")
rel = check_product(op_a(2), b, c, np.float64)
print(f"ok: relative error {rel:.3e}")
print("PASS")
