"""How C reaches the file (--write): every rank writing its own rows in place must give output
bit-identical to the gather through rank 0 (panels and summa, streamed or not); a rank that cannot
see the output file (its own mount namespace with an empty directory over the output's) makes the
job fall back to the gather and say so, and refuses `--write in-place`; a rank killed while it
writes its rows leaves no file that looks complete."""
import json
import os
import shlex
import signal
import subprocess
import time

import h5py
import numpy as np

from common import SKIP, Runner, check, check_product, fail, leftovers, parser, random_matrix, write

p = parser(__doc__)
p.add_argument("--case", required=True, choices=["identical", "unshared", "killed-writing"])
p.add_argument("--algorithm", default="panels")
p.add_argument("--stream-chunks", type=int, default=0)
p.add_argument("--staged", action="store_true", help="TESSERA_STAGED=1 in small pieces (the in-place runs stage)")
args = p.parse_args()
r = Runner(args)
rng = np.random.default_rng(11)
out_dir = r.path("out")
os.makedirs(out_dir)


def run_args(c, *extra):
    return ["run", "--a", r.path("a.h5") + ":/A", "--b", r.path("b.h5") + ":/B", "--c", c + ":/C", "--backend", "cpu",
            "--algorithm", args.algorithm, "-q", *extra]


if args.case == "identical":
    m, k, n = 97, 61, 83
    a, b = random_matrix(rng, m, k, np.float64), random_matrix(rng, k, n, np.float64)
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    env = {"TESSERA_STREAM_CHUNKS": str(args.stream_chunks)} if args.stream_chunks else None
    if args.staged:
        env = dict(env or {}, TESSERA_STAGED="1", TESSERA_STAGE_BYTES="3000")
    outs = {}
    for how in ("in-place", "gather"):
        c = os.path.join(out_dir, f"c-{how}.h5")
        r.run(run_args(c, "--write", how, "--report", r.path(f"{how}.json")), env=env)
        rep = json.load(open(r.path(f"{how}.json")))
        check(rep["write"].startswith("in place" if how == "in-place" else "gather"), f"report says {rep['write']!r}")
        with h5py.File(c, "r") as f:
            outs[how] = f["/C"][...]
    check(np.array_equal(outs["in-place"], outs["gather"]), "in place and gathered outputs differ")
    check_product(a, b, outs["in-place"], np.float64)
    check(not leftovers(out_dir), "no temporary leftovers")
elif args.case == "unshared":
    # Rank 1 runs in its own mount namespace with an empty tmpfs over the output directory: it
    # cannot see rank 0's temporary output file, as on a node without the shared file system.
    if os.geteuid() != 0:
        print("SKIP: a private mount namespace needs root")
        raise SystemExit(SKIP)
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs none {shlex.quote(out_dir)}"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        print("SKIP: cannot make a private mount namespace here: " + probe.stderr.strip())
        raise SystemExit(SKIP)
    m, k, n = 64, 33, 50
    a, b = random_matrix(rng, m, k, np.float64), random_matrix(rng, k, n, np.float64)
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    c = os.path.join(out_dir, "c.h5")

    def two_contexts(*extra):
        rank1 = ["unshare", "-m", "sh", "-c",
                 f"mount -t tmpfs none {shlex.quote(out_dir)} && exec " +
                 " ".join(shlex.quote(x) for x in [args.tessera] + run_args(c, *extra))]
        return (shlex.split(args.mpiexec) + ["-np", "1", args.tessera] + run_args(c, *extra) + [":", "-np", "1"] + rank1)

    cmd = two_contexts("--report", r.path("r.json"))
    print("$ " + " ".join(shlex.quote(x) for x in cmd), flush=True)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=r.dir)
    print(res.stdout + res.stderr)
    check(res.returncode == 0, f"exit status {res.returncode}")
    rep = json.load(open(r.path("r.json")))
    check(rep["write"].startswith("gather (rank 1 cannot see the output file"), f"report says {rep['write']!r}")
    with h5py.File(c, "r") as f:
        check_product(a, b, f["/C"][...], np.float64)
    os.remove(c)
    cmd = two_contexts("--write", "in-place")
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=r.dir)
    print(res.stdout + res.stderr)
    check(res.returncode != 0, "--write in-place where a rank cannot see the file must fail")
    errors = [l for l in res.stderr.splitlines() if l.startswith("tessera: error")]
    check(len(errors) == 1 and "in-place is not possible" in errors[0] and "rank 1" in errors[0],
          f"expected one error line naming rank 1, got {errors}")
    check(not os.path.exists(c) and not leftovers(out_dir), "nothing may be left")
elif args.case == "killed-writing":
    # Rank 1 writes its rows while the GEMM runs (streaming, in place); it is killed as soon as its
    # first rows reach the file. The job must end nonzero and leave no file that looks complete.
    n = 1400
    a, b = random_matrix(rng, n, n, np.float64), random_matrix(rng, n, n, np.float64)
    write(r.path("a.h5"), "/A", a)
    write(r.path("b.h5"), "/B", b)
    c = os.path.join(out_dir, "c.h5")
    cmd = r.cmd(run_args(c, "--kernel", "cpu-naive", "--grid", "2x1", "--write", "in-place"), np_=2)
    env = dict(os.environ, TESSERA_STREAM_CHUNKS="50")
    print("$ " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=r.dir, env=env)
    # Rank 1 is the tessera process that has the temporary output open but did not create it.
    deadline, victim = time.monotonic() + 60, None
    while victim is None and time.monotonic() < deadline and proc.poll() is None:
        tmp = [f for f in os.listdir(out_dir) if ".tessera-partial-" in f]
        if tmp:
            creator = int(tmp[0].rsplit("-", 1)[1])
            for pid in os.listdir("/proc"):
                if not pid.isdigit() or int(pid) == creator:
                    continue
                try:
                    if any(tmp[0] in os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")):
                        victim = int(pid)
                except OSError:
                    continue
        time.sleep(0.02)
    check(victim is not None, "did not find rank 1 writing into the output")
    time.sleep(0.3)  # some of its rows are in the file
    check(proc.poll() is None, "the job ended before the fault was injected; make it bigger")
    t0 = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the job did not end within 30 s of a writing rank's death")
    print(out + err)
    print(f"job ended {time.monotonic() - t0:.1f} s after SIGKILL, status {proc.returncode}")
    check(proc.returncode != 0, "must exit nonzero")
    check(not os.path.exists(c), "no output file may appear")
    check(not leftovers(out_dir), f"temporary files left: {leftovers(out_dir)}")
print("PASS")
