"""C into an existing HDF5 file (issue #17 item 1): `--c data.h5:/results/C` where data.h5 holds
other datasets, groups and attributes adds C as a new dataset and leaves everything else
byte-identical (values, dtypes, attributes, compared with h5py); a second run without --overwrite
is refused up front and changes no byte of the file; --overwrite replaces C alone; a rank
SIGKILLed while it computes leaves the file byte for byte as it was (rank 0, ended by the
launcher's SIGTERM, rolls it back through its journal: #27), and the next run writes C. C's attributes read back as str in h5py
(item 3). Each case runs in place or with --write gather."""
import hashlib
import json
import os
import signal
import subprocess
import time

import h5py
import numpy as np

from common import Runner, check, check_product, fail, leftovers, parser, random_matrix, write

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["add", "killed"])
p.add_argument("--write", default="auto", choices=["auto", "in-place", "gather"])
p.add_argument("--algorithm", default="panels")
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(17 + args.np)
data = r.path("data.h5")


def make_existing():
    """A file as a pipeline leaves it: datasets of several types and layouts, groups, attributes."""
    with h5py.File(data, "w") as f:
        f.attrs["project"] = "pipeline"
        f.create_dataset("other", data=np.arange(12.0).reshape(3, 4))
        f["other"].attrs["units"] = "m/s"
        f["other"].attrs["scale"] = 2.5
        g = f.create_group("results")
        g.attrs["note"] = b"bytes attribute"
        g.create_dataset("old", data=rng.integers(0, 100, size=(5, 7), dtype=np.int32), chunks=(2, 3),
                         compression="gzip")
        f.create_dataset("deep/er/vec", data=np.linspace(0, 1, 9, dtype=np.float32))
        f.create_dataset("text", data="a string dataset")


def snapshot(exclude=()):
    """Every object but `exclude`: path -> (kind, dtype, shape, sha256 of the values, attributes)."""
    out = {}
    with h5py.File(data, "r") as f:
        def visit(name, obj):
            if "/" + name in exclude or ".tessera-partial-" in name:
                return
            attrs = tuple(sorted((k, repr(v)) for k, v in obj.attrs.items()))
            if isinstance(obj, h5py.Dataset):
                values = obj[()]
                digest = hashlib.sha256(np.asarray(values).tobytes() if not isinstance(values, bytes) else values)
                out[name] = ("dataset", str(obj.dtype), obj.shape, obj.chunks, obj.compression, digest.hexdigest(), attrs)
            else:
                out[name] = ("group", attrs)
        f.visititems(visit)
        out["/"] = ("root", tuple(sorted((k, repr(v)) for k, v in f.attrs.items())))
    return out


def root_links():
    with h5py.File(data, "r") as f:
        return sorted(f.keys())


