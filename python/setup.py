"""The compiled module tessera._native (tessera.matmul's engine), built by pip beside the pure-Python
package when libtessera can be found; pyproject.toml holds the rest of the package's description.

Where libtessera is looked for, first found first:
  TESSERA_BUILD_DIR   a CMake build folder of tessera (its src/api/libtessera.so, the source's include/)
  pkg-config tessera  an installed tessera (cmake --install: lib/pkgconfig/tessera.pc; PKG_CONFIG_PATH)
MPI's compile flags come from pkg-config (ompi-c, mpich) or `mpicc --showme:compile`; pybind11's
headers from the pybind11 Python package or /usr/include (Debian: python3-pybind11 or pybind11-dev).
Without libtessera or pybind11 the package installs without the module, saying so: tessera.matmul
then finds one in a build folder (TESSERA_NATIVE_DIR, or beside the binary) or says what to do."""
import os
import shlex
import subprocess
import sys
import sysconfig

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def say(text):
    print(f"tessera setup: {text}", file=sys.stderr, flush=True)


def run(command):
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def cmake_source_dir(build):
    """The source folder a CMake build folder was configured from (its CMakeCache.txt)."""
    try:
        with open(os.path.join(build, "CMakeCache.txt"), encoding="utf-8") as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return None


def libtessera():
    """(include dirs, library dirs, why-not) of libtessera."""
    build = os.environ.get("TESSERA_BUILD_DIR")
    if build:
        build = os.path.abspath(build)
        source = cmake_source_dir(build)
        lib = os.path.join(build, "src", "api")
        if source and os.path.isfile(os.path.join(lib, "libtessera.so")):
            return [os.path.join(source, "include")], [lib], None
        return None, None, f"TESSERA_BUILD_DIR={build} holds no src/api/libtessera.so (a shared build of tessera)"
    flags = run(["pkg-config", "--cflags-only-I", "--libs-only-L", "tessera"])
    if flags is None:
        return None, None, "no TESSERA_BUILD_DIR, and pkg-config finds no tessera (set PKG_CONFIG_PATH to an install's lib/pkgconfig)"
    words = shlex.split(flags)
    return [w[2:] for w in words if w.startswith("-I")], [w[2:] for w in words if w.startswith("-L")], None


def mpi_includes():
    for command in (["pkg-config", "--cflags-only-I", "ompi-c"], ["pkg-config", "--cflags-only-I", "mpich"],
                    ["mpicc", "--showme:compile"]):
        flags = run(command)
        if flags is not None:
            return [w[2:] for w in shlex.split(flags) if w.startswith("-I")]
    return []


def pybind11_include():
    try:
        import pybind11
        return pybind11.get_include()
    except ImportError:
        return "/usr/include" if os.path.isfile("/usr/include/pybind11/pybind11.h") else None


class OptionalBuild(build_ext):
    """Builds the module where it can; a failure leaves the package without it (said), never broken."""

    def run(self):
        try:
            super().run()
        except Exception as e:  # a compiler or linker error: the pure-Python package still installs
            say(f"tessera._native not built ({e}); tessera.matmul will look for one in a build folder")

    def build_extension(self, ext):
        try:
            super().build_extension(ext)
        except Exception as e:
            say(f"tessera._native not built ({e}); tessera.matmul will look for one in a build folder")


def extensions():
    include, libs, why = libtessera()
    pybind = pybind11_include()
    if why is None and pybind is None:
        why = "pybind11's headers are not installed (pip: pybind11; Debian: python3-pybind11 or pybind11-dev)"
    if why is not None:
        say(f"tessera._native not built: {why}")
        return []
    say(f"tessera._native built against libtessera in {libs[0]}")
    return [Extension("tessera._native", [os.path.join("native", "native.cpp")],
                      include_dirs=include + [pybind, sysconfig.get_paths()["include"]] + mpi_includes(),
                      library_dirs=libs, runtime_library_dirs=libs, libraries=["tessera"], language="c++",
                      define_macros=[("OMPI_SKIP_MPICXX", "1"), ("MPICH_SKIP_MPICXX", "1")],
                      extra_compile_args=["-std=c++17", "-O2", "-fvisibility=hidden"])]


os.chdir(HERE)  # the extension's source is named relative to this folder
setup(ext_modules=extensions(), cmdclass={"build_ext": OptionalBuild})
