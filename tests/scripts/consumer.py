"""A program outside tessera's build, built against the installed tessera (ctest install.consumer.*).

--mode cmake: tests/consumer configured with CMAKE_PREFIX_PATH=<prefix> (find_package(tessera),
tessera::tessera; a C++-only project) and built. --mode pkgconfig: tests/consumer/consumer.cpp
built with a plain C++ compiler (--cxx, not the MPI wrapper) and `$(pkg-config --cflags --libs
tessera)` (PKG_CONFIG_PATH=<prefix>/<libdir>/pkgconfig, --static for a static libtessera): MPI's
flags come through tessera.pc's Requires, libtessera's directory as the run path (no
LD_LIBRARY_PATH). Either way the example program of docs/cpp-api.md is built the same way, and no
program needs libmpi_cxx.

Then on --np ranks: the consumer's dry run and multiply of C = 2 A op(B) (B stored transposed,
options given by their `tessera run` names through Options::set), C checked against numpy; the
report every rank got is the same JSON (schema tessera.report/1), and the Result's accessors print
what it says; a missing input ends with the library's agreed error on every rank (exit 2, the
message from rank 0). The docs' example multiplies a.h5 by b.h5 into c.h5."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import h5py
import numpy as np

from common import Runner, check, check_product, fail, parser, random_matrix, write


def run(cmd, cwd, env=None, timeout=240):
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    sys.stdout.write(p.stdout + p.stderr)
    return p


def doc_example(args, work):
    """The docs' example program: the first ```cpp block of docs/cpp-api.md with a main()."""
    with open(os.path.join(os.path.abspath(args.source_dir), "docs", "cpp-api.md")) as f:
        blocks = re.findall(r"```cpp\n(.*?)```", f.read(), re.S)
    programs = [b for b in blocks if "int main(" in b]
    check(programs, "docs/cpp-api.md has no example program (a ```cpp block with main())")
    path = os.path.join(work, "example.cpp")
    with open(path, "w") as f:
        f.write(programs[0])
    return path


def build_cmake(args, src, work, example):
    build = os.path.join(work, "build-consumer")
    p = run([args.cmake, "-S", src, "-B", build, "-G", args.generator, "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_CXX_COMPILER={args.cxx}", f"-DCMAKE_PREFIX_PATH={args.prefix}", f"-DTESSERA_EXAMPLE={example}"],
            work)
    check(p.returncode == 0, "the consumer's configure (find_package(tessera)) failed")
    check(f"from {os.path.join(args.prefix, args.libdir, 'cmake', 'tessera')}" in p.stdout,
          "find_package(tessera) did not take the test prefix's package")
    p = run([args.cmake, "--build", build], work)
    check(p.returncode == 0, "the consumer's build failed")
    return os.path.join(build, "consumer"), os.path.join(build, "example")


def build_pkgconfig(args, src, work, example):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(args.prefix, args.libdir, "pkgconfig"))
    static = [] if args.shared == "ON" else ["--static"]
    p = run(["pkg-config", "--cflags", "--libs"] + static + ["tessera"], work, env=env)
    check(p.returncode == 0, "pkg-config does not find tessera in the test prefix")
    flags = shlex.split(p.stdout)
    check(f"-I{os.path.join(args.prefix, 'include')}" in flags, f"pkg-config's flags {flags} lack the prefix's include/")
    check(any(f.startswith("-I") and "mpi" in f for f in flags), f"pkg-config's flags {flags} lack MPI's include directory")
    libdir = os.path.join(args.prefix, args.libdir)
    check(f"-Wl,-rpath,{libdir}" in flags, f"pkg-config's flags {flags} lack the run path {libdir}")
    exes = []
    for source, name in ((os.path.join(src, "consumer.cpp"), "consumer-pc"), (example, "example-pc")):
        exe = os.path.join(work, name)
        # A plain C++ compiler, not the MPI wrapper: tessera.pc brings MPI's flags and the run path.
        p = run([args.cxx, "-std=c++17", source, "-o", exe] + flags, work, env=env)
        check(p.returncode == 0, f"{args.cxx} {os.path.basename(source)} $(pkg-config --cflags --libs tessera) failed")
        exes.append(exe)
    return exes


