"""Faults: a rank killed mid-run, the writer killed (its leftover cleaned by the next run), a
write that fails (file size limit: the same path as a full disk). Each must end promptly with a
nonzero status and leave no output that looks complete.

Fencing and liveness (issue 40): the run's liveness token (the new file's temporary, the existing
file's journal) taken away while every rank is held before its C writes: no rank writes C (fenced-
new, fenced-existing); one rank held in the write while the other waits in MPI: the waiting rank's
watchdog ends it within --timeout, with one line naming it, its host and the step, and the output
is rolled back (watchdog, watchdog-existing)."""
import os
import signal
import subprocess
import time

import h5py
import numpy as np

from common import SKIP, Runner, check, check_product, fail, leftovers, parser, write

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["rank-killed", "writer-killed", "write-fails", "nccl-join-fails",
                                                 "fenced-new", "fenced-existing", "watchdog", "watchdog-existing"])
p.add_argument("--algorithm", default="panels", help="tessera run --algorithm (summa: killed inside its broadcasts)")
p.add_argument("--stream-chunks", type=int, default=0,
               help="TESSERA_STREAM_CHUNKS: A read, and C written, while the GEMM runs (write-fails: on the writer thread)")
p.add_argument("--staged", action="store_true",
               help="TESSERA_STAGED=1 (small pieces): C written by the staged GEMM's writer thread")
args = p.parse_args()
stream_env = {"TESSERA_STREAM_CHUNKS": str(args.stream_chunks)} if args.stream_chunks else None
if args.staged:
    stream_env = dict(stream_env or {}, TESSERA_STAGED="1", TESSERA_STAGE_BYTES="20000")
r = Runner(args)
rng = np.random.default_rng(3)
out_dir = r.path("out")
os.makedirs(out_dir)
C = os.path.join(out_dir, "c.h5")


