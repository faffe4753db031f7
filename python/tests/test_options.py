"""Option mapping without running a job: the binary's `--help-json` (types, defaults, allowed
values, ranges) read into typed option dataclasses, Python names to tessera's flags, values of the
wrong type or range refused; (file, path) pairs to FILE:/PATH with '\\:' escapes, read back by the
parser's rule; the launcher chosen for each situation (mpirun, srun in a Slurm allocation,
TESSERA_LAUNCHER, none); the package's version against the project's."""
import dataclasses
import json
import os
import re
import subprocess
import typing
import unittest

import support
from support import args

tessera = support.import_package()
from tessera import api as tapi  # noqa: E402
from tessera import binary as tbinary  # noqa: E402
from tessera import launch, options, typed  # noqa: E402


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
        self.binary = tbinary.find_binary(args.tessera)
        self.spec = tbinary.command_spec(self.binary, "run")
        self.known = self.spec.options

    def test_help_json_describes_run_options(self):
        o = self.known
        for name, type_, takes_value, default in (
                ("backend", "string", True, "auto"), ("grid", "string", True, None),
                ("algorithm", "string", True, "auto"),
                ("kernel", "string", True, "auto"), ("panel_width", "integer", True, 0), ("alpha", "number", True, 1),
                ("repeat", "integer", True, 1), ("overwrite", "boolean", False, False),
                ("verify", "boolean", False, False), ("quiet", "boolean", False, False),
                ("dry_run", "boolean", False, False), ("verbose", "count", False, 0), ("config", "string", True, None)):
            self.assertIn(name, o)
            self.assertEqual((o[name].type, o[name].takes_value, o[name].default), (type_, takes_value, default), name)
        self.assertEqual(o["panel_width"].flag, "--panel-width")
        self.assertEqual(o["progress"].allowed, ("auto", "on", "off"))
        self.assertEqual(o["log_level"].allowed, ("error", "warn", "info", "debug"))
        self.assertEqual((o["ranks"].minimum, o["ranks"].minimum_exclusive), (1, False))
        self.assertEqual(o["ranks_per_node"].minimum, 1)
        self.assertIn("Freivalds", o["verify"].help)
        for internal in ("help", "help_json", "version"):
            self.assertNotIn(internal, o)
        self.assertEqual(self.spec.raw["schema"], "tessera.options/1")
        self.assertEqual([d["name"] for d in self.spec.raw["inherited"]], ["config"])

    def test_help_json_of_other_commands(self):
        gen = tbinary.command_spec(self.binary, "generate").options
        # generate's required options do not stop --help-json (it ends the parse first).
        self.assertTrue(gen["out"].required and gen["rows"].required and gen["cols"].required)
        self.assertEqual((gen["rows"].type, gen["seed"].type, gen["seed"].minimum), ("integer", "integer", 0))
        self.assertEqual((gen["low"].type, gen["low"].default), ("number", -1))
        ver = tbinary.command_spec(self.binary, "verify").options
        self.assertEqual((ver["vectors"].type, ver["vectors"].minimum, ver["vectors"].minimum_exclusive),
                         ("integer", 1, False))
        # Nested commands too (issue 40: `config show --help-json` exited 2).
        show = tbinary.command_spec(self.binary, "config", "show")
        self.assertEqual(show.raw["command"], "config show")
        self.assertTrue(show.options["file"].positional)
        bench = tbinary.command_spec(self.binary, "bench").options
        self.assertTrue(bench["sizes"].list)
        self.assertEqual(bench["sizes"].delimiter, ",")
        rec = tbinary.command_spec(self.binary, "recover").options
        self.assertTrue(rec["files"].positional and rec["files"].list)
        top = subprocess.run([self.binary, "--help-json"], capture_output=True, text=True, timeout=60)
        self.assertEqual(top.returncode, 0, top.stderr)
        doc = json.loads(top.stdout)
        self.assertEqual(doc["command"], "")
        self.assertTrue({"run", "generate", "verify", "info"} <= set(doc["subcommands"]))
        self.assertIn("config", [d["name"] for d in doc["options"]])
        # On several ranks one document is printed (rank 0's), and every rank exits 0.
        two = subprocess.run(args.mpiexec + ["-np", "2", self.binary, "verify", "--help-json"], capture_output=True,
                             text=True, timeout=120)
        self.assertEqual(two.returncode, 0, two.stderr)
        self.assertEqual(json.loads(two.stdout)["command"], "verify")

    def test_help_json_validates_against_its_schema(self):
        try:
            import jsonschema
        except ImportError:
            self.skipTest("python3 lacks jsonschema (Debian: python3-jsonschema)")
        with open(os.path.join(args.source_dir, "docs", "schema", "options.schema.json")) as f:
            schema = json.load(f)
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        for command in ([], ["run"], ["generate"], ["verify"], ["info"], ["bench"], ["tune"], ["recover"], ["config"],
                        ["config", "show"]):
            p = subprocess.run([self.binary, *command, "--help-json"], capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            doc = json.loads(p.stdout)
            errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in cls(schema).iter_errors(doc)]
            self.assertEqual(errors, [], command)

    def test_help_json_is_cached_per_binary(self):
        self.assertIs(tbinary.command_spec(self.binary, "run"), tbinary.command_spec(self.binary, "run"))
        self.assertIs(tessera.options_type("run", self.binary), tessera.options_type("run", self.binary))

    def test_typed_dataclass(self):
        RunOptions = tessera.options_type("run", self.binary)
        self.assertTrue(dataclasses.is_dataclass(RunOptions))
        fields = {f.name: f for f in dataclasses.fields(RunOptions)}
        self.assertEqual(set(fields), set(self.known))
        self.assertEqual(fields["panel_width"].type, typing.Optional[int])
        self.assertEqual(fields["alpha"].type, typing.Optional[float])
        self.assertEqual(fields["overwrite"].type, typing.Optional[bool])
        opts = RunOptions(backend="cpu", grid=(2, 3), panel_width=64, overwrite=True, alpha=0.5, verbose=2,
                          progress="off", report=os.path.join("a", "r.json"))
        words = opts.to_args()  # in the order of the fields: the binary's own order of its options
        pairs = {words[i]: words[i + 1] for i in range(len(words) - 1)}
        for flag, value in (("--backend", "cpu"), ("--grid", "2x3"), ("--panel-width", "64"), ("--alpha", "0.5"),
                            ("--progress", "off"), ("--report", os.path.join("a", "r.json"))):
            self.assertEqual(pairs.get(flag), value, words)
        self.assertEqual((words.count("--overwrite"), words.count("--verbose"), len(words)), (1, 2, 15), words)
        self.assertEqual(opts.given()["grid"], (2, 3))
        self.assertIsNone(opts.kernel)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            opts.backend = "cuda"

    def test_typed_refusals(self):
        RunOptions = tessera.options_type("run", self.binary)
        for values, words in (({"colour": "blue"}, "unknown option 'colour': tessera run has no --colour"),
                              ({"panel_width": "64"}, "'panel_width' (--panel-width) takes a whole number (int), "
                                                      "got str '64'"),
                              ({"panel_width": 6.0}, "takes a whole number"),
                              ({"alpha": "2"}, "takes a number"), ({"alpha": float("nan")}, "takes a number"),
                              ({"overwrite": "yes"}, "is a flag (--overwrite): give True or False, got str 'yes'"),
                              ({"overwrite": 1}, "is a flag"),
                              ({"backend": True}, "takes a value"), ({"backend": 3}, "takes text (str), got int 3"),
                              ({"progress": "sometimes"}, "takes one of auto, on, off"),
                              ({"ranks": 0}, "must be at least 1, got 0"),
                              # The parser's own ranges, from --help-json (issue 40).
                              ({"repeat": 0}, "'repeat' (--repeat) must be at least 1, got 0"),
                              ({"repeat": 2**31}, "must be at most 2147483647, got 2147483648"),
                              ({"warmup": -1}, "'warmup' (--warmup) must be at least 0, got -1"),
                              ({"panel_width": -1}, "must be at least 0, got -1"),
                              ({"m": 2**64 - 1}, "must be at most 9223372036854775807, got 18446744073709551615"),
                              ({"n": 0}, "must be at least 1, got 0"),
                              ({"ranks_per_node": -2}, "must be at least 1"),
                              ({"grid": (2,)}, "a pair of positive whole numbers"),
                              ({"grid": (2, 0)}, "a pair of positive whole numbers"),
                              ({"verbose": -1}, "is a flag")):
            with self.assertRaises(tessera.OptionError, msg=values) as cm:
                RunOptions(**values)
            self.assertIn(words, cm.exception.message)
            self.assertIsInstance(cm.exception, tessera.UsageError)
            self.assertEqual(cm.exception.exit_code, 2)
            self.assertEqual(cm.exception.command, [])

    def test_every_choice_refused_before_launch(self):
        # Issue 41: the words of every choice option come from the binary's registries (--help-json);
        # a word not among them, or a grid that is not AxB, is an OptionError before anything runs.
        RunOptions = tessera.options_type("run", self.binary)
        choices = {n: o for n, o in self.known.items() if o.allowed}
        for name in ("backend", "algorithm", "kernel", "baseline", "dtype", "comm", "write", "progress"):
            self.assertIn(name, choices)
        self.assertTrue({"auto", "openblas", "cpu-tiled", "cpu-naive"} <= set(self.known["kernel"].allowed))
        for name, o in choices.items():
            with self.assertRaises(tessera.OptionError, msg=name) as cm:
                RunOptions(**{name: "bogus"})
            self.assertIn("takes one of " + ", ".join(o.allowed), cm.exception.message)
        with self.assertRaisesRegex(tessera.OptionError, re.escape("(did you mean 'summa'?)")):
            RunOptions(algorithm="sumaa")
        for call in (lambda: tessera.run("a.h5:/A", "b.h5:/B", "c.h5:/C", binary=self.binary, kernel="nope"),
                     lambda: tessera.run("a.h5:/A", "b.h5:/B", "c.h5:/C", binary=self.binary, backend="gpu"),
                     lambda: tessera.dry_run(m=4, n=4, k=4, binary=self.binary, algorithm="sumaa"),
                     lambda: tessera.dry_run(m=4, n=4, k=4, binary=self.binary, grid="2y2")):
            with self.assertRaises(tessera.OptionError) as cm:
                call()
            self.assertEqual((cm.exception.exit_code, cm.exception.command), (2, []))

    def test_out_of_range_refused_before_launch(self):
        # tessera.run / dry_run / generate raise before anything is launched (no command to show).
        for call in (lambda: tessera.run("a.h5:/A", "b.h5:/B", "c.h5:/C", binary=self.binary, repeat=0),
                     lambda: tessera.run("a.h5:/A", "b.h5:/B", "c.h5:/C", binary=self.binary, warmup=-1),
                     lambda: tessera.dry_run(m=2**63, n=4, k=4, binary=self.binary),
                     lambda: tessera.generate("g.h5:/G", 2, 2, binary=self.binary, gzip=10)):
            with self.assertRaises(tessera.OptionError) as cm:
                call()
            self.assertEqual((cm.exception.exit_code, cm.exception.command), (2, []))
        self.assertFalse(os.path.exists("g.h5"))

    def test_mapping(self):
        cli = tapi.option_args(self.binary, "run", {
            "overwrite": True, "grid": (2, 3), "algorithm": "summa", "panel_width": 64, "kernel": "cpu-tiled",
            "verify": False, "baseline": None, "gpu_memory": "8G", "allow_nonfinite": True})
        # In the binary's order of its options (the dataclass's fields), whatever the order given.
        self.assertEqual(cli, ["--overwrite", "--allow-nonfinite", "--algorithm", "summa", "--panel-width", "64",
                               "--grid", "2x3", "--kernel", "cpu-tiled", "--gpu-memory", "8G"])
        self.assertEqual(tapi.option_args(self.binary, "run", {"grid": "2x2"}), ["--grid", "2x2"])
        self.assertEqual(tapi.option_args(self.binary, "run", {"panel-width": 8}), ["--panel-width", "8"])
        # Unchecked (check_options=False): taken for what each value looks like.
        self.assertEqual(tapi.option_args(self.binary, "run", {"colour": "blue", "flag": True, "grid": (1, 2)}, False),
                         ["--colour", "blue", "--flag", "--grid", "1x2"])

    def test_mapping_refusals(self):
        for opts, words in (({"colour": "blue"}, "unknown option 'colour'"), ({"overwrite": "yes"}, "is a flag"),
                            ({"backend": True}, "takes a value"), ({"dry_run": True}, "set by the function"),
                            ({"a": "x.h5:/A"}, "set by the function"), ({"help_json": True}, "set by the function")):
            with self.assertRaisesRegex(tessera.UsageError, re.escape(words)) as cm:
                tapi.option_args(self.binary, "run", opts)
            self.assertEqual(cm.exception.exit_code, 2)

    def test_spec_from_a_document(self):
        # A --help-json document written here: the package reads types, ranges and lists from it
        # whatever the binary, e.g. a newer one with an option this package has never seen.
        doc = {"schema": "tessera.options/1", "command": "frob", "version": "9.9", "inherited": [], "options": [
            {"name": "level", "flags": ["--level", "-l"], "type": "integer", "takes_value": True, "minimum": 1,
             "maximum": 8, "maximum_exclusive": True, "default": 3},
            {"name": "ratio", "flags": ["--ratio"], "type": "number", "takes_value": True, "minimum": 0,
             "minimum_exclusive": True},
            {"name": "tags", "flags": ["--tags"], "type": "string", "takes_value": True, "list": True,
             "delimiter": ",", "allowed": ["x", "y", "z"]},
            {"name": "fast", "flags": ["--fast"], "type": "boolean", "takes_value": False},
            {"name": "files", "flags": [], "type": "string", "takes_value": True, "list": True, "positional": True}]}
        spec = tbinary.parse_spec(doc)
        Frob = typed.make_options_type(spec)
        self.assertEqual(Frob.__name__, "FrobOptions")
        self.assertEqual(spec.options["level"].flag, "--level")
        self.assertEqual(Frob(level=7, ratio=0.5, tags=["x", "z"], fast=True, files=["p", "q"]).to_args(),
                         ["--level", "7", "--ratio", "0.5", "--tags", "x,z", "--fast", "p", "q"])
        for values, words in (({"level": 8}, "must be below 8"), ({"level": 0}, "at least 1"),
                              ({"ratio": 0}, "must be above 0"), ({"tags": ["w"]}, "one of x, y, z"),
                              ({"tags": []}, "one or more values"), ({"files": [3]}, "takes text")):
            with self.assertRaisesRegex(tessera.OptionError, re.escape(words)):
                Frob(**values)
        with self.assertRaisesRegex(tessera.TesseraError, "not a tessera.options/1 document"):
            tbinary.parse_spec({"schema": "other"})

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
        # One rank: the binary alone (an MPI singleton), mpirun or not; inside Slurm srun starts it.
        self.assertEqual(launch.launcher_prefix(1, env={}, probe=self.probe()), [])
        self.assertEqual(launch.launcher_prefix(1, env={"TESSERA_LAUNCHER": "mpirun"}, probe=self.probe()),
                         ["/usr/bin/mpirun", "-np", "1", "--bind-to", "none"])
        self.assertEqual(launch.launcher_prefix(1, "mpirun", env={}, probe=self.probe()),
                         ["/usr/bin/mpirun", "-np", "1", "--bind-to", "none"])
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
        self.assertEqual(launch.launcher_prefix(1, env=env, probe=self.probe(srun_types=listing)),
                         ["/usr/bin/srun", "--mpi=pmix", "-n", "1"])
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
