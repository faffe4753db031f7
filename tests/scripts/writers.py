"""Existing output files shared and squeezed (issue #27 items 2-4):

--case two-writers: a second `tessera run` into a file that a first run is writing (paused
  before its commit) is refused at once, naming the cause, with HDF5's file locking on and off
  (HDF5_USE_FILE_LOCKING=FALSE); the first run completes and the file holds its C alone.
--case full-disk: on a small tmpfs (root only; skipped visibly otherwise) a C with no room is
  refused before the compute, the file byte for byte as it was; and with the disk filled up while
  the run waits before its commit (leaving 0 to 64 KiB), the commit fails with one clear line,
  no crash, and the file is again byte for byte as it was.
--case refused-readonly: refusals come before any write: a file whose root holds an external
  link, or a NaN in A, leaves the existing output byte for byte as it was (no superblock
  rewrite, no growth)."""
import hashlib
import os
import shutil
import subprocess
import time

import h5py
import numpy as np

from common import SKIP, Runner, check, fail, parser, random_matrix, write

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["two-writers", "full-disk", "refused-readonly"])
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(31)


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def existing(path, extra=None):
    with h5py.File(path, "w") as f:
        f.attrs["project"] = "shared"
        f.create_dataset("keep", data=np.arange(20.0).reshape(4, 5))
        if extra:
            extra(f)


def run_cmd(a, b, c, *more):
    return [args.tessera, "run", "--a", a, "--b", b, "--c", c, "--backend", "cpu", "-q", *more]


def errors_of(proc):
    return [line for line in proc.stderr.splitlines() if line.startswith("tessera: error")]


m, k, n = 40, 30, 20
write(r.path("a.h5"), "/A", random_matrix(rng, m, k, np.float64))
write(r.path("b.h5"), "/B", random_matrix(rng, k, n, np.float64))
A, B = r.path("a.h5") + ":/A", r.path("b.h5") + ":/B"

