"""The command line's common parts (#31 item 6): -q and -v on every subcommand, the exit statuses
in every --help, --version with the git id, range errors as usage errors (exit 2), the hint for
a ':/' in a dataset's path, and the bash completion offering every option. One --case per test."""
import os
import re
import subprocess

import numpy as np

from common import Runner, check, parser, write

p = parser(__doc__)
p.add_argument("--case", required=True)
p.add_argument("--completion", help="the completion script to source (default: the build's completion/tessera, "
                                    "written by `tessera config completion`)")
args = p.parse_args()
r = Runner(args)
SUBCOMMANDS = ["generate", "run", "verify", "info", "recover", "bench", "tune", "config show", "config completion"]


def direct(argv, expect_ok=True):
    return r.run(argv, direct=True, expect_ok=expect_ok, timeout=60)


def long_options(help_text):
    """The options a --help lists: every -x / --name at the start of an option line."""
    names = set()
    for line in help_text.splitlines():
        m = re.match(r"^  (-\S+)", line)
        if m:
            names.update(n for n in m.group(1).split(",") if n.startswith("-"))
    return names


def inputs():
    rng = np.random.default_rng(3)
    a, b = rng.random((5, 4)), rng.random((4, 3))
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    write(r.path("c.h5"), "/C", a @ b)
    return ["--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B"]


case = args.case
if case == "help":
    for sub in [""] + SUBCOMMANDS:
        text = direct(sub.split() + ["--help"]).stdout
        check("Exit status: 0 success; 1 an error" in text and "2 a usage error" in text and "3 verification" in text,
              f"`tessera {sub} --help` says the exit statuses")
        if sub:
            names = long_options(text)
            check({"-q", "--quiet", "-v", "--verbose", "--log-level"} <= names, f"`{sub}`: -q, -v: {sorted(names)}")
    version = direct(["--version"]).stdout.strip()
    m = re.fullmatch(r"tessera \d+\.\d+\.\d+ \(git (\S+)\)", version)
    check(m is not None, f"--version: {version!r}")
    git_id = m.group(1)
    if os.path.isdir(os.path.join(args.source_dir, ".git")) or os.path.isfile(os.path.join(args.source_dir, ".git")):
        commit = git_id.removesuffix("-dirty").split("-g")[-1]
        known = subprocess.run(["git", "-C", args.source_dir, "cat-file", "-e", commit + "^{commit}"],
                               capture_output=True).returncode == 0
        check(known, f"--version's git id {git_id!r} is a commit of the sources")
    else:
        check(git_id == "unknown", f"not a git checkout: 'unknown', got {git_id!r}")
elif case == "quiet-verbose":
    io = inputs()
    out = r.path("g.h5") + ":/G"
    plain = {
        "generate": ["generate", "--out", out, "--rows", "3", "--cols", "3", "--overwrite"],
        "run": ["run", *io, "--c", r.path("c2.h5") + ":/C", "--overwrite", "--backend", "cpu", "--progress", "off"],
        "verify": ["verify", *io, "--c", r.path("c.h5") + ":/C"],
        "info": ["info"],
        "recover": ["recover", r.path("a.h5")],
        "bench": ["bench", "--backend", "cpu", "--sizes", "8", "--dtypes", "f64", "--kernels", "cpu-naive",
                  "--warmup", "0", "--repeats", "1"],
        "config show": ["config", "show", os.path.join(args.source_dir, "configs", "demo.toml")],
    }
    for sub, argv in plain.items():
        loud = direct(argv)
        quiet = direct(argv + ["-q"])
        check(quiet.stdout == "", f"`{sub} -q` printed {quiet.stdout!r}")
        check(loud.stdout != "" or sub == "generate", f"`{sub}` without -q prints something")
        verbose = direct(argv + ["-v"])
        check("tessera: info" in verbose.stderr or sub == "config show", f"`{sub} -v` logs at info: {verbose.stderr!r}")
        check(direct(argv + ["-vv", "-q"]).returncode == 0, f"`{sub} -vv -q`")
