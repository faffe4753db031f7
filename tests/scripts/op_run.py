"""C = alpha op(A) op(B) + beta C_old (issue #17 item 2): --transpose-a / --transpose-b read the
stored K x M (N x K) dataset as its transpose, --alpha scales the product, --beta adds the
existing C. h5py writes the inputs (and the old C), `mpiexec -np N tessera run` computes, numpy
checks against float64 with the bound of a length-K dot product (plus beta C_old's rounding).
Also the report's and C's records of the options, `tessera verify --transpose-*`, and with
--case the refusals: beta without an existing C, of the wrong shape, without --overwrite;
transposed shapes that do not agree; NaN in C_old."""
import json
import os

import h5py
import numpy as np

from common import check, fail, forced_env, gamma, leftovers, parser, Runner, skip_without_gpus, write

p = parser(__doc__)
p.add_argument("--m", type=int, default=7)
p.add_argument("--n", type=int, default=5)
p.add_argument("--k", type=int, default=3)
p.add_argument("--dtype", default="f64", choices=["f32", "f64"])
p.add_argument("--ta", action="store_true", help="--transpose-a: A stored K x M")
p.add_argument("--tb", action="store_true", help="--transpose-b: B stored N x K")
p.add_argument("--alpha", type=float, default=None)
p.add_argument("--beta", type=float, default=None)
p.add_argument("--backend", default="cpu")
p.add_argument("--algorithm", default="")
p.add_argument("--write", default="")
p.add_argument("--stream-chunks", type=int, default=0)
p.add_argument("--bands", type=int, default=0)
p.add_argument("--staged", default="", choices=["", "on", "off"], help="TESSERA_STAGED=1 / 0")
p.add_argument("--read-ahead", action="store_true", help="TESSERA_READ_AHEAD=force: B's first half read ahead")
p.add_argument("--stage-bytes", type=int, default=0, help="TESSERA_STAGE_BYTES")
p.add_argument("--need-gpus", type=int, default=0)
p.add_argument("--case", default="", choices=["", "beta-no-c", "beta-no-dataset", "beta-wrong-shape",
                                              "beta-no-overwrite", "transposed-mismatch", "nan-in-old-c"])
args = p.parse_args()

skip_without_gpus(args)

r = Runner(args)
rng = np.random.default_rng(args.m * 31 + args.n * 17 + args.k + 1000 * args.ta + 2000 * args.tb)
dt = np.float32 if args.dtype == "f32" else np.float64
m, n, k = args.m, args.n, args.k
a = (rng.random((m, k)) * 2 - 1).astype(dt)
b = (rng.random((k, n)) * 2 - 1).astype(dt)
old = (rng.random((m, n)) * 2 - 1).astype(dt)
# What the files hold: the transposes where asked (stored contiguous, as h5py writes them).
write(r.path("a.h5"), "/A", np.ascontiguousarray(a.T) if args.ta else a)
write(r.path("b.h5"), "/B", np.ascontiguousarray(b.T) if args.tb else b)
c_file = r.path("c.h5")
if args.beta is not None and args.case not in ("beta-no-c",):
    write(c_file, "/C", old)
    write(c_file, "/keep", np.arange(6.0).reshape(2, 3))  # another dataset: must survive untouched

cmd = ["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", c_file + ":/C",
       "--backend", args.backend, "--report", r.path("report.json")]
flags = (["--transpose-a"] if args.ta else []) + (["--transpose-b"] if args.tb else [])
cmd += flags
if args.alpha is not None:
    cmd += ["--alpha", repr(args.alpha)]
if args.beta is not None:
    cmd += ["--beta", repr(args.beta)]
if args.algorithm:
    cmd += ["--algorithm", args.algorithm]
if args.write:
    cmd += ["--write", args.write]
env = forced_env(args.stream_chunks, args.bands, args.staged, args.stage_bytes, args.read_ahead)


def refused(extra, words, *, expect_c=None):
    """The run fails on every rank with one `tessera: error:` line naming the cause, before any
    compute, and the old C (if any) is untouched."""
    res = r.run(cmd + extra, expect_ok=False, env=env)
    check(res.returncode != 0, "the run must fail")
    err = res.stderr + res.stdout
    check("tessera: error" in err, "one 'tessera: error' line expected")
    for w in words:
        check(w in err, f"the message must name {w!r}")
    check("Abort" not in err and "MPI_ABORT" not in err, "a clean failure on every rank, not an abort")
    if expect_c is not None:
        with h5py.File(c_file, "r") as f:
            check(np.array_equal(f["/C"][...], expect_c, equal_nan=True), "the old C must be untouched")
    check(not leftovers(r.dir), "no temporary left behind")
    print("PASS")
    raise SystemExit(0)


