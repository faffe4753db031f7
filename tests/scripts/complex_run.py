"""Complex datasets in `tessera run` (issue 43 item 2): A and B stored as h5py stores complex64 and
complex128 (a compound of r and i), contiguous or gzip-chunked, multiplied through the BLAS's
complex GEMM by every algorithm; op(A), op(B) = X, X^T or X^H (--transpose-*, --conjugate-*);
complex alpha and beta (--alpha-imag, --beta-imag, beta adding the existing C); C written as the
same compound (in place, gathered, or chunked and gzip-compressed by the ranks). numpy checks C
against the complex128 product of the stored values with a bound from the precision and K.
--case refusals: a real and a complex operand, a complex alpha on real data, --c-dtype and a
kernel other than the BLAS's with complex data are refused with one clear line, nothing written."""
import json
import os

import h5py
import numpy as np

from common import Runner, check, gamma, parser, skip_without_gpus

p = parser(__doc__)
p.add_argument("--case", default="products", choices=["products", "refusals"])
p.add_argument("--store", default="complex128", choices=["complex64", "complex128"])
p.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
p.add_argument("--need-gpus", type=int, default=0)
args = p.parse_args()
skip_without_gpus(args)  # --need-gpus N with --backend cuda: SKIP visibly where there are fewer
BACKEND = ["--backend", args.backend]

r = Runner(args)
rng = np.random.default_rng(43)
ctype = np.dtype(args.store)
m, k, n = 37, 29, 31  # odd and prime


def cmat(rows, cols):
    return ((rng.random((rows, cols)) * 2 - 1) + 1j * (rng.random((rows, cols)) * 2 - 1)).astype(ctype)


a, b, old = cmat(m, k), cmat(k, n), cmat(m, n)
IN = r.path("in.h5")
with h5py.File(IN, "w") as f:
    f["A"] = a
    f["B"] = b
    f["At"] = a.T.copy()  # stored K x M: used as A through --transpose-a / --conjugate-a
    f["Bt"] = b.T.copy()
    f["AH"] = a.conj().T.copy()  # A^H stored: --conjugate-a gives back A
    f.create_dataset("Agz", data=a, chunks=(8, 16), compression="gzip", shuffle=True)
    f["Abe"] = a.astype(ctype.newbyteorder(">"))  # big-endian parts: converted by HDF5 as read
    f["R"] = rng.random((k, n))  # a real B
check(h5py.File(IN, "r")["A"].dtype == ctype, "h5py stored A as " + args.store)


def check_c(c, want, what, scale=1.0, extra=0.0):
    """|C - want| within 4 gamma_(K+2) (the part's precision) of scale |A||B| + extra, elementwise:
    an imaginary part dropped or a conjugation missed is off by O(|A||B|), far beyond rounding."""
    check(c.dtype == ctype, f"{what}: C is {c.dtype}, expected {ctype}")
    check(c.shape == want.shape, f"{what}: C is {c.shape}, expected {want.shape}")
    part = np.float32 if ctype == np.complex64 else np.float64
    mag = scale * (np.abs(a.astype(np.complex128)) @ np.abs(b.astype(np.complex128))) + extra
    bound = 4 * gamma(part, k + 2) * mag
    worst = float(np.max(np.abs(c.astype(np.complex128) - want) / bound))
    check(worst <= 1.0, f"{what}: max |C - want| / bound = {worst:.3f} (> 1)")
    print(f"ok: {what}: max error / bound {worst:.2e}")


def run_case(what, extra, want, scale=1.0):
    out = r.path("out.h5")
    if os.path.exists(out):
        os.remove(out)
    r.run(["run", "--b", IN + ":/B", "--c", out + ":/C", "-q"] + BACKEND + extra)
    with h5py.File(out, "r") as f:
        check_c(f["C"][...], want, what, scale)