elif case == "range-errors":
    io = inputs() + ["--c", r.path("c3.h5") + ":/C"]
    cases = [
        (["run", *io, "--repeat", "0"], "--repeat: must be a whole number from 1 to 2147483647, not '0'"),
        (["run", *io, "--warmup", "-1"], "--warmup: must be a whole number from 0 to 2147483647, not '-1'"),
        (["run", *io, "--panel-width", "-5"], "--panel-width: must be a whole number from 0 to"),
        (["run", "--dry-run", "--m", "4", "--n", "4", "--k", "4", "--ranks", "0"],
         "--ranks: must be a whole number from 1 to 2147483647, not '0'"),
        # Beyond the type's range: refused as typed, never clamped (issue 40).
        (["run", "--dry-run", "--m", "18446744073709551615", "--n", "4", "--k", "4"],
         "--m: must be a whole number from 1 to 9223372036854775807 (2^63 - 1), not '18446744073709551615'"),
        (["run", "--dry-run", "--m", "4", "--n", "9223372036854775808", "--k", "4"],
         "--n: must be a whole number from 1 to 9223372036854775807 (2^63 - 1), not '9223372036854775808'"),
        (["run", "--dry-run", "--m", "4", "--n", "4", "--k", "0"], "--k: must be a whole number from 1 to"),
        (["run", "--dry-run", "--m", "4", "--n", "4", "--k", "4", "--ranks", "2147483648"],
         "--ranks: must be a whole number from 1 to 2147483647, not '2147483648'"),
        (["run", "--dry-run", "--m", "4", "--n", "4", "--k", "4", "--ranks-per-node", "0"],
         "--ranks-per-node: must be a whole number from 1 to 2147483647, not '0'"),
        (["run", *io, "--repeat", "2.0"], "--repeat: must be a whole number from 1 to 2147483647, not '2.0'"),
        (["generate", "--out", r.path("g.h5") + ":/G", "--rows", "2", "--cols", "2", "--seed",
          "18446744073709551616"], "--seed: must be a whole number from 0 to 18446744073709551615 (2^64 - 1), not "),
        (["run", *io, "--alpha", "inf"], "--alpha: must be a finite number, not 'inf'"),
        (["generate", "--out", r.path("g.h5") + ":/G", "--rows", "2", "--cols", "2", "--gzip", "10"],
         "--gzip: must be a whole number from 0 to 9, not '10'"),
        (["generate", "--out", r.path("g.h5") + ":/G", "--rows", "0", "--cols", "2"], "--rows: must be a whole number"),
        (["verify", *io, "--vectors", "0"], "--vectors: must be a whole number from 1 to 2147483647, not '0'"),
        (["bench", "--repeats", "0"], "--repeats: must be a whole number from 1 to"),
        (["bench", "--warmup", "-2"], "--warmup: must be a whole number from 0 to"),
        (["tune", "--repeats", "0"], "--repeats: must be a whole number from 1 to"),
        (["tune", "--seed", "-1"], "--seed: must be a whole number from 0 to 18446744073709551615"),
    ]
    for argv, expect in cases:
        res = r.run(argv, np_=2, expect_ok=False, timeout=60)
        errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
        check(res.returncode == 2, f"{argv}: exit {res.returncode}, expected 2")
        check(len(errors) == 1 and expect in errors[0], f"{argv}: expected one line saying {expect!r}: {errors}")
    check(not os.path.exists(r.path("g.h5")) and not os.path.exists(r.path("c3.h5")), "nothing written")
