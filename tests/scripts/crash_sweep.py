"""Crash safety of an existing output file (issue #27): tessera is stopped before each of its
writes in turn (TESSERA_TEST_KILL_AT_WRITE=N on rank 0: every journal record, every write HDF5
makes through the journal, C's elements, the commit), or that write fails as on a full disk
(TESSERA_TEST_FAIL_AT_WRITE=N), for N = 1, 2, ... until a run completes. After each stop the
file must hold every earlier object unchanged and either no new C (or the old C) - then it is
byte for byte the file it was - or the complete new C with its attributes; no journal or
temporary file may stay.

TESSERA_TEST_CRASH_SWEEP_STRIDE=S (scripts/sanitize.sh: 3) stops at N = 1, 1+S, 1+2S, ... only, for the kill
and enospc sweeps: under the sanitizers a process runs several times slower, and every write is
swept by the main suite; S odd keeps the kill sweep alternating between recover and the next run.

--stop kill: SIGKILL; the file is restored by `tessera recover` (odd N) or by the next
`tessera run` (even N), which then writes C. --stop TERM / INT: the signal; the process itself
must leave the file consistent: rolled back with a nonzero exit, or, for a signal that came during
the commit, the commit finished, a note saying so, and exit 0 (issue 40). --stop enospc: the
write fails; one clear error line, exit 1, no crash, the file as it was.

Cases: new (a dataset in a new nested group), overwrite, beta (--beta 0.5 --overwrite: C = AB +
0.5 C_old), leftover (the file holds a dead run's temporary dataset, removed by the run), latest
(a file h5py wrote with libver='latest', whose superblock records a writer), batch (a batch of A,
3 x 12 x 29, times a shared B, --beta 0.5 --overwrite over a 3 x 12 x 31 batch C: a 3-D C),
window (C into the window [5:42, 4:35] of an existing 50 x 40 dataset, --beta 0.5 --overwrite:
written in place; the rest of the dataset and its attributes stay), window-gzip (the same into a
chunked, gzip-compressed dataset: every write through HDF5 and the journal), compressed (a new C
stored --chunk 8x16 --compression gzip --shuffle: its chunks compressed by tessera's threads and
stored by H5Dwrite_chunk through the journal), half (a new C stored --c-dtype f16: converted from the
float64 product by tessera's threads as it is written)."""
import hashlib
import os
import shlex
import socket
import subprocess
import time

import h5py
import numpy as np

from common import Runner, check, check_product, fail, leftovers, parser, random_matrix, write

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["new", "overwrite", "beta", "leftover", "latest", "batch", "window",
                                                    "window-gzip", "compressed", "half"])
p.add_argument("--stop", default="kill", choices=["kill", "TERM", "INT", "enospc"])
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(27)
data = r.path("data.h5")
pristine = r.path("pristine.h5")
C_PATH = "/results/run1/C" if args.case == "new" else "/results/C"
DEAD = f"C.tessera-partial-{socket.gethostname().replace('-', '_')[:64]}-999999999"
m, k, n = 37, 29, 31
a, b = random_matrix(rng, m, k, np.float64), random_matrix(rng, k, n, np.float64)
old_c = random_matrix(rng, m, n, np.float64)
if args.case == "batch":  # A a batch of 3 matrices of 12 rows; C_old the batch of 3 x 12 x 31
    a = rng.random((3, 12, k)) * 2 - 1
    old_c = rng.random((3, 12, n)) * 2 - 1
    with h5py.File(r.path("a.h5"), "w") as f:
        f.create_dataset("A", data=a)
else:
    write(r.path("a.h5"), "/A", a)
write(r.path("b.h5"), "/B", b)
WINDOW = args.case.startswith("window")
if WINDOW:  # C goes into rows 5:42 and columns 4:35 of a 50 x 40 dataset
    whole_old = rng.random((50, 40)) * 2 - 1
    old_c = whole_old[5:42, 4:35]


def make_existing():
    libver = ("latest", "latest") if args.case == "latest" else None
    with h5py.File(pristine, "w", libver=libver) as f:
        f.attrs["project"] = "pipeline"
        f.create_dataset("other", data=np.arange(12.0).reshape(3, 4)).attrs["units"] = "m/s"
        g = f.create_group("results")
        g.attrs["note"] = "kept"
        g.create_dataset("old", data=rng.integers(0, 100, size=(5, 7), dtype=np.int32), chunks=(2, 3),
                         compression="gzip")
        f.create_dataset("deep/er/vec", data=np.linspace(0, 1, 9, dtype=np.float32))
        if args.case in ("overwrite", "beta", "batch"):
            g.create_dataset("C", data=old_c).attrs["made_by"] = "an earlier step"
        if WINDOW:
            layout = {"chunks": (8, 16), "compression": "gzip"} if args.case == "window-gzip" else {}
            g.create_dataset("C", data=whole_old, **layout).attrs["made_by"] = "an earlier step"
        if args.case == "leftover":
            f.create_dataset(DEAD, data=np.zeros((2, 2)))


