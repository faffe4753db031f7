"""Option mapping without running a job: Python names to tessera's flags, checked against the
binary's `run --help`; (file, path) pairs to FILE:/PATH with '\\:' escapes, read back by the
parser's rule; the launcher chosen for each situation (mpirun, srun in a Slurm allocation,
TESSERA_LAUNCHER, none); the package's version against the project's."""
import os
import re
import unittest

import support
from support import args

tessera = support.import_package()
from tessera import binary as tbinary  # noqa: E402
from tessera import launch, options  # noqa: E402


def parse_ref(text):
    """tessera's rule (docs/usage.md, "Datasets"): the last ':/' not written '\\:' splits; '\\:' is ':',
    '\\\\' is '\\', any other '\\' stays."""
    plain, split, i = [], None, 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in ":\\":
            plain.append(text[i + 1])
            i += 2
            continue
        if text[i] == ":" and text[i + 1:i + 2] == "/":
            split = len(plain)
        plain.append(text[i])
        i += 1
    s = "".join(plain)
    return s[:split], s[split + 1:]


class OptionTest(unittest.TestCase):
    def setUp(self):
        self.known = tbinary.cli_options(tbinary.find_binary(args.tessera), "run")

    def test_help_lists_run_options(self):
        for name, takes_value in (("backend", True), ("grid", True), ("algorithm", True), ("kernel", True),
                                  ("panel-width", True), ("overwrite", False), ("verify", False),
                                  ("quiet", False), ("dry-run", False)):
            self.assertIn(name, self.known)
            self.assertEqual(self.known[name].takes_value, takes_value, name)
        self.assertNotIn("help", self.known)

    def test_help_is_cached_per_binary(self):
        binary = tbinary.find_binary(args.tessera)
        self.assertIs(tbinary.cli_options(binary, "run"), tbinary.cli_options(binary, "run"))

    def test_mapping(self):
        cli = options.cli_args({"overwrite": True, "grid": (2, 3), "algorithm": "summa", "panel_width": 64,
                                "kernel": "cpu-tiled", "verify": False, "baseline": None, "gpu_memory": "8G",
                                "allow_nonfinite": True}, self.known)
        self.assertEqual(cli, ["--overwrite", "--grid", "2x3", "--algorithm", "summa", "--panel-width", "64",
                               "--kernel", "cpu-tiled", "--gpu-memory", "8G", "--allow-nonfinite"])
        self.assertEqual(options.cli_args({"grid": "2x2"}, self.known), ["--grid", "2x2"])
        self.assertEqual(options.cli_args({"report": os.path.join("a", "r.json")}, self.known),
                         ["--report", os.path.join("a", "r.json")])

    def test_mapping_refusals(self):
        for opts, words in (({"colour": "blue"}, "unknown option 'colour'"), ({"overwrite": "yes"}, "is a flag"),
                            ({"backend": True}, "takes a value"), ({"dry_run": True}, "set by the function"),
                            ({"a": "x.h5:/A"}, "set by the function")):
            with self.assertRaisesRegex(tessera.UsageError, re.escape(words)) as cm:
                options.cli_args(opts, self.known)
            self.assertEqual(cm.exception.exit_code, 2)

    def test_help_parsing(self):
        text = ("Options:\n  -h,--help                   Print this help message and exit\n"
                "  --a TEXT                    A (M x K) as FILE:/DATASET\n"
                "  --progress TEXT:{auto,on,off}=auto\n"
                "                              progress lines on stderr: --dry-run, on\n"
                "  -q,--quiet                  print no report table\n"
                "  --transpose-a               A GPU-friendly flag whose text starts with capitals\n"
                "  --alpha FLOAT=1             scale\n")
        parsed = tbinary.parse_help(text)
        self.assertEqual({n: o.takes_value for n, o in parsed.items()},
                         {"help": False, "a": True, "progress": True, "quiet": False, "transpose-a": False,
                          "alpha": True})

    def test_dataset_pairs(self):
        cases = [(("data.h5", "/A"), "data.h5:/A"),
                 (("data.h5", "group/A"), "data.h5:/group/A"),
                 (("d:1.h5", "/A"), "d:1.h5:/A"),  # ':' in a file name needs no escape
                 (("dir:/x.h5", "/A"), "dir:/x.h5:/A"),  # nor ':/' there: the last ':/' splits
                 (("data.h5", "/run:/A"), "data.h5:/run\\:/A"),
                 (("data.h5", "/a:b"), "data.h5:/a:b"),
                 (("back\\slash.h5", "/A"), "back\\slash.h5:/A"),
                 (("ends\\", "/A"), "ends\\\\:/A"),
                 (("x\\:y.h5", "/p\\:/q\\"), "x\\\\:y.h5:/p\\\\\\:/q\\")]
        for (file, path), want in cases:
            ref = options.dataset_ref((file, path), "a")
            self.assertEqual(ref, want, (file, path))
            self.assertEqual(parse_ref(ref), (file, path if path.startswith("/") else "/" + path), ref)
            self.assertEqual(options.dataset_file(ref), file)
        self.assertEqual(options.dataset_ref("as/written.h5:/A", "a"), "as/written.h5:/A")
        for bad in ("no-dataset.h5", ("only-one",), ("f.h5", "/"), 42):
            with self.assertRaises(tessera.UsageError):
                options.dataset_ref(bad, "a")


