"""The slurm/ scripts as written, against a real single-node Slurm on localhost.

Starts munged, slurmctld and slurmd (Debian's packages) with everything in a temporary folder:
a generated slurm.conf, its own munge key and socket, free ports, and two placeholder GPUs
(gres backed by character devices that are /dev/null) so that the GPU scripts' --gpus-per-node
can be scheduled and Slurm's binding (CUDA_VISIBLE_DEVICES of each rank: all of the node's GPUs,
--gpu-bind=none) checked. Generates small inputs at the paths configs/slurm.toml names, in the
submit directory, and submits with `sbatch --wait` the CPU job, the one-node and multi-node jobs
on 2 tasks (srun --mpi=pmix and mpirun), the strong-scaling job (1 and 2 ranks, then
scripts/scaling_report.py), a job array of three problems listed in a file (every task's C
against numpy) and a task past the list's end, --c given to the scripts (a new file, a dataset
in an existing file, given twice: refused before launch; a step killed mid-write: the script runs
`tessera recover` and the file is as it was), the CPU job with TESSERA_MODULES (a stand-in
`module` command must be called), a job whose input is missing, one whose output folder an earlier job of the same id left, and, with --prefix (an installed
tessera, ctest fixture install.prefix), the installed share/tessera/slurm/tessera-node.sbatch
with neither TESSERA_HOME nor TESSERA set: it must find the installed binary and config. Checks exit statuses, C against numpy, the reports and the logs. The daemons
are stopped by PID and the folder removed at the end, also on failure.

Needs root (munged runs as the munge user, slurmd as root). Slurm and munge are installed with
`scripts/setup.sh --slurm` when missing; where that fails the test is skipped (exit 77).
With --lint it only runs `bash -n` (and shellcheck, where installed) on the slurm/ scripts."""
import glob
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import tomllib

import h5py
import numpy as np

from common import SKIP, check, check_product, fail, leftovers, parser, write

SBIN_PATH = os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
TOOLS = ("munged", "mungekey", "munge", "slurmctld", "slurmd", "sbatch", "sinfo", "scancel", "srun")
N_GPUS = 2  # placeholder GPUs of the local node
JOBS_TIMEOUT = 240  # all jobs, from submission; they take ~15 s on 2 CPUs, the time-limit job 60-90 s

# A job killed by its time limit (--time=1: SIGTERM after 60-90 s, SIGKILL KillWait later) while it
# commits C into an existing file (issue #27): tessera holds the signal off until the commit ends
# (the test hook makes the commit wait for the signal), so the file holds the complete C.
TIME_LIMIT_JOB = """#!/bin/bash
# tessera run into an existing file, its time limit falling during the commit (tests only)
#SBATCH --job-name=timelimit
#SBATCH --output=slurm-%x-%j.out
#SBATCH --time=1
#SBATCH --ntasks=1
export TESSERA_TEST_WAIT_IN_COMMIT=170
srun --mpi=pmix "$TESSERA" run --a "$1" --b "$2" --c "$3" --backend cpu
"""


def make_existing(path):
    with h5py.File(path, "w") as f:
        f.attrs["project"] = "pipeline"
        f.create_dataset("keep", data=np.arange(12.0).reshape(3, 4)).attrs["units"] = "m"


def lint(src):
    scripts = sorted(glob.glob(os.path.join(src, "slurm", "*.sbatch")))
    check(len(scripts) >= 4, f"expected the slurm/*.sbatch scripts, found {scripts}")
    check_gpu_binding(src, scripts)
    check_templates(src, scripts)
    for path in scripts + [os.path.join(src, "slurm", "common.sh")]:
        rel = os.path.relpath(path, src)
        p = subprocess.run(["bash", "-n", path], capture_output=True, text=True)
        check(p.returncode == 0, f"bash -n {rel}: {p.stderr.strip()}")
        with open(path) as f:
            lines = f.read().splitlines()
        if path.endswith(".sbatch"):
            check(lines[0] == "#!/bin/bash" and lines[1].startswith("# "), f"{rel}: no header comment")
            check(any(line.startswith("#SBATCH --job-name=") for line in lines), f"{rel}: no #SBATCH --job-name")
        print(f"ok: bash -n {rel}")
    with open(os.path.join(src, "scripts", "scaling_report.py")) as f:
        compile(f.read(), "scripts/scaling_report.py", "exec")
    shellcheck = shutil.which("shellcheck")
    if not shellcheck:
        print("note: shellcheck is not installed: shellcheck part skipped (apt-get install shellcheck)")
        return
    rels = [os.path.relpath(s, src) for s in scripts] + ["slurm/common.sh"]
    p = subprocess.run([shellcheck, "-x"] + rels, capture_output=True, text=True, cwd=src)
    sys.stdout.write(p.stdout + p.stderr)
    check(p.returncode == 0, "shellcheck found problems")
    print(f"ok: shellcheck -x {' '.join(rels)}")


