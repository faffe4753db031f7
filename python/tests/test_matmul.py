"""tessera.matmul in this process (the compiled module tessera._native over libtessera): every
shape, op, alpha, beta and layout against numpy in float64, dtypes, out and c, refusals. Skipped
(visibly) where the module was not built (no pybind11 or Python headers)."""
import unittest

import numpy as np

import support
from support import args

tessera = support.import_package()


def native_or_skip():
    import os
    os.environ["TESSERA_BIN"] = args.tessera
    try:
        return tessera.matmul.__globals__["_native"]()
    except tessera.TesseraError as e:
        raise unittest.SkipTest(str(e))


def within(testcase, got, want64, mag64, k, dtype):
    if np.dtype(dtype).kind == "c":  # each part: sums of 2k real products, each |.| <= |a_i| |b_i|
        testcase.assertEqual(got.dtype, np.dtype(dtype))
        real = np.float32 if np.dtype(dtype) == np.complex64 else np.float64
        within(testcase, got.real, want64.real, mag64, 2 * k, real)
        within(testcase, got.imag, want64.imag, mag64, 2 * k, real)
        return
    u = 2.0**-24 if np.dtype(dtype) == np.float32 else 2.0**-53
    gamma = (k + 2) * u / (1 - (k + 2) * u)
    bound = 2 * gamma * mag64 + u * np.abs(want64) + 1e-300
    testcase.assertEqual(got.shape, want64.shape)
    bad = np.abs(got.astype(np.float64) - want64) > bound
    testcase.assertFalse(bad.any(), f"{bad.sum()} of {bad.size} elements beyond rounding")


