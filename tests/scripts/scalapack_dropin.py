"""libtessera_scalapack against the system's ScaLAPACK (issue 44): the same pdgemm_/psgemm_
program (tests/scalapack/pgemm_check.c), built against Debian's ScaLAPACK and with
libtessera_scalapack linked first, runs the same cases on one BLACS grid; each C (margins
included) is checked against numpy in float64 with a bound from precision and K, and the two
builds against each other.

  --grid RxC         the BLACS grid; --np may exceed R*C (the rest call p?gemm_ outside the grid)
  --mode cases       random and edge cases (block sizes 1, 7, 64; offsets; N/T/C; alpha/beta)
  --mode handback    the same cases with TESSERA_SCALAPACK_MIN_FLOPS splitting them: the small
                     ones are handed to ScaLAPACK, the others are not (TESSERA_SCALAPACK_VERBOSE)
  --mode invalid     an invalid argument: both builds stop with PBLAS's own message, nonzero
  --mode preload     the ScaLAPACK build run with LD_PRELOAD=libtessera_scalapack.so takes tessera
  --mode installed   pgemm_check.c compiled here with the MPI C compiler and
                     $(pkg-config --libs tessera-scalapack) of an installed prefix, then the cases
"""
import os
import random
import re
import shlex
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Runner, check, fail, parser  # noqa: E402


def value(c, which, i, j):
    """pgemm_check.c's value(): element (i, j) of matrix `which` of case c (int64 arithmetic)."""
    h = (i * 7919 + j * 104729 + which * 1299709 + c * 15485863) % 2000003
    return h / 1000001.5 - 1.0


def global_matrix(c, which, rows, cols, single, complex_=False):
    """Matrix `which` of case c as pgemm_check.c fills it; a complex one's imaginary parts are
    value() of matrix which + 3."""
    i = np.arange(rows, dtype=np.int64)[:, None]
    j = np.arange(cols, dtype=np.int64)[None, :]
    v = value(c, which, i, j)
    v = v.astype(np.float32).astype(np.float64) if single else v
    return v + 1j * global_matrix(c, which + 3, rows, cols, single) if complex_ else v


def single_of(x):
    return x["prec"] in "sSc"


def complex_of(x):
    return x["prec"] in "cz"


def as_case(x, values):
    """C as read (a complex element's parts side by side) in the case's type."""
    return values.view(np.complex128) if complex_of(x) else values


def one_array(x):
    """X: A, B and C are disjoint sub-matrices of one array (matrix 0 of the case)."""
    return x["prec"] == "X"


def finite(x):
    return all(np.isfinite(x.get(key, 0.0)) for key in ("alpha", "beta", "alpha_im", "beta_im"))


def aliased(x):
    """S, D: B is the very array A (and descriptor), as X^T X is called."""
    return x["prec"] in "SD"


