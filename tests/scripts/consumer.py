"""A program outside tessera's build, built against the installed tessera (ctest install.consumer.*).

--mode cmake: tests/consumer configured with CMAKE_PREFIX_PATH=<prefix> (find_package(tessera),
tessera::tessera) and built. --mode pkgconfig: tests/consumer/consumer.cpp built with
`mpicxx $(pkg-config --cflags --libs tessera)` (PKG_CONFIG_PATH=<prefix>/<libdir>/pkgconfig, and
--static for a static libtessera). Then the program multiplies A (float64, odd shape) by B on
--np ranks through tessera::multiply, and C is checked against numpy; a missing input must end
with the library's agreed error on every rank (exit 2, the message from rank 0)."""
import os
import shlex
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


def build_cmake(args, src, work):
    build = os.path.join(work, "build-consumer")
    p = run([args.cmake, "-S", src, "-B", build, "-G", args.generator, "-DCMAKE_BUILD_TYPE=Release",
             f"-DCMAKE_CXX_COMPILER={args.cxx}", f"-DCMAKE_PREFIX_PATH={args.prefix}"], work)
    check(p.returncode == 0, "the consumer's configure (find_package(tessera)) failed")
    check(f"from {os.path.join(args.prefix, args.libdir, 'cmake', 'tessera')}" in p.stdout,
          "find_package(tessera) did not take the test prefix's package")
    p = run([args.cmake, "--build", build], work)
    check(p.returncode == 0, "the consumer's build failed")
    return os.path.join(build, "consumer")


def build_pkgconfig(args, src, work):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(args.prefix, args.libdir, "pkgconfig"))
    static = [] if args.shared == "ON" else ["--static"]
    p = run(["pkg-config", "--cflags", "--libs"] + static + ["tessera"], work, env=env)
    check(p.returncode == 0, "pkg-config does not find tessera in the test prefix")
    flags = shlex.split(p.stdout)
    check(f"-I{os.path.join(args.prefix, 'include')}" in flags, f"pkg-config's flags {flags} lack the prefix's include/")
    exe = os.path.join(work, "consumer-pc")
    # The shared libtessera from the prefix at run time: where a site's module would set LD_LIBRARY_PATH.
    rpath = [f"-Wl,-rpath,{os.path.join(args.prefix, args.libdir)}"]
    p = run([args.mpicxx, "-std=c++17", os.path.join(src, "consumer.cpp"), "-o", exe] + flags + rpath, work, env=env)
    check(p.returncode == 0, "mpicxx consumer.cpp $(pkg-config --cflags --libs tessera) failed")
    return exe


def main():
    p = parser(__doc__)
    p.add_argument("--mode", choices=("cmake", "pkgconfig"), required=True)
    p.add_argument("--prefix", required=True)
    p.add_argument("--libdir", default="lib")
    p.add_argument("--shared", default="ON")
    p.add_argument("--cmake", default="cmake")
    p.add_argument("--generator", default="Ninja")
    p.add_argument("--cxx", default="c++")
    p.add_argument("--mpicxx", default="mpicxx")
    args = p.parse_args()
    r = Runner(args)
    src = os.path.join(os.path.abspath(args.source_dir), "tests", "consumer")
    exe = (build_cmake if args.mode == "cmake" else build_pkgconfig)(args, src, r.dir)
    check(os.access(exe, os.X_OK), f"no consumer program at {exe}")

    rng = np.random.default_rng(7)
    a, b = random_matrix(rng, 37, 41, np.float64), random_matrix(rng, 41, 29, np.float64)
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    launcher = shlex.split(args.mpiexec) + ["-np", str(args.np)]
    p = run(launcher + [exe, "a.h5:/A", "b.h5:/B", "c.h5:/C"], r.dir)
    check(p.returncode == 0, f"the consumer failed (exit {p.returncode})")
    check(f"multiplied on {args.np} ranks" in p.stdout, "the consumer did not report its multiply")
    with h5py.File(r.path("c.h5"), "r") as f:
        c = f["/C"][...]
    check_product(a, b, c, np.float64)
    print(f"ok: {args.mode} consumer: C = A * B on {args.np} ranks, checked against numpy")

    p = run(launcher + [exe, "nowhere.h5:/A", "b.h5:/B", "c2.h5:/C"], r.dir)
    check(p.returncode == 2, f"missing input: exit {p.returncode}, expected 2 (tessera::MultiplyError, agreed)")
    check(p.stderr.count("consumer: error (rank") == 1 and "nowhere.h5" in p.stderr,
          "missing input: expected one agreed error naming the file")
    check(not os.path.exists(r.path("c2.h5")), "missing input: an output file was left")
    print("ok: a missing input is one agreed tessera::MultiplyError naming the file")
    print("PASS")


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as e:
        fail(f"timed out: {e.cmd}")
