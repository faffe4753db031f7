"""tessera.run on --np CPU ranks: C checked against numpy through h5py, the report's typed fields
against the job, the launchers (the tests' mpiexec, the package's own choice, none for one rank:
an MPI singleton, checked with stand-in launchers on PATH),
datasets given as (file, path) pairs, the temporary report removed, a kept one left."""
import contextlib
import glob
import io
import os

import h5py
import numpy as np

import support
from support import TempDirTest, args, product_ok

tessera = support.import_package()


class RunTest(TempDirTest):
    def inputs(self, m, n, k, dtype, seed=1):
        rng = np.random.default_rng(seed)
        a = (rng.random((m, k)) * 2 - 1).astype(dtype)
        b = (rng.random((k, n)) * 2 - 1).astype(dtype)
        return a, b

    def read_c(self, file, path="/C"):
        with h5py.File(file, "r") as f:
            return f[path][...]

    def check_report(self, rep, m, n, k, dtype):
        self.assertIsInstance(rep, tessera.Report)
        self.assertEqual(rep.shape, (m, n, k))
        self.assertEqual((rep.shape.m, rep.shape.n, rep.shape.k), (m, n, k))
        self.assertEqual(rep.dtype, dtype)
        self.assertEqual(rep.backend, "cpu")
        self.assertEqual(rep.nranks, args.np)
        self.assertEqual([r.rank for r in rep.ranks], list(range(args.np)))
        self.assertIn(rep.algorithm, ("panels", "summa", "ksplit"))
        self.assertTrue(rep.comm and rep.kernel)
        self.assertLessEqual(rep.grid.rows * rep.grid.cols, args.np)
        self.assertGreater(rep.wall_seconds, 0)
        self.assertEqual(rep.flops, 2.0 * m * n * k)
        # How it was made: the command line that ran (the binary's part of it) and the options.
        self.assertEqual(rep.schema, "tessera.report/1")
        self.assertEqual(rep.provenance.command_line[1], "run")
        self.assertEqual(rep.provenance.options["backend"], "cpu")
        self.assertTrue(rep.provenance.git_id and rep.provenance.libraries["hdf5"])
        self.assertEqual(rep.provenance.hosts, list(dict.fromkeys(r.host for r in rep.ranks)))
        active = [r for r in rep.ranks if r.active]
        self.assertTrue(active)
        self.assertEqual(sum(r.flops for r in active), 2.0 * m * n * k)
        for r in active:
            self.assertIn("compute", r.phases)
            self.assertIn("read", r.phases)
            self.assertTrue(all(isinstance(s, float) and s >= 0 for s in r.phases.values()))
            self.assertTrue(r.host and r.device.startswith("cpu"))
            self.assertGreater(r.peak_host_bytes, 0)
            self.assertEqual(len(r.rows), 2)
            self.assertIsNotNone(r.block)
        self.assertEqual(rep.raw["ranks"][0]["rank"], 0)  # the JSON as tessera wrote it
        self.assertIn("rank", rep.stdout)  # the table tessera printed
        self.assertEqual(glob.glob(os.path.join(self.dir, ".tessera-report-*")), [], "temporary report left")

    def test_f64_odd_shape_against_numpy(self):
        m, n, k = 31, 29, 37
        a, b = self.inputs(m, n, k, np.float64)
        A, B = self.write("a.h5", "/A", a), self.write("b.h5", "/B", b)
        rep = tessera.run(f"{A}:/A", f"{B}:/B", self.path("c.h5") + ":/C", ranks=args.np, launcher=args.mpiexec,
                          backend="cpu")
        product_ok(self, a, b, self.read_c(self.path("c.h5")), np.float64)
        self.check_report(rep, m, n, k, "float64")
        self.assertEqual(rep.command[:len(args.mpiexec)], args.mpiexec)
        self.assertIn("-np", rep.command)
        self.assertEqual(rep.c, self.path("c.h5") + ":/C")

    def test_many_products_in_one_launch(self):
        # A pattern over groups (issue 42): one launch, a report per product in .products.
        shapes = [(5, 7, 3), (1, 1, 1), (12, 4, 9)]
        ops = [self.inputs(m, n, k, np.float64, seed=10 + i) for i, (m, n, k) in enumerate(shapes)]
        for i, (a, b) in enumerate(ops):
            self.write("in.h5", f"/runs/r{i}/A", a)
            self.write("in.h5", f"/runs/r{i}/B", b)
        src, out = self.path("in.h5"), self.path("out.h5")
        rep = tessera.run(f"{src}:/runs/*/A", f"{src}:/runs/*/B", f"{out}:/runs/*/C", ranks=args.np,
                          launcher=args.mpiexec, backend="cpu")
        self.assertEqual(rep.raw["kind"], "products")
        self.assertEqual([p.shape for p in rep.products], shapes)
        for i, (a, b) in enumerate(ops):
            product_ok(self, a, b, self.read_c(out, f"/runs/r{i}/C"), np.float64)

    def test_products_list_in_one_launch(self):
        # products=[...] (issue 42 item 4): a manifest written for the caller, one launch; op and
        # alpha per product, a (file, path) pair, a dict.
        shapes = [(5, 7, 3), (9, 4, 6), (1, 1, 1)]
        ops = [self.inputs(m, n, k, np.float64, seed=20 + i) for i, (m, n, k) in enumerate(shapes)]
        src, out = self.path("in.h5"), self.path("out.h5")
        for i, (a, b) in enumerate(ops):
            self.write("in.h5", f"/p{i}/A", a.T.copy() if i == 1 else a)
            self.write("in.h5", f"/p{i}/B", b)
        rep = tessera.run(products=[(f"{src}:/p0/A", f"{src}:/p0/B", (out, "/C0")),
                                    (f"{src}:/p1/A", f"{src}:/p1/B", f"{out}:/C1", {"transpose_a": True, "alpha": 2.0}),
                                    {"a": f"{src}:/p2/A", "b": f"{src}:/p2/B", "c": f"{out}:/C2"}],
                          ranks=args.np, launcher=args.mpiexec, backend="cpu")
        self.assertEqual(rep.raw["kind"], "products")
        self.assertEqual([p.shape for p in rep.products], shapes)
        for i, (a, b) in enumerate(ops):
            want_a = 2.0 * a if i == 1 else a  # alpha folded into A for the check
            product_ok(self, want_a, b, self.read_c(out, f"/C{i}"), np.float64)
        for bad, words in (([], "non-empty list"), ([(f"{src}:/p0/A", f"{src}:/p0/B")], "lacks c"),
                           ([{"a": "x.h5:/A", "b": "x.h5:/B", "c": "y.h5:/C", "gamma": 1}], "unknown keys gamma")):
            with self.assertRaises(tessera.UsageError) as cm:
                tessera.run(products=bad, backend="cpu")
            self.assertIn(words, str(cm.exception))
        with self.assertRaises(tessera.UsageError):
            tessera.run(f"{src}:/p0/A", products=[(f"{src}:/p0/A", f"{src}:/p0/B", f"{out}:/D")])

    def test_f32_pairs_one_file_with_colon_in_name(self):
        # A and B in one file whose name holds ':', given as (file, path) pairs; C into a group.
        m, n, k = 23, 41, 19
        a, b = self.inputs(m, n, k, np.float32, seed=2)
        src = self.path("in:put.h5")
        with h5py.File(src, "w") as f:
            f["A"], f["mats/B"] = a, b
        out = self.path("out:c.h5")
        grid = (args.np, 1)
        rep = tessera.run((src, "A"), (src, "/mats/B"), (out, "/C"), ranks=args.np, launcher=args.mpiexec,
                          backend="cpu", grid=grid, algorithm="panels", kernel="cpu-tiled")
        product_ok(self, a, b, self.read_c(out), np.float32)
        self.check_report(rep, m, n, k, "float32")
        self.assertEqual(tuple(rep.grid), grid)
        self.assertEqual(str(rep.grid), f"{args.np}x1")
        self.assertEqual((rep.algorithm, rep.kernel), ("panels", "cpu-tiled"))

    def test_overwrite_flag_and_kept_report(self):
        m, n, k = 9, 10, 11
        a, b = self.inputs(m, n, k, np.float64, seed=3)
        A, B = self.write("a.h5", "/A", a), self.write("b.h5", "/B", b)
        C = self.path("c.h5")
        with h5py.File(C, "w") as f:
            f["C"] = np.zeros((2, 2))
        with self.assertRaises(tessera.TesseraError) as refused:
            tessera.run(f"{A}:/A", f"{B}:/B", f"{C}:/C", ranks=args.np, launcher=args.mpiexec, backend="cpu")
        self.assertIn("--overwrite", refused.exception.message)
        keep = self.path("kept.json")
        rep = tessera.run(f"{A}:/A", f"{B}:/B", f"{C}:/C", ranks=args.np, launcher=args.mpiexec, backend="cpu",
                          overwrite=True, report=keep, quiet=True)
        self.assertIn("--overwrite", rep.command)
        self.assertIn("--quiet", rep.command)
        self.assertEqual(rep.stdout.strip(), "", "--quiet prints no table")
        self.assertEqual(tessera.Report.load(keep).raw, rep.raw)
        product_ok(self, a, b, self.read_c(C), np.float64)

    def test_launcher_chosen_by_the_package(self):
        m, n, k = 12, 13, 14
        a, b = self.inputs(m, n, k, np.float64, seed=4)
        A, B = self.write("a.h5", "/A", a), self.write("b.h5", "/B", b)
        os.environ.pop("SLURM_JOB_ID", None)
        os.environ.pop("TESSERA_LAUNCHER", None)
        if not (tessera.launch.Probe().which("mpirun") or tessera.launch.Probe().which("mpiexec")):
            self.skipTest("neither mpirun nor mpiexec on PATH")
        rep = tessera.run(f"{A}:/A", f"{B}:/B", self.path("c.h5") + ":/C", ranks=args.np, backend="cpu")
        if args.np == 1:
            self.assertEqual(rep.command[0], args.tessera)  # one rank: the binary alone
        else:
            self.assertIn(os.path.basename(rep.command[0]), ("mpirun", "mpiexec"))
            self.assertEqual(rep.command[1:3], ["-np", str(args.np)])
        product_ok(self, a, b, self.read_c(self.path("c.h5")), np.float64)
        self.assertEqual(rep.nranks, args.np)

    def test_one_rank_without_launcher(self):
        if args.np != 1:
            self.skipTest("one rank only")
        a, b = self.inputs(5, 6, 7, np.float64, seed=5)
        A, B = self.write("a.h5", "/A", a), self.write("b.h5", "/B", b)
        rep = tessera.run(f"{A}:/A", f"{B}:/B", self.path("c.h5") + ":/C", launcher="none", backend="cpu")
        self.assertEqual(rep.command[0], args.tessera)
        product_ok(self, a, b, self.read_c(self.path("c.h5")), np.float64)

    def test_one_rank_is_a_singleton(self):
        """ranks=1 with the default launcher runs no launcher at all: mpirun, mpiexec and srun on
        PATH are stand-ins that leave a mark and fail, so a job started through one of them fails
        (as the 2-rank job here does, showing that the stand-ins are the ones found)."""
        if args.np != 1:
            self.skipTest("one rank only")
        bin_dir, mark = self.path("fake-bin"), self.path("launched")
        os.mkdir(bin_dir)
        for name in ("mpirun", "mpiexec", "srun"):
            with open(os.path.join(bin_dir, name), "w") as f:
                f.write(f"#!/bin/sh\necho {name} \"$@\" >> '{mark}'\nexit 1\n")
            os.chmod(os.path.join(bin_dir, name), 0o755)
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ["PATH"]
        for name in ("SLURM_JOB_ID", "TESSERA_LAUNCHER"):
            os.environ.pop(name, None)
        tessera.launch._cache.clear()
        a, b = self.inputs(11, 12, 13, np.float64, seed=9)
        A, B = self.write("a.h5", "/A", a), self.write("b.h5", "/B", b)
        rep = tessera.run(f"{A}:/A", f"{B}:/B", self.path("c.h5") + ":/C", backend="cpu")
        self.assertEqual(rep.command[0], args.tessera)
        self.assertFalse(os.path.exists(mark), "a launcher was started for one rank")
        self.assertEqual(rep.nranks, 1)
        product_ok(self, a, b, self.read_c(self.path("c.h5")), np.float64)
        with self.assertRaises(tessera.TesseraError):
            tessera.run(f"{A}:/A", f"{B}:/B", self.path("c2.h5") + ":/C", ranks=2, backend="cpu")
        with open(mark) as f:
            self.assertIn("mpirun -np 2 ", f.read(), "the stand-in mpirun was not the one found")

    def test_dataset_path_holding_colon_slash(self):
        # A group named "run:" makes the path /run:/A; the pair is written 'FILE:/run\:/A'.
        a, b = self.inputs(7, 8, 9, np.float64, seed=6)
        src = self.path("x.h5")
        with h5py.File(src, "w") as f:
            f["run:/A"], f["B"] = a, b
        try:
            rep = tessera.run((src, "/run:/A"), (src, "/B"), (self.path("c.h5"), "/out:/C"), ranks=args.np,
                              launcher=args.mpiexec, backend="cpu")
        except tessera.TesseraError as e:
            if "run\\" in e.message or "\\:" in e.message:
                self.skipTest(f"this tessera predates '\\:' escapes in dataset references: {e.message}")
            raise
        self.assertIn(src + ":/run\\:/A", rep.command)
        product_ok(self, a, b, self.read_c(self.path("c.h5"), "/out:/C"), np.float64)

    def test_relative_paths_in_cwd_and_echo(self):
        a, b = self.inputs(6, 7, 8, np.float64, seed=8)
        self.write("a.h5", "/A", a), self.write("b.h5", "/B", b)
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown):
            rep = tessera.run("a.h5:/A", ("b.h5", "/B"), "c.h5:/C", ranks=args.np, launcher=args.mpiexec,
                              backend="cpu", cwd=self.dir, echo=True)
        self.assertIn("rank", shown.getvalue())
        self.assertEqual(shown.getvalue(), rep.stdout)
        product_ok(self, a, b, self.read_c(self.path("c.h5")), np.float64)
        self.assertEqual(glob.glob(os.path.join(self.dir, ".tessera-report-*")), [])

    def test_to_pandas(self):
        a, b = self.inputs(8, 9, 10, np.float64, seed=7)
        A, B = self.write("a.h5", "/A", a), self.write("b.h5", "/B", b)
        rep = tessera.run(f"{A}:/A", f"{B}:/B", self.path("c.h5") + ":/C", ranks=args.np, launcher=args.mpiexec,
                          backend="cpu")
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaisesRegex(ImportError, "pandas"):
                rep.to_pandas()
            self.skipTest("pandas is not installed: to_pandas() raised ImportError naming it (checked)")
        frame = rep.to_pandas()
        self.assertEqual(list(frame.index), list(range(args.np)))
        for phase in ("setup", "read", "compute"):
            self.assertIn(phase, frame.columns)
        self.assertAlmostEqual(frame.loc[0, "compute"], rep.ranks[0].phases["compute"])


if __name__ == "__main__":
    support.main()