elif case == "help-json":
    # --help-json on every command, nested ones too (issue 40: `config show --help-json` exited 2),
    # and every whole-number option's range in it is the parser's own: the value just past each
    # bound is refused (exit 2) with a message stating that same range.
    import json
    io = inputs()
    base = {
        "": [], "run": ["run", *io, "--c", r.path("c5.h5") + ":/C"], "generate": ["generate"], "verify": ["verify"],
        "info": ["info"], "recover": ["recover", r.path("a.h5")], "bench": ["bench"], "tune": ["tune"],
        "config": ["config"], "config show": ["config", "show", "x.toml"],
    }
    required = {"generate": {"out": r.path("g.h5") + ":/G", "rows": "2", "cols": "2"},
                "verify": {"a": io[1], "b": io[3], "c": r.path("c.h5") + ":/C"}}
    ranged = 0
    for command, argv in base.items():
        res = direct(command.split() + ["--help-json"], expect_ok=False)
        check(res.returncode == 0, f"`tessera {command} --help-json`: exit {res.returncode}: {res.stderr}")
        doc = json.loads(res.stdout)
        check(doc["command"] == command, f"`{command} --help-json` names its command {doc['command']!r}")
        for o in doc["options"]:
            if o["type"] != "integer":
                continue
            check(o["minimum"] is not None and o["maximum"] is not None,
                  f"`{command} --{o['name']}`: an integer option without a range in --help-json: {o}")
            rest = [w for name, value in required.get(command, {}).items() if name != o["name"]
                    for w in ("--" + name, value)]
            for bad in (o["minimum"] - 1, o["maximum"] + 1):
                res = direct(argv + rest + [o["flags"][0], str(bad)], expect_ok=False)
                errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
                want = f"{o['flags'][0]}: must be a whole number from {o['minimum']} to {o['maximum']}"
                check(res.returncode == 2 and len(errors) == 1 and want in errors[0] and f"'{bad}'" in errors[0],
                      f"`{command} {o['flags'][0]} {bad}`: exit {res.returncode}, {errors}; expected {want!r}")
            ranged += 1
    runs = {o["name"]: o for o in json.loads(direct(["run", "--help-json"]).stdout)["options"]}
    for name, low, high in (("repeat", 1, 2**31 - 1), ("warmup", 0, 2**31 - 1), ("panel-width", 0, 2**63 - 1),
                            ("m", 1, 2**63 - 1), ("ranks", 1, 2**31 - 1)):
        check((runs[name]["minimum"], runs[name]["maximum"]) == (low, high), f"run --{name}: {runs[name]}")
    print(f"{ranged} whole-number options: their ranges in --help-json are the parser's")
    check(not os.path.exists(r.path("g.h5")) and not os.path.exists(r.path("c5.h5")), "nothing written")
elif case == "environment":
    # The TESSERA_* variables (src/core/env.hpp, issue 40): a bad value of one tessera reads is a
    # usage error (exit 2) on every rank, one line naming the variable, the value and what it
    # accepts, before anything runs; an unknown TESSERA_* name is warned about, once; the test
    # hooks (TESSERA_TEST_*) and the scripts' variables are not.
    io = inputs() + ["--c", r.path("c6.h5") + ":/C", "--backend", "cpu", "-q"]
    bad = [("TESSERA_IO_THREADS", "abc", "a whole number from 1 to 1024"),
           ("TESSERA_IO_THREADS", "0", "a whole number from 1 to 1024"),
           ("TESSERA_IO_THREADS", "1025", "a whole number from 1 to 1024"),
           ("TESSERA_HDF5_DIRECT", "2", "0 or 1"), ("TESSERA_HOST_MEMORY", "bogus", "pinned or pageable"),
           ("TESSERA_KEEP_BINDING", "yes", "0 or 1"), ("TESSERA_BANDS", "-1", "a whole number from 1 to 1048576"),
           ("TESSERA_STAGE_BYTES", "1e6", "a whole number from 1 to 9223372036854775807"),
           ("TESSERA_MPI_TRANSPORTS", "shm", "auto or open-mpi")]
    for name, value, accepted in bad:
        want = f"{name}='{value}' is not {accepted}"
        for argv, np_ in ((["run", *io], 2), (["info"], 1), (["config", "show", "missing.toml"], None)):
            if np_ is None:  # `tessera config` starts no MPI
                res = subprocess.run([args.tessera, *argv], capture_output=True, text=True, timeout=60, cwd=r.dir,
                                     env={**os.environ, name: value})
            else:
                res = r.run(argv, np_=np_, expect_ok=False, timeout=60, env={name: value})
            errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
            check(res.returncode == 2 and len(errors) == 1 and want in errors[0],
                  f"{name}={value} `{argv[0]}`: exit {res.returncode}, {errors}; expected one line with {want!r}")
    check(not os.path.exists(r.path("c6.h5")), "a refused run wrote C")
    # Empty is as if unset; good values run.
    res = r.run(["run", *io], np_=2, env={"TESSERA_IO_THREADS": "", "TESSERA_HDF5_DIRECT": "0",
                                          "TESSERA_HOST_MEMORY": "pageable"})
    check(not [l for l in res.stderr.splitlines() if "warning" in l], f"warnings: {res.stderr}")
    # A misspelt name: one warning line on a 2-rank run, the run goes on; hooks and scripts' names: none.
    res = r.run(["run", *io, "--overwrite"], np_=2, env={"TESSERA_IO_THRAEDS": "4", "TESSERA_TEST_ANYTHING": "1",
                                                          "TESSERA_BIN": "x", "TESSERA_CONFIG": "y"})
    warnings = [l for l in res.stderr.splitlines() if l.startswith("tessera: warning")]
    check(len(warnings) == 1 and "TESSERA_IO_THRAEDS" in warnings[0] and "no such variable" in warnings[0],
          f"expected one warning naming TESSERA_IO_THRAEDS: {res.stderr!r}")