if args.case == "beta-no-c":
    refused(["--overwrite"], ["--beta", "cannot be read"])
if args.case == "beta-no-dataset":
    write(c_file, "/other", old, mode="w")
    refused(["--overwrite"], ["--beta", "cannot be read"])
if args.case == "beta-wrong-shape":
    with h5py.File(c_file, "a") as f:
        del f["/C"]
        f.create_dataset("/C", data=np.zeros((m + 1, n), dtype=dt))
    refused(["--overwrite"], ["--beta", f"{m + 1}x{n}", f"not {m}x{n}"])
if args.case == "beta-no-overwrite":
    refused([], ["--overwrite"], expect_c=old)
if args.case == "transposed-mismatch":
    # A stored K x M but --transpose-a not given: K x M times K x N does not agree (M != K).
    cmd = [c for c in cmd if c != "--transpose-a"]
    refused([], ["inner dimensions disagree"])
if args.case == "nan-in-old-c":
    bad = old.copy()
    bad[m - 1, n - 1] = np.nan
    with h5py.File(c_file, "a") as f:
        f["/C"][...] = bad
    refused(["--overwrite"], ["C_old", "non-finite", f"({m - 1}, {n - 1})"], expect_c=bad)

if args.beta is not None:
    cmd.append("--overwrite")
res = r.run(cmd, env=env)

with h5py.File(c_file, "r") as f:
    c = f["/C"][...]
    attrs = dict(f["/C"].attrs)
    if args.beta is not None:
        check(np.array_equal(f["/keep"][...], np.arange(6.0).reshape(2, 3)), "the file's other dataset changed")
check(c.dtype == dt, f"C dtype {c.dtype}, expected {np.dtype(dt)}")
check(c.shape == (m, n), f"C has shape {c.shape}, expected {(m, n)}")
alpha = 1.0 if args.alpha is None else args.alpha
beta = 0.0 if args.beta is None else args.beta
a64, b64, old64 = a.astype(np.float64), b.astype(np.float64), old.astype(np.float64)
ref = alpha * (a64 @ b64) + beta * old64
# |alpha| |A||B| gamma_K (one more rounding for alpha B) + |beta C_old| and the sum's rounding.
u = gamma(dt, 1)
mag = abs(alpha) * (np.abs(a64) @ np.abs(b64)) * (2 * gamma(dt, k) + 2 * u) + 2 * u * (abs(beta) * np.abs(old64)
                                                                                     + np.abs(ref))
err = np.abs(c.astype(np.float64) - ref)
check(np.all(np.isfinite(c)), "C has non-finite elements")
worst = float(np.max(err - 2 * mag))
check(np.all(err <= 2 * mag + 1e-300), f"C differs from alpha op(A) op(B) + beta C_old beyond the bound (by {worst:.3e})")
print(f"ok: max error {float(err.max()):.3e}")
check(not leftovers(r.dir), "temporary files left next to C")

rep = json.load(open(r.path("report.json")))
check(rep["transpose_a"] == args.ta and rep["transpose_b"] == args.tb, "report transposes")
check(rep["alpha"] == alpha and rep["beta"] == beta, f"report alpha/beta {rep['alpha']} {rep['beta']}")
check((rep["shape"]["m"], rep["shape"]["n"], rep["shape"]["k"]) == (m, n, k), f"report shape {rep['shape']}")
check(int(attrs["transpose_a"]) == int(args.ta) and int(attrs["transpose_b"]) == int(args.tb), "C attributes: transposes")
check(float(attrs["alpha"]) == alpha and float(attrs["beta"]) == beta, "C attributes: alpha, beta")
check(list(attrs["shape"]) == [m, n], f"shape attribute {attrs.get('shape')}")
if args.algorithm:
    check(rep["algorithm"] == args.algorithm, f"report algorithm {rep['algorithm']}")
if args.stream_chunks > 1 and rep["algorithm"] == "panels":
    check(rep["stream_chunks"] > 1 or m == 1, f"report stream_chunks {rep['stream_chunks']}, expected streaming")
if args.write == "gather":
    check(rep["write"].startswith("gather"), f"report write {rep['write']!r}")

# The dry run plans the logical shapes.
d = r.run(["run", "--dry-run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c",
           r.path("dry.h5") + ":/C", "--backend", args.backend] + flags)
check(f"C({m}x{n}) = A({m}x{k}) * B({k}x{n})" in d.stdout, "the dry run names the logical shapes")

# tessera verify checks such a C with the same flags (when beta is 0: C_old is gone).
if beta == 0:
    v = r.run(["verify", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", c_file + ":/C",
               "--full", "--alpha", repr(alpha)] + flags)
    check("verify PASSED" in v.stdout, "tessera verify --transpose-* must pass on a correct C")
print("PASS")
