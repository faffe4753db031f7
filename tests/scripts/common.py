"""Shared helpers of tessera's script tests: launch tessera (under mpiexec), write inputs with
h5py, and check results against numpy in float64 with bounds derived from precision and K."""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

SKIP = 77  # CTest SKIP_RETURN_CODE


def parser(description):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--tessera", required=True)
    p.add_argument("--mpiexec", required=True)
    p.add_argument("--source-dir", required=True)
    p.add_argument("--np", type=int, default=1)
    return p


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Runner:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.TemporaryDirectory(prefix="tessera-test-")
        self.dir = self.tmp.name
        # Open MPI's session directory per test: concurrent launches sharing /tmp/ompi.<host>.<uid>
        # race on creating and removing it ("mkdir ... File exists", orte_init fails).
        os.environ["OMPI_MCA_orte_tmpdir_base"] = self.dir

    def path(self, name):
        return os.path.join(self.dir, name)

    def cmd(self, tessera_args, np_=None):
        n = self.args.np if np_ is None else np_
        return shlex.split(self.args.mpiexec) + ["-np", str(n), self.args.tessera] + list(tessera_args)

    def run(self, tessera_args, np_=None, timeout=240, expect_ok=True, env=None, direct=False):
        cmd = [self.args.tessera] + list(tessera_args) if direct else self.cmd(tessera_args, np_)
        print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        t0 = time.monotonic()
        full_env = dict(os.environ)
        full_env.update(env or {})
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env, cwd=self.dir)
        p.seconds = time.monotonic() - t0
        sys.stdout.write(p.stdout)
        sys.stdout.write(p.stderr)
        if expect_ok and p.returncode != 0:
            fail(f"exit status {p.returncode}")
        return p


def skip_without_gpus(args):
    """Exit with SKIP (visibly) when fewer than args.need_gpus GPUs are visible to one rank."""
    if not args.need_gpus:
        return
    info = Runner(args).run(["info", "--json"], np_=1)
    gpus = len(json.loads(info.stdout)["gpus"])  # one rank: one view
    if gpus < args.need_gpus:
        print(f"SKIP: needs {args.need_gpus} GPU(s), {gpus} visible")
        raise SystemExit(SKIP)


def forced_env(stream_chunks=0, bands=0, staged="", stage_bytes=0, read_ahead=False):
    """The environment that forces A's streaming pieces, the bands of C and the staged GEMM
    (staged "on": TESSERA_STAGED=1, in pieces of stage_bytes; "off": TESSERA_STAGED=0; None: the
    model's and the backend's choices); read_ahead: B's first half read ahead on every busy rank
    (TESSERA_READ_AHEAD=force; a GPU run reads ahead while the GPU starts)."""
    env = {}
    if read_ahead:
        env["TESSERA_READ_AHEAD"] = "force"
    if staged:
        env["TESSERA_STAGED"] = "1" if staged == "on" else "0"
    if stage_bytes:
        env["TESSERA_STAGE_BYTES"] = str(stage_bytes)
    if stream_chunks:
        env["TESSERA_STREAM_CHUNKS"] = str(stream_chunks)
    if bands:
        env["TESSERA_BANDS"] = str(bands)
    return env or None


def random_matrix(rng, rows, cols, dtype):
    # Uniform [-1, 1): mixed signs, never zeros-only.
    return (rng.random((rows, cols)) * 2 - 1).astype(dtype)


def write(path, name, array, chunks=None, compression=None, mode="a"):
    with h5py.File(path, mode) as f:
        f.create_dataset(name, data=array, chunks=chunks, compression=compression)


def gamma(dtype, k):
    u = {np.dtype(np.float32): 2.0**-24, np.dtype(np.float64): 2.0**-53}[np.dtype(dtype)]
    return k * u / (1 - k * u)


def bfloat16_type():
    """An HDF5 bfloat16 type (sign 15, exponent 7..14, mantissa 0..6, bias 127), as ml_dtypes users
    declare it and tessera reads and writes it."""
    t = h5py.h5t.IEEE_F32LE.copy()
    t.set_fields(15, 7, 8, 0, 7)
    t.set_size(2)
    t.set_ebias(127)
    return t


def check_product(a, b, c, dtype, safety=2.0):
    """C must satisfy |C - AB| <= safety * gamma_K * |A||B| elementwise (float64 reference).
    Returns the relative Frobenius error."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    mag = np.abs(a64) @ np.abs(b64)
    c64 = c.astype(np.float64)
    check(c.shape == ref.shape, f"C has shape {c.shape}, expected {ref.shape}")
    check(np.all(np.isfinite(c64)), "C has non-finite elements")
    k = a.shape[1]
    bound = safety * gamma(dtype, k) + 4 * gamma(np.float64, k)
    err = np.abs(c64 - ref)
    worst = float(np.max(err / np.where(mag > 0, mag, 1.0)))
    check(np.all(err <= bound * mag), f"max |C-AB|/(|A||B|) = {worst:.3e} exceeds {bound:.3e}")
    rel = float(np.linalg.norm(c64 - ref) / max(np.linalg.norm(ref), 1e-300))
    print(f"ok: rel. Frobenius error {rel:.3e}, max normalized error {worst:.3e} (bound {bound:.3e})")
    return rel


def leftovers(directory):
    return [f for f in os.listdir(directory) if ".tessera-partial" in f]
