"""tessera.generate and tessera.verify: matrices written by `tessera generate` read back with h5py
(shape, dtype, bounds, the seed decides them), C = A·B by tessera.run checked against numpy and by
tessera.verify (Freivalds on --np ranks, and full), a C computed by numpy and written with h5py
verified, a corrupted C refused (VerificationError, or passed False with check=False), and
generate's and verify's options typed from their --help-json."""
import os

import h5py
import numpy as np

import support
from support import TempDirTest, args, product_ok

tessera = support.import_package()


class GenerateVerifyTest(TempDirTest):
    def launcher(self):
        return args.mpiexec if args.np > 1 else None  # one rank: the package's own choice (the binary alone)

    def read(self, name, path):
        with h5py.File(self.path(name), "r") as f:
            return f[path][...]

    def test_generate_read_by_h5py(self):
        g = tessera.generate(self.path("a.h5") + ":/A", rows=37, cols=29, dtype="f64", seed=3)
        self.assertIsInstance(g, tessera.Generated)
        self.assertEqual((g.dataset, g.rows, g.cols, g.dtype), (self.path("a.h5") + ":/A", 37, 29, "f64"))
        self.assertEqual(g.command[:2], [args.tessera, "generate"])
        a = self.read("a.h5", "/A")
        self.assertEqual((a.shape, a.dtype), ((37, 29), np.float64))
        self.assertTrue(np.all((a >= -1) & (a < 1)) and np.unique(a).size > 1000)
        tessera.generate((self.path("same.h5"), "/grp/A"), 37, 29, dtype="f64", seed=3)
        tessera.generate((self.path("other.h5"), "/A"), 37, 29, dtype="f64", seed=4)
        self.assertTrue(np.array_equal(a, self.read("same.h5", "/grp/A")), "the same seed gave another matrix")
        self.assertFalse(np.array_equal(a, self.read("other.h5", "/A")), "another seed gave the same matrix")
        gi = tessera.generate(self.path("i.h5") + ":/I", 20, 30, dist="integers", low=-3, high=3, chunk=(8, 8), gzip=4)
        self.assertEqual(gi.dtype, "f32")  # the binary's default, from its --help-json
        i = self.read("i.h5", "/I")
        self.assertEqual(i.dtype, np.float32)
        self.assertTrue(np.all(i == np.round(i)) and i.min() >= -3 and i.max() <= 3)
        with h5py.File(self.path("i.h5"), "r") as f:
            self.assertEqual((f["/I"].chunks, f["/I"].compression), ((8, 8), "gzip"))

    def test_round_trip_against_numpy(self):
        m, n, k = 45, 38, 51
        A = tessera.generate(self.path("in.h5") + ":/A", m, k, dtype="f64", seed=11).dataset
        B = tessera.generate(self.path("in.h5") + ":/B", k, n, dtype="f64", seed=12).dataset
        a, b = self.read("in.h5", "/A"), self.read("in.h5", "/B")
        C = self.path("c.h5") + ":/C"
        tessera.run(A, B, C, ranks=args.np, launcher=self.launcher(), backend="cpu")
        c = self.read("c.h5", "/C")
        product_ok(self, a, b, c, np.float64)
        v = tessera.verify(A, B, C, ranks=args.np, launcher=self.launcher())
        self.assertIsInstance(v, tessera.Verification)
        self.assertTrue(v.passed and bool(v) and v.exit_code == 0, v.summary)
        self.assertTrue(v.summary.startswith("verify PASSED"), v.summary)
        self.assertTrue(tessera.verify(A, B, C, ranks=args.np, launcher=self.launcher(), full=True, vectors=5))
        # numpy's own product, written with h5py, passes tessera's check too.
        with h5py.File(self.path("np.h5"), "w") as f:
            f["C"] = a @ b
        self.assertTrue(tessera.verify(A, B, self.path("np.h5") + ":/C", ranks=args.np, launcher=self.launcher()))
        # One element off: refused (Freivalds and full).
        with h5py.File(self.path("c.h5"), "r+") as f:
            f["C"][7, 5] += 1e-3 * (1 + abs(c[7, 5]))
        with self.assertRaises(tessera.VerificationError) as cm:
            tessera.verify(A, B, C, ranks=args.np, launcher=self.launcher())
        self.assertEqual(cm.exception.exit_code, 3)
        self.assertIn("FAILED", cm.exception.message)
        for full in (False, True):
            v = tessera.verify(A, B, C, ranks=args.np, launcher=self.launcher(), check=False, full=full)
            self.assertFalse(v.passed or bool(v), v.summary)
            self.assertEqual(v.exit_code, 3)
            self.assertTrue(v.summary.startswith("verify FAILED"), v.summary)

    def test_typed_options_of_generate_and_verify(self):
        out = self.path("g.h5") + ":/G"
        for opts, words in (({"gzip": "4"}, "takes a whole number"), ({"seed": -1}, "at least 0"),
                            ({"low": "0"}, "takes a number"), ({"overwrite": "yes"}, "is a flag"),
                            ({"colour": 1}, "tessera generate has no --colour")):
            with self.assertRaises(tessera.OptionError, msg=opts) as cm:
                tessera.generate(out, 4, 4, **opts)
            self.assertIn(words, cm.exception.message)
        with self.assertRaises(tessera.OptionError):
            tessera.generate(out, 0, 4)
        for opts, words in (({"vectors": 0}, "must be at least 1, got 0"), ({"vectors": "3"}, "takes a whole number"),
                            ({"full": 1}, "is a flag"), ({"colour": 1}, "tessera verify has no --colour")):
            with self.assertRaises(tessera.OptionError, msg=opts) as cm:
                tessera.verify(out, out, out, **opts)
            self.assertIn(words, cm.exception.message)
        self.assertFalse(os.path.exists(self.path("g.h5")), "a refused call ran something")
        # tessera's own refusals arrive as exceptions with its message.
        with self.assertRaises(tessera.TesseraError) as cm:
            tessera.verify(self.path("nope.h5") + ":/A", out, out)
        self.assertEqual(cm.exception.exit_code, 1)
        self.assertIn("nope.h5", cm.exception.message)


if __name__ == "__main__":
    support.main()
