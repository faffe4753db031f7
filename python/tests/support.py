"""What the Python package's tests share: the arguments CTest gives every script test (--tessera,
--mpiexec, --np, --source-dir: cmake/TesseraTesting.cmake), the package imported from this
source tree, inputs written with h5py, and a unittest runner whose exit status CTest reads
(0 passed, 1 failed, 77 every test skipped)."""
import argparse
import os
import shlex
import sys
import tempfile
import unittest

SKIP = 77  # CTest SKIP_RETURN_CODE
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_SRC = os.path.join(os.path.dirname(HERE), "src")


class Args:
    tessera = None  # the binary under test
    mpiexec = None  # the launcher as the other script tests use it, as a list
    np = 1
    source_dir = None


args = Args()


def parse(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--tessera", required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--source-dir", required=True)
    p.add_argument("--np", type=int, default=1)
    known, rest = p.parse_known_args(argv)
    args.tessera = os.path.abspath(known.tessera)
    args.mpiexec = shlex.split(known.mpiexec)
    args.np = known.np
    args.source_dir = known.source_dir
    # Open MPI's session folder for this process's launches outside a TempDirTest (the --help the
    # package asks for): its own, as every launch here has.
    global _session
    _session = tempfile.TemporaryDirectory(prefix="tessera-pytest-ompi-")
    os.environ["OMPI_MCA_orte_tmpdir_base"] = _session.name
    return rest


_session = None


def import_package():
    """The package from python/src (the install test imports an installed copy instead)."""
    if PACKAGE_SRC not in sys.path:
        sys.path.insert(0, PACKAGE_SRC)
    import tessera
    return tessera


class TempDirTest(unittest.TestCase):
    """A test with its own folder, also Open MPI's session folder (as tests/scripts/common.py:
    concurrent launches sharing /tmp/ompi.<host>.<uid> race)."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory(prefix="tessera-pytest-")
        self.dir = self._tmp.name
        self._saved_env = dict(os.environ)
        os.environ["OMPI_MCA_orte_tmpdir_base"] = self.dir
        os.environ["TESSERA_BIN"] = args.tessera

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self._saved_env)
        self._tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, dataset, array):
        import h5py
        with h5py.File(self.path(name), "a") as f:
            f.create_dataset(dataset, data=array)
        return self.path(name)


def product_ok(testcase, a, b, c, dtype):
    """C against A·B in float64, elementwise within 2·γ_K·|A||B| (+ float64 rounding)."""
    import numpy as np
    a64, b64, c64 = a.astype(np.float64), b.astype(np.float64), c.astype(np.float64)
    ref, mag = a64 @ b64, np.abs(a64) @ np.abs(b64)
    k = a.shape[1]

    def gamma(u):
        return k * u / (1 - k * u)
    u = 2.0**-24 if np.dtype(dtype) == np.float32 else 2.0**-53
    bound = 2 * gamma(u) + 4 * gamma(2.0**-53)
    testcase.assertEqual(c.shape, ref.shape)
    testcase.assertTrue(np.all(np.abs(c64 - ref) <= bound * mag), "C differs from A·B beyond rounding")


def main(argv=None):
    rest = parse(argv)
    module = sys.modules["__main__"]
    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    if rest:
        suite = unittest.defaultTestLoader.loadTestsFromNames(rest, module)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(suite)
    if not result.wasSuccessful():
        sys.exit(1)
    if result.testsRun and len(result.skipped) == result.testsRun:
        print("SKIP: every test skipped")
        sys.exit(SKIP)
    sys.exit(0)
