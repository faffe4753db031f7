"""Every choice of `tessera run` checked where it is typed (issue 41): a bad word for each choice
option, a bad grid and a bad size are refused with exit 2 and the allowed words (and a near one)
by the command line, `tessera config show`, the dry run, and a config file given to a run, before
anything is launched or written; a config file's every error is reported; `tessera info --json`
lists the kernels, each of which `bench` takes and `run --kernel` names. One --case per test."""
import json
import os

import numpy as np

from common import Runner, check, parser, write

p = parser(__doc__)
p.add_argument("--case", required=True)
args = p.parse_args()
r = Runner(args)

# A bad value per option that takes one of a few words, a shape or a size, and what the refusal says.
BAD = [("backend", "gpu", "'gpu' is not one of: auto, cpu, cuda"),
       ("algorithm", "sumaa", "(did you mean 'summa'?)"),
       ("kernel", "nope", "'nope' is not one of: auto, openblas"),
       ("kernel", "cpu-tiles", "(did you mean 'cpu-tiled'?)"),
       ("baseline", "nope", "'nope' is not one of: openblas"),
       ("dtype", "f16", "'f16' is not one of: auto, f32, f64"),
       ("comm", "mpi", "'mpi' is not one of: auto, host, cuda-aware, nccl"),
       ("write", "inplace", "(did you mean 'in-place'?)"),
       ("progress", "sometimes", "'sometimes' is not one of: auto, on, off"),
       ("grid", "2y2", "expected PRxPC"),
       ("gpu-memory", "lots", "expected a size like 512M")]


def errors_of(res):
    return [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]


def inputs():
    rng = np.random.default_rng(41)
    write(r.path("a.h5"), "/A", rng.random((6, 5)))
    write(r.path("b.h5"), "/B", rng.random((5, 4)))
    return ["--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", r.path("c.h5") + ":/C"]


case = args.case
if case == "command-line":
    io = inputs()
    for name, value, want in BAD:
        for extra in ([], ["--dry-run"]):  # the run, and its dry run
            res = r.run(["run", *io, *extra, "--" + name, value], np_=2, expect_ok=False, timeout=60)
            errors = errors_of(res)
            check(res.returncode == 2 and len(errors) == 1 and want in errors[0] and f"--{name}" in errors[0],
                  f"--{name} {value} {extra}: exit {res.returncode}, {errors}; expected exit 2 with {want!r}")
    # One option against another: a kernel of another backend than the one named.
    res = r.run(["run", *io, "--dry-run", "--backend", "cpu", "--kernel", "cpu-naive"], np_=1)
    check("cpu-naive" in res.stdout, "a dry run with a kernel of its backend prints it")
    check(not os.path.exists(r.path("c.h5")), "a refused run wrote C")
elif case == "config":
    io = inputs()
    for name, value, want in BAD:
        path = r.path(f"bad-{name}.toml")
        with open(path, "w") as f:
            f.write(f'[run]\nbackend = "cpu"\n{name} = "{value}"\n' if name != "backend" else f'[run]\nbackend = "{value}"\n')
        for argv in (["config", "show", path], ["run", "--config", path, *io], ["run", "--config", path, "--dry-run",
                                                                             "--m", "4", "--n", "4", "--k", "4"]):
            res = r.run(argv, direct=True, expect_ok=False, timeout=60)
            errors = errors_of(res)
            check(res.returncode == 2 and len(errors) == 1 and want in errors[0] and f"run.{name}" in errors[0]
                  and f"{path}:" in errors[0], f"{argv}: exit {res.returncode}, {errors}; expected exit 2 with {want!r}")
    # Three errors, each on its own line, in the order of the file.
    path = r.path("three.toml")
    with open(path, "w") as f:
        f.write('[run]\nkernel = "nope"\nrepeat = 0\ngrid = "2y2"\nbackend = "cpu"\n')
    res = r.run(["config", "show", path], direct=True, expect_ok=False)
    errors = errors_of(res)
    check(res.returncode == 2 and len(errors) == 3, f"three errors, three lines: {errors}")
    check(["run.kernel" in errors[0], "run.repeat" in errors[1], "run.grid" in errors[2]] == [True] * 3,
          f"in the file's order: {errors}")
    check([f"{path}:{line}:" in e for line, e in zip((2, 3, 4), errors)] == [True] * 3, f"with their lines: {errors}")
    # The other spelling of a key: read, with a note.
    path = r.path("underscore.toml")
    with open(path, "w") as f:
        f.write("[run]\npanel_width = 64\n")
    res = r.run(["config", "show", path], direct=True)
    check(res.stdout.strip() == "run.panel-width=64", f"panel_width read as panel-width: {res.stdout!r}")
    check("tessera: note:" in res.stderr and "'panel_width' is read until the next release" in res.stderr,
          f"a note for the other spelling: {res.stderr!r}")
    check(not os.path.exists(r.path("c.h5")), "a refused run wrote C")
elif case == "kernels":
    info = json.loads(r.run(["info", "--json"], np_=1).stdout)
    kernels = info["kernels"]
    check(kernels and kernels[0]["backend"] == "cpu", f"the CPU's kernels first: {kernels}")
    for k in kernels:
        check(set(k) == {"backend", "name", "dtypes", "opt_in", "vendor", "needs", "summary"} and k["dtypes"],
              f"a kernel's fields: {k}")
        # The cuBLAS calls need it, and f64-ozaki (its INT8 GEMMs are cuBLAS's); no other kernel does.
        check(("cuBLAS" in k["needs"]) == (k["backend"] == "cuda" and (k["vendor"] or k["name"] == "f64-ozaki")),
              f"cuBLAS needed: {k}")
    text = r.run(["info"], np_=1).stdout
    for k in kernels:
        check(f"kernel   : {k['name']} " in text, f"`tessera info` lists {k['name']}")
    # Each CPU kernel is one bench runs; every kernel is one `run --kernel` takes (a dry run).
    cpu = [k["name"] for k in kernels if k["backend"] == "cpu"]
    res = r.run(["bench", "--backend", "cpu", "--sizes", "8", "--dtypes", "f64", "--kernels", ",".join(cpu),
                 "--repeats", "1", "--warmup", "0", "--json", r.path("bench.json")], np_=1)
    ran = {row["kernel"] for row in json.load(open(r.path("bench.json")))["results"]}
    check(set(cpu) <= ran, f"bench ran {sorted(ran)}, info lists {cpu}")
    for k in kernels:
        res = r.run(["run", "--dry-run", "--m", "8", "--n", "8", "--k", "8", "--backend", k["backend"], "--kernel",
                     k["name"]], np_=1, expect_ok=False)
        check(res.returncode == 0 or (k["backend"] == "cuda" and "no GPU" in res.stderr),
              f"run --kernel {k['name']}: exit {res.returncode}")
    res = r.run(["bench", "--kernels", "nope"], np_=1, expect_ok=False)
    check(res.returncode == 2 and "'nope' is not one of" in res.stderr, f"bench --kernels nope: {res.stderr}")
else:
    check(False, f"unknown case {case}")
print("PASS")