def check_needed(exe):
    """The program needs MPI's C library, not its C++ bindings' (libmpi_cxx)."""
    if not shutil.which("readelf"):
        return
    p = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", p.stdout)
    check(not any("mpi_cxx" in n or "mpicxx" in n for n in needed), f"{exe} needs MPI's C++ bindings: {needed}")
    print(f"ok: {os.path.basename(exe)} needs {', '.join(needed)}")


def launcher_of(args):
    return shlex.split(args.mpiexec) + ["-np", str(args.np)]


# `tessera run` options that are no Options setter: the CLI's own (help, --help-all, --help-json, the TOML file, -v), and
# --dry-run (tessera::dry_run instead).
# manifest: a TOML file the CLI reads into a list of products; a C++ caller names them by pattern
# (Options::a/b/c with *) or calls multiply() once per product.
CLI_ONLY = {"help", "help-all", "help-json", "config", "verbose", "dry-run", "version", "manifest"}


def check_names(args, exe, launcher):
    """Options::names() is every `tessera run` option (but CLI_ONLY), and nothing else."""
    p = run([os.path.join(args.prefix, "bin", "tessera"), "run", "--help"], os.getcwd())
    check(p.returncode == 0, "tessera run --help failed")
    cli = set(re.findall(r"^\s+(?:-\w,\s*)?--([a-z][a-z0-9-]*)", p.stdout, re.M)) - CLI_ONLY
    p = run(launcher[:-1] + ["1", exe, "--names"], os.getcwd())
    check(p.returncode == 0, "consumer --names failed")
    names = set(p.stdout.split())
    check(cli and cli == names, f"Options::names() and `tessera run --help` differ: only the CLI has "
          f"{sorted(cli - names)}, only the API {sorted(names - cli)}")
    print(f"ok: Options has all {len(names)} options of `tessera run` ({', '.join(sorted(CLI_ONLY))}: the CLI's own)")


def check_report(r, stdout, np_, a, b):
    """Every rank got the same report, valid, and the accessors printed what it says."""
    texts = []
    for rank in range(np_):
        with open(r.path(f"report.json.{rank}")) as f:
            texts.append(f.read())
    check(all(t == texts[0] for t in texts), "the ranks' Result::json() differ")
    rep = json.loads(texts[0])
    check(rep["schema"] == "tessera.report/1", f"Result::json() is not a report: {rep.get('schema')}")
    try:
        import jsonschema
        with open(os.path.join(os.path.abspath(r.args.source_dir), "docs", "schema", "report.schema.json")) as f:
            jsonschema.validate(rep, json.load(f))
        print("ok: Result::json() is valid against docs/schema/report.schema.json")
    except ImportError:
        print("note: no jsonschema: the report's schema is not checked")
    check(rep["transpose_b"] is True and rep["alpha"] == 2.0, "the report does not say transpose-b and alpha 2")
    given = rep["provenance"]["options"]
    check(given.get("alpha") == 2.0 and given.get("transpose-b") is True and "a" in given,
          f"the provenance's options are not those given: {given}")
    check(rep["provenance"]["libraries"].get("mpi"), "the provenance names no MPI library")
    line = re.search(r"consumer: result (.*)", stdout)
    check(line is not None, "the consumer printed no result line")
    got = dict(kv.split("=", 1) for kv in line.group(1).split())
    want = {"ranks": str(np_), "m": str(a.shape[0]), "n": str(b.shape[0]), "k": str(a.shape[1]),
            "dtype": rep["dtype"], "algorithm": rep["algorithm"], "backend": rep["backend"],
            "grid": f"{rep['grid']['rows']}x{rep['grid']['cols']}", "bound": rep["bound"]}
    for key, value in want.items():
        check(got.get(key) == value, f"Result accessor {key}: {got.get(key)}, the report says {value}")
    for key, value in (("wall", rep["totals"]["wall_seconds"]), ("gflops", rep["totals"]["aggregate_gflops"])):
        check(abs(float(got[key]) - value) <= 1e-6 + 1e-6 * abs(value), f"Result accessor {key}: {got[key]} != {value}")
    for rec in rep["ranks"]:
        row = re.search(rf"consumer: rank {rec['rank']} (.*)", stdout)
        check(row is not None, f"no phases printed for rank {rec['rank']}")
        phases = dict(kv.split("=", 1) for kv in row.group(1).split())
        check(phases["host"] == rec["host"], f"rank {rec['rank']}: host {phases['host']} != {rec['host']}")
        for name in rec["phase_order"]:
            check(abs(float(phases[name]) - rec["phases"][name]) <= 1e-6, f"rank {rec['rank']}: phase {name} differs")
    print(f"ok: one report on all {np_} ranks; the accessors agree with it (shape, algorithm, grid, times, phases)")