def snapshot(path, exclude):
    """Every object but those under `exclude`: path -> (kind, dtype, shape, digest of values, attributes)."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if any(("/" + name).startswith(x) for x in exclude):
                return
            attrs = tuple(sorted((key, repr(v)) for key, v in obj.attrs.items()))
            if isinstance(obj, h5py.Dataset):
                digest = hashlib.sha256(np.asarray(obj[()]).tobytes()).hexdigest()
                out[name] = ("dataset", str(obj.dtype), obj.shape, digest, attrs)
            else:
                out[name] = ("group", attrs)
        f.visititems(visit)
        out["/"] = tuple(sorted((key, repr(v)) for key, v in f.attrs.items()))
    return out


def digest(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


make_existing()
BEFORE_BYTES = digest(pristine)
# Objects a complete run leaves as they were (the leftover goes; C, and the group made for it, change).
KEPT = snapshot(pristine, exclude=(C_PATH, "/results/run1", "/" + DEAD))
BETA = args.case in ("beta", "batch") or WINDOW
expected = a @ b + (0.5 * old_c if BETA else 0)  # (a batch: each matrix times b)
if WINDOW:  # the whole dataset: the window replaced, the rest as it was
    expected, product = whole_old.copy(), expected
    expected[5:42, 4:35] = product
run_args = ["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B",
            "--c", data + ":" + C_PATH + ("[5:42, 4:35]" if WINDOW else ""), "--backend", "cpu", "-q"]
if args.case in ("overwrite", "beta", "batch") or WINDOW:
    run_args.append("--overwrite")
if BETA:
    run_args += ["--beta", "0.5"]
if args.case == "compressed":
    run_args += ["--chunk", "8x16", "--compression", "gzip", "--shuffle"]
if args.case == "half":
    run_args += ["--c-dtype", "f16"]


def command(extra_env):
    """tessera on args.np ranks, the hook in rank 0's environment only; one rank runs alone."""
    env_words = ["env"] + [f"{key}={value}" for key, value in extra_env.items()]
    if args.np == 1:
        return env_words + [args.tessera] + run_args
    launcher = shlex.split(args.mpiexec)
    return (launcher + ["-np", "1"] + env_words + [args.tessera] + run_args + [":", "-np", str(args.np - 1),
                                                                                args.tessera] + run_args)


def consistent(where):
    """The file after a stop (and its restoration): as it was, or with the complete new C."""
    check(not os.path.exists(data + ".tessera-journal"), f"{where}: the journal is still there")
    check(not leftovers(r.dir), f"{where}: temporary files left: {leftovers(r.dir)}")
    if digest(data) == BEFORE_BYTES:
        return "as it was"
    # Not byte-identical: then it must be the committed result.
    check(snapshot(data, exclude=(C_PATH, "/results/run1", "/" + DEAD)) == KEPT, f"{where}: earlier objects changed")
    with h5py.File(data, "r") as f:
        check(DEAD not in f, f"{where}: the file changed but the dead run's leftover is still there")
        check(C_PATH in f, f"{where}: the file changed but holds no C")
        c = f[C_PATH][...]
        attrs = dict(f[C_PATH].attrs)
        check(not any(".tessera-partial-" in name for name in f), f"{where}: a temporary dataset is left")
    if args.case == "half":  # rounded once to float16 (unit roundoff 2^-11) from the float64 product
        check(c.dtype == np.float16, f"{where}: C stored as {c.dtype}, not float16")
        check(c.shape == expected.shape and np.allclose(c.astype(np.float64), expected, rtol=2.0**-10, atol=2.0**-24),
              f"{where}: C is not A*B rounded to float16")
    else:
        check(c.shape == expected.shape and np.allclose(c, expected, rtol=1e-12, atol=1e-12),
              f"{where}: C is not alpha*A*B + beta*C_old")
    if WINDOW:  # a window leaves the dataset's attributes as they were
        check(attrs == {"made_by": "an earlier step"}, f"{where}: the dataset's attributes changed: {attrs}")
        return "complete"
    for key in ("tessera_version", "created", "input_a", "input_b", "wall_seconds", "beta"):
        check(key in attrs, f"{where}: C lacks its attribute {key}")
    check(float(attrs["beta"]) == (0.5 if BETA else 0.0), f"{where}: beta attribute {attrs['beta']}")
    return "complete"


