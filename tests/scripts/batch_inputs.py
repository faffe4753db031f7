"""One matrix of a 3-D dataset as an input (issue 42 item 2, its reading side): `--a FILE:/A[i]`
names matrix i of a batch stored b x M x K (as torch and h5py users store batches; negative counts
from the end), `FILE:/A[i, r0:r1, c0:c1]` a window of it; from contiguous (read with pread) and
gzip-chunked storage (through HDF5), with --transpose-a/-b, on any rank count, and in a manifest
of many products, one per matrix (manifest-3d: a B per matrix, each C[i] written into its matrix
of an existing 3-D C); a whole batch of A (named without an index) times a shared B,
C written as the batch of the products (b x M x N, also into an existing file with --beta);
numpy checks every C in float64. With --case, the refusals: a batch of B (a B per matrix), an
index outside the batch, an index on a 2-D dataset, --transpose-a of a batch, a window of a whole
batch."""
import h5py
import numpy as np

from common import check, check_product, parser, Runner, write

p = parser(__doc__)
p.add_argument("--layout", default="contiguous", choices=["contiguous", "gzip"])
p.add_argument("--ta", action="store_true")
p.add_argument("--case", default="", choices=["", "manifest", "manifest-3d", "stacked", "stacked-beta", "no-index", "outside", "2d-index",
                                             "transposed-batch", "batch-window"])
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


if args.case in ("no-index", "outside", "2d-index", "transposed-batch", "batch-window"):
    a_ref, b_ref, words = {
        "no-index": (":/A[0]", ":/B", ["B '", "is a batch of 3 matrices (3x29x23)", "A[i], B[i] and C[i]"]),
        "outside": (":/A[4]", ":/B[0]", ["the matrix 4 of", "holds 4 matrices (0 to 3)"]),
        "2d-index": (":/flat[1]", ":/B[0]", ["is 2-D", "matrix index [1]"]),
        "transposed-batch": (":/A", ":/B[0]", ["is a batch of 4 matrices: --transpose-a of a batch"]),
        "batch-window": (":/A[0:10, :]", ":/B[0]", ["a window [0:10, :] of the whole batch"])}[args.case]
    extra = ["--transpose-a"] if args.case == "transposed-batch" else ta
    res = r.run(["run", "--a", r.path("in.h5") + a_ref, "--b", r.path("in.h5") + b_ref, "--c",
                 r.path("c.h5") + ":/C", "--backend", "cpu"] + extra, expect_ok=False)
    err = res.stderr + res.stdout
    check(res.returncode != 0, "the run must fail")
    for w in words:
        check(w in err, f"the message must name {w!r}: {err}")
    check("Abort" not in err and "MPI_ABORT" not in err, "a clean failure on every rank")
    print("PASS")
    raise SystemExit(0)

if args.case in ("stacked", "stacked-beta"):
    # The whole batch of A (4 x 37 x 29) times B[1] (29 x 23): C the batch of the 4 products, 4 x 37 x 23, in
    # one GEMM of the stacked matrices; with --beta, into an existing file whose C (a batch) it updates.
    check(not args.ta, "the batch case runs without --ta")
    b = batch_b[1].astype(np.float64)
    want = np.einsum("imk,kn->imn", batch_a, b)
    cmd = ["run", "--a", r.path("in.h5") + ":/A", "--b", r.path("in.h5") + ":/B[1]", "--c", r.path("c.h5") + ":/C",
           "--backend", "cpu"]
    if args.case == "stacked-beta":
        c_old = rng.random((4, 37, 23)) * 2 - 1
        with h5py.File(r.path("c.h5"), "w") as f:
            f.create_dataset("C", data=c_old)
            f.create_dataset("other", data=np.arange(6.0))
        cmd += ["--beta", "0.5", "--alpha", "2", "--overwrite"]
        want = 2 * want + 0.5 * c_old
    r.run(cmd)
    with h5py.File(r.path("c.h5"), "r") as f:
        c = f["/C"][...]
        if args.case == "stacked-beta":
            check(np.array_equal(f["other"][...], np.arange(6.0)), "the file's other dataset untouched")
    check(c.shape == (4, 37, 23), f"C has shape {c.shape}, expected the batch (4, 37, 23)")
    for i in range(4):
        mag = np.abs(batch_a[i]) @ np.abs(b) * (2 if args.case == "stacked-beta" else 1) + (
            0.5 * np.abs(c_old[i]) if args.case == "stacked-beta" else 0)
        bad = np.abs(c[i] - want[i]) > 4 * 29 * np.finfo(np.float64).eps * mag + 1e-300
        check(not bad.any(), f"C[{i}]: {int(bad.sum())} elements beyond rounding")
    print(f"ok: C {c.shape}, the batch of 4 products")
    print("PASS")
    raise SystemExit(0)

if args.case in ("manifest", "manifest-3d"):
    # One product per matrix of A, B's matrix i % 3, C's as datasets of one output file, or (3-D)
    # as the matrices of an existing 4 x 37 x 23 C.
    into = args.case == "manifest-3d"
    if into:
        with h5py.File(r.path("c.h5"), "w") as f:
            f.create_dataset("C", data=np.full((4, 37, 23), np.nan), **kw)
    lines = []
    for i in range(4):
        lines += ["[[product]]", f'a = "{r.path("in.h5")}:/A[{i}]"', f'b = "{r.path("in.h5")}:/B[{i % 3 - 3}]"',
                  f'c = "{r.path("c.h5")}:/C' + (f'[{i}]"' if into else f'{i}"')] + \
            (["transpose-a = true"] if args.ta else []) + [""]
    with open(r.path("products.toml"), "w") as f:
        f.write("\n".join(lines))
    r.run(["run", "--manifest", r.path("products.toml"), "--backend", "cpu"] + (["--overwrite"] if into else []))
    with h5py.File(r.path("c.h5"), "r") as f:
        for i in range(4):
            c = f["/C"][i] if into else f[f"/C{i}"][...]
            rel = check_product(op_a(i), batch_b[i % 3].astype(np.float64), c, np.float64)
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