class LauncherTest(unittest.TestCase):
    def probe(self, on_path=("mpirun", "mpiexec", "srun"), flavour="openmpi", srun_types="", root=False):
        return launch.Probe(which=lambda n: f"/usr/bin/{n}" if n in on_path else None,
                            mpi_flavour=lambda p: flavour, srun_mpi_types=lambda p: srun_types,
                            is_root=lambda: root)

    def test_outside_slurm(self):
        self.assertEqual(launch.launcher_prefix(4, env={}, probe=self.probe()),
                         ["/usr/bin/mpirun", "-np", "4", "--bind-to", "none"])
        self.assertEqual(launch.launcher_prefix(2, env={}, probe=self.probe(root=True)),
                         ["/usr/bin/mpirun", "-np", "2", "--bind-to", "none", "--allow-run-as-root"])
        self.assertEqual(launch.launcher_prefix(2, env={}, probe=self.probe(on_path=("mpiexec",), flavour="hydra")),
                         ["/usr/bin/mpiexec", "-np", "2", "-bind-to", "none"])
        self.assertEqual(launch.launcher_prefix(1, env={}, probe=self.probe(on_path=())), [])
        with self.assertRaisesRegex(tessera.TesseraError, "no MPI launcher"):
            launch.launcher_prefix(2, env={}, probe=self.probe(on_path=()))

    def test_inside_slurm(self):
        env = {"SLURM_JOB_ID": "42"}
        listing = "MPI plugin types are...\n\tnone\n\tpmi2\n\tpmix\nspecific pmix plugin versions available: pmix_v4\n"
        self.assertEqual(launch.launcher_prefix(8, env=env, probe=self.probe(srun_types=listing)),
                         ["/usr/bin/srun", "--mpi=pmix", "-n", "8"])
        self.assertEqual(launch.launcher_prefix(8, env=env, probe=self.probe(srun_types="\tnone\n\tpmi2\n")),
                         ["/usr/bin/srun", "--mpi=pmi2", "-n", "8"])
        # No PMI plugin that Open MPI can use: mpirun, which reads the allocation (slurm/common.sh).
        self.assertEqual(launch.launcher_prefix(8, env=env, probe=self.probe(srun_types="\tnone\n"))[0],
                         "/usr/bin/mpirun")
        self.assertEqual(launch.launcher_prefix(8, "srun", env=env, probe=self.probe()), ["/usr/bin/srun", "-n", "8"])
        self.assertEqual(launch.launcher_prefix(3, env={**env, "TESSERA_LAUNCHER": "mpirun"}, probe=self.probe()),
                         ["/usr/bin/mpirun", "-np", "3", "--bind-to", "none"])
        self.assertEqual(launch.child_env(["/usr/bin/srun"], {"SLURM_CPUS_PER_TASK": "6"})["SRUN_CPUS_PER_TASK"], "6")

    def test_explicit(self):
        probe = self.probe()
        self.assertEqual(launch.launcher_prefix(2, ["mpiexec", "--oversubscribe"], env={}, probe=probe),
                         ["mpiexec", "--oversubscribe", "-np", "2"])
        self.assertEqual(launch.launcher_prefix(2, ["/opt/slurm/bin/srun", "--mpi=pmix"], env={}, probe=probe),
                         ["/opt/slurm/bin/srun", "--mpi=pmix", "-n", "2"])
        self.assertEqual(launch.launcher_prefix(2, "/opt/mpi/bin/mpirun", env={}, probe=probe),
                         ["/opt/mpi/bin/mpirun", "-np", "2", "--bind-to", "none"])
        self.assertEqual(launch.launcher_prefix(1, "none", env={}, probe=probe), [])
        for ranks, launcher in ((2, "none"), (2, "pbs"), (0, None), (True, None), (2, [])):
            with self.assertRaises(tessera.UsageError):
                launch.launcher_prefix(ranks, launcher, env={}, probe=probe)


class VersionTest(unittest.TestCase):
    def test_versions_agree(self):
        with open(os.path.join(args.source_dir, "CMakeLists.txt")) as f:
            project = re.search(r"project\(tessera VERSION ([0-9.]+)", f.read()).group(1)
        with open(os.path.join(support.PACKAGE_SRC, os.pardir, "pyproject.toml")) as f:
            pyproject = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
        self.assertEqual((tessera.__version__, pyproject), (project, project))


if __name__ == "__main__":
    support.main()