outcomes = {}
stops = 0
first_in_commit = 0
# The signal sweeps must hit the commit's few writes: every write, always.
stride = max(1, int(os.environ.get("TESSERA_TEST_CRASH_SWEEP_STRIDE", "1"))) if args.stop in ("kill", "enospc") else 1
if stride > 1:
    print(f"stops at writes 1, {1 + stride}, {1 + 2 * stride}, ... (TESSERA_TEST_CRASH_SWEEP_STRIDE={stride})")
for nth in range(1, 400 * stride, stride):
    with open(pristine, "rb") as src, open(data, "wb") as dst:
        dst.write(src.read())
    hook = {"TESSERA_TEST_FAIL_AT_WRITE": str(nth)} if args.stop == "enospc" else {
        "TESSERA_TEST_KILL_AT_WRITE": str(nth) + ("" if args.stop == "kill" else ":" + args.stop)}
    t0 = time.monotonic()
    proc = subprocess.run(command(hook), capture_output=True, text=True, timeout=120, cwd=r.dir)
    where = f"stop at write {nth}"
    if proc.returncode == 0 and "arrived while C was being committed" in proc.stderr:
        # The signal came inside the commit: C is committed for good, the run says so, exit 0.
        check(args.stop in ("TERM", "INT"), f"{where}: a {args.stop} stop reported as a signal in the commit")
        check(consistent(where) == "complete", f"{where}: 'the commit completed' but no complete C")
        outcomes["committed despite the signal"] = outcomes.get("committed despite the signal", 0) + 1
        first_in_commit = first_in_commit or nth
        stops += 1
        continue
    if proc.returncode == 0:
        # Past the last write: the sweep is complete. The run's C is checked like any other.
        check(consistent(where) == "complete", f"{where}: exit 0 but no C")
        print(f"write {nth}: the run completed ({time.monotonic() - t0:.2f} s); {stops} stop(s) swept")
        break
    stops += 1
    if args.stop == "enospc":
        errors = [line for line in proc.stderr.splitlines() if line.startswith("tessera: error")]
        check(proc.returncode == 1, f"{where}: exit {proc.returncode}, expected 1\n{proc.stderr}")
        check(len(errors) == 1 and ("No space left on device" in errors[0] or "disk full" in errors[0] or
                                    "not enough space" in errors[0]), f"{where}: expected one disk-full error, got "
                                                                      f"{proc.stderr!r}")
    elif args.stop == "kill":
        # Restored by `tessera recover`, or by the next run (which then writes C).
        if nth % 2:
            rec = subprocess.run([args.tessera, "recover", data], capture_output=True, text=True, timeout=60)
            check(rec.returncode == 0, f"{where}: tessera recover failed: {rec.stdout}{rec.stderr}")
        else:
            again = subprocess.run([args.tessera] + run_args, capture_output=True, text=True, timeout=60, cwd=r.dir)
            check(again.returncode == 0, f"{where}: the next run failed: {again.stderr}")
            check(consistent(where + ", then a run") == "complete", f"{where}: the next run wrote no C")
            outcomes["next run"] = outcomes.get("next run", 0) + 1
            continue
    else:
        check(proc.returncode != 0, f"{where}: a run stopped by SIG{args.stop} exited 0")
    state = consistent(where)
    outcomes[state] = outcomes.get(state, 0) + 1
else:
    fail("the run never completed")
check(stops * stride >= 10, f"only {stops} stop(s), {stride} write(s) apart, before the run completed: is the hook "
                            "counting?")
if args.stop in ("TERM", "INT") and args.case == "overwrite":
    check(outcomes.get("committed despite the signal", 0) >= 1, "no stop fell inside the commit")
    # The same signal inside the first commit of a --repeat 2 series: that run's C stays, and the
    # signal ends the process before the second run starts (not forgiven: the user asked to stop).
    with open(pristine, "rb") as src, open(data, "wb") as dst:
        dst.write(src.read())
    run_args += ["--repeat", "2"]
    proc = subprocess.run(command({"TESSERA_TEST_KILL_AT_WRITE": f"{first_in_commit}:{args.stop}"}),
                          capture_output=True, text=True, timeout=120, cwd=r.dir)
    check(proc.returncode != 0 and "before the next run starts" in proc.stderr,
          f"--repeat 2, SIG{args.stop} in the first commit: exit {proc.returncode}, {proc.stderr.strip()}")
    check(consistent("--repeat 2, the signal in the first commit") == "complete", "the first run's C is not there")
    print(f"ok: --repeat 2 with SIG{args.stop} in the first run's commit: its C kept, the series ended")
print(f"outcomes after {stops} stops: {outcomes}")
print("PASS")
