"""C written into a window of an existing dataset (issue 43 item 3): `--c FILE:/C[r0:r1, c0:c1]`,
`FILE:/C[i]` (one matrix of a 3-D dataset) or `FILE:/C[i, r0:r1, c0:c1]`, with --overwrite, is
written in place: the window holds alpha op(A) op(B) + beta C_old (C_old the window's own values),
every other element of the file and the dataset's attributes stay as they were. numpy checks the
whole dataset against float64.

--layout: contiguous, gzip (chunked and compressed), f32 (a float32 dataset, float64 compute: HDF5
converts); rank 0's HDF5 writes each through the file's journal. --case refusals: each refused run leaves
the file byte for byte as it was, no journal, and names its cause."""
import hashlib
import os

import h5py
import numpy as np

from common import Runner, check, check_product, leftovers, parser, write

p = parser(__doc__)
p.add_argument("--layout", default="contiguous", choices=["contiguous", "gzip", "f32"])
p.add_argument("--case", default="window", choices=["window", "matrix", "refusals"])
p.add_argument("--write", default="", choices=["", "gather", "in-place"])
args = p.parse_args()

r = Runner(args)
rng = np.random.default_rng(4343)
m, k, n = 23, 17, 29
a = rng.random((m, k)) * 2 - 1
b = rng.random((n, k)) * 2 - 1  # stored transposed: --transpose-b
write(r.path("in.h5"), "/A", a)
write(r.path("in.h5"), "/Bt", b)
out = r.path("out.h5")
kw = dict(chunks=(1, 6, 10) if args.case == "matrix" else (6, 10), compression="gzip") if args.layout == "gzip" else {}
store = np.float32 if args.layout == "f32" else np.float64
with h5py.File(out, "w") as f:
    f.create_dataset("keep", data=np.arange(6.0))
    if args.case == "matrix":  # a batch of 4 matrices of 30 x 40; C into [2, 3:26, 5:34]
        old = (rng.random((4, 30, 40)) * 2 - 1).astype(store)
        f.create_dataset("C", data=old, **kw).attrs["made_by"] = "a solver"
        target, place = "[2, 3:26, 5:34]", (2, slice(3, 26), slice(5, 34))
    else:  # a 41 x 50 matrix; C into [-30:-7, 10:39] (numpy's negative bounds)
        old = (rng.random((41, 50)) * 2 - 1).astype(store)
        f.create_dataset("C", data=old, **kw).attrs["made_by"] = "a solver"
        target, place = "[-30:-7, 10:39]", (slice(-30, -7), slice(10, 39))
    f.create_dataset("D", data=rng.integers(0, 9, size=(m, n)).astype(np.int32))
    f.create_dataset("E", data=np.zeros((m + 1, n)))


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


base = ["run", "--a", r.path("in.h5") + ":/A", "--b", r.path("in.h5") + ":/Bt", "--transpose-b",
        "--backend", "cpu", "-q"]

if args.case == "refusals":
    before = digest(out)
    cases = [
        ("no --overwrite", ["--c", out + ":/C" + target], ["window", "--overwrite"]),
        ("no such file", ["--c", r.path("none.h5") + ":/C[0:23, 0:29]", "--overwrite"], ["does not exist"]),
        ("no such dataset", ["--c", out + ":/Z[0:23, 0:29]", "--overwrite"], ["/Z", "not found"]),
        ("wrong shape", ["--c", out + ":/E[0:24, :]", "--overwrite"], ["24x29", "23x29"]),
        ("outside", ["--c", out + ":/E[0:23, 1:30]", "--overwrite"], ["outside"]),
        ("integers", ["--c", out + ":/D[:, :]", "--overwrite"], ["of int32", "float32 or float64"]),
        ("beta, wrong shape", ["--c", out + ":/E[1:, 1:]", "--overwrite", "--beta", "2"], ["23x28", "23x29"]),
    ]
    for what, extra, words in cases:
        res = r.run(base + extra, expect_ok=False)
        err = res.stdout + res.stderr
        lines = [ln for ln in err.splitlines() if ln.startswith("tessera: error")]
        check(res.returncode != 0, f"{what}: the run must fail")
        check(len(set(lines)) == 1, f"{what}: one error line expected, got {lines}")
        for w in words:
            check(w in lines[0], f"{what}: the message must name {w!r}: {lines[0]}")
        check("Abort" not in err and "MPI_ABORT" not in err, f"{what}: a clean failure on every rank")
        check(digest(out) == before, f"{what}: the file changed")
        check(not os.path.exists(out + ".tessera-journal") and not leftovers(r.dir), f"{what}: something left")
        print(f"ok: {what}: {lines[0]}")
    print("PASS")
    raise SystemExit(0)

alpha, beta = 1.5, -0.75
cmd = base + ["--c", out + ":/C" + target, "--overwrite", "--alpha", str(alpha), "--beta", str(beta),
              "--report", r.path("report.json")]
if args.write:
    cmd += ["--write", args.write]
r.run(cmd)
with h5py.File(out, "r") as f:
    got = f["C"][...]
    attrs = dict(f["C"].attrs)
    check(np.array_equal(f["keep"][...], np.arange(6.0)), "another dataset changed")
check(attrs == {"made_by": "a solver"}, f"the dataset's attributes changed: {attrs}")
check(got.dtype == store, f"the dataset's type changed to {got.dtype}")
expected = old.astype(np.float64)
window_old = expected[place].copy()
outside = np.ones(expected.shape, dtype=bool)
outside[place] = False
check(np.array_equal(got[outside], old[outside]), "elements outside the window changed")
# The window: alpha A B^T + beta C_old, within the product's bound (check_product) plus the store's rounding.
c_win = (got[place].astype(np.float64) - beta * window_old) / alpha
rel = check_product(a, b.T, c_win, np.float32 if args.layout == "f32" else np.float64)
check(not os.path.exists(out + ".tessera-journal") and not leftovers(r.dir), "a journal or temporary file is left")
print(f"ok: {args.case} {target} ({args.layout}) on {args.np} rank(s): relative error {rel:.3e}")
print("PASS")