def children(pid):
    """All descendant pids of pid (mpirun starts the ranks as its children)."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            kids = []
        found += kids
        todo += kids
    return found


def tessera_ranks(mpirun_pid, expected, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ranks = []
        for pid in children(mpirun_pid):
            try:
                cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
            except OSError:
                continue
            if cmd and os.path.basename(cmd[0].decode()) == "tessera":
                ranks.append(pid)
        if len(ranks) == expected:
            return sorted(ranks)
        time.sleep(0.05)
    fail(f"did not find {expected} tessera ranks under mpirun")


if args.case in ("rank-killed", "writer-killed"):
    # Big enough for cpu-naive to run for several seconds on each rank.
    n = 1500
    a = rng.random((n, n))
    b = rng.random((n, n))
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    cmd = r.cmd(["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", C + ":/C",
                 "--backend", "cpu", "--kernel", "cpu-naive", "--grid", "2x1", "--algorithm", args.algorithm], np_=2)
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=r.dir)
    ranks = tessera_ranks(proc.pid, 2)
    # Inside the compute phase: the temporary output exists (made before the read), and a moment
    # later the ranks multiply (start-up takes longer on a loaded machine: wait for it).
    deadline = time.monotonic() + 20
    while not leftovers(out_dir) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)
    check(proc.poll() is None, "the job ended before the fault was injected; make it bigger")
    # Rank order is the pid order for mpirun's local launch; either way one dies.
    victim = ranks[0] if args.case == "writer-killed" else ranks[1]
    if args.case == "writer-killed":
        # The writer is rank 0: find it by its temporary output file's pid.
        tmp = [f for f in os.listdir(out_dir) if ".tessera-partial-" in f]
        check(len(tmp) == 1, f"expected one temporary output, found {tmp}")
        victim = int(tmp[0].rsplit("-", 1)[1])
    t0 = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the job did not end within 30 s of a rank's death")
    took = time.monotonic() - t0
    print(out + err)
    print(f"job ended {took:.1f} s after SIGKILL, status {proc.returncode}")
    check(proc.returncode != 0, "a job with a killed rank must exit nonzero")
    check(took < 10, f"took {took:.1f} s to end (limit 10 s)")
    check(not os.path.exists(C), "no output file may appear")
    left = leftovers(out_dir)
    if args.case == "rank-killed":
        # rank 0 was ended with SIGTERM by mpirun: its handler removed the temporary file.
        check(not left, f"temporary files left: {left}")
    else:
        # SIGKILL cannot be caught: the leftover is named as such and the next run removes it.
        check(len(left) == 1, f"expected the killed writer's leftover, found {left}")
        res = r.run(["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", C + ":/C",
                     "--backend", "cpu"], np_=2)
        check("removed" in res.stderr and left[0] in res.stderr, "the next run must say it removed the leftover")
        check(not leftovers(out_dir), "the leftover must be gone")
        with h5py.File(C, "r") as f:
            check_product(a, b, f["/C"][...], np.float64)
elif args.case == "write-fails":
    a = rng.random((300, 200))
    b = rng.random((200, 400))
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    # A full disk: the output directory is a 256 kB tmpfs; C is 300 x 400 doubles = 960 kB.
    if os.geteuid() != 0:
        print("SKIP: mounting a small tmpfs (a full disk) needs root")
        raise SystemExit(SKIP)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", out_dir],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        print("SKIP: cannot mount a tmpfs here: " + mounted.stderr.strip())
        raise SystemExit(SKIP)
    try:
        res = r.run(["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", C + ":/C",
                     "--backend", "cpu"], np_=2, expect_ok=False, timeout=60, env=stream_env)
        check(res.returncode != 0, "must exit nonzero")
        if args.stream_chunks > 1:
            check("streaming" not in res.stdout, "no report table after a failed write")
        check(res.seconds < 10, f"took {res.seconds:.1f} s")
        errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
        check(len(errors) == 1, f"expected one error line, got {errors}")
        check("c.h5" in errors[0], "the message must name the output")
        check(not os.path.exists(C), "no output file may appear")
        check(not leftovers(out_dir), "no temporary leftovers")
    finally:
        subprocess.run(["umount", out_dir])
elif args.case == "nccl-join-fails":
    # Rank 1 cannot start NCCL (its bootstrap is told to use a network interface that does not
    # exist): it must end the job (comm::abort_job) rather than leave rank 0 waiting in NCCL's
    # set-up for ever. Needs 2 GPUs and a build with NCCL.
    import json
    import shlex
    info = json.loads(r.run(["info", "--json"], np_=1).stdout)
    if len(info["gpus"]) < 2:
        print(f"SKIP: needs 2 GPUs, {len(info['gpus'])} visible")
        raise SystemExit(SKIP)
    a = rng.random((300, 301)).astype(np.float32)
    b = rng.random((301, 302)).astype(np.float32)
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    run_args = ["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", C + ":/C",
                "--backend", "cuda", "--algorithm", args.algorithm, "--comm", "nccl"]
    # Two application contexts: rank 1 runs under `env`, with the broken setting.
    cmd = (shlex.split(args.mpiexec) + ["-np", "1", args.tessera] + run_args +
           [":", "-np", "1", "env", "NCCL_SOCKET_IFNAME=tessera-no-such-interface", args.tessera] + run_args)
    print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
    t0 = time.monotonic()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=r.dir)
    except subprocess.TimeoutExpired:
        fail("the job hung for 60 s after rank 1 failed to join NCCL")
    took = time.monotonic() - t0
    print(res.stdout + res.stderr)
    print(f"job ended after {took:.1f} s, status {res.returncode}")
    check(res.returncode != 0, "a job whose rank cannot join NCCL must exit nonzero")
    check(took < 30, f"took {took:.1f} s (limit 30 s)")
    check("tessera: error (rank 1)" in res.stderr, "rank 1 must say why it ended the job")
    check("NCCL" in res.stderr or "nccl" in res.stderr, "the message must name NCCL")
    check(not os.path.exists(C), "no output file may appear")
    check(not leftovers(out_dir), f"temporary files left: {leftovers(out_dir)}")
elif args.case in ("fenced-new", "fenced-existing"):
    # Every rank holds as the write begins (TESSERA_TEST_HOLD=write); meanwhile the run's token
    # goes: the new file's temporary is renamed away (as a later rename would take it), or the
    # existing file's journal is replaced by another file (as after a rollback and another run's
    # start). The ranks must then write no C: before fencing they wrote their rows through the
    # descriptors they held, into the renamed file.
    a, b = rng.random((64, 48)), rng.random((48, 56))
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    existing = args.case == "fenced-existing"
    if existing:
        with h5py.File(C, "w") as f:
            f["keep"] = np.arange(100.0)
        before = open(C, "rb").read()
    cmd = r.cmd(["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", C + ":/C",
                 "--backend", "cpu", "--write", "in-place", "-v"], np_=2)
    print("$ TESSERA_TEST_HOLD=write:5 " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=r.dir,
                            env=dict(os.environ, TESSERA_TEST_HOLD="write:5"))
    import threading
    err_lines = []
    pump = threading.Thread(target=lambda: err_lines.extend(proc.stderr), daemon=True)
    pump.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if sum("TESSERA_TEST_HOLD: holding in write" in x for x in list(err_lines)) == 2:
            break
        time.sleep(0.02)
    else:
        fail("the ranks did not both reach their hold in the write")
    journal = C + ".tessera-journal"
    token = journal if existing else next(
        (os.path.join(out_dir, x) for x in os.listdir(out_dir) if ".tessera-partial-" in x), None)
    check(token is not None and os.path.exists(token), "no token (temporary file or journal)")
    moved = r.path("moved.h5")
    if existing:
        os.rename(journal, moved)
        open(journal, "wb").close()  # another run's journal: another inode at the same path
        print(f"replaced {journal} by another file while the ranks hold", flush=True)
    else:
        os.rename(token, moved)
        print(f"renamed {token} to {moved} while the ranks hold", flush=True)
    out = proc.stdout.read()
    proc.wait(timeout=120)
    pump.join(timeout=10)
    err = "".join(err_lines)
    print(out + err)
    check(proc.returncode != 0, "a run whose token is gone must exit nonzero")
    check("this run is no longer live" in err, "no rank said it stopped writing C")
    check("rank 0) stopped writing C" in err and "rank 1) stopped writing C" in err,
          "each rank must say it stopped before its writes")
    check(not os.path.exists(r.path("a.h5.tessera-journal")), "journal beside an input")
    if existing:
        if os.path.exists(journal):
            os.unlink(journal)  # the stand-in (rank 0's rollback may have removed it)
        check(open(C, "rb").read() == before, "the existing file is not byte for byte as it was")
        print("ok: journal replaced: no rank wrote C, the file rolled back byte for byte")
    else:
        # Rank 0's HDF5 handle flushes the file's metadata as it closes: C's place is readable then.
        # Its space was taken, never filled: zeros, but for rank 0's 8-byte check token at its start.
        with h5py.File(moved, "r") as f:
            base, size = f["C"].id.get_offset(), f["C"].id.get_storage_size()
        region = open(moved, "rb").read()[base + 8:base + size]
        check(len(region) == size - 8 and region.count(0) == len(region),
              f"ranks wrote C into the renamed file after its token was gone "
              f"({len(region) - region.count(0)} nonzero bytes of {len(region)})")
        check(not os.path.exists(C), "no output file may appear")
        print("ok: temporary renamed away: no rank wrote C into it, and no output appeared")
elif args.case in ("watchdog", "watchdog-existing"):
    # Rank 1 holds in the write for 120 s (TESSERA_TEST_HOLD=write:120:1, as a rank whose node is
    # cut off), rank 0 waits for it in MPI: with --timeout 3 rank 0 ends itself within seconds,
    # saying so in one line, and its output is rolled back (the temporary removed, or the existing
    # file byte for byte as it was).
    import socket
    a, b = rng.random((40, 30)), rng.random((30, 20))
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    existing = args.case == "watchdog-existing"
    if existing:
        with h5py.File(C, "w") as f:
            f["keep"] = np.arange(100.0)
        before = open(C, "rb").read()
    res = r.run(["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", C + ":/C",
                 "--backend", "cpu", "--timeout", "3"], np_=2, timeout=100, expect_ok=False,
                env={"TESSERA_TEST_HOLD": "write:120:1"})
    print(f"job ended after {res.seconds:.1f} s, status {res.returncode}")
    check(res.returncode != 0, "a rank left waiting must end nonzero")
    check(res.seconds < 30, f"took {res.seconds:.1f} s: the bound is 3 s")
    lines = [x for x in res.stderr.splitlines() if "past the bound of 3 s" in x]
    check(len(lines) == 1, f"expected one watchdog line, got {lines}")
    host = socket.gethostname()
    check(f"tessera: error (rank 0 on {host}): waited" in lines[0], f"the line names no rank and host: {lines[0]}")
    check("(step: write)" in lines[0] and "MPI_" in lines[0], f"the line names no step or MPI call: {lines[0]}")
    check(not leftovers(out_dir), f"temporary files left: {leftovers(out_dir)}")
    if existing:
        check(not os.path.exists(C + ".tessera-journal"), "the journal is still there")
        check(open(C, "rb").read() == before, "the existing file is not byte for byte as it was")
    else:
        check(not os.path.exists(C), "no output file may appear")
    print(f"ok: rank 0 ended itself {res.seconds:.1f} s after its peer stopped answering: {lines[0]}")
print("PASS")