elif case == "colon-hint":
    inputs()
    res = direct(["run", "--a", r.path("a.h5") + ":/run:/A", "--b", r.path("b.h5") + ":/B", "--c",
                  r.path("c4.h5") + ":/C", "--backend", "cpu"], expect_ok=False)
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    want = (f"cannot open '{r.path('a.h5')}:/run': no such file (the last ':/' splits the file from the dataset; "
            f"if the file is '{r.path('a.h5')}', write each ':' of the dataset's path as '\\:', e.g. "
            f"'{r.path('a.h5')}:/run\\:/...')")
    check(res.returncode == 1 and len(errors) == 1 and want in errors[0], f"expected {want!r}, got {errors}")
elif case == "completion":
    import json
    script = args.completion or os.path.join(os.path.dirname(os.path.abspath(args.tessera)), "completion", "tessera")
    check(os.path.isfile(script), f"no completion script {script}")

    def complete(*words):
        line = " ".join(["tessera", *words])
        cmd = (f'source "{script}"; COMP_WORDS=(tessera {" ".join(words)}); COMP_CWORD={len(words)}; '
               f'COMP_LINE="{line}"; _tessera; printf "%s\\n" "${{COMPREPLY[@]}}"')
        return set(subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=30).stdout.split())

    subs = complete("")
    check({"generate", "run", "verify", "info", "recover", "bench", "tune", "config"} <= subs, f"subcommands {subs}")
    for sub in SUBCOMMANDS:
        offered = complete(*sub.split(), "-")
        listed = long_options(direct(sub.split() + ["--help"]).stdout)
        check(listed <= offered, f"`{sub}`: --help lists {sorted(listed - offered)} that completion does not offer")
    check(complete("run", "--algorithm", "s") == {"summa"}, "the values of --algorithm")
    check(complete("generate", "--dtype", "") == {"f32", "f64"}, "generate's --dtype")
    # The kernels, from the registries (`tessera info --json`), for --kernel, --baseline and bench --kernels.
    kernels = {k["name"] for k in json.loads(direct(["info", "--json"]).stdout)["kernels"]}
    check(kernels and complete("run", "--kernel", "") == kernels | {"auto"}, f"run --kernel offers {sorted(kernels)}")
    check(complete("run", "--baseline", "") == kernels, "run --baseline offers the kernels")
    check(kernels <= complete("bench", "--kernels", ""), "bench --kernels offers the kernels")
    check(complete("bench", "--kernels", "openblas,cpu-t") == {"openblas,cpu-tiled"}, "a list's next item")
    check(complete("run", "--backend", "") == {"auto", "cpu", "cuda"}, "run --backend")
    check(complete("--config", "x.toml", "run", "--comm", "n") == {"nccl"}, "after --config FILE")
else:
    check(False, f"unknown case {case}")
print("PASS")
