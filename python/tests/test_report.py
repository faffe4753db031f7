"""Reading reports without running a job: every documented field (docs/report.md) typed, fields
an older tessera lacks left None, fields a newer one adds kept in .raw, phases summarised over
repeated runs read as their median; to_pandas() one row per rank, or an ImportError naming pandas."""
import copy
import json
import os
import tempfile
import unittest

import support

tessera = support.import_package()


def rank(r, rows, phases, active=True, warnings=()):
    return {"rank": r, "host": "node1", "device": "cpu (openblas 2 threads)", "device_id": -1, "active": active,
            "block": {"row": r if active else -1, "col": 0 if active else -1}, "rows": rows, "cols": [0, 25],
            "flops": 15000.0 if active else 0.0, "gflops": 0.2, "startup_seconds": 0.34,
            "phase_order": list(phases), "phases": phases, "warnings": list(warnings),
            "peak_host_bytes": 29974528, "peak_gpu_bytes": 0}


REPORT = {
    "schema": "tessera.report/1", "tessera_version": "0.1.0", "started_at": "2026-11-30T11:19:50Z",
    "inputs": {"a": "a.h5:/A", "b": "b.h5:/B"}, "output": "c.h5:/C",
    "shape": {"m": 30, "n": 25, "k": 20}, "dtype": "float32", "grid": {"rows": 2, "cols": 1}, "nranks": 3,
    "algorithm": "panels", "comm": "host", "write": "in place (every rank writes its own block)", "stream_chunks": 1,
    "backend": "cpu", "kernel": "openblas",
    "totals": {"wall_seconds": 0.016, "flops": 30000.0, "aggregate_gflops": 0.39, "max_compute_seconds": 7.6e-5,
               "mean_compute_seconds": 7.5e-5, "load_imbalance": 1.006},
    "verification": None,
    "ranks": [rank(0, [0, 15], {"setup": 0.006, "read": 0.0013, "compute": 7.5e-5, "write": 0.0057,
                                "release": 2.2e-5}, warnings=["ranks 0 and 1 share GPU 0"]),
              rank(1, [15, 30], {"setup": 0.0058, "read": 0.0032, "compute": 7.6e-5, "gather": 0.001,
                                 "release": 6e-5}, warnings=["ranks 0 and 1 share GPU 0"]),
              rank(2, [0, 0], {"setup": 0.0058, "release": 1e-6}, active=False)],
}