def make_cases(grid, seed):
    rng = random.Random(seed)
    pr, pc = grid
    cases = []
    # B the very array A: X^T X and X X^T, at the same offsets.
    for prec, ta, tb in [("D", "T", "N"), ("S", "N", "T")]:
        cases.append(dict(prec=prec, ta=ta, tb=tb, m=23, n=23, k=41, alpha=1.0, beta=0.0, mb=7, nb=5, ia=3, ja=2,
                          ib=3, jb=2, ic=2, jc=1, rsrc=0, csrc=pc - 1))
    # Edge cases first: 1x1x1, K = 1, an empty product, K = 0, alpha = 0, beta = 0 over any C.
    base = dict(prec="d", ta="N", tb="N", alpha=1.0, beta=0.0, mb=7, nb=7, ia=1, ja=1, ib=1, jb=1, ic=1, jc=1,
                rsrc=0, csrc=0)
    # A, B and C three disjoint sub-matrices of one array (PDGETRF's update: C below A and B),
    # large enough that the drop-in takes it and would read A and B in place where it can.
    m, k, n = 31, 17, 29
    cases.append(dict(prec="X", ta="N", tb="N", m=m, n=n, k=k, alpha=-1.0, beta=1.0, mb=8, nb=8, ia=1, ja=1,
                      ib=m + 1, jb=1, ic=m + k + 1, jc=1, rsrc=0, csrc=0))
    cases.append(dict(prec="X", ta="T", tb="N", m=m, n=n, k=k, alpha=0.5, beta=-2.0, mb=64, nb=64, ia=1, ja=1,
                      ib=k + 1, jb=1, ic=2 * k + 1, jc=2, rsrc=0, csrc=0))
    # alpha or beta NaN / Inf: handed to ScaLAPACK, whose C holds NaN (or Inf) as BLAS's would.
    cases.append(dict(base, m=9, n=8, k=7, alpha=float("nan"), beta=1.0))
    cases.append(dict(base, m=9, n=8, k=7, alpha=1.0, beta=float("inf")))
    for m, n, k, extra in [(1, 1, 1, {}), (13, 11, 1, {}), (5, 7, 0, {"beta": 2.0}), (0, 9, 4, {}),
                           (9, 8, 7, {"alpha": 0.0, "beta": -1.5}), (9, 8, 7, {"alpha": 0.0, "beta": 0.0}),
                           (64, 1, 70, {"mb": 64, "nb": 64}), (1, 37, 70, {"ta": "T", "mb": 1, "nb": 1})]:
        cases.append(dict(base, m=m, n=n, k=k, **extra))
    # Complex: every op pair once (C the conjugate transpose), complex alpha and beta, on odd layouts.
    for i, (ta, tb) in enumerate((a, b) for a in "NTC" for b in "NTC"):
        cases.append(dict(base, prec="cz"[i % 2], ta=ta, tb=tb, m=37, n=29, k=53, alpha=0.5, alpha_im=-1.25,
                          beta=[0.0, -1.0][i % 2], beta_im=[0.0, 2.0][i % 2], mb=[7, 3, 64][i % 3], nb=[5, 7][i % 2],
                          ia=1 + i % 3, ja=2, ib=3, jb=1 + i % 2, ic=2, jc=1, rsrc=i % pr, csrc=(i + 1) % pc))
    cases.append(dict(base, prec="z", m=1, n=1, k=1, alpha=0.0, alpha_im=1.0))
    cases.append(dict(base, prec="c", m=13, n=11, k=1, ta="C", alpha=2.0, alpha_im=0.0, beta=0.0, beta_im=1.0))
    for _ in range(34):
        mb = rng.choice([1, 7, 64, 3])
        nb = rng.choice([1, 7, 64, 5])
        cases.append(dict(
            prec=rng.choice("sdcz"), ta=rng.choice("NTC"), tb=rng.choice("NTC"),
            m=rng.choice([1, 2, 13, 37, 70, 101]), n=rng.choice([1, 3, 17, 41, 70, 97]),
            k=rng.choice([1, 5, 19, 64, 83, 130]),
            alpha=rng.choice([1.0, -0.5, 2.25]), beta=rng.choice([0.0, 1.0, -1.75]),
            mb=mb, nb=nb, ia=rng.choice([1, 1, 3, 9]), ja=rng.choice([1, 2, 8]), ib=rng.choice([1, 4, 11]),
            jb=rng.choice([1, 6]), ic=rng.choice([1, 2, 65]), jc=rng.choice([1, 7]),
            rsrc=rng.randrange(pr), csrc=rng.randrange(pc)))
        if complex_of(cases[-1]):
            cases[-1].update(alpha_im=rng.choice([0.0, 0.75]), beta_im=rng.choice([0.0, -0.5]))
    return cases


def case_line(x):
    return ("{prec} {ta} {tb} {m} {n} {k} {alpha!r} {beta!r} {mb} {nb} {ia} {ja} {ib} {jb} {ic} {jc} {rsrc} {csrc} "
            "{alpha_im!r} {beta_im!r}".format(**dict(dict(alpha_im=0.0, beta_im=0.0), **x)))