if args.case == "two-writers":
    for locking in ("TRUE", "FALSE"):
        data = r.path(f"shared-{locking}.h5")
        existing(data)
        env = dict(os.environ, HDF5_USE_FILE_LOCKING=locking)
        first = subprocess.Popen(run_cmd(A, B, data + ":/first/C"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, cwd=r.dir, env=dict(env, TESSERA_TEST_PAUSE_BEFORE_COMMIT="4"))
        deadline = time.monotonic() + 30
        while not os.path.exists(data + ".tessera-journal") and time.monotonic() < deadline:
            time.sleep(0.02)
        check(os.path.exists(data + ".tessera-journal"), "the first run never started writing")
        t0 = time.monotonic()
        second = subprocess.run(run_cmd(A, B, data + ":/second/C"), capture_output=True, text=True, cwd=r.dir,
                                env=env, timeout=60)
        took = time.monotonic() - t0
        print(second.stderr, end="")
        check(second.returncode == 1, f"HDF5_USE_FILE_LOCKING={locking}: the second run exited {second.returncode}")
        check(len(errors_of(second)) == 1 and "being written by another tessera run" in errors_of(second)[0],
              f"HDF5_USE_FILE_LOCKING={locking}: expected one refusal naming the other run, got {second.stderr!r}")
        check(took < 3, f"the second run took {took:.1f} s to be refused: it must not wait for the first")
        out, err = first.communicate(timeout=60)
        check(first.returncode == 0, f"the first run failed: {err}")
        with h5py.File(data, "r") as f:
            check("first" in f and "C" in f["first"] and "second" not in f, f"the file holds {list(f)}")
            check(np.array_equal(f["keep"][...], np.arange(20.0).reshape(4, 5)), "/keep changed")
        check(not os.path.exists(data + ".tessera-journal"), "a journal is left")
        print(f"HDF5_USE_FILE_LOCKING={locking}: second run refused in {took:.2f} s; the first completed")

elif args.case == "full-disk":
    mnt = r.path("small")
    os.mkdir(mnt)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt]).returncode != 0:
        print("SKIP: needs root to mount a small tmpfs")
        raise SystemExit(SKIP)
    try:
        data = os.path.join(mnt, "data.h5")
        existing(data)
        before = digest(data)
        # No room for C (1000 x 1000 doubles: 8 MB on a 4 MB disk): refused before the compute.
        write(r.path("big_a.h5"), "/A", random_matrix(rng, 1000, 8, np.float64))
        write(r.path("big_b.h5"), "/B", random_matrix(rng, 8, 1000, np.float64))
        proc = subprocess.run(run_cmd(r.path("big_a.h5") + ":/A", r.path("big_b.h5") + ":/B", data + ":/C",
                                      "--progress", "on"), capture_output=True, text=True, cwd=r.dir, timeout=60)
        print(proc.stderr, end="")
        check(proc.returncode == 1 and len(errors_of(proc)) == 1 and "not enough space" in errors_of(proc)[0],
              f"expected one 'not enough space' refusal, got {proc.returncode}: {proc.stderr!r}")
        check("computing" not in proc.stderr, "refused only after the compute")
        check(digest(data) == before, "the refused run changed the file")
        check(sorted(os.listdir(mnt)) == ["data.h5"], f"left behind: {os.listdir(mnt)}")
        # The disk filled up by someone else while the run waits before its commit.
        for left in (0, 512, 4096, 16384, 65536):
            existing(data)
            before = digest(data)
            proc = subprocess.Popen(run_cmd(A, B, data + ":/C"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, cwd=r.dir, env=dict(os.environ, TESSERA_TEST_PAUSE_BEFORE_COMMIT="1.5"))
            time.sleep(0.7)
            filler = os.path.join(mnt, "filler")
            with open(filler, "wb") as fh:  # everything but `left` bytes
                free = shutil.disk_usage(mnt).free
                fh.write(b"\0" * max(0, free - left))
            out, err = proc.communicate(timeout=60)
            print(f"{left} bytes left: exit {proc.returncode}: {err.strip()}")
            check(proc.returncode in (0, 1), f"{left} bytes left: exit {proc.returncode} (a crash?)\n{err}")
            if proc.returncode == 1:
                check(len([l for l in err.splitlines() if l.startswith("tessera: error")]) == 1,
                      f"{left} bytes left: expected one error line, got {err!r}")
                check(digest(data) == before, f"{left} bytes left: the failed run changed the file")
            else:
                with h5py.File(data, "r") as f:
                    check("C" in f and f["C"].shape == (m, n), f"{left} bytes left: exit 0 without C")
            check(not os.path.exists(data + ".tessera-journal"), f"{left} bytes left: a journal is left")
            os.remove(filler)
    finally:
        subprocess.run(["umount", mnt])

else:  # refused-readonly
    # A root with an external link: the run is refused (the link's target is not C's file), the
    # file is not opened for writing at all.
    data = r.path("linked.h5")
    existing(data, lambda f: f.__setitem__("elsewhere", h5py.ExternalLink("other.h5", "/x")))
    before, size = digest(data), os.path.getsize(data)
    proc = subprocess.run(run_cmd(A, B, data + ":/elsewhere/C"), capture_output=True, text=True, cwd=r.dir)
    print(proc.stderr, end="")
    check(proc.returncode != 0 and "external link" in proc.stderr, f"expected a refusal, got {proc.stderr!r}")
    check(digest(data) == before, "a refused run rewrote bytes of the file")
    # NaN in A: refused after the read, with C's temporary dataset already made: rolled back.
    bad = random_matrix(rng, m, k, np.float64)
    bad[3, 4] = np.nan
    write(r.path("nan.h5"), "/A", bad)
    data = r.path("out.h5")
    existing(data)
    before, size = digest(data), os.path.getsize(data)
    proc = subprocess.run(run_cmd(r.path("nan.h5") + ":/A", B, data + ":/C"), capture_output=True, text=True,
                          cwd=r.dir)
    print(proc.stderr, end="")
    check(proc.returncode == 1 and "non-finite" in proc.stderr, f"expected the NaN refusal, got {proc.stderr!r}")
    check(os.path.getsize(data) == size, f"the file grew from {size} to {os.path.getsize(data)} bytes")
    check(digest(data) == before, "a refused run changed the file")
print("PASS")