class ReportTest(unittest.TestCase):
    def test_documented_fields(self):
        rep = tessera.Report.from_json(copy.deepcopy(REPORT))
        self.assertEqual((rep.schema, rep.tessera_version), ("tessera.report/1", "0.1.0"))
        self.assertEqual((rep.a, rep.b, rep.c), ("a.h5:/A", "b.h5:/B", "c.h5:/C"))
        self.assertEqual(rep.shape, tessera.Shape(30, 25, 20))
        self.assertEqual(rep.grid, tessera.Grid(2, 1))
        self.assertEqual(str(rep.grid), "2x1")
        self.assertEqual((rep.dtype, rep.algorithm, rep.comm, rep.backend, rep.kernel, rep.nranks),
                         ("float32", "panels", "host", "cpu", "openblas", 3))
        self.assertEqual(rep.write, "in place (every rank writes its own block)")
        self.assertEqual((rep.wall_seconds, rep.flops, rep.load_imbalance), (0.016, 30000.0, 1.006))
        self.assertEqual(rep.warnings, ["ranks 0 and 1 share GPU 0"])  # the ranks', each once
        self.assertIsNone(rep.verification)
        self.assertIsNone(rep.repeats)  # a single run
        r0, r1, r2 = rep.ranks
        self.assertEqual((r0.rank, r0.block, r0.rows, r0.cols), (0, (0, 0), (0, 15), (0, 25)))
        self.assertEqual(list(r0.phases), ["setup", "read", "compute", "write", "release"])
        self.assertEqual(r1.phases["gather"], 0.001)
        self.assertFalse(r2.active)
        self.assertIsNone(r2.block)
        self.assertEqual(rep.phases, ["setup", "read", "compute", "write", "release", "gather"])
        self.assertEqual(r0.peak_host_bytes, 29974528)
        self.assertIsNone(rep.provenance)  # a report of a tessera before provenance

    def test_provenance(self):
        d = copy.deepcopy(REPORT)
        d["provenance"] = {"command_line": ["tessera", "run", "--a", "a.h5:/A"], "options": {"a": "a.h5:/A"},
                           "tessera_version": "0.1.0", "git_id": "b79cba9-dirty", "build_type": "Release",
                           "libraries": {"hdf5": "1.10.8", "nccl": None}, "slurm_job_id": None, "hosts": ["node1"],
                           "gpus": [{"rank": 0, "host": "node1", "device_id": 0, "name": "NVIDIA H200",
                                     "uuid": "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "pci_bus_id": None}]}
        prov = tessera.Report.from_json(d).provenance
        self.assertIsInstance(prov, tessera.Provenance)
        self.assertEqual((prov.git_id, prov.build_type, prov.hosts), ("b79cba9-dirty", "Release", ["node1"]))
        self.assertEqual(prov.options, {"a": "a.h5:/A"})
        self.assertEqual(prov.libraries["hdf5"], "1.10.8")
        self.assertEqual(prov.gpus[0]["uuid"], "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")
        plan = tessera.DryRun.from_json({"schema": "tessera.dry-run/1", "provenance": d["provenance"]})
        self.assertEqual((plan.schema, plan.provenance.git_id), ("tessera.dry-run/1", "b79cba9-dirty"))

    def test_repeated_runs(self):
        repeated = copy.deepcopy(REPORT)
        spread = {"min": 0.014, "median": 0.015, "max": 0.016}
        repeated["repeats"] = {"runs": 3, "warmup": 1,
                               "wall_seconds": {**spread, "samples": [0.015, 0.014, 0.016]},
                               "phases": {"read": spread}, "ranks": [{"rank": 0, "phases": {"read": spread}}]}
        rep = tessera.Report.from_json(repeated)
        self.assertEqual((rep.repeats["runs"], rep.repeats["warmup"]), (3, 1))
        self.assertEqual(rep.repeats["wall_seconds"]["samples"], [0.015, 0.014, 0.016])
        self.assertEqual(rep.wall_seconds, 0.016)  # the last run's, as totals.wall_seconds says

    def test_older_and_newer_reports(self):
        newer = copy.deepcopy(REPORT)
        newer["schema"] = "tessera.report/2"
        newer["provenance"] = {"command_line": ["tessera", "run"], "git": "abc123", "slurm_job_id": "42",
                               "future_key": [1]}
        newer["warnings"] = ["job-level warning"]
        newer["repeat"] = 5
        newer["totals"]["wall_seconds"] = {"min": 0.9, "median": 1.0, "max": 1.3}
        newer["ranks"][0]["phases"]["compute"] = {"min": 0.1, "median": 0.2, "max": 0.4}
        newer["ranks"][0]["gpu_uuid"] = "GPU-1234"
        rep = tessera.Report.from_json(newer)
        self.assertEqual(rep.provenance["git"], "abc123")  # keys it does not know: as in the JSON
        self.assertEqual((rep.provenance.command_line, rep.provenance.slurm_job_id), (["tessera", "run"], "42"))
        self.assertIsNone(rep.provenance.git_id)
        self.assertEqual(rep.provenance.get("future_key"), [1])
        self.assertEqual(rep.warnings, ["job-level warning"])
        self.assertEqual(rep.raw["repeat"], 5)
        self.assertEqual(rep.wall_seconds, 1.0)
        self.assertEqual(rep.ranks[0].phases["compute"], 0.2)
        self.assertEqual(rep.ranks[0].raw["phases"]["compute"]["max"], 0.4)
        self.assertEqual(rep.ranks[0].raw["gpu_uuid"], "GPU-1234")

        older = copy.deepcopy(REPORT)
        for key in ("schema", "write", "stream_chunks"):
            del older[key]
        for r in older["ranks"]:
            del r["startup_seconds"], r["phase_order"]
        rep = tessera.Report.from_json(older)
        self.assertIsNone(rep.schema)
        self.assertIsNone(rep.write)
        self.assertIsNone(rep.ranks[0].startup_seconds)
        self.assertEqual(set(rep.ranks[0].phases), {"setup", "read", "compute", "write", "release"})

    def test_load(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump(REPORT, f)
            self.assertEqual(tessera.Report.load(path).raw, REPORT)

    def test_to_pandas(self):
        rep = tessera.Report.from_json(copy.deepcopy(REPORT))
        try:
            import pandas
        except ImportError:
            with self.assertRaisesRegex(ImportError, "pip install pandas"):
                rep.to_pandas()
            self.skipTest("pandas is not installed: to_pandas() raised ImportError naming it (checked)")
        frame = rep.to_pandas()
        self.assertEqual(list(frame.index), [0, 1, 2])
        for column in ("host", "device", "block_row", "gflops", "peak_host_bytes", "setup", "read", "compute",
                       "write", "gather", "release"):
            self.assertIn(column, frame.columns)
        self.assertEqual(frame.loc[1, "gather"], 0.001)
        self.assertTrue(pandas.isna(frame.loc[0, "gather"]))
        self.assertTrue(pandas.isna(frame.loc[2, "compute"]))


if __name__ == "__main__":
    support.main()
