"""Windows of the inputs (issue 43 item 3): `--a FILE:/A[r0:r1, c0:c1]` reads only that block of A
(numpy's bounds: left out, negative), as B's, with --transpose-a/-b applied to the window, from
contiguous and gzip-chunked storage, on any rank count; numpy checks C against float64. With
--case, the refusals: a window outside the dataset and a step. (A window of C: c_windows.py.)"""
import h5py
import numpy as np

from common import check, check_product, parser, Runner, write

p = parser(__doc__)
p.add_argument("--layout", default="contiguous", choices=["contiguous", "gzip"])
p.add_argument("--ta", action="store_true")
p.add_argument("--tb", action="store_true")
p.add_argument("--case", default="", choices=["", "outside", "step"])
args = p.parse_args()

r = Runner(args)
rng = np.random.default_rng(43)
big_a = rng.random((61, 47)) * 2 - 1  # windows of these are the operands
big_b = rng.random((53, 59)) * 2 - 1
kw = dict(chunks=(8, 16), compression="gzip") if args.layout == "gzip" else {}
write(r.path("in.h5"), "/A", big_a, **kw)
write(r.path("in.h5"), "/B", big_b, **kw)
# op(A) = A window (M x K), op(B) = B window (K x N); the stored windows are their transposes where asked.
wa, sa = "[5:-3, 7:38]", (slice(5, -3), slice(7, 38))      # 53 x 31
wb, sb = "[-31:, :50]", (slice(-31, None), slice(None, 50))  # 31 x 50
if args.ta:
    wa, sa = "[3:34, 2:-9]", (slice(3, 34), slice(2, -9))    # 31 x 36: op(A) is 36 x 31
if args.tb:
    wb, sb = "[1:51, 10:41]", (slice(1, 51), slice(10, 41))  # 50 x 31: op(B) is 31 x 50
a = big_a[sa].T if args.ta else big_a[sa]
b = big_b[sb].T if args.tb else big_b[sb]
cmd = ["run", "--a", r.path("in.h5") + ":/A" + wa, "--b", r.path("in.h5") + ":/B" + wb,
       "--c", r.path("c.h5") + ":/C", "--backend", "cpu", "--report", r.path("report.json")]
cmd += (["--transpose-a"] if args.ta else []) + (["--transpose-b"] if args.tb else [])

if args.case:
    if args.case == "outside":
        cmd[2], words = r.path("in.h5") + ":/A[0:62, :]", ["[0:62, :]", "outside 0:61"]
    else:
        cmd[2], words = r.path("in.h5") + ":/A[0:10:2, :]", ["step"]
    res = r.run(cmd, expect_ok=False)
    err = res.stderr + res.stdout
    check(res.returncode != 0, "the run must fail")
    for w in words:
        check(w in err, f"the message must name {w!r}: {err}")
    check("Abort" not in err and "MPI_ABORT" not in err, "a clean failure on every rank")
    print("PASS")
    raise SystemExit(0)

r.run(cmd)
with h5py.File(r.path("c.h5"), "r") as f:
    c = f["/C"][...]
check(c.shape == (a.shape[0], b.shape[1]), f"C has shape {c.shape}, expected {(a.shape[0], b.shape[1])}")
rel = check_product(a, b, c, np.float64)
print(f"ok: relative error {rel:.3e}")
print("PASS")
