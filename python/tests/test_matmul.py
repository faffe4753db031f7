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
                 ((a.astype(np.complex128), b), {}, "real numbers")]
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


if __name__ == "__main__":
    support.main()
