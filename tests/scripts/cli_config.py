"""Config files (docs/configuration.md) read by toml++: typed values, arrays, a table per
subcommand and [slurm]; every refusal one line naming FILE:LINE and table.key, exit 2, on every
rank; the command line overriding the file; `tessera config show`; slurm/common.sh reading it.
One --case per test."""
import json
import os
import subprocess

import h5py
import numpy as np

from common import Runner, check, parser, write

p = parser(__doc__)
p.add_argument("--case", required=True)
args = p.parse_args()
r = Runner(args)


def toml(name, text):
    path = r.path(name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def refused(argv, expect, np_=2):
    """argv exits 2 on every rank with one error line holding `expect`."""
    res = r.run(argv, np_=np_, expect_ok=False, timeout=60)
    check(res.returncode == 2, f"exit {res.returncode}, expected 2")
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    check(len(errors) == 1, f"expected one error line, got {errors}")
    check(expect in errors[0], f"the error must say {expect!r}: {errors[0]!r}")
    check("Traceback" not in res.stderr and "terminate called" not in res.stderr, "no stack traces")


def show(path, *extra, expect_ok=True):
    return r.run(["config", "show", path, *extra], direct=True, expect_ok=expect_ok, timeout=60)


# (file text, what the one error line must say after the file's path)
BAD = {
    "unknown-key": ('[run]\nm = 4\nbogus_key = 3\n', ":3: run.bogus_key: unknown key, not an option of `tessera run`"),
    "misspelt-key": ('[run]\npanel-widht = 3\n', ":2: run.panel-widht: unknown key, not an option of `tessera run` "
                                                 "(did you mean 'panel-width'?)"),
    "key-of-another-table": ('[run]\nrows = 3\n', ":2: run.rows: unknown key, not an option of `tessera run` "
                                                  "('rows' is a key of [generate])"),
    "verify-3": ('[run]\n\nverify = 3\n', ":3: run.verify: must be true or false, not the integer 3"),
    "kernel-array": ('[run]\nkernel = [1, 2]\n', ":2: run.kernel: must be a string, not an array"),
    "grid-three": ('[run]\ngrid = [2, 1, 1]\n', ":2: run.grid: must be a string \"AxB\" or an array [A, B]"),
    "grid-zero": ('[run]\ngrid = [2, 0]\n', ":2: run.grid: must be a string \"AxB\" or an array [A, B] of two whole "
                                            "numbers above 0, not an array holding the integer 0"),
    "m-string": ('[run]\nm = "many"\n', ":2: run.m: must be a whole number from"),
    "m-float": ('[run]\nm = 4.5\n', ":2: run.m: must be a whole number from"),
    "ranks-zero": ('[run]\nranks = 0\n', ":2: run.ranks: must be a whole number from 1 to 2147483647, not '0'"),
    # A key's range is its option's (issue 40): never the range of the C++ type behind it.
    "repeat-float": ('[run]\nrepeat = 2.0\n', ":2: run.repeat: must be a whole number from 1 to 2147483647, not the "
                                               "number 2.0"),
    "warmup-negative": ('[run]\nwarmup = -1\n', ":2: run.warmup: must be a whole number from 0 to 2147483647, not '-1'"),
    "gzip-float": ('[generate]\ngzip = 3.0\n', ":2: generate.gzip: must be a whole number from 0 to 9, not the number 3.0"),
    "m-zero": ('[run]\nm = 0\n', ":2: run.m: must be a whole number from 1 to 9223372036854775807, not '0'"),
    "vectors-float": ('[verify]\nvectors = 1.5\n', ":2: verify.vectors: must be a whole number from 1 to 2147483647, "
                                                   "not the number 1.5"),
    "seed-negative": ('[bench]\nseed = -1\n', ":2: bench.seed: must be a whole number from 0 to 9223372036854775807, "
                                              "not '-1'"),
    "repeat-zero": ('[run]\nrepeat = 0\n', ":2: run.repeat: must be a whole number from 1 to 2147483647, not '0'"),
    "gzip-range": ('[generate]\ngzip = 10\n', ":2: generate.gzip: must be a whole number from 0 to 9, not '10'"),
    "beta-nan": ('[run]\nbeta = nan\n', ":2: run.beta: must be a finite number, not 'nan'"),
    "progress-word": ('[run]\nprogress = "sometimes"\n', ":2: run.progress: 'sometimes' is not one of: auto, on, off"),
    "kernel-word": ('[run]\nkernel = "cpu-tiles"\n', ":2: run.kernel: 'cpu-tiles' is not one of: auto, openblas"),
    "algorithm-word": ('[run]\nalgorithm = "sumaa"\n', ":2: run.algorithm: 'sumaa' is not one of: auto, panels, summa, "
                                                        "ksplit (did you mean 'summa'?)"),
    "unknown-table": ('[run]\nm = 4\n[frobnicate]\nx = 1\n', ":3: [frobnicate]: unknown table (the tables are"),
    "key-outside-table": ('m = 4\n[run]\n', ":1: m: a key outside any table"),
    "slurm-launcher": ('[slurm]\nlauncher = "qsub"\n', ":2: slurm.launcher: must be one of auto, srun-pmix, "
                                                        "srun-pmi2, mpirun, not the string 'qsub'"),
    "slurm-unknown": ('[slurm]\nnodes = 2\n', ":2: slurm.nodes: unknown key"),
    "not-toml": ('[run]\nm = = 4\n', ":2: not valid TOML: "),
    # toml++ 3.3 asserts on these (fuzz_options found it): refused before it sees them.
    "header-without-name": ('# x\n[ = "r.json"\n', ":2: not valid TOML: a table header [...] must start with"),
    "empty-header": ('[]\n', ":1: not valid TOML: a table header [...] must start with"),
    # ... and reaches an "unreachable" point on a non-ASCII character in a bare key or table name.
    "non-ascii-header": ('[x\u034d]\n', ":1: not valid TOML: a non-ASCII character outside a string"),
    "non-ascii-bare-value": ("[run]\na = x'\u01e4\n", ":2: not valid TOML: a non-ASCII character outside a string"),
    "non-ascii-key": ('[run]\n# caf\u00e9\nalpha = 2\nd\u00e9 = 1\n',
                      ":4: not valid TOML: a non-ASCII character outside a string"),
    "duplicate-key": ('[run]\nm = 4\nm = 5\n', ":3: not valid TOML: "),
}

case = args.case
if case == "errors":
    # Each refused by `run --config` on every rank, and by `config show` (no MPI) alike.
    for name, (text, expect) in BAD.items():
        path = toml(name + ".toml", text)
        refused(["run", "--config", path, "--dry-run", "--m", "4", "--n", "4", "--k", "4"], path + expect)
        res = show(path, expect_ok=False)
        check(res.returncode == 2 and res.stdout == "", f"{name}: config show exit {res.returncode}, {res.stdout!r}")
        check(res.stderr.strip() == "tessera: error: " + res.stderr.strip()[16:] and path + expect in res.stderr,
              f"{name}: config show said {res.stderr!r}")
    refused(["generate", "--config", r.path("missing.toml"), "--out", r.path("g.h5") + ":/G", "--rows", "2",
             "--cols", "2"], "missing.toml")
    check(not os.path.exists(r.path("g.h5")), "nothing generated")
elif case == "tables":
    # Arrays, [slurm] and a table per subcommand in one file; grid = [2, 1] is "2x1".
    path = toml("all.toml", '[slurm]\nlauncher = "mpirun"\nout = "runs"\n\n[run]\ngrid = [2, 1]\ndry-run = true\n'
                            'm = 40\nn = 50\nk = 60\nalpha = 0.5\n\n[generate]\nrows = 6\ncols = 5\nchunk = [3, 5]\n'
                            'dtype = "f64"\nseed = 7\n\n[bench]\nsizes = [64, "8x9x10"]\n\n[verify]\nvectors = 2\n')
    res = r.run(["run", "--config", path, "--report", r.path("plan.json")], timeout=60)
    plan = json.load(open(r.path("plan.json")))
    check(plan["grid"]["rows"] == 2 and plan["grid"]["cols"] == 1, f"grid 2x1: {plan['grid']}")
    check("C(40x50)" in res.stdout, f"the shape from the file: {res.stdout}")
    r.run(["generate", "--config", path, "--out", r.path("g.h5") + ":/G"], np_=1, timeout=60)
    with h5py.File(r.path("g.h5"), "r") as f:
        d = f["/G"]
        check(d.shape == (6, 5) and d.dtype == np.float64 and d.chunks == (3, 5), f"{d.shape} {d.dtype} {d.chunks}")
elif case == "override":
    # The command line wins over the file, and the report's provenance records both as given.
    a, b = np.arange(12.0).reshape(3, 4), np.ones((4, 2))
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    path = toml("run.toml", f'[run]\na = "{r.path("a.h5")}:/A"\nb = "{r.path("b.h5")}:/B"\n'
                            f'c = "{r.path("nope.h5")}:/C"\nbackend = "cpu"\nalpha = 2\ngrid = [2, 1]\n'
                            'overwrite = false\nprogress = "off"\n')
    r.run(["run", "--config", path, "--c", r.path("c.h5") + ":/C", "--alpha", "3", "--grid", "1x2", "-q",
           "--report", r.path("r.json")], timeout=120)
    check(not os.path.exists(r.path("nope.h5")), "the file's c was overridden")
    with h5py.File(r.path("c.h5"), "r") as f:
        check(np.allclose(f["/C"][...], 3 * a @ b), "alpha 3 from the command line, not 2 from the file")
    rep = json.load(open(r.path("r.json")))
    given = rep["provenance"]["options"]
    check(given.get("alpha") == 3.0 and given.get("grid") == "1x2", f"the command line's values: {given}")
    check(given.get("backend") == "cpu" and given.get("progress") == "off", f"the file's values: {given}")
    check(given.get("config") == path, f"the config file: {given}")
elif case == "show":
    path = toml("s.toml", '[run]\nverify = true\nkernel = "openblas"\ngrid = [2, 1]\na = "d.h5:/run\\\\:/A"\n'
                          'alpha = 0.1\nbeta = 2\nm = 7\n[slurm]\nout = "runs"\n[bench]\ndtypes = ["f32", "f64"]\n'
                          '[tune]\nsizes = "1024,2048"\n')
    res = show(path)
    # In the options' order (tessera run --help), tables in the subcommands' order, [slurm] last.
    want = ["run.a=d.h5:/run\\:/A", "run.alpha=0.1", "run.beta=2", "run.verify=true", "run.grid=2x1",
            "run.kernel=openblas", "run.m=7", "bench.dtypes=f32,f64", "tune.sizes=1024,2048", "slurm.out=runs"]
    check(res.stdout.splitlines() == want, f"config show printed {res.stdout.splitlines()}, expected {want}")
    js = json.loads(show(path, "--json").stdout)
    check(js["run"] == {"a": "d.h5:/run\\:/A", "alpha": 0.1, "beta": 2, "verify": True, "grid": "2x1",
                        "kernel": "openblas", "m": 7} and js["bench"] == {"dtypes": ["f32", "f64"]}
          and js["slurm"] == {"out": "runs"}, f"--json: {js}")
    check(show(path, "-q").stdout == "", "-q: nothing on stdout")
    for cfg in sorted(os.listdir(os.path.join(args.source_dir, "configs"))):
        if cfg.endswith(".toml"):
            res = show(os.path.join(args.source_dir, "configs", cfg))
            check("run.a=" in res.stdout, f"configs/{cfg}: {res.stdout}")
elif case == "slurm-common":
    # slurm/common.sh's reading of the config, through `tessera config show`.
    path = toml("j.toml", '[run]\na = "data/a.h5:/A"\nb = "x\\\\:y.h5:/B"\n[slurm]\nlauncher = "mpirun"\n')
    script = (f'source "{args.source_dir}/slurm/common.sh"; TESSERA="{args.tessera}"; '
              f'echo "a=$(tessera_config_value run.a "{path}")"; echo "b=$(tessera_config_value run.b "{path}")"; '
              f'echo "c=$(tessera_config_value run.c "{path}")"; '
              f'echo "l=$(tessera_config_value slurm.launcher "{path}")"')
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60).stdout.splitlines()
    check(out == ["a=data/a.h5:/A", "b=x\\:y.h5:/B", "c=", "l=mpirun"], f"common.sh read {out}")
else:
    check(False, f"unknown case {case}")
print("PASS")