def read_output(path):
    out = {}
    with open(path) as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines) and lines[i]:
        _, c, rows, cols = lines[i].split()
        c, rows, cols = int(c), int(rows), int(cols)
        out[c] = np.array([[float(v) for v in lines[i + 1 + r].split()] for r in range(rows)]).reshape(rows, cols)
        i += 1 + rows
    return out


def reference(c, x):
    """The expected global C of case c (float64), and the elementwise error bound."""
    single, cplx = single_of(x), complex_of(x)
    na, nb = x["ta"] == "N", x["tb"] == "N"
    m, n, k = x["m"], x["n"], x["k"]
    a_rows, a_cols = (m, k) if na else (k, m)
    b_rows, b_cols = (k, n) if nb else (n, k)
    if one_array(x):
        rows = max(x["ia"] - 1 + a_rows, x["ib"] - 1 + b_rows, x["ic"] - 1 + m) + 2
        cols = max(x["ja"] - 1 + a_cols, x["jb"] - 1 + b_cols, x["jc"] - 1 + n) + 3
        A = B = C = global_matrix(c, 0, rows, cols, single)
    else:
        A = global_matrix(c, 0, x["ia"] - 1 + a_rows + 2, x["ja"] - 1 + a_cols + 3, single, cplx)
        B = A if aliased(x) else global_matrix(c, 1, x["ib"] - 1 + b_rows + 2, x["jb"] - 1 + b_cols + 3, single, cplx)
        C = global_matrix(c, 2, x["ic"] - 1 + m + 2, x["jc"] - 1 + n + 3, single, cplx)
    a = A[x["ia"] - 1:x["ia"] - 1 + a_rows, x["ja"] - 1:x["ja"] - 1 + a_cols]
    b = B[x["ib"] - 1:x["ib"] - 1 + b_rows, x["jb"] - 1:x["jb"] - 1 + b_cols]
    op = {"N": lambda v: v, "T": lambda v: v.T, "C": lambda v: v.conj().T}
    opa, opb = op[x["ta"]](a), op[x["tb"]](b)
    alpha, beta = x["alpha"], x["beta"]
    if single:
        alpha, beta = float(np.float32(alpha)), float(np.float32(beta))
    if cplx:
        part = np.float32 if single else np.float64
        alpha = complex(alpha, float(part(x.get("alpha_im", 0.0))))
        beta = complex(beta, float(part(x.get("beta_im", 0.0))))
    C = C.copy()
    expect = C.copy()
    bound = np.zeros(C.shape)
    sub = (slice(x["ic"] - 1, x["ic"] - 1 + m), slice(x["jc"] - 1, x["jc"] - 1 + n))
    if beta == 0:
        C[sub] = np.nan  # what pgemm_check.c puts there: beta = 0 must not read it
        expect[sub] = np.nan
    if m and n:
        old = C[sub]
        prod = opa @ opb if k else np.zeros((m, n), C.dtype)
        with np.errstate(invalid="ignore"):
            expect[sub] = alpha * prod + (beta * old if beta != 0 else 0.0)
        eps = np.finfo(np.float32 if single else np.float64).eps
        with np.errstate(invalid="ignore"):
            mag = abs(alpha) * (np.abs(opa) @ np.abs(opb) if k else np.zeros((m, n)))
            if beta != 0:
                mag += abs(beta) * np.abs(old)
        # A complex element's parts are sums of 2K real products: twice the terms, and |got - want|
        # (complex) is up to sqrt(2) times its parts' largest error.
        bound[sub] = (2.0 * (2 * k + 3) * 1.5 if cplx else 2.0 * (k + 3)) * eps * mag + 1e-300
    return expect, bound


def launch(runner, args, binary, cases_path, out_path, env=None, expect_ok=True, rank_env=None):
    """mpiexec -np NP binary ...; `rank_env` is set for the ranks only (Open MPI's -x), not for
    mpiexec itself (a preloaded library built with the sanitizers cannot load into mpiexec)."""
    x = [a for k, v in (rank_env or {}).items() for a in ("-x", f"{k}={v}")]
    cmd = shlex.split(args.mpiexec) + x + ["-np", str(args.np), binary, str(args.grid[0]), str(args.grid[1]),
                                           cases_path, out_path]
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    full = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    full.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=240, env=full, cwd=runner.dir)
    sys.stdout.write(p.stdout[-4000:])
    sys.stdout.write(p.stderr[-6000:])
    if expect_ok and p.returncode != 0:
        fail(f"{os.path.basename(binary)} exited with {p.returncode}")
    return p