def check_gpu_binding(src, scripts):
    """GPU scripts ask for GPUs per node, with no per-task binding: all ranks of a node see all
    of its GPUs, so CUDA IPC / NVLink peer access (NCCL's fast path) stays possible."""
    gpu_scripts = 0
    for path in scripts:
        rel = os.path.relpath(path, src)
        with open(path) as f:
            sbatch = [line.split()[1] for line in f if line.startswith("#SBATCH ")]
        check(not any(o.startswith(("--gpus-per-task", "--gres=gpu", "--gpus=")) for o in sbatch),
              f"{rel}: per-task or per-job GPU requests ({sbatch}); use --gpus-per-node and --gpu-bind=none")
        if any(o.startswith("--gpus-per-node=") for o in sbatch):
            gpu_scripts += 1
            check("--gpu-bind=none" in sbatch, f"{rel}: --gpus-per-node without --gpu-bind=none")
            print(f"ok: {rel}: --gpus-per-node, --gpu-bind=none")
    check(gpu_scripts >= 3, f"expected the 3 GPU scripts to ask for --gpus-per-node, found {gpu_scripts}")


def check_templates(src, scripts):
    """Every script has the module-load block (commented example, TESSERA_MODULES); the timing
    job asks for whole nodes (--exclusive); the job array picks its entry by SLURM_ARRAY_TASK_ID
    and logs per task."""
    for path in scripts:
        rel = os.path.relpath(path, src)
        with open(path) as f:
            text = f.read()
        check("#TESSERA_MODULES=" in text and 'module load "${tessera_modules[@]}"' in text,
              f"{rel}: no module-load block (TESSERA_MODULES)")
    with open(os.path.join(src, "slurm", "strong-scaling.sbatch")) as f:
        check("#SBATCH --exclusive\n" in f.read(), "strong-scaling.sbatch: no #SBATCH --exclusive for its timings")
    with open(os.path.join(src, "slurm", "tessera-array.sbatch")) as f:
        text = f.read()
    check("SLURM_ARRAY_TASK_ID" in text and "#SBATCH --output=slurm-%x-%A_%a.out" in text,
          "tessera-array.sbatch: no SLURM_ARRAY_TASK_ID, or no log per task")
    print("ok: module-load block in every script, --exclusive for strong scaling, the job array")


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


def tool(name):
    return shutil.which(name, path=SBIN_PATH)


def ensure_slurm(src):
    if os.geteuid() != 0:
        skip("needs root: the local Slurm runs munged as the munge user and slurmd as root")
    missing = [t for t in TOOLS if not tool(t)]
    if missing:
        print(f"slurm/munge tools missing ({', '.join(missing)}): bash scripts/setup.sh --slurm", flush=True)
        p = subprocess.run(["bash", os.path.join(src, "scripts", "setup.sh"), "--slurm"])
        missing = [t for t in TOOLS if not tool(t)]
        if p.returncode != 0 or missing:
            skip(f"Slurm could not be installed (setup.sh --slurm exit {p.returncode}; missing: {', '.join(missing)})")
    if (os.cpu_count() or 1) < 2:
        skip("the 2-task jobs need a machine with 2 CPUs")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tail(path, n=40):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(none)\n"


