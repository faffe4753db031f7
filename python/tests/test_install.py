"""`pip install` of the package, as a user does it, into a temporary folder (no network: the
build uses the setuptools already installed), then imported from there and used for a dry run.
Skipped (exit 77) where this python has no pip or no setuptools to build with."""
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import support
from support import args


class InstallTest(unittest.TestCase):
    def test_pip_install_then_import(self):
        for module in ("pip", "setuptools"):
            if importlib.util.find_spec(module) is None:
                self.skipTest(f"{sys.executable} has no {module} (Debian: apt-get install python3-pip "
                              "python3-setuptools); the install is not tested")
        with tempfile.TemporaryDirectory(prefix="tessera-pyinstall-") as tmp:
            # From a copy, so the build's files (build/, *.egg-info) stay out of the source tree.
            source = os.path.join(tmp, "src")
            shutil.copytree(os.path.dirname(support.PACKAGE_SRC), source,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            target = os.path.join(tmp, "site")
            env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
            pip = subprocess.run([sys.executable, "-m", "pip", "install", "--target", target, "--no-build-isolation",
                                  "--no-index", "--no-deps", source], capture_output=True, text=True, env=env,
                                 timeout=240)
            print(pip.stdout + pip.stderr)
            if pip.returncode != 0 and "bdist_wheel" in pip.stdout + pip.stderr and \
                    importlib.util.find_spec("wheel") is None:
                self.skipTest("this setuptools needs the wheel package to build (apt-get install python3-wheel)")
            self.assertEqual(pip.returncode, 0, "pip install failed")
            self.assertTrue(os.path.isfile(os.path.join(target, "tessera", "__init__.py")))
            self.assertTrue(os.path.isfile(os.path.join(target, "tessera", "py.typed")))
            # The package's metadata names the project's license (pyproject.toml, LICENSE).
            metadata = [os.path.join(target, d, "METADATA") for d in os.listdir(target) if d.endswith(".dist-info")]
            self.assertEqual(len(metadata), 1, os.listdir(target))
            with open(metadata[0], encoding="utf-8") as f:
                self.assertIn("License: BSD-3-Clause", f.read().splitlines())
            # A fresh interpreter that sees only the installed copy (not python/src).
            script = ("import tessera, sys; print(tessera.__file__); "
                      "plan = tessera.dry_run(m=64, n=48, k=32, ranks=3, backend='cpu'); "
                      "print(plan.algorithm, plan.grid, plan.shape)")
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.update(PYTHONPATH=target, TESSERA_BIN=args.tessera, OMPI_MCA_orte_tmpdir_base=tmp)
            run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp,
                                 timeout=120)
            print(run.stdout + run.stderr)
            self.assertEqual(run.returncode, 0)
            lines = run.stdout.splitlines()
            self.assertTrue(lines[0].startswith(os.path.join(target, "tessera")), lines[0])
            self.assertIn("(m=64, n=48, k=32)", lines[1])

    def test_pip_builds_the_native_module(self):
        """With TESSERA_BUILD_DIR, pip builds tessera._native against that build's libtessera; the
        installed package then multiplies in-process with nothing else set."""
        for module in ("pip", "setuptools"):
            if importlib.util.find_spec(module) is None:
                self.skipTest(f"{sys.executable} has no {module}; the install is not tested")
        build = os.path.dirname(os.path.abspath(args.tessera))
        if not os.path.isfile(os.path.join(build, "src", "api", "libtessera.so")):
            self.skipTest(f"{build} has no shared libtessera: the module cannot be built against it")
        if importlib.util.find_spec("pybind11") is None and not os.path.isfile("/usr/include/pybind11/pybind11.h"):
            self.skipTest("pybind11's headers are not installed (bash scripts/setup.sh installs pybind11-dev)")
        with tempfile.TemporaryDirectory(prefix="tessera-pynative-") as tmp:
            source = os.path.join(tmp, "src")
            shutil.copytree(os.path.dirname(support.PACKAGE_SRC), source,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
            target = os.path.join(tmp, "site")
            env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1", "TESSERA_BUILD_DIR": build}
            pip = subprocess.run([sys.executable, "-m", "pip", "install", "-v", "--target", target,
                                  "--no-build-isolation", "--no-index", "--no-deps", source], capture_output=True,
                                 text=True, env=env, timeout=400)
            print(pip.stdout[-3000:] + pip.stderr[-3000:])
            if pip.returncode != 0 and "bdist_wheel" in pip.stdout + pip.stderr and \
                    importlib.util.find_spec("wheel") is None:
                self.skipTest("this setuptools needs the wheel package to build (apt-get install python3-wheel)")
            self.assertEqual(pip.returncode, 0, "pip install failed")
            built = [f for f in os.listdir(os.path.join(target, "tessera")) if f.startswith("_native")]
            self.assertEqual(len(built), 1, f"no tessera._native installed: {os.listdir(os.path.join(target, 'tessera'))}")
            script = ("import numpy as np, tessera; "
                      "native = tessera.matmul.__globals__['_native'](); print(native.__file__); "
                      "a = np.arange(12.0).reshape(3, 4); b = np.ones((4, 2)); "
                      "c = tessera.matmul(a, b, alpha=2.0); print(np.array_equal(c, 2 * (a @ b)))")
            env = {k: v for k, v in os.environ.items()
                   if k not in ("PYTHONPATH", "TESSERA_BIN", "TESSERA_NATIVE_DIR", "TESSERA_BUILD_DIR")}
            env.update(PYTHONPATH=target, PATH="/usr/bin:/bin")
            run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp,
                                 timeout=120)
            print(run.stdout + run.stderr)
            self.assertEqual(run.returncode, 0)
            lines = run.stdout.splitlines()
            self.assertTrue(lines[0].startswith(os.path.join(target, "tessera", "_native")), lines[0])
            self.assertEqual(lines[1], "True")


if __name__ == "__main__":
    support.main()
