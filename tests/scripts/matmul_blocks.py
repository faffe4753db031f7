"""tessera.matmul_blocks on --np ranks (issue 42 item 4: distributed blocks with mpi4py): every
rank generates the same A, B and C_old, keeps its blocks (A, B and C each on a grid of its own:
1 x 1, P x 1, 1 x P, 2 x 2 where they fit, so some ranks hold nothing), multiplies, and checks its
block of C against numpy in float64 (odd and prime shapes, K = 1, op, alpha, beta, f32 and f64);
block_span tiles each extent as the blocks are cut (and refuses an index beyond the parts); a refusal is raised on every rank with C unchanged. Skipped
(exit 77) where mpi4py or the compiled module is missing."""
import os
import re
import subprocess
import sys

import numpy as np

import common

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(tessera_bin, source_dir):
    from mpi4py import MPI
    sys.path.insert(0, os.path.join(source_dir, "python", "src"))
    os.environ["TESSERA_BIN"] = tessera_bin
    import tessera

    comm = MPI.COMM_WORLD
    rank, np_ = comm.Get_rank(), comm.Get_size()
    for extent in (0, 1, 7, 10, 97):  # the parts tile [0, extent) in order, the first extent % parts one longer
        for parts in (1, 2, 3, 4):
            spans = [tessera.block_span(extent, parts, index) for index in range(parts)]
            sizes = [b - a for a, b in spans]
            common.check(spans[0][0] == 0 and spans[-1][1] == extent and
                         all(spans[i][1] == spans[i + 1][0] for i in range(parts - 1)) and
                         sizes == [extent // parts + (1 if i < extent % parts else 0) for i in range(parts)],
                         f"block_span({extent}, {parts}, i): {spans}")
    try:
        tessera.block_span(5, 2, 2)
        common.fail("block_span(5, 2, 2) (an index beyond the parts) was not refused")
    except tessera.TesseraError:
        pass
    one, row, col = (1, 1), (1, np_), (np_, 1)
    sq = (2, 2) if np_ >= 4 else (2, 1) if np_ >= 2 else one
    cases = [(1, 1, 1, False, False, 1.0, 0.0, one, one, one), (37, 29, 53, False, False, 1.0, 0.0, col, row, sq),
             (31, 17, 1, True, False, 1.0, 0.0, row, col, col), (23, 41, 19, False, True, -0.5, 2.0, sq, sq, row),
             (64, 48, 96, True, True, 1.5, 0.5, col, col, sq), (2, 3, 5, False, False, 1.0, -1.0, col, col, sq)]
    for dtype in (np.float32, np.float64):
        for m, n, k, ta, tb, alpha, beta, ga, gb, gc in cases:
            rng = np.random.default_rng(m * 1000 + n * 10 + k)
            a_shape, b_shape = ((k, m) if ta else (m, k)), ((n, k) if tb else (k, n))
            a = (rng.random(a_shape) * 2 - 1).astype(dtype)
            b = (rng.random(b_shape) * 2 - 1).astype(dtype)
            c_old = (rng.random((m, n)) * 2 - 1).astype(dtype)

            def block(x, grid):
                r0, r1, c0, c1 = tessera.matmul.__globals__["_block_of"](x.shape[0], x.shape[1], grid, rank)
                return x[r0:r1, c0:c1], (r0, r1, c0, c1)

            a_blk, _ = block(a, ga)
            b_blk, _ = block(b, gb)
            c_blk, (r0, r1, c0, c1) = block(c_old, gc)
            got = tessera.matmul_blocks(a_blk, b_blk, comm=comm, a_shape=a_shape, a_grid=ga, b_shape=b_shape,
                                        b_grid=gb, c_grid=gc, c=c_blk, alpha=alpha, beta=beta, transpose_a=ta,
                                        transpose_b=tb, backend="cpu")
            a64 = (a.T if ta else a).astype(np.float64)
            b64 = (b.T if tb else b).astype(np.float64)
            want = (alpha * (a64 @ b64) + beta * c_old.astype(np.float64))[r0:r1, c0:c1]
            mag = (abs(alpha) * (np.abs(a64) @ np.abs(b64)) + abs(beta) * np.abs(c_old.astype(np.float64)))[r0:r1, c0:c1]
            common.check(got.shape == want.shape and got.dtype == dtype, f"rank {rank}: block {got.shape} {got.dtype}")
            bound = 2 * common.gamma(dtype, k) * mag + np.finfo(dtype).eps * np.abs(want)
            bad = int((np.abs(got.astype(np.float64) - want) > bound).sum())
            common.check(bad == 0, f"rank {rank}: {bad} elements of its block beyond rounding ({m}x{n}x{k} {dtype.__name__} "
                                   f"ta {ta} tb {tb} grids {ga} {gb} {gc})")
    # Complex blocks: complex64 and complex128 with the conjugate transpose and complex alpha, beta
    # (each part within the bound of a 2K-term real sum).
    op = {"N": lambda x: x, "T": lambda x: x.T, "C": lambda x: x.conj().T}
    for dtype, (m, n, k, ta, tb, ga, gb, gc) in ((np.complex64, (37, 29, 53, "C", "N", col, row, sq)),
                                                 (np.complex128, (23, 41, 19, "T", "C", sq, sq, row)),
                                                 (np.complex128, (31, 17, 1, "C", "C", row, col, col))):
        rng = np.random.default_rng(m + n + k)
        a_shape, b_shape = ((m, k) if ta == "N" else (k, m)), ((k, n) if tb == "N" else (n, k))
        cplx = lambda shape: (rng.random(shape) - 0.5 + 1j * (rng.random(shape) - 0.5)).astype(dtype)  # noqa: E731
        a, b, c_old = cplx(a_shape), cplx(b_shape), cplx((m, n))
        alpha, beta = 0.5 - 1.25j, -1 + 2j
        blk = lambda x, grid: tessera.matmul.__globals__["_block_of"](x.shape[0], x.shape[1], grid, rank)  # noqa: E731
        (ar0, ar1, ac0, ac1), (br0, br1, bc0, bc1), (r0, r1, c0, c1) = blk(a, ga), blk(b, gb), blk(c_old, gc)
        got = tessera.matmul_blocks(a[ar0:ar1, ac0:ac1], b[br0:br1, bc0:bc1], comm=comm, a_shape=a_shape, a_grid=ga,
                                    b_shape=b_shape, b_grid=gb, c_grid=gc, c=c_old[r0:r1, c0:c1], alpha=alpha,
                                    beta=beta, transpose_a=ta, transpose_b=tb, backend="cpu")
        a128, b128 = op[ta](a.astype(np.complex128)), op[tb](b.astype(np.complex128))
        want = (alpha * (a128 @ b128) + beta * c_old)[r0:r1, c0:c1]
        mag = (abs(alpha) * (np.abs(a128) @ np.abs(b128)) + abs(beta) * np.abs(c_old))[r0:r1, c0:c1]
        real = np.float32 if dtype == np.complex64 else np.float64
        bound = 2 * common.gamma(real, 2 * k) * mag + 2 * np.finfo(real).eps * np.abs(want)
        common.check(got.dtype == dtype, f"rank {rank}: complex block of {got.dtype}")
        bad = int(((np.abs(got.real - want.real) > bound) | (np.abs(got.imag - want.imag) > bound)).sum())
        common.check(bad == 0, f"rank {rank}: {bad} elements beyond rounding ({m}x{n}x{k} {dtype.__name__} {ta}{tb})")
    # Complex alpha with real blocks: refused on every rank (before any exchange).
    try:
        tessera.matmul_blocks(np.ones((0, 0)) if rank else np.ones((2, 2)), np.ones((0, 0)) if rank else np.ones((2, 2)),
                              comm=comm, a_shape=(2, 2), a_grid=one, b_shape=(2, 2), b_grid=one, c_grid=one, alpha=1j,
                              backend="cpu")
        common.fail(f"rank {rank}: a complex alpha with real blocks was accepted")
    except tessera.TesseraError as e:
        common.check("alpha = 1j is complex" in str(e), f"rank {rank}: said {e}")
    # A refusal: NaN in the last rank's block of A, raised on every rank, out left as it was.
    a = np.ones((6, 4))
    r0, r1, c0, c1 = tessera.matmul.__globals__["_block_of"](6, 4, col, rank)
    a_blk = a[r0:r1, c0:c1].copy()
    if rank == np_ - 1:
        a_blk[0, 0] = np.nan
    r0, r1, c0, c1 = tessera.matmul.__globals__["_block_of"](6, 5, col, rank)
    out = np.full((r1 - r0, c1 - c0), 9.0)
    try:
        tessera.matmul_blocks(a_blk, np.ones((4, 5)) if rank == 0 else np.ones((0, 0)), comm=comm, a_shape=(6, 4),
                              a_grid=col, b_shape=(4, 5), b_grid=one, c_grid=col, out=out, backend="cpu")
        common.fail(f"rank {rank}: NaN in A accepted")
    except tessera.TesseraError as e:
        common.check("non-finite" in str(e), f"rank {rank}: said {e}")
    common.check(bool((out == 9.0).all()), f"rank {rank}: out written by a refused product")
    print(f"rank {rank}: ok", flush=True)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], sys.argv[3])
        return
    args = common.parser(__doc__).parse_args()
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        print("SKIP: mpi4py is not installed (Debian: python3-mpi4py; bash scripts/setup.sh installs it)")
        sys.exit(common.SKIP)
    build = os.path.dirname(os.path.abspath(args.tessera))
    if not any(f.startswith("_native") for f in os.listdir(os.path.join(build, "python", "tessera"))
               if os.path.isdir(os.path.join(build, "python", "tessera"))):
        print("SKIP: tessera._native was not built (pybind11 and Python's headers: bash scripts/setup.sh)")
        sys.exit(common.SKIP)
    command = common.shlex.split(args.mpiexec) + ["-np", str(args.np), sys.executable, os.path.abspath(__file__),
                                                  "--worker", os.path.abspath(args.tessera), args.source_dir]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    print(done.stdout + done.stderr)
    common.check(done.returncode == 0, f"mpiexec exited {done.returncode}")
    # (The ranks' lines may reach mpiexec's stdout run together: each rank's word is searched for.)
    oks = {int(r) for r in re.findall(r"rank (\d+): ok", done.stdout)}
    common.check(oks == set(range(args.np)), f"ranks {sorted(oks)} of {args.np} said ok")
    print("PASS")


if __name__ == "__main__":
    main()
