"""tessera.dry_run: the plan from sizes for many ranks and from datasets, read into DryRun and
the same as the JSON the CLI writes for the same command."""
import json
import subprocess

import numpy as np

import support
from support import TempDirTest, args

tessera = support.import_package()


class DryRunTest(TempDirTest):
    def test_from_sizes_many_ranks(self):
        plan = tessera.dry_run(m=100000, n=90000, k=70000, ranks=99991, backend="cpu")
        self.assertIsInstance(plan, tessera.DryRun)
        self.assertEqual(plan.shape, (100000, 90000, 70000))
        self.assertEqual(plan.ranks, 99991)
        self.assertEqual(plan.backend, "cpu")
        self.assertLessEqual(plan.grid.rows * plan.grid.cols, 99991)
        self.assertEqual(plan.idle_ranks, 99991 - plan.grid.rows * plan.grid.cols)
        self.assertGreater(plan.predicted_seconds, 0)
        self.assertGreater(plan.total_read_bytes, 0)
        self.assertGreater(plan.rank0.host_bytes, 0)
        self.assertGreaterEqual(plan.largest.rows, 1)
        self.assertIn("predicted", plan.stdout)
        # One process plans for any rank count: no launcher.
        self.assertEqual(plan.command[0], args.tessera)
        self.assertEqual(plan.command[plan.command.index("--ranks") + 1], "99991")

    def test_from_datasets_matches_the_cli(self):
        rng = np.random.default_rng(3)
        A = self.write("a.h5", "/A", rng.random((300, 200)))
        B = self.write("b.h5", "/B", rng.random((200, 250)).astype(np.float32))
        plan = tessera.dry_run((A, "/A"), f"{B}:/B", ranks=4, backend="cpu", algorithm="summa", grid=(2, 2))
        self.assertEqual(plan.shape, (300, 250, 200))
        self.assertEqual(plan.dtype, "float64")  # one input float64: computed in float64
        self.assertEqual((plan.algorithm, str(plan.grid)), ("summa", "2x2"))
        cli = self.path("cli.json")
        subprocess.run([args.tessera, "run", "--dry-run", "--a", f"{A}:/A", "--b", f"{B}:/B", "--ranks", "4",
                        "--backend", "cpu", "--algorithm", "summa", "--grid", "2x2", "--report", cli, "-q"],
                       check=True, capture_output=True)
        with open(cli) as f:
            from_cli = json.load(f)
        # The same plan; the provenance differs only where the two command lines do.
        self.assertEqual({k: v for k, v in plan.raw.items() if k != "provenance"},
                         {k: v for k, v in from_cli.items() if k != "provenance"})
        self.assertEqual(plan.schema, "tessera.dry-run/1")
        self.assertEqual(plan.provenance.options["ranks"], 4)
        self.assertEqual(plan.provenance.git_id, from_cli["provenance"]["git_id"])

    def test_arguments_checked_before_launch(self):
        for kwargs in ({"m": 10, "n": 10}, {"a": "a.h5:/A"}, {"a": "a.h5:/A", "b": "b.h5:/B", "m": 3}):
            with self.assertRaises(tessera.UsageError) as e:
                tessera.dry_run(**kwargs)
            self.assertEqual(e.exception.exit_code, 2)
            self.assertEqual(e.exception.command, [])

    def test_to_pandas(self):
        plan = tessera.dry_run(m=1000, n=1000, k=1000, ranks=3, backend="cpu")
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaisesRegex(ImportError, "pandas"):
                plan.to_pandas()
            self.skipTest("pandas is not installed: to_pandas() raised ImportError naming it (checked)")
        frame = plan.to_pandas()
        self.assertEqual(list(frame.index), ["rank0", "largest"])
        self.assertEqual(frame.loc["rank0", "host_bytes"], plan.rank0.host_bytes)


if __name__ == "__main__":
    support.main()