class MatmulTest(unittest.TestCase):
    def setUp(self):
        native_or_skip()
        self.rng = np.random.default_rng(7)

    def rand(self, shape, dtype):
        return (self.rng.random(shape) * 2 - 1).astype(dtype)

    def test_shapes_ops_alpha_beta(self):
        for dtype in (np.float32, np.float64):
            for m, n, k in ((1, 1, 1), (37, 29, 53), (31, 17, 1), (2, 300, 5), (97, 89, 83), (128, 64, 256)):
                for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
                    with self.subTest(dtype=dtype, shape=(m, n, k), ta=ta, tb=tb):
                        a = self.rand((k, m) if ta else (m, k), dtype)
                        b = self.rand((n, k) if tb else (k, n), dtype)
                        c0 = self.rand((m, n), dtype)
                        got = tessera.matmul(a, b, c=c0, alpha=-0.5, beta=2.0, transpose_a=ta, transpose_b=tb)
                        a64 = (a.T if ta else a).astype(np.float64)
                        b64 = (b.T if tb else b).astype(np.float64)
                        want = -0.5 * (a64 @ b64) + 2.0 * c0.astype(np.float64)
                        mag = 0.5 * (np.abs(a64) @ np.abs(b64)) + 2.0 * np.abs(c0.astype(np.float64))
                        within(self, got, want, mag, k, dtype)
                        self.assertEqual(got.dtype, np.dtype(dtype))

    def crand(self, shape, dtype):
        return (self.rand(shape, np.float64) + 1j * self.rand(shape, np.float64)).astype(dtype)

    def test_complex_shapes_ops_alpha_beta(self):
        """complex64/complex128 through the BLAS's cgemm/zgemm: every op (N, T, C) of each operand,
        complex alpha and beta, odd shapes, K = 1, 1x1x1, against numpy in complex128."""
        op = {"N": lambda x: x, "T": lambda x: x.T, "C": lambda x: x.conj().T}
        for dtype in (np.complex64, np.complex128):
            for m, n, k in ((1, 1, 1), (37, 29, 53), (31, 17, 1), (97, 89, 83)):
                for ta in "NTC":
                    for tb in "NTC":
                        with self.subTest(dtype=dtype, shape=(m, n, k), ta=ta, tb=tb):
                            a = self.crand((m, k) if ta == "N" else (k, m), dtype)
                            b = self.crand((k, n) if tb == "N" else (n, k), dtype)
                            c0 = self.crand((m, n), dtype)
                            alpha, beta = 0.5 - 1.25j, -1 + 2j
                            got = tessera.matmul(a, b, c=c0, alpha=alpha, beta=beta, transpose_a=ta, transpose_b=tb)
                            a64, b64 = op[ta](a.astype(np.complex128)), op[tb](b.astype(np.complex128))
                            want = alpha * (a64 @ b64) + beta * c0.astype(np.complex128)
                            mag = abs(alpha) * (np.abs(a64) @ np.abs(b64)) + abs(beta) * np.abs(c0)
                            within(self, got, want, mag, k, dtype)
        # Promotion: complex64 with float32 stays complex64; with float64 (or complex128) widens.
        a, b = self.crand((6, 5), np.complex64), self.rand((5, 4), np.float32)
        self.assertEqual(tessera.matmul(a, b).dtype, np.complex64)
        self.assertEqual(tessera.matmul(a, b.astype(np.float64)).dtype, np.complex128)
        within(self, tessera.matmul(a, b), a.astype(np.complex128) @ b, np.abs(a) @ np.abs(b), 5, np.complex64)
        # Layouts: a.T (Fortran order) with and without the conjugate, a row slice, a strided view.
        big = self.crand((60, 50), np.complex128)
        b = self.crand((20, 7), np.complex128)
        for a in (big[:20, :20], big[:20, :20].T, big[::2, ::2][:20, :20], np.asfortranarray(big[:20, :20])):
            for ta in "NTC":
                with self.subTest(strides=a.strides, ta=ta):
                    want = op[ta](a) @ b
                    within(self, tessera.matmul(a, b, transpose_a=ta), want, np.abs(a) @ np.abs(b), 20,
                           np.complex128)
        # C += A^H B in place, and K = 0 (C = beta C).
        a = self.crand((9, 4), np.complex128)
        acc = self.crand((4, 3), np.complex128)
        b = self.crand((9, 3), np.complex128)
        want = a.conj().T @ b + acc
        tessera.matmul(a, b, c=acc, beta=1, out=acc, transpose_a="C")
        within(self, acc, want, np.abs(a).T @ np.abs(b) + np.abs(want), 9, np.complex128)
        c0 = self.crand((3, 4), np.complex64)
        z = tessera.matmul(np.zeros((3, 0), np.complex64), np.zeros((0, 4), np.complex64), c=c0, beta=2j)
        np.testing.assert_allclose(z, 2j * c0, rtol=1e-6)

    def test_complex_refusals(self):
        a, b = self.crand((4, 5), np.complex128), self.crand((5, 6), np.complex128)
        cases = [((a.real, b.real), {"alpha": 1j}, "alpha = 1j is complex"),
                 ((a.real, b.real), {"c": np.zeros((4, 6)), "beta": 2 + 1j}, "beta = (2+1j) is complex"),
                 ((a, b), {"kernel": "cpu-tiled"}, "kernel 'cpu-tiled' multiplies float32 and float64"),
                 ((a, b), {"transpose_a": "H"}, "transpose_a must be"),
                 ((a, b), {"out": np.zeros((4, 6), dtype=np.complex64)}, "out must be")]
        for (x, y), kw, words in cases:
            with self.subTest(words=words):
                with self.assertRaises(tessera.TesseraError) as cm:
                    tessera.matmul(x, y, **kw)
                self.assertIn(words, str(cm.exception))
        for part in (np.nan, 1j * np.inf):
            bad = a.copy()
            bad[2, 3] += part
            out = np.full((4, 6), 9.0 + 1j)
            with self.subTest(part=part), self.assertRaises(tessera.TesseraError) as cm:
                tessera.matmul(bad, b, out=out)
            self.assertRegex(str(cm.exception), r"A holds [12] non-finite value\(s\) \(NaN/Inf\) in its elements' real and "
                             r"imaginary parts, the first at \(2, 3\)")
            np.testing.assert_array_equal(out, np.full((4, 6), 9.0 + 1j))  # left as it was
        bad = b.copy()
        bad[4, 5] = complex(1, np.nan)
        with self.assertRaises(tessera.TesseraError) as cm:
            tessera.matmul(a, bad)
        self.assertIn("B holds 1 non-finite value(s) (NaN/Inf) in its elements' real and imaginary parts, the first at "
                      "(4, 5)", str(cm.exception))
        got = tessera.matmul(a, bad, allow_nonfinite=True)
        self.assertTrue(np.isnan(got[:, 5]).any() and np.isfinite(got[:, :5]).all())

    def test_layouts_used_in_place_or_copied(self):
        big = self.rand((120, 100), np.float64)
        b = self.rand((40, 33), np.float64)
        for a in (big[:50, :40], big[:40, :50].T, big[::2, ::2][:50, :40], np.asfortranarray(big[:50, :40])):
            with self.subTest(strides=a.strides):
                want = a.astype(np.float64) @ b
                within(self, tessera.matmul(a, b), want, np.abs(a) @ np.abs(b), 40, np.float64)

    def test_dtypes_out_and_c(self):
        a, b = self.rand((20, 30), np.float32), self.rand((30, 10), np.float32)
        self.assertEqual(tessera.matmul(a, b).dtype, np.float32)
        self.assertEqual(tessera.matmul(a, b.astype(np.float64)).dtype, np.float64)
        ints = tessera.matmul(np.arange(6).reshape(2, 3), np.ones((3, 2), dtype=np.int32))
        self.assertEqual(ints.dtype, np.float64)
        np.testing.assert_array_equal(ints, [[3.0, 3.0], [12.0, 12.0]])
        out = np.full((20, 10), 5.0, dtype=np.float32)
        c = self.rand((20, 10), np.float32)
        c_before = c.copy()
        r = tessera.matmul(a, b, c=c, beta=1.0, out=out)
        self.assertIs(r, out)
        np.testing.assert_array_equal(c, c_before)  # c is read, never written (it is not out)
        want = a.astype(np.float64) @ b + c
        within(self, out, want, np.abs(a) @ np.abs(b) + np.abs(c), 30, np.float32)
        acc = c.copy()
        tessera.matmul(a, b, c=acc, beta=1.0, out=acc)  # C += A B in place
        within(self, acc, want, np.abs(a) @ np.abs(b) + np.abs(c), 30, np.float32)
        z = tessera.matmul(np.zeros((3, 0)), np.zeros((0, 4)))
        np.testing.assert_array_equal(z, np.zeros((3, 4)))

    def test_refusals(self):
        a, b = self.rand((4, 5), np.float64), self.rand((5, 6), np.float64)
        cases = [((a, a), {}, "inner dimensions disagree"),
                 ((a, b), {"out": np.zeros((4, 6), dtype=np.float32)}, "out must be"),
                 ((a, b), {"out": np.zeros((6, 4)).T}, "out must be"),
                 ((a, b), {"c": np.zeros((3, 6)), "beta": 1.0}, "c must be 4x6"),
                 ((a, b), {"kernel": "nope"}, "nope"),
                 ((np.zeros(3), b), {}, "2-D"),
                 ((np.array([["x"]]), b), {}, "it takes numbers")]
        for (x, y), kw, words in cases:
            with self.subTest(words=words):
                with self.assertRaises(tessera.TesseraError) as cm:
                    tessera.matmul(x, y, **kw)
                self.assertIn(words, str(cm.exception))
        bad = a.copy()
        bad[2, 3] = np.nan
        out = np.full((4, 6), 9.0)
        with self.assertRaises(tessera.TesseraError) as cm:
            tessera.matmul(bad, b, out=out)
        self.assertIn("the first at (2, 3)", str(cm.exception))
        np.testing.assert_array_equal(out, np.full((4, 6), 9.0))  # left as it was
        with self.assertRaises(tessera.TesseraError) as cm:
            tessera.matmul(a, b, out=a)
        self.assertIn("shares memory", str(cm.exception))