def compare(cases, results, label):
    for c, x in enumerate(cases):
        check(c in results, f"{label}: no C for case {c} ({case_line(x)})")
        expect, bound = reference(c, x)
        got = as_case(x, results[c])
        check(got.shape == expect.shape, f"{label}: case {c}: C is {got.shape}, expected {expect.shape}")
        err = np.abs(got - expect)
        with np.errstate(invalid="ignore"):
            bad = ~(err <= bound)  # NaN where a number is expected fails
        nonfinite = ~np.isfinite(expect)  # alpha or beta NaN / Inf: C as BLAS leaves it
        bad[nonfinite] = np.isfinite(got[nonfinite]) | (np.isnan(got[nonfinite]) != np.isnan(expect[nonfinite]))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            fail(f"{label}: case {c} ({case_line(x)}): C[{i},{j}] = {got[i, j]!r}, numpy {expect[i, j]!r} "
                 f"(error {err[i, j]:.3g} > bound {bound[i, j]:.3g}; {int(bad.sum())} elements off)")
    print(f"{label}: {len(cases)} cases agree with numpy")


def main():
    p = parser(__doc__)
    p.add_argument("--grid", required=True, type=lambda s: tuple(int(v) for v in s.split("x")))
    p.add_argument("--check-scalapack", required=True)
    p.add_argument("--check-tessera", required=True)
    p.add_argument("--library", required=True)
    p.add_argument("--mode", default="cases", choices=["cases", "handback", "invalid", "preload", "installed"])
    p.add_argument("--prefix", help="--mode installed: the installed prefix")
    p.add_argument("--libdir", default="lib", help="--mode installed: its library directory, relative")
    p.add_argument("--cc", help="--mode installed: the MPI C compiler")
    p.add_argument("--system-scalapack", help="--mode installed: the system ScaLAPACK library to link after")
    args = p.parse_args()
    check(args.np >= args.grid[0] * args.grid[1], "--np is below the grid's size")
    r = Runner(args)
    cases = make_cases(args.grid, seed=1000 + 10 * args.grid[0] + args.grid[1])
    cases_path = r.path("cases.txt")

    if args.mode == "invalid":
        # M = -1, then IA = 0: ScaLAPACK's own check stops the program, with or without tessera
        # in front, and the drop-in says why it handed the call over.
        plain = next(x for x in cases if x["prec"] == "d" and finite(x))
        for bad, said in [(dict(plain, m=-1), "M, N or K is negative"),
                          (dict(plain, ia=0), "a sub-matrix index is below 1")]:
            with open(cases_path, "w") as f:
                f.write(case_line(bad) + "\n")
            outs = []
            for binary in (args.check_scalapack, args.check_tessera):
                res = launch(r, args, binary, cases_path, r.path("bad.txt"), expect_ok=False,
                             env={"TESSERA_SCALAPACK_VERBOSE": "1", "TESSERA_SCALAPACK": "tessera"})
                check(res.returncode != 0, f"{os.path.basename(binary)}: '{case_line(bad)}' ran to exit status 0")
                check(re.search(r"PDGEMM", res.stdout + res.stderr, re.I) is not None,
                      f"{os.path.basename(binary)}: ScaLAPACK's message naming PDGEMM is missing")
                outs.append(res.stdout + res.stderr)
            check(f"handed to ScaLAPACK: {said}" in outs[1],
                  f"the drop-in did not say it handed the call over because '{said}'")
            print(f"{said}: both builds stop with ScaLAPACK's message")
        return

    with open(cases_path, "w") as f:
        for x in cases:
            f.write(case_line(x) + "\n")
    in_grid = args.grid[0] * args.grid[1]
    if args.mode == "installed":
        # As a user builds against the install: pkg-config's flags, tessera's library first.
        env_pc = dict(os.environ, PKG_CONFIG_PATH=os.path.join(args.prefix, args.libdir, "pkgconfig"))
        q = subprocess.run(["pkg-config", "--libs", "tessera-scalapack"], capture_output=True, text=True, env=env_pc)
        check(q.returncode == 0, f"pkg-config does not find tessera-scalapack in {args.prefix}: {q.stderr}")
        exe = r.path("pgemm_check_installed")
        src = os.path.join(args.source_dir, "tests", "scalapack", "pgemm_check.c")
        cmd = [args.cc, src, "-o", exe] + q.stdout.split() + [args.system_scalapack, "-lm"]
        print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        q = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(q.stdout + q.stderr)
        check(q.returncode == 0, "pgemm_check.c does not build with pkg-config's flags")
        args.check_tessera = exe
    env = {"TESSERA_SCALAPACK_VERBOSE": "1", "TESSERA_SCALAPACK": "tessera"}
    if args.mode == "handback":
        env.update(TESSERA_SCALAPACK="auto", TESSERA_SCALAPACK_MIN_FLOPS="100000")
    ref = launch(r, args, args.check_scalapack, cases_path, r.path("scalapack.txt"))
    check("tessera" not in ref.stderr, "the ScaLAPACK build printed tessera's lines")
    compare(cases, read_output(r.path("scalapack.txt")), "ScaLAPACK")

    if args.mode == "preload":
        res = launch(r, args, args.check_scalapack, cases_path, r.path("preloaded.txt"),
                     env=env, rank_env={"LD_PRELOAD": args.library})
        check(re.search(r"tessera p[sdcz]gemm_: .* tessera \(cpu|cuda\)", res.stderr) is not None,
              "LD_PRELOAD=libtessera_scalapack.so did not bring tessera's p?gemm_")
        compare(cases, read_output(r.path("preloaded.txt")), "ScaLAPACK build with LD_PRELOAD")
        return

    res = launch(r, args, args.check_tessera, cases_path, r.path("tessera.txt"), env=env)
    got = read_output(r.path("tessera.txt"))
    compare(cases, got, "tessera drop-in")
    # Each call is reported once, by the grid's process 0: tessera's or ScaLAPACK's.
    ran = re.findall(r"tessera (p[sdcz]gemm_): (\d+)x(\d+)x(\d+) (.*)", res.stderr)
    check(len(ran) == len(cases), f"{len(ran)} calls reported, {len(cases)} made")
    for (routine, m, n, k, how), x in zip(ran, cases):
        flops = 2 * int(m) * int(n) * int(k)
        handed = how.startswith("handed to ScaLAPACK")
        if not finite(x):
            check(how == "handed to ScaLAPACK: alpha or beta is NaN or Inf", f"{routine} alpha/beta not finite: '{how}'")
        elif args.mode == "handback":
            check(handed == (flops < 100000), f"{routine} {m}x{n}x{k} ({flops} flops): '{how}'")
        else:
            check(not handed, f"{routine} {m}x{n}x{k} handed to ScaLAPACK: '{how}'")
    sc = read_output(r.path("scalapack.txt"))
    for c, x in enumerate(cases):
        if not finite(x):
            check(np.array_equal(got[c], sc[c], equal_nan=True), f"case {c}: a handed-back C differs from ScaLAPACK's")
            continue
        sc[c], got[c] = as_case(x, sc[c]), as_case(x, got[c])
        scale = np.maximum(np.abs(sc[c]), 1.0)
        tol = 1e-4 if single_of(x) else 1e-11
        check(np.all(np.abs(got[c] - sc[c]) <= tol * scale * max(1, x["k"])),
              f"case {c}: tessera's C and ScaLAPACK's differ beyond {tol} x K")
    print(f"tessera and ScaLAPACK agree on {len(cases)} cases, grid {args.grid[0]}x{args.grid[1]}, "
          f"{args.np - in_grid} process(es) outside it")


if __name__ == "__main__":
    main()
