"""Trusting the result: `tessera run --verify` passes good results and records it; `tessera verify`
(Freivalds, and --full) catches one planted wrong element; NaN/Inf inputs are refused with the
count and first position, and with --allow-nonfinite the result is never reported as verified."""
import json
import math
import os

import h5py
import numpy as np

from common import Runner, check, parser, write

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["verified-run", "planted-error", "nonfinite"])
p.add_argument("--dtype", default="f32", choices=["f32", "f64"])
args = p.parse_args()
r = Runner(args)
dt = np.float32 if args.dtype == "f32" else np.float64
rng = np.random.default_rng(11)
m, n, k = 157, 131, 263
a = (rng.random((m, k)) * 2 - 1).astype(dt)
b = (rng.random((k, n)) * 2 - 1).astype(dt)
A, B, C = r.path("a.h5"), r.path("b.h5"), r.path("c.h5")
write(A, "/A", a)
write(B, "/B", b)
io = ["--a", A + ":/A", "--b", B + ":/B", "--c", C + ":/C"]

if args.case == "verified-run":
    res = r.run(["run", *io, "--backend", "cpu", "--verify", "--report", r.path("r.json")])
    check("Freivalds check PASSED" in res.stdout, "run --verify must say it passed")
    with h5py.File(C, "r") as f:
        attrs = dict(f["/C"].attrs)
    check(attrs["verified"] in (b"passed", "passed"), f"verified attribute {attrs.get('verified')}")
    rep = json.load(open(r.path("r.json")))
    check(rep["verification"]["passed"] is True, "the report records the verification")
    check(all("verify" in e["phases"] for e in rep["ranks"] if e["active"]), "verify phase timed")

elif args.case == "planted-error":
    r.run(["run", *io, "--backend", "cpu"])
    ok = r.run(["verify", *io])
    check("verify PASSED" in ok.stdout, "the untouched result passes")
    with h5py.File(C, "r+") as f:
        c = f["/C"][...]
        i, j = 100, 77
        # The smallest error that is certainly not rounding: 1% of the element's magnitude
        # scale (sum of |a||b| over k), far above gamma_K but far below the matrix's norm.
        scale = float(np.abs(a[i, :].astype(np.float64)) @ np.abs(b[:, j].astype(np.float64)))
        f["/C"][i, j] = c[i, j] + dt(0.01 * scale)
    for extra in ([], ["--full"]):
        bad = r.run(["verify", *io, *extra], expect_ok=False)
        check(bad.returncode == 3, f"verify {' '.join(extra)} must exit 3 on a wrong C, got {bad.returncode}")
        check("verify FAILED" in bad.stderr and "FAILED" not in bad.stdout, "and say FAILED, on stderr")

elif args.case == "nonfinite":
    a2 = a.copy()
    a2[5, 9] = np.nan
    a2[40, 3] = np.inf
    write(A, "/A_nan", a2)
    io_nan = ["--a", A + ":/A_nan", "--b", B + ":/B", "--c", C + ":/C"]
    res = r.run(["run", *io_nan, "--backend", "cpu"], expect_ok=False)
    check(res.returncode != 0, "NaN/Inf input must be refused")
    check("2 non-finite" in res.stderr and "(5, 9)" in res.stderr, "count and first position named")
    check(not os.path.exists(C), "nothing written")
    res = r.run(["run", *io_nan, "--backend", "cpu", "--allow-nonfinite", "--verify"], expect_ok=False)
    check(res.returncode == 3, f"a NaN result is never verified (exit 3), got {res.returncode}")
    check(not os.path.exists(C), "a result that failed --verify is not written")
    r.run(["run", *io_nan, "--backend", "cpu", "--allow-nonfinite"])
    with h5py.File(C, "r") as f:
        check(math.isnan(f["/C"][5, 0]), "row 5 of C is NaN")
    v = r.run(["verify", "--a", A + ":/A_nan", "--b", B + ":/B", "--c", C + ":/C"], expect_ok=False)
    check(v.returncode == 3 and "non-finite" in v.stderr, "verify fails a C holding NaN (the reason on stderr)")
print("PASS")