def gpu_libraries():
    """torch and cupy, each where it is installed and sees a GPU."""
    found = {}
    try:
        import torch
        if torch.cuda.is_available():
            found["torch"] = torch
    except ImportError:
        pass
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            found["cupy"] = cupy
    except Exception:  # not installed, or no driver
        pass
    return found


class GpuMatmulTest(unittest.TestCase):
    """torch / cupy tensors in GPU memory, used in place (views too), ordered on the current stream."""

    def setUp(self):
        native_or_skip()
        self.libraries = gpu_libraries()
        if not self.libraries:
            raise unittest.SkipTest("neither torch nor cupy sees a GPU here: tessera.matmul on GPU tensors not tried")
        self.rng = np.random.default_rng(11)

    def rand(self, shape, dtype):
        return (self.rng.random(shape) * 2 - 1).astype(dtype)

    def to_gpu(self, lib, x):
        return lib.from_numpy(x).cuda() if lib.__name__ == "torch" else lib.asarray(x)

    def to_host(self, lib, x):
        return x.cpu().numpy() if lib.__name__ == "torch" else lib.asnumpy(x)

    def test_shapes_ops_views_alpha_beta(self):
        for name, lib in self.libraries.items():
            for dtype in (np.float32, np.float64):
                for m, n, k in ((1, 1, 1), (37, 29, 53), (31, 17, 1), (97, 89, 83), (256, 128, 512)):
                    for ta, tb in ((False, False), (True, True), (False, True)):
                        with self.subTest(library=name, dtype=dtype, shape=(m, n, k), ta=ta, tb=tb):
                            a = self.rand((k, m) if ta else (m, k), dtype)
                            b = self.rand((n, k) if tb else (k, n), dtype)
                            c0 = self.rand((m, n), dtype)
                            ga, gb, gc = (self.to_gpu(lib, x) for x in (a, b, c0))
                            got = tessera.matmul(ga, gb, c=gc, alpha=-0.5, beta=2.0, transpose_a=ta, transpose_b=tb)
                            self.assertEqual(type(got), type(ga))
                            a64 = (a.T if ta else a).astype(np.float64)
                            b64 = (b.T if tb else b).astype(np.float64)
                            want = -0.5 * (a64 @ b64) + 2.0 * c0.astype(np.float64)
                            mag = 0.5 * (np.abs(a64) @ np.abs(b64)) + 2.0 * np.abs(c0.astype(np.float64))
                            within(self, self.to_host(lib, got), want, mag, k, dtype)
                            np.testing.assert_array_equal(self.to_host(lib, gc), c0)  # c is not out: unchanged
                # Views: a row slice, a transpose, a strided view (copied), into an out of its own.
                big = self.to_gpu(lib, self.rand((120, 100), dtype))
                gb = self.to_gpu(lib, self.rand((40, 33), dtype))
                for view in (big[:50, :40], big[:40, :50].T, big[::2, ::2][:50, :40]):
                    with self.subTest(library=name, dtype=dtype, view="strides"):
                        out = self.to_gpu(lib, np.full((50, 33), 3.0, dtype=dtype))
                        r = tessera.matmul(view, gb, out=out)
                        self.assertIs(r, out)
                        a64, b64 = self.to_host(lib, view).astype(np.float64), self.to_host(lib, gb).astype(np.float64)
                        within(self, self.to_host(lib, out), a64 @ b64, np.abs(a64) @ np.abs(b64), 40, dtype)

    def test_stream_order_and_refusals(self):
        if "torch" not in self.libraries:
            self.skipTest("torch not installed with a GPU: the stream test uses torch's streams")
        torch = self.libraries["torch"]
        a = torch.rand((512, 384), device="cuda", dtype=torch.float32)
        b = torch.rand((384, 256), device="cuda", dtype=torch.float32)
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())  # a and b were made on the default stream
        with torch.cuda.stream(side):  # produced and multiplied on the side stream, in its order (no scan)
            a2 = a * 2
            for _ in range(3):
                a2 = a2 + 0  # more work queued ahead of the product
            got = tessera.matmul(a2, b, allow_nonfinite=True)
            got2 = tessera.matmul(b.T, a2.T, allow_nonfinite=True)  # transposed views, scratch shared
        side.synchronize()
        torch.testing.assert_close(got, (a * 2) @ b, rtol=1e-4, atol=1e-3)
        torch.testing.assert_close(got2, ((a * 2) @ b).T, rtol=1e-4, atol=1e-3)
        # On torch's default stream (handle 0) the product is enqueued there too, not waited for:
        # the call returns while ~0.1 s of work queued ahead of it is still running, and C is
        # right once the stream gets past it.
        if hasattr(torch.cuda, "_sleep"):
            torch.cuda.synchronize()
            torch.cuda._sleep(200_000_000)
            a3 = a * 3  # made behind the sleep, on the default stream
            got3 = tessera.matmul(a3, b, allow_nonfinite=True)
            pending = not torch.cuda.current_stream().query()
            torch.cuda.synchronize()
            self.assertTrue(pending, "tessera.matmul on the default stream waited for the stream to drain")
            torch.testing.assert_close(got3, (a * 3) @ b, rtol=1e-4, atol=1e-3)
        bad = a.clone()
        bad[3, 7] = float("inf")
        out = torch.full((512, 256), 9.0, device="cuda")
        with self.assertRaises(tessera.TesseraError) as cm:  # beta 0: out written while the scan ran
            tessera.matmul(bad, b, out=out)
        self.assertIn("the first at (3, 7)", str(cm.exception))
        torch.cuda.synchronize()
        self.assertFalse(bool(torch.isfinite(out[3]).any()))  # the product as IEEE gives it
        torch.testing.assert_close(out[4:], (a @ b)[4:], rtol=1e-4, atol=1e-3)
        out.fill_(9.0)
        with self.assertRaises(tessera.TesseraError):  # beta != 0: the old out is an input, kept
            tessera.matmul(bad, b, c=out, beta=0.5, out=out)
        torch.cuda.synchronize()
        self.assertTrue(bool((out == 9.0).all()))
        self.assertTrue(bool(torch.isinf(tessera.matmul(bad, b, allow_nonfinite=True)[3]).any()))
        cases = [((a, a), {}, "inner dimensions disagree"),
                 ((a, b.double()), {}, "one dtype"),
                 ((a, b.cpu()), {}, "some operands are in GPU memory"),
                 ((a.half(), b.half()), {}, "float32 and float64"),
                 ((a, b), {"out": a[:, :256]}, "shares memory"),
                 ((a, b), {"out": torch.zeros((256, 512), device="cuda").T}, "rows packed"),
                 ((a, b), {"backend": "cpu"}, "computes on the host")]
        for (x, y), kw, words in cases:
            with self.subTest(words=words):
                with self.assertRaises(tessera.TesseraError) as cm:
                    tessera.matmul(x, y, **kw)
                self.assertIn(words, str(cm.exception))


if __name__ == "__main__":
    support.main()