A = a.astype(np.complex128)
B = b.astype(np.complex128)
if args.case == "products":
    run_case("A B", ["--a", IN + ":/A"], A @ B)
    run_case("A B, gzip-chunked A", ["--a", IN + ":/Agz"], A @ B)
    run_case("A B, big-endian A", ["--a", IN + ":/Abe"], A @ B)
    run_case("A^T B", ["--a", IN + ":/At", "--transpose-a"], A @ B)
    run_case("(A^H)^H B", ["--a", IN + ":/AH", "--conjugate-a"], A @ B)
    run_case("A^H B (conjugate of A^T stored)", ["--a", IN + ":/At", "--conjugate-a"], A.conj() @ B)
    run_case("alpha A B", ["--a", IN + ":/A", "--alpha", "0.5", "--alpha-imag", "-2"], (0.5 - 2j) * (A @ B),
             scale=abs(0.5 - 2j))
    for algorithm in ("panels", "summa", "ksplit"):
        run_case(f"A B, {algorithm}", ["--a", IN + ":/A", "--algorithm", algorithm], A @ B)
    run_case("A B, gathered", ["--a", IN + ":/A", "--write", "gather"], A @ B)
    # --verify: Freivalds' check in complex arithmetic before C is committed.
    res = r.run(["run", "--a", IN + ":/A", "--b", IN + ":/B", "--c", r.path("v.h5") + ":/C", "--verify",
                 ] + BACKEND)
    check("Freivalds check PASSED" in res.stdout + res.stderr and args.store in res.stdout + res.stderr,
          "run --verify checks a complex C and says it passed")
    with h5py.File(r.path("v.h5"), "r") as f:
        check_c(f["C"][...], A @ B, "A B, --verify")
    # B^H through --conjugate-b: Bt stored N x K, conjugated and transposed back to K x N.
    r.run(["run", "--a", IN + ":/A", "--b", IN + ":/Bt", "--conjugate-b", "--c", r.path("h.h5") + ":/C",
                 "-q"] + BACKEND)
    with h5py.File(r.path("h.h5"), "r") as f:
        check_c(f["C"][...], A @ B.conj(), "A conj(B) through --conjugate-b of B^T")
    # Chunked, gzip-compressed C (each rank compresses its own chunks).
    r.run(["run", "--a", IN + ":/A", "--b", IN + ":/B", "--c", r.path("z.h5") + ":/C", "--chunk", "8x16",
                 "--compression", "gzip", "--shuffle", "-q"] + BACKEND)
    with h5py.File(r.path("z.h5"), "r") as f:
        check(f["C"].chunks == (8, 16) and f["C"].compression == "gzip", "C is chunked and gzip-compressed")
        check_c(f["C"][...], A @ B, "A B into a gzip-chunked C")
    # beta complex: C = A B + beta C_old over an existing complex C.
    with h5py.File(r.path("beta.h5"), "w") as f:
        f["C"] = old
        f["C"].attrs["made_by"] = "an earlier step"
    beta = 0.25 + 0.75j
    r.run(["run", "--a", IN + ":/A", "--b", IN + ":/B", "--c", r.path("beta.h5") + ":/C", "--beta", "0.25",
           "--beta-imag", "0.75", "--overwrite", "-q"] + BACKEND)
    with h5py.File(r.path("beta.h5"), "r") as f:
        check_c(f["C"][...], A @ B + beta * old.astype(np.complex128), "A B + beta C_old, beta complex",
                extra=abs(beta) * np.abs(old.astype(np.complex128)))
    # The window of an existing complex dataset, beta applying to it only.
    whole = cmat(50, 40)
    with h5py.File(r.path("win.h5"), "w") as f:
        f["C"] = whole
    r.run(["run", "--a", IN + ":/A", "--b", IN + ":/B", "--c", r.path("win.h5") + ":/C[5:42, 4:35]", "--beta", "-1",
           "--overwrite", "-q"] + BACKEND)
    with h5py.File(r.path("win.h5"), "r") as f:
        got = f["C"][...]
    rest = whole.copy()
    rest[5:42, 4:35] = 0
    kept = got.copy()
    kept[5:42, 4:35] = 0
    check(np.array_equal(kept, rest), "the window's outside is unchanged")
    check_c(got[5:42, 4:35], A @ B - whole[5:42, 4:35].astype(np.complex128), "A B - C_old into a window",
            extra=np.abs(whole[5:42, 4:35].astype(np.complex128)))
    # A manifest: per-product conjugation and complex alpha, one launch.
    with open(r.path("m.toml"), "w") as fh:
        fh.write(f'''[[product]]
a = "{IN}:/At"
b = "{IN}:/B"
c = "{r.path('m.h5')}:/P1"
conjugate-a = true
[[product]]
a = "{IN}:/A"
b = "{IN}:/B"
c = "{r.path('m.h5')}:/P2"
alpha = 0
alpha-imag = 1
''')
    r.run(["run", "--manifest", r.path("m.toml"), "-q"] + BACKEND)
    with h5py.File(r.path("m.h5"), "r") as f:
        check_c(f["P1"][...], A.conj() @ B, "manifest product 1, conjugate-a")
        check_c(f["P2"][...], 1j * (A @ B), "manifest product 2, alpha-imag")
    # The report counts a complex multiply-add as 8 flops.
    res = r.run(["run", "--a", IN + ":/A", "--b", IN + ":/B", "--c", r.path("rep.h5") + ":/C", *BACKEND,
                 "-q", "--report", r.path("report.json")])
    with open(r.path("report.json")) as fh:
        rep = json.load(fh)
    check(rep["dtype"] == args.store, f"the report's dtype is {rep['dtype']}")
    check(rep["totals"]["flops"] == 8.0 * m * n * k, f"the report counts {rep['totals']['flops']} flops, not 8MNK")
    print("PASS")
else:
    def refused(extra, words, what):
        out = r.path("refused.h5")
        res = r.run(["run", "--c", out + ":/C", "--backend", "cpu"] + extra, expect_ok=False)
        errors = [line for line in res.stderr.splitlines() if line.startswith("tessera: error")]
        check(res.returncode != 0, f"{what}: exit 0")
        check(len(errors) >= 1 and all(w in errors[0] for w in words), f"{what}: expected {words} in {res.stderr!r}")
        check(not os.path.exists(out), f"{what}: an output file was left")
        print(f"ok: {what} refused: {errors[0]}")

    refused(["--a", IN + ":/A", "--b", IN + ":/R"], ["complex", "real", "float64"], "complex A times real B")
    refused(["--a", IN + ":/R", "--transpose-a", "--b", IN + ":/R", "--alpha-imag", "1"], ["--alpha-imag", "complex"],
            "a complex alpha on real data")
    refused(["--a", IN + ":/A", "--b", IN + ":/B", "--c-dtype", "f16"], ["--c-dtype", "complex"],
            "--c-dtype with complex data")
    refused(["--a", IN + ":/A", "--b", IN + ":/B", "--kernel", "cpu-tiled"], ["--kernel cpu-tiled", "complex"],
            "an own kernel with complex data")
    with h5py.File(r.path("c.h5"), "w") as f:
        f["C"] = a @ b
    res = r.run(["verify", "--a", IN + ":/A", "--b", IN + ":/B", "--c", r.path("c.h5") + ":/C"], expect_ok=False)
    check(res.returncode != 0 and "run --verify" in res.stderr, "tessera verify refuses a complex product, naming "
          "run --verify")
    print("PASS")