def file_digest():
    with open(data, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def run_args(c_path, *extra):
    return ["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", data + ":" + c_path,
            "--backend", "cpu", "--algorithm", args.algorithm, "--write", args.write, "-q", *extra]


def check_c(c_path, a, b):
    with h5py.File(data, "r") as f:
        c = f[c_path][...]
        attrs = dict(f[c_path].attrs)
    check_product(a, b, c, np.float64)
    # Item 3: text attributes are str (variable-length UTF-8), numbers are numbers.
    check(attrs["algorithm"] == args.algorithm, f"algorithm attribute {attrs['algorithm']!r} is not the str "
                                                f"{args.algorithm!r}")
    for key in ("dtype", "backend", "kernel", "process_grid", "input_a", "input_b", "tessera_version", "created"):
        check(isinstance(attrs[key], str), f"attribute {key} is {type(attrs[key]).__name__}, not str")
    check(attrs["input_a"] == r.path("a.h5") + ":/A" and os.path.isabs(attrs["input_a"]),
          f"input_a {attrs['input_a']!r}")
    check(attrs["input_b"] == r.path("b.h5") + ":/B", f"input_b {attrs['input_b']!r}")
    check("inputs" not in attrs, "the old combined 'inputs' attribute is gone")
    check(isinstance(attrs["nranks"], (int, np.integer)) and attrs["nranks"] == args.np, f"nranks {attrs['nranks']!r}")
    check(isinstance(attrs["wall_seconds"], (float, np.floating)), "wall_seconds is a number")
    check(list(attrs["shape"]) == list(c.shape), f"shape attribute {attrs['shape']}")


m, k, n = (61, 47, 53) if args.case == "add" else (1200, 1200, 1200)
a, b = random_matrix(rng, m, k, np.float64), random_matrix(rng, k, n, np.float64)
write(r.path("a.h5"), "/A", a)
write(r.path("b.h5"), "/B", b)
make_existing()
before = snapshot()
digest_before = file_digest()

if args.case == "add":
    res = r.run(run_args("/results/run1/C", "--report", r.path("r.json")))
    check_c("/results/run1/C", a, b)
    check(snapshot(exclude=("/results/run1", "/results/run1/C")) == before, "the rest of the file changed")
    check(root_links() == ["deep", "other", "results", "text"], f"root links {root_links()}")
    rep = json.load(open(r.path("r.json")))
    want = "gather" if args.write == "gather" else "in place"
    check(rep["write"].startswith(want), f"report write {rep['write']!r}, expected {want}")

    # Again without --overwrite: refused before anything is computed, no byte of the file changed.
    digest = file_digest()
    res = r.run(run_args("/results/run1/C", "--progress", "on"), expect_ok=False)
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    check(res.returncode == 1 and len(errors) == 1 and "exists; pass --overwrite" in errors[0] and
          "results/run1/C" in errors[0], f"expected one refusal naming the dataset, got {errors}")
    check("computing" not in res.stderr, "refused before the compute")
    check(file_digest() == digest, "a refused run changed the file")

    # --overwrite with another shape replaces C alone.
    a2 = random_matrix(rng, m + 3, k, np.float64)
    write(r.path("a.h5"), "/A", a2, mode="w")
    r.run(run_args("/results/run1/C", "--overwrite"))
    check_c("/results/run1/C", a2, b)
    check(snapshot(exclude=("/results/run1", "/results/run1/C")) == before, "--overwrite changed the rest of the file")
    check(root_links() == ["deep", "other", "results", "text"], f"root links {root_links()}")
    check(not leftovers(r.dir), "no temporary files")
else:
    # A rank is SIGKILLed while the ranks compute (cpu-naive on 1200^3: seconds).
    cmd = r.cmd(run_args("/results/C", "--kernel", "cpu-naive"))
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=r.dir,
                            env=dict(os.environ, TESSERA_STREAM_CHUNKS="1"))
    victim_rank = args.np - 1
    # The temporary dataset exists once the ranks compute (the file is closed by then); look with
    # HDF5's file locking off, retrying while tessera has the file open.
    env_lock = os.environ.get("HDF5_USE_FILE_LOCKING")
    deadline, seen = time.monotonic() + 60, False
    while not seen and time.monotonic() < deadline and proc.poll() is None:
        try:
            with h5py.File(data, "r", locking=False) as f:
                seen = any(".tessera-partial-" in name for name in f.keys())
        except (OSError, TypeError):
            pass
        time.sleep(0.05)
    check(seen, "the temporary dataset never appeared")
    time.sleep(0.5)  # inside the compute

    def rank_of(pid):
        try:
            env = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
            cmdline = open(f"/proc/{pid}/cmdline", "rb").read()
        except OSError:
            return None
        if os.path.basename(args.tessera).encode() not in cmdline or data.encode() not in cmdline:
            return None
        for var in env:
            if var.startswith(b"OMPI_COMM_WORLD_RANK="):
                return int(var.split(b"=", 1)[1])
        return None

    victims = [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and rank_of(pid) == victim_rank]
    check(len(victims) == 1, f"expected one process of rank {victim_rank}, found {victims}")
    check(proc.poll() is None, "the job ended before the fault; make it bigger")
    os.kill(victims[0], signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the job did not end within 60 s of a rank's death")
    print(out + err)
    check(proc.returncode != 0, "the job must end nonzero")
    journal = data + ".tessera-journal"
    if victim_rank == 0:
        # Rank 0 itself was SIGKILLed: its journal stays, and the next command restores the file.
        check(os.path.exists(journal), "rank 0 was killed but left no journal")
    else:
        # Rank 0 ends by the launcher's SIGTERM and rolls the file back through its journal: byte
        # for byte the file it was, no temporary dataset, no journal (#27). Open MPI follows its
        # SIGTERM with a SIGKILL about a second later; on a loaded machine that can come while the
        # rollback is still making the file durable: the journal then stays, and restoring the
        # file again (idempotent) is the next command's job.
        if os.path.exists(journal):
            print("note: rank 0 was killed while it rolled back; the journal stayed: tessera recover")
            rec = subprocess.run([args.tessera, "recover", data], capture_output=True, text=True, timeout=60)
            check(rec.returncode == 0, f"tessera recover failed: {rec.stdout}{rec.stderr}")
        check(file_digest() == digest_before, "the file is not byte for byte what it was after the kill")
        check(snapshot() == before, "the rest of the file changed after the kill")
        check(not os.path.exists(journal), "the journal is still there")
        check(root_links() == ["deep", "other", "results", "text"], f"root links {root_links()}")
    # The next run (restoring the file first where rank 0 died) writes C.
    res = r.run(run_args("/results/C"))
    if victim_rank == 0:
        check(f"restored '{data}' as it was" in res.stderr, "the restoration is reported")
    check(not os.path.exists(journal), "the journal is still there after the next run")
    check_c("/results/C", a, b)
    check(snapshot(exclude=("/results/C",)) == before, "the rest of the file changed")
    check(root_links() == ["deep", "other", "results", "text"], f"root links {root_links()}")
    check(not leftovers(r.dir), "no temporary files")
print("PASS")