class LocalSlurm:
    """munged + slurmctld + slurmd in `root`, started in start() and stopped by PID in stop()."""

    def __init__(self, root):
        self.root = root
        self.procs = []  # (name, Popen), in start order
        self.host = socket.gethostname().split(".")[0]
        self.conf = os.path.join(root, "etc", "slurm.conf")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))}
        self.env["SLURM_CONF"] = self.conf
        self.env["PATH"] = SBIN_PATH
        self.real_gpu_devices = False

    def _spawn(self, name, cmd, **kw):
        log = open(os.path.join(self.root, "log", f"{name}.out"), "w")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                stdin=subprocess.DEVNULL, cwd=self.root, **kw)
        log.close()
        self.procs.append((name, proc))
        return proc

    def _wait(self, what, cond, timeout, proc=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                self.dump_logs()
                fail(f"{what}: the daemon exited with status {proc.returncode}")
            if cond():
                return
            time.sleep(0.2)
        self.dump_logs()
        fail(f"{what}: not ready after {timeout} s")

    def start_munge(self):
        mdir = os.path.join(self.root, "munge")
        os.makedirs(mdir)
        os.chmod(mdir, 0o755)  # munged: clients need to reach the socket
        shutil.chown(mdir, "munge", "munge")
        self.socket = os.path.join(mdir, "munge.socket")
        key = os.path.join(mdir, "munge.key")
        as_munge = dict(user="munge", group="munge", extra_groups=[])
        subprocess.run([tool("mungekey"), "--create", "--keyfile", key], check=True, **as_munge)
        proc = self._spawn("munged", [tool("munged"), "--foreground", "--socket", self.socket, "--key-file", key,
                                      "--pid-file", os.path.join(mdir, "munged.pid"),
                                      "--log-file", os.path.join(mdir, "munged.log"),
                                      "--seed-file", os.path.join(mdir, "munged.seed")], **as_munge)
        munge = tool("munge")
        self._wait("munged", lambda: subprocess.run([munge, "--socket", self.socket, "-n"], capture_output=True)
                   .returncode == 0, 15, proc)

    def fake_gpus(self):
        """GPU gres files for the node: character devices (Slurm then sets CUDA_VISIBLE_DEVICES per
        task), or plain files where mknod is not allowed (Slurm still counts and schedules them)."""
        paths = [os.path.join(self.root, "dev", f"gpu{i}") for i in range(N_GPUS)]
        try:
            for p in paths:
                os.mknod(p, stat.S_IFCHR | 0o600, os.makedev(1, 3))
            self.real_gpu_devices = True
        except OSError as e:
            print(f"note: mknod not allowed ({e}); placeholder GPUs are plain files, binding not checked")
            for p in paths:
                if not os.path.exists(p):
                    open(p, "w").close()
        return os.path.join(self.root, "dev", f"gpu[0-{N_GPUS - 1}]")

    def write_conf(self):
        r = self.root
        gpus = self.fake_gpus()
        conf = f"""# Generated by tests/scripts/slurm_local.py: a one-node cluster on localhost.
ClusterName=tessera-test
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
TmpFS={r}/tmp
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/slurmd.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SwitchType=switch/none
MpiDefault=none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MailProg=/bin/true
ReturnToService=2
# sbatch --wait polls every 2 s only while MinJobAge / 2 <= 2 (else at 2, 10, 42 s)
MinJobAge=4
KillWait=5
GresTypes=gpu
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} Gres=gpu:{N_GPUS} State=UNKNOWN
PartitionName=local Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
"""
        with open(self.conf, "w") as f:
            f.write(conf)
        with open(os.path.join(r, "etc", "gres.conf"), "w") as f:
            f.write(f"Name=gpu File={gpus}\n")
        print(conf, end="")

    def node_state(self):
        p = subprocess.run([tool("sinfo"), "-h", "-N", "-o", "%T"], capture_output=True, text=True, env=self.env)
        return p.stdout.strip() if p.returncode == 0 else ""

    def start(self):
        os.chmod(self.root, 0o755)  # the munge user must reach its folder
        for d in ("etc", "state", "spool", "tmp", "run", "log", "dev", "submit"):
            os.makedirs(os.path.join(self.root, d))
        t0 = time.monotonic()
        self.start_munge()
        self.write_conf()
        ctld = self._spawn("slurmctld", [tool("slurmctld"), "-D"])
        self._wait("slurmctld", lambda: self.node_state() != "", 30, ctld)
        slurmd = self._spawn("slurmd", [tool("slurmd"), "-D"])
        # "unknown*" until slurmd registers, then "idle" (or the reason it is not: sinfo -R)
        self._wait("slurmd", lambda: not self.node_state().startswith("unk"), 30, slurmd)
        state = self.node_state()
        if state != "idle":
            p = subprocess.run([tool("sinfo"), "-R"], capture_output=True, text=True, env=self.env)
            self.dump_logs()
            fail(f"node state {state!r}, not idle:\n{p.stdout}")
        print(f"ok: local Slurm up, node {self.host} idle ({time.monotonic() - t0:.1f} s)", flush=True)

    def dump_logs(self):
        for name in ("slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out", "munged.out"):
            print(f"---- {name} (tail) ----\n{tail(os.path.join(self.root, 'log', name))}", end="")
        print(f"---- munged.log (tail) ----\n{tail(os.path.join(self.root, 'munge', 'munged.log'))}", end="")

    def cancel_all(self):
        if any(name == "slurmctld" and p.poll() is None for name, p in self.procs):
            subprocess.run([tool("scancel"), "--full", "--user", "root"], env=self.env, capture_output=True)

    def stop(self):
        self.cancel_all()
        for name, proc in reversed(self.procs):  # slurmd, slurmctld, then munged
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    print(f"note: {name} (pid {proc.pid}) ignored SIGTERM; killed")
                    proc.kill()
                    proc.wait()
            print(f"stopped {name} (pid {proc.pid}, status {proc.returncode})")
        self.procs = []


class Job:
    """One sbatch of HOME/slurm/SCRIPT (HOME: the repository or an installed share/tessera); its
    log is slurm-<the script's --job-name>-<id>.out."""

    def __init__(self, home, name, script, sbatch_opts=(), env=None, args=(), ranks=1):
        self.name, self.sbatch_opts = name, list(sbatch_opts)
        self.script = script if os.path.isabs(script) else os.path.join(home, "slurm", script)
        self.env, self.args, self.ranks = env or {}, list(args), ranks
        with open(self.script) as f:
            self.job_name = next(line.split("=", 1)[1].strip() for line in f if line.startswith("#SBATCH --job-name="))


def submit_all(cluster, jobs, submit_dir):
    """sbatch --wait every job at once (Slurm runs them as the CPUs allow); returns when all ended."""
    running = []
    for job in jobs:
        cmd = [tool("sbatch"), "--wait", "--parsable"] + job.sbatch_opts + [job.script] + job.args
        print("$ " + " ".join([f"{k}={v}" for k, v in job.env.items() if k.startswith("TESSERA_C")
                               or k == "TESSERA_LAUNCHER"] + cmd), flush=True)
        env = dict(cluster.env, **job.env)
        running.append((job, time.monotonic(), subprocess.Popen(cmd, cwd=submit_dir, env=env, text=True,
                                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)))
    deadline = time.monotonic() + JOBS_TIMEOUT
    for job, t0, proc in running:
        try:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            cluster.cancel_all()
            for _, _, p in running:
                p.kill()
            cluster.dump_logs()
            fail(f"job {job.name}: not finished {JOBS_TIMEOUT} s after submission")
        job.status, job.seconds = proc.returncode, time.monotonic() - t0
        job.id = out.strip().split(";")[0]
        if not job.id.isdigit():
            fail(f"job {job.name}: sbatch printed no job id (status {proc.returncode}): {out}{err}")
        job.log = os.path.join(submit_dir, f"slurm-{job.job_name}-{job.id}.out")
        job.out_dir = os.path.join(submit_dir, "runs", job.id)
        print(f"==== job {job.name} (id {job.id}): sbatch --wait status {job.status}, {job.seconds:.1f} s ====")
        sys.stdout.write(err + tail(job.log, 200))
    sys.stdout.flush()


def check_result(job, a, b, dtype):
    check(job.status == 0, f"job {job.name}: exit status {job.status} (log above)")
    with h5py.File(os.path.join(job.out_dir, "c.h5"), "r") as f:
        c = f["/C"][...]
    check_product(a, b, c, dtype)
    check(not leftovers(job.out_dir), f"job {job.name}: partial files left in {job.out_dir}")
    check(os.path.isfile(os.path.join(job.out_dir, "slurm.toml")), f"job {job.name}: config not copied")


def check_report(path, ranks, backend=None):
    with open(path) as f:
        rep = json.load(f)
    check(rep["schema"] == "tessera.report/1", f"{path}: schema {rep['schema']}")
    check(rep["nranks"] == ranks and len(rep["ranks"]) == ranks,
          f"{path}: {len(rep['ranks'])} rank entries, nranks {rep['nranks']}, expected {ranks}")
    check([r["rank"] for r in rep["ranks"]] == list(range(ranks)), f"{path}: ranks out of order")
    if backend:
        check(rep["backend"] == backend, f"{path}: backend {rep['backend']}, expected {backend}")
    print(f"ok: {os.path.basename(path)}: {ranks} rank(s), grid {rep['grid']['rows']}x{rep['grid']['cols']}, "
          f"backend {rep['backend']}")
    return rep


def check_placement(job, cluster):
    """The lines of slurm/common.sh's tessera_show_placement: every rank has its own local rank, the
    job holds all of the node's GPUs, and under srun and mpirun alike (--gpus-per-node,
    --gpu-bind=none) no rank is confined to a subset of them: it sees them all, or Slurm leaves
    CUDA_VISIBLE_DEVICES unset (22.05 does under srun with --gpu-bind=none; the CUDA runtime then
    sees what the job's device cgroup allows: the job's GPUs)."""
    with open(job.log) as f:
        lines = [line.strip() for line in f if line.startswith("placement: rank ")]
    check(len(lines) == job.ranks, f"job {job.name}: {len(lines)} placement lines, expected {job.ranks}")
    local = sorted(int(line.split("local rank ")[1].split(",")[0]) for line in lines)
    check(local == list(range(job.ranks)), f"job {job.name}: local ranks {local}")
    if not cluster.real_gpu_devices:
        return
    all_gpus = ",".join(str(i) for i in range(N_GPUS))
    seen = sorted(line.split("CUDA_VISIBLE_DEVICES=")[1].split(", job GPUs")[0] for line in lines)
    job_gpus = sorted(line.split("job GPUs ")[1] for line in lines)
    check(job_gpus == [all_gpus] * job.ranks, f"job {job.name}: job GPUs {job_gpus}, expected {all_gpus} on every rank")
    check(all(s in (all_gpus, "unset") for s in seen),
          f"job {job.name}: ranks see CUDA_VISIBLE_DEVICES {seen}: confined to a subset of the node's GPUs {all_gpus}")
    with open(job.log) as f:
        check(f"GPUs per node {N_GPUS}, per task none, binding none" in f.read(),
              f"job {job.name}: the log does not show --gpus-per-node={N_GPUS} with --gpu-bind=none")
    print(f"ok: job {job.name}: placement (local ranks {local}, CUDA_VISIBLE_DEVICES {' / '.join(seen)}, "
          f"job GPUs {job_gpus[0]}), GPUs per node, binding none")


def make_array_inputs(submit):
    """Three problems of different shapes for the job array, listed in array/pairs.txt (with a
    comment and a blank line); the third names its C, the others take the job folder's."""
    rng = np.random.default_rng(23)
    folder = os.path.join(submit, "array")
    os.makedirs(folder)
    pairs, lines = [], ["# A B [C] per task", ""]
    for i, (m, n, k) in enumerate(((17, 9, 12), (8, 21, 15), (30, 11, 7)), start=1):
        a = (rng.random((m, k)) * 2 - 1).astype(np.float64)
        b = (rng.random((k, n)) * 2 - 1).astype(np.float64)
        write(os.path.join(folder, f"p{i}.h5"), "/A", a)
        write(os.path.join(folder, f"p{i}.h5"), "/B", b)
        c = f"array/c{i}.h5:/out/C" if i == 3 else None
        lines.append(f"array/p{i}.h5:/A array/p{i}.h5:/B" + (f" {c}" if c else ""))
        pairs.append((a, b, c))
    with open(os.path.join(folder, "pairs.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return pairs


def check_array(job, past_end, pairs, submit):
    """Every task of the array ran its own entry (its log names it) and wrote its C = A·B (numpy);
    a task past the list's end fails, naming the list's length."""
    check(job.status == 0, f"job array: exit status {job.status}")
    for task, (a, b, c_named) in enumerate(pairs, start=1):
        log = os.path.join(submit, f"slurm-{job.job_name}-{job.id}_{task}.out")
        with open(log) as f:
            text = f.read()
        sys.stdout.write(f"---- {os.path.basename(log)} ----\n{text}")
        line = next((ln for ln in text.splitlines() if ln.startswith(f"tessera-slurm: array {job.id} task {task}: ")),
                    None)
        check(line is not None, f"job array task {task}: no line naming its entry")
        check(f"a array/p{task}.h5:/A, b array/p{task}.h5:/B" in line, f"job array task {task}: entry {line}")
        c_ref = line.split(", c ", 1)[1]
        if c_named:
            check(c_ref == c_named, f"job array task {task}: C {c_ref}, expected {c_named}")
        file, _, dset = c_ref.rpartition(":/")
        with h5py.File(os.path.join(submit, file), "r") as f:
            check_product(a, b, f["/" + dset][...], np.float64)
        out_dir = os.path.dirname(file) if not c_named else None
        if out_dir:
            check_report(os.path.join(out_dir, "report.json"), 1, backend="cpu")
        print(f"ok: job array task {task}: {a.shape[0]}x{b.shape[1]}x{a.shape[1]}, C = A·B ({c_ref})")
    check(past_end.status == 1, f"array task past the list's end: exit status {past_end.status}, expected 1")
    with open(os.path.join(submit, f"slurm-{past_end.job_name}-{past_end.id}_{len(pairs) + 1}.out")) as f:
        check(f"has only {len(pairs)} entries" in f.read(), "array task past the end: no message naming the length")
    print(f"ok: job array: {len(pairs)} tasks, each its own entry; a task past the end refused")


def main():
    p = parser(__doc__)
    p.add_argument("--lint", action="store_true", help="only bash -n / shellcheck the slurm/ scripts")
    p.add_argument("--prefix", help="an installed tessera: also run its share/tessera/slurm scripts")
    p.add_argument("--datadir", default="share/tessera", help="share/tessera, relative to --prefix")
    p.add_argument("--bindir", default="bin", help="bin, relative to --prefix")
    args = p.parse_args()
    src = os.path.abspath(args.source_dir)
    if args.lint:
        lint(src)
        print("PASS")
        return
    ensure_slurm(src)
    for sig in (signal.SIGTERM, signal.SIGHUP):  # so that `finally` stops the daemons
        signal.signal(sig, lambda s, f: sys.exit(f"killed by signal {s}"))

    t_start = time.monotonic()
    root = tempfile.mkdtemp(prefix="tessera-slurm-")
    cluster = LocalSlurm(root)
    try:
        cluster.start()
        submit = os.path.join(root, "submit")

        # Inputs where configs/slurm.toml says, relative to the submit directory.
        with open(os.path.join(src, "configs", "slurm.toml"), "rb") as f:
            cfg = tomllib.load(f)["run"]
        rng = np.random.default_rng(11)
        m, n, k, dtype = 67, 53, 45, np.float32
        a = (rng.random((m, k)) * 2 - 1).astype(dtype)
        b = (rng.random((k, n)) * 2 - 1).astype(dtype)
        for ref, mat in ((cfg["a"], a), (cfg["b"], b)):
            file, _, dset = ref.rpartition(":/")
            os.makedirs(os.path.join(submit, os.path.dirname(file)), exist_ok=True)
            write(os.path.join(submit, file), "/" + dset, mat)
        with open(os.path.join(submit, "missing.toml"), "w") as f:
            f.write(f'[run]\na = "nowhere/a.h5:/A"\nb = "{cfg["b"]}"\nc = "c.h5:/C"\n')

        base_env = {"TESSERA_HOME": src, "TESSERA": os.path.abspath(args.tessera), "TESSERA_PYTHON": sys.executable}
        pairs = make_array_inputs(submit)
        # A stand-in `module` command (sites have a shell function): the scripts' module block
        # must call it with TESSERA_MODULES' names.
        fake_bin = os.path.join(root, "fake-bin")
        os.makedirs(fake_bin)
        with open(os.path.join(fake_bin, "module"), "w") as f:
            f.write('#!/bin/sh\necho "module-called: $*"\n')
        os.chmod(os.path.join(fake_bin, "module"), 0o755)
        modules_env = {"TESSERA_MODULES": "fake-mpi/4.1 fake-hdf5/1.14", "PATH": fake_bin + ":" + SBIN_PATH}
        # An output parent where every job id's folder is already taken by an earlier job (ids
        # start again after a reinstall, or TESSERA_OUT is shared between clusters).
        taken = os.path.join(submit, "taken")
        for job_id in range(1, 200):
            os.makedirs(os.path.join(taken, str(job_id)))
            with open(os.path.join(taken, str(job_id), "slurm.toml"), "w") as f:
                f.write(f"# the config of an earlier job {job_id}\n")
        # The scripts' resources scaled down to this machine; the GPU scripts' jobs compute on the
        # CPU: the placeholder GPUs' numbers would name real devices on a machine that has some.
        small = ["--nodes=1", "--ntasks-per-node=2", "--cpus-per-task=1", f"--gpus-per-node={N_GPUS}"]
        on_cpu = ["--backend", "cpu"]
        one_task = ["--ntasks-per-node=1", "--cpus-per-task=1", "--gpus-per-node=1"]
        jobs = [
            Job(src, "cpu", "tessera-cpu.sbatch", ["--ntasks-per-node=1", "--cpus-per-task=1"],
                dict(base_env, **modules_env)),
            Job(src, "missing-input", "tessera-cpu.sbatch", ["--ntasks-per-node=1", "--cpus-per-task=1"],
                dict(base_env, TESSERA_CONFIG="missing.toml")),
            Job(src, "output-folder-taken", "tessera-cpu.sbatch", ["--ntasks-per-node=1", "--cpus-per-task=1"],
                dict(base_env, TESSERA_OUT=taken)),
            Job(src, "node", "tessera-node.sbatch", small, base_env, args=on_cpu, ranks=2),
            Job(src, "multinode-mpirun", "tessera-multinode.sbatch", small,
                dict(base_env, TESSERA_LAUNCHER="mpirun"), args=on_cpu, ranks=2),
            Job(src, "array", "tessera-array.sbatch", [f"--array=1-{len(pairs)}"] + one_task,
                dict(base_env, TESSERA_ARRAY_LIST="array/pairs.txt"), args=on_cpu),
            Job(src, "array-past-end", "tessera-array.sbatch", [f"--array={len(pairs) + 1}"] + one_task,
                dict(base_env, TESSERA_ARRAY_LIST="array/pairs.txt"), args=on_cpu),
            Job(src, "scaling", "strong-scaling.sbatch", small, base_env, args=on_cpu, ranks=2),
        ]
        # --c given to the scripts (issue 40): in place of their default (a new file, and a dataset
        # in an existing file), given twice (refused before launch), and a step killed mid-write
        # into an existing file (a wrapper sets the crash tests' hook for `run` only), after which
        # the script runs `tessera recover` on it.
        os.makedirs(os.path.join(submit, "mine"))
        make_existing(os.path.join(submit, "pipeline.h5"))
        killed = os.path.join(submit, "killed.h5")
        make_existing(killed)
        with open(killed, "rb") as f:
            killed_before = f.read()
        killer = os.path.join(root, "fake-bin", "tessera-killed-at-write-3")
        with open(killer, "w") as f:
            f.write('#!/bin/sh\nif [ "$1" = run ]; then TESSERA_TEST_KILL_AT_WRITE=3; export TESSERA_TEST_KILL_AT_WRITE; fi\n'
                    f'exec {os.path.abspath(args.tessera)} "$@"\n')
        os.chmod(killer, 0o755)
        one_cpu = ["--ntasks-per-node=1", "--cpus-per-task=1"]
        jobs += [
            Job(src, "user-c", "tessera-cpu.sbatch", one_cpu, base_env, args=["--c", "mine/user.h5:/C"]),
            Job(src, "user-c-existing", "tessera-node.sbatch", small, base_env,
                args=on_cpu + ["--c=pipeline.h5:/step2/C"], ranks=2),
            Job(src, "duplicate-c", "tessera-cpu.sbatch", one_cpu, base_env,
                args=["--c", "mine/x.h5:/C", "--c=mine/y.h5:/C"]),
            Job(src, "killed-step", "tessera-cpu.sbatch", one_cpu, dict(base_env, TESSERA=killer),
                args=["--c", "killed.h5:/run/C"]),
        ]
        existing = os.path.join(submit, "existing.h5")
        make_existing(existing)
        with open(os.path.join(submit, "timelimit.sbatch"), "w") as f:
            f.write(TIME_LIMIT_JOB)
        jobs.append(Job(src, "time-limit", os.path.join(submit, "timelimit.sbatch"), [], base_env,
                        args=[os.path.join(submit, cfg["a"]), os.path.join(submit, cfg["b"]), existing + ":/run/C"]))
        if args.prefix:
            installed_home = os.path.join(os.path.abspath(args.prefix), args.datadir)
            # No TESSERA_HOME, no TESSERA: the installed scripts know their prefix.
            jobs.append(Job(installed_home, "installed-node", "tessera-node.sbatch", small,
                            {"TESSERA_PYTHON": sys.executable}, args=on_cpu, ranks=2))
        submit_all(cluster, jobs, submit)
        by_name = {job.name: job for job in jobs}

        job = by_name["cpu"]
        check_result(job, a, b, dtype)
        check_report(os.path.join(job.out_dir, "report.json"), 1, backend="cpu")
        with open(job.log) as f:
            check("launcher srun-pmix" in f.read(), "cpu job: the launcher detected is not srun-pmix")

        with open(by_name["cpu"].log) as f:
            log = f.read()
        check("module-called: load fake-mpi/4.1 fake-hdf5/1.14" in log
              and "tessera-slurm: modules loaded: fake-mpi/4.1 fake-hdf5/1.14" in log,
              "cpu job: TESSERA_MODULES were not loaded with `module load`")
        print("ok: TESSERA_MODULES: the job ran `module load fake-mpi/4.1 fake-hdf5/1.14`")

        check_array(by_name["array"], by_name["array-past-end"], pairs, submit)

        job = by_name["missing-input"]
        check(job.status == 1, f"missing-input job: exit status {job.status}, expected 1")
        with open(job.log) as f:
            log = f.read()
        check("tessera-slurm: error: input a = nowhere/a.h5:/A: file nowhere/a.h5 not found" in log,
              "missing-input job: no clear message naming the missing file")
        check("tessera-slurm: binary" not in log, "missing-input job: got past the input check")
        print("ok: missing input: exit 1 with a message naming the file, nothing launched")

        job = by_name["output-folder-taken"]
        check(job.status == 1, f"output-folder-taken job: exit status {job.status}, expected 1")
        with open(job.log) as f:
            log = f.read()
        check(f"tessera-slurm: error: the output folder {taken}/{job.id} exists" in log,
              "output-folder-taken job: no clear message naming the folder")
        with open(os.path.join(taken, job.id, "slurm.toml")) as f:
            check(f.read() == f"# the config of an earlier job {job.id}\n", "the earlier job's files were replaced")
        check(os.listdir(os.path.join(taken, job.id)) == ["slurm.toml"], "nothing was added to the earlier job's folder")
        print("ok: an earlier job's output folder of the same id: exit 1, its files untouched")

        for name, launcher in (("node", "srun"), ("multinode-mpirun", "mpirun")):
            job = by_name[name]
            check_result(job, a, b, dtype)
            check_report(os.path.join(job.out_dir, "report.json"), 2, backend="cpu")
            check_placement(job, cluster)
        with open(by_name["multinode-mpirun"].log) as f:
            check("launcher mpirun" in f.read(), "multinode job: TESSERA_LAUNCHER=mpirun not used")

        job = by_name["scaling"]
        check_result(job, a, b, dtype)
        check_placement(job, cluster)
        for ranks in (1, 2):
            check_report(os.path.join(job.out_dir, f"report-n{ranks}.json"), ranks)
        with open(os.path.join(job.out_dir, "scaling.md")) as f:
            table = f.read()
        summary = table.split("## Per rank")[0]  # the per-rank tables follow the summary
        rows = [line for line in summary.splitlines() if line.startswith("| ") and line[2].isdigit()]
        check([r.split("|")[1].strip() for r in rows] == ["1", "2"], f"scaling.md: rows {rows}")
        check("1.00 | 100% |" in rows[0], f"scaling.md: the first row is not the baseline: {rows[0]}")
        has_mpl = subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True).returncode == 0
        png = os.path.join(job.out_dir, "scaling.png")
        if has_mpl:
            with open(png, "rb") as f:
                check(f.read(8) == b"\x89PNG\r\n\x1a\n", "scaling.png is not a PNG")
            print("ok: scaling.md (rows 1, 2) and scaling.png")
        else:
            check("plot skipped" in table and not os.path.exists(png), "scaling.md: no 'plot skipped' note")
            print("ok: scaling.md (rows 1, 2); no matplotlib here, the table says the plot was skipped")

        job = by_name["user-c"]
        check(job.status == 0, f"user-c job: exit status {job.status}")
        with h5py.File(os.path.join(submit, "mine", "user.h5"), "r") as f:
            check_product(a, b, f["/C"][...], dtype)
        check(not os.path.exists(os.path.join(job.out_dir, "c.h5")), "user-c job: C also written to the job folder")
        with open(job.log) as f:
            check("tessera-slurm: result mine/user.h5:/C" in f.read(), "user-c job: the log does not name the user's C")
        job = by_name["user-c-existing"]
        check(job.status == 0, f"user-c-existing job: exit status {job.status}")
        with h5py.File(os.path.join(submit, "pipeline.h5"), "r") as f:
            check(np.array_equal(f["keep"][...], np.arange(12.0).reshape(3, 4)), "user-c-existing: /keep changed")
            check_product(a, b, f["/step2/C"][...], dtype)
        print("ok: --c given to the scripts: C where it says (a new file; a dataset in an existing file)")
        job = by_name["duplicate-c"]
        with open(job.log) as f:
            log = f.read()
        check(job.status == 1, f"duplicate-c job: exit status {job.status}, expected 1")
        errors = [line for line in log.splitlines() if "error" in line]
        check(errors == ["tessera-slurm: error: --c is given more than once ('mine/x.h5:/C' and 'mine/y.h5:/C'): "
                         "give the job one output"], f"duplicate-c job: errors {errors}")
        check("tessera-slurm: binary" not in log, "duplicate-c job: got past the check")
        check(not any(n in os.listdir(os.path.join(submit, "mine")) for n in ("x.h5", "y.h5")),
              "duplicate-c job: wrote an output")
        print("ok: --c given twice: one line, exit 1, before anything was launched")
        job = by_name["killed-step"]
        with open(job.log) as f:
            log = f.read()
        check(job.status != 0, "killed-step job: exit status 0")
        check("tessera-slurm: the step failed: tessera recover killed.h5" in log,
              "killed-step job: no `tessera recover` after the failed step")
        check(not os.path.exists(killed + ".tessera-journal"), "killed-step job: the journal is left")
        with open(killed, "rb") as f:
            check(f.read() == killed_before, "killed-step job: the output file is not as it was")
        check("tessera-slurm: result" not in log, "killed-step job: a result announced after a failed step")
        print("ok: a step killed mid-write: the script ran `tessera recover`, the file is as it was")

        job = by_name["time-limit"]
        with open(job.log) as f:
            log = f.read()
        check(job.status != 0 and ("TIME LIMIT" in log or "DUE TO TIME" in log),
              f"time-limit job: status {job.status}, not ended by its time limit")
        check(not os.path.exists(existing + ".tessera-journal"), "time-limit job: a journal is left")
        # (tessera's note "SIGTERM arrived while C was being committed; the commit completed" is not
        # required here: srun, aborting the step, may stop forwarding the task's output before it
        # comes; crash_sweep.py's TERM/INT cases check the note.)
        with h5py.File(existing, "r") as f:
            check(np.array_equal(f["keep"][...], np.arange(12.0).reshape(3, 4)) and f.attrs["project"] == "pipeline",
                  "time-limit job: the file's other contents changed")
            check("run" in f and "C" in f["run"], "time-limit job: the commit under way did not finish")
            c = f["/run/C"][...]
            check("tessera_version" in f["/run/C"].attrs, "time-limit job: C lacks its attributes")
        check_product(a, b, c, dtype)
        print(f"ok: a job ended by its time limit during the commit ({job.seconds:.0f} s): C complete, file intact")

        if args.prefix:
            job = by_name["installed-node"]
            check_result(job, a, b, dtype)
            check_report(os.path.join(job.out_dir, "report.json"), 2, backend="cpu")
            check_placement(job, cluster)
            binary = os.path.join(os.path.abspath(args.prefix), args.bindir, "tessera")
            config = os.path.join(installed_home, "configs", "slurm.toml")
            with open(job.log) as f:
                check(f"binary {binary}, config {config}" in f.read(),
                      f"installed job: the log does not name the installed binary {binary} and config {config}")
            print(f"ok: installed {job.script} ran {binary} with {config}, no source tree")
        else:
            print("note: no --prefix: the installed scripts were not run")

        print("job times (sbatch --wait): " + ", ".join(f"{j.name} {j.seconds:.1f} s" for j in jobs))
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
    print(f"PASS ({time.monotonic() - t_start:.1f} s)")


if __name__ == "__main__":
    main()