def main():
    p = parser(__doc__)
    p.add_argument("--mode", choices=("cmake", "pkgconfig"), required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--libdir", default="lib")
    p.add_argument("--shared", default="ON")
    p.add_argument("--cmake", default="cmake")
    p.add_argument("--generator", default="Ninja")
    p.add_argument("--cxx", default="c++")
    args = p.parse_args()
    r = Runner(args)
    src = os.path.join(os.path.abspath(args.source_dir), "tests", "consumer")
    example = doc_example(args, r.dir)
    exe, example_exe = (build_cmake if args.mode == "cmake" else build_pkgconfig)(args, src, r.dir, example)
    for e in (exe, example_exe):
        check(os.access(e, os.X_OK), f"no program at {e}")
        check_needed(e)

    check_names(args, exe, launcher_of(args))

    rng = np.random.default_rng(7)
    a, b = random_matrix(rng, 37, 41, np.float64), random_matrix(rng, 41, 29, np.float64)
    write(r.path("a.h5"), "/A", a)
    write(r.path("bt.h5"), "/B", np.ascontiguousarray(b.T))  # stored N x K: transpose-b
    launcher = launcher_of(args)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}  # libtessera through the run path
    p = run(launcher + [exe, "a.h5:/A", "bt.h5:/B", "c.h5:/C", "alpha=2", "transpose-b=true",
                        "--json", "report.json"], r.dir, env=env)
    check(p.returncode == 0, f"the consumer failed (exit {p.returncode})")
    check(re.search(r"consumer: plan algorithm=\w+ grid=\d+x\d+ m=37 ", p.stdout), "the consumer printed no plan")
    with h5py.File(r.path("c.h5"), "r") as f:
        c = f["/C"][...]
    check_product(2 * a, b, c, np.float64)
    print(f"ok: {args.mode} consumer: C = 2 A op(B) (B stored transposed, options by name) on {args.np} ranks")
    check_report(r, p.stdout, args.np, a, b.T)

    p = run(launcher + [exe, "nowhere.h5:/A", "bt.h5:/B", "c2.h5:/C"], r.dir, env=env)
    check(p.returncode == 2, f"missing input: exit {p.returncode}, expected 2 (tessera::MultiplyError, agreed)")
    check(p.stderr.count("consumer: error (rank") == 1 and "nowhere.h5" in p.stderr,
          "missing input: expected one agreed error naming the file")
    check(not os.path.exists(r.path("c2.h5")), "missing input: an output file was left")
    print("ok: a missing input is one agreed tessera::MultiplyError naming the file")
    p = run(launcher + [exe, "a.h5:/A", "bt.h5:/B", "c3.h5:/C", "no-such-option=1"], r.dir, env=env)
    check(p.returncode == 2 and "no option 'no-such-option'" in p.stderr, "Options::set took an unknown name")
    print("ok: Options::set refuses an unknown option")

    write(r.path("b.h5"), "/B", b)
    p = run(launcher + [example_exe], r.dir, env=env)
    check(p.returncode == 0, f"docs/cpp-api.md's example failed (exit {p.returncode})")
    with h5py.File(r.path("c.h5"), "r") as f:
        check_product(a, b, f["/C"][...], np.float64)
    print("ok: docs/cpp-api.md's example builds as written and multiplies a.h5 by b.h5 into c.h5")
    print("PASS")


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as e:
        fail(f"timed out: {e.cmd}")
