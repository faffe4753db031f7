"""tessera across nodes, on a simulated cluster made by this test (tests/cluster/cluster.py): N
nodes node1..nodeN on this machine, each a set of Linux namespaces with its own host name, mounts
and address on a bridge, one slurmd each, one slurmctld, munge. Cases (--cases; all by default):

  algorithms  panels, summa, ksplit and auto on several grids and odd shapes, 1 and 2 ranks per
              node, by mpirun (rsh into the nodes) and srun --mpi=pmix, C against numpy; the report
              names every node and what carried MPI between nodes (tcp) and within one (vader)
  write       C written in place by ranks on different hosts, byte-identical to --write gather
  private     a node that does not see the output folder (a private mount over it): the job falls
              back to the gather saying why; --write in-place is refused
  sbatch      the shipped tessera-multinode, tessera-cpu and strong-scaling scripts, as a user
              submits them, with --nodes=N
  faults      one node's ranks killed (SIGKILL) while the others read, compute and write (into an
              existing file, which keeps its other datasets); one node's slurmd killed mid-job; one
              node's slurmd killed as its rank writes into an existing file: a second job succeeds,
              the orphaned rank writes nothing more (fencing) and ends by itself (watchdog)
  slow-link   every node's link shaped to a lower rate (tc): the job completes and the report's
              communication time grows with the bytes that cross it
  model       the same shaped links measured by `tessera info --probe-network` into a machine file;
              the dry run's communication and total time within 25% of a real run's, for summa
              and panels (C gathered) on 1 and 2 ranks per node

One cluster for the whole script, taken down at the end (also on failure). Skipped (exit 77, with
the reason) without root, namespaces, bridges or Slurm. Every job's report table is printed."""
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
from cluster import Cluster, ClusterError, alive, tool  # noqa: E402

from common import SKIP, check, check_product, fail, leftovers, parser  # noqa: E402

ALL_CASES = ["algorithms", "write", "private", "sbatch", "faults", "slow-link", "model"]
# The nodes share this machine's cores: a rank waiting in MPI must yield the core, or the rank it
# waits for (on "another node", the same core) gets it only at the scheduler's tick (a 4-byte
# allreduce between the nodes took 23 ms instead of 5 ms here). Not needed on a real cluster.
SHARED_CORES_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}


def upstream_startup_crash(text):
    """Open MPI 4.1.4's start-up race under srun --mpi=pmix (Debian 12: PMIx 4.2.2, Slurm 22.05):
    a rank waiting in MPI_Init's last fence gets a peer's first message and its TCP BTL calls a
    null callback (core dumps: mca_btl_tcp.so <- event_base_loop <- opal_progress <-
    ompi_mpi_init). Measured on this cluster: 1 in 80 srun launches of a plain MPI program on 2
    nodes, 2 in 40 on 4 nodes x 2 ranks; 0 in 150 mpirun launches through the rsh agent and 0 in
    60 inside an allocation (docs/cluster.md). Its mark: a task that srun says died of a
    segmentation fault, whose own report (Open MPI's, often cut short when srun ends the step)
    names no frame of the program and a fault at address 0 if it got that far."""
    if not re.search(r"srun: error: node\d+: tasks? [\d-]+: Segmentation fault", text):
        return False
    if "*** Process received signal ***" not in text:
        return False
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if "Failing at address:" in line and "(nil)" not in line:
            return False
        if "] [ " in line and "libc.so" not in line:  # a frame of the program: not this crash
            return False
    return True


RETRIED = []  # what was launched again after upstream_startup_crash, for the summary


def skip(reason):
    print(f"SKIP: {reason}", flush=True)
    sys.exit(SKIP)


class Jobs:
    """Runs tessera on the cluster and checks what every case needs."""

    def __init__(self, args, cluster, work):
        self.args, self.cluster, self.work = args, cluster, work
        self.tessera = os.path.abspath(args.tessera)
        self.nodes = cluster.nodes
        self.rng = np.random.default_rng(29)
        self.count = 0

    # ---- inputs and launchers ----
    def inputs(self, m, n, k, dtype=np.float64, compression=None):
        self.count += 1
        d = os.path.join(self.work, f"job{self.count}")
        os.makedirs(d)
        a = (self.rng.random((m, k)) * 2 - 1).astype(dtype)
        b = (self.rng.random((k, n)) * 2 - 1).astype(dtype)
        with h5py.File(os.path.join(d, "a.h5"), "w") as f:
            f.create_dataset("A", data=a, chunks=(min(m, 64), min(k, 64)) if compression else None,
                             compression=compression)
        with h5py.File(os.path.join(d, "b.h5"), "w") as f:
            f.create_dataset("B", data=b)
        return d, a, b

    def mpirun(self, per_node, nodes=None):
        nodes = nodes or self.nodes
        hosts = ",".join(f"{n}:{per_node}" for n in nodes)
        return ([shutil.which("mpirun"), "--allow-run-as-root", "--bind-to", "none"] + self.cluster.mpirun_args()
                + ["--mca", "mpi_yield_when_idle", "1", "--host", hosts, "-np", str(per_node * len(nodes)),
                   "-x", "TESSERA_TEST_HOLD", "-x", "TESSERA_STREAM_CHUNKS"])

    def srun(self, per_node, nodes=None):
        nodes = nodes or self.nodes
        return [tool("srun"), "--mpi=pmix", f"--nodes={len(nodes)}", f"--ntasks-per-node={per_node}",
                "--cpus-per-task=1", f"--nodelist={','.join(nodes)}", "--kill-on-bad-exit=1"]

    def env(self, extra=None):
        env = self.cluster.env()
        env.update(SHARED_CORES_ENV)
        env.pop("TESSERA_TEST_HOLD", None)
        env.update(extra or {})
        return env

    def run(self, launcher, tessera_args, expect_ok=True, env=None, timeout=180):
        cmd = launcher + [self.tessera] + tessera_args
        for attempt in (1, 2):
            print("$ " + " ".join(shlex.quote(c) for c in cmd), flush=True)
            t0 = time.monotonic()
            p = subprocess.run(cmd, capture_output=True, text=True, env=self.env(env), timeout=timeout, cwd=self.work)
            p.seconds = time.monotonic() - t0
            sys.stdout.write(p.stdout + p.stderr)
            if p.returncode == 0 or attempt == 2 or not upstream_startup_crash(p.stderr + p.stdout):
                break
            RETRIED.append(" ".join(cmd[:3]) + " ... " + " ".join(tessera_args[:2]))
            print("note: Open MPI's start-up race under srun (a rank crashed in MPI_Init, see "
                  "upstream_startup_crash): launched once more", flush=True)
        if expect_ok:
            check(p.returncode == 0, f"exit status {p.returncode}")
        return p

    # ---- checks ----
    def check_report(self, path, nodes, per_node, stdout):
        with open(path) as f:
            rep = json.load(f)
        hosts = [r["host"] for r in rep["ranks"]]
        check(sorted(set(hosts)) == sorted(nodes), f"report hosts {sorted(set(hosts))}, expected {nodes}")
        check(all(hosts.count(n) == per_node for n in nodes), f"ranks per host {hosts}, expected {per_node} each")
        net = rep["network"]
        check(net["nodes"] == len(nodes), f"report network nodes {net['nodes']}, expected {len(nodes)}")
        check(net["between_nodes"] == "tcp", f"between nodes: {net['between_nodes']!r}, expected tcp")
        within = "vader (shared memory)" if per_node > 1 else "none"
        check(net["within_node"] == within, f"within a node: {net['within_node']!r}, expected {within!r}")
        check(net["mpi_start"].startswith("Open MPI's choice"), f"tessera restricted the transports: {net['mpi_start']}")
        line = next((x for x in stdout.splitlines() if x.startswith("network: ")), "")
        check(f"network: {len(nodes)} nodes" in line and "between nodes tcp" in line, f"table's network line: {line!r}")
        for n in nodes:
            check(n in line, f"the table's network line does not name {n}: {line!r}")
        print(f"ok: report names {', '.join(nodes)}; between nodes {net['between_nodes']}, within a node "
              f"{net['within_node']}")
        return rep


def case_algorithms(jobs):
    n = len(jobs.nodes)
    # (launcher, ranks per node, algorithm, grid, m, n, k, dtype, extra env)
    runs = [
        ("mpirun", 1, "panels", f"{n}x1", 67, 53, 45, np.float64, None),
        ("mpirun", 2, "summa", "2x2" if n == 2 else "2x4", 101, 67, 53, np.float64, None),
        ("srun", 2, "ksplit", "", 31, 29, 37, np.float64, None),
        ("srun", 1, "summa", f"1x{n}", 123, 45, 1027, np.float32, None),
        ("mpirun", 2, "auto", "", 40, 40, 40, np.float64, None),
        ("srun", 2, "panels", f"1x{2 * n}", 61, 47, 53, np.float32, {"TESSERA_STREAM_CHUNKS": "3"}),
    ]
    if n > 2:
        runs = [r for r in runs if r[2] in ("summa", "ksplit", "auto")] + [runs[0]]
    for launcher, per_node, alg, grid, m, nn, k, dtype, env in runs:
        d, a, b = jobs.inputs(m, nn, k, dtype)
        report = os.path.join(d, "report.json")
        args = ["run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c", f"{d}/c.h5:/C", "--backend", "cpu",
                "--algorithm", alg, "--report", report]
        if grid:
            args += ["--grid", grid]
        print(f"==== {alg} on {n} nodes x {per_node} rank(s), {launcher}, {m}x{nn}x{k} "
              f"{np.dtype(dtype).name}{', grid ' + grid if grid else ''} ====", flush=True)
        launch = jobs.mpirun(per_node) if launcher == "mpirun" else jobs.srun(per_node)
        res = jobs.run(launch, args, env=env)
        with h5py.File(f"{d}/c.h5", "r") as f:
            check_product(a, b, f["C"][...], dtype)
        rep = jobs.check_report(report, jobs.nodes, per_node, res.stdout)
        if alg == "auto":
            check(rep["algorithm"] == "summa", f"auto on a 2-D grid of CPU ranks chose {rep['algorithm']}")
        check(not leftovers(d), "temporary files left")
    check_local_ranks(jobs)


def check_local_ranks(jobs):
    """Each rank's node-local rank as tessera computes it (from the ranks' host names; what picks a
    rank's GPU, local rank mod the GPUs it sees) against Slurm's SLURM_LOCALID, with ranks placed
    by block and round robin (a node's ranks not contiguous), and against mpirun's."""
    for launch, name, per_node in ((jobs.srun(2), "srun, block", 2),
                                   (jobs.srun(2) + ["--distribution=cyclic"], "srun, cyclic", 2),
                                   (jobs.mpirun(2), "mpirun", 2)):
        res = jobs.run(launch, ["info", "--json"])
        views = json.loads(res.stdout)
        check(len(views) == per_node * len(jobs.nodes), f"{name}: {len(views)} views")
        env_key = "SLURM_LOCALID" if name.startswith("srun") else None
        for v in views:
            mpi = v["mpi"]
            check(mpi["local_size"] == per_node, f"{name}: rank {mpi['rank']} local size {mpi['local_size']}")
            if env_key:
                check(str(mpi["local_rank"]) == v["environment"][env_key],
                      f"{name}: rank {mpi['rank']} on {mpi['host']}: local rank {mpi['local_rank']}, "
                      f"{env_key}={v['environment'][env_key]}")
        table = sorted((v["mpi"]["host"], v["mpi"]["local_rank"], v["mpi"]["rank"]) for v in views)
        for node in jobs.nodes:
            local = [lr for h, lr, _ in table if h == node]
            check(local == list(range(per_node)), f"{name}: local ranks on {node}: {local}")
        print(f"ok: node-local ranks ({name}): " + ", ".join(f"rank {r} {h}/{lr}" for h, lr, r in sorted(
            table, key=lambda t: t[2])))


def case_write(jobs):
    n = len(jobs.nodes)
    d, a, b = jobs.inputs(97, 83, 71)
    outs = {}
    for mode in ("in-place", "gather"):
        report = os.path.join(d, f"{mode}.json")
        res = jobs.run(jobs.mpirun(2), ["run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c",
                                         f"{d}/{mode}.h5:/C", "--backend", "cpu", "--algorithm", "summa", "--grid",
                                         f"2x{n}", "--write", mode, "--report", report])
        rep = jobs.check_report(report, jobs.nodes, 2, res.stdout)
        if mode == "in-place":
            check(rep["write"].startswith("in place"), f"write {rep['write']!r}")
            writers = {r["host"] for r in rep["ranks"] if r["write_bytes"] > 0}
            check(writers == set(jobs.nodes), f"ranks of {sorted(writers)} wrote C, expected every node")
        else:
            check(rep["write"].startswith("gather"), f"write {rep['write']!r}")
        with h5py.File(f"{d}/{mode}.h5", "r") as f:
            outs[mode] = f["C"][...]
    check(outs["in-place"].tobytes() == outs["gather"].tobytes(), "C in place differs from C gathered")
    check_product(a, b, outs["in-place"], np.float64)
    print(f"ok: C written in place by ranks on {', '.join(jobs.nodes)} is byte-identical to --write gather")


def case_private(jobs):
    d, a, b = jobs.inputs(64, 50, 33)
    out = os.path.join(d, "out")
    os.makedirs(out)
    last = jobs.nodes[-1]
    jobs.cluster.private_mount(last, out)
    print(f"{last}: a private tmpfs over {out} (the other nodes see the shared folder)")
    try:
        report = os.path.join(d, "r.json")
        args = ["run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c", f"{out}/c.h5:/C", "--backend", "cpu",
                "--grid", f"{len(jobs.nodes)}x1"]
        res = jobs.run(jobs.mpirun(1), args + ["--report", report])
        rep = jobs.check_report(report, jobs.nodes, 1, res.stdout)
        blind = len(jobs.nodes) - 1
        check(rep["write"].startswith(f"gather (rank {blind} cannot see the output file"), f"write {rep['write']!r}")
        check(f"C written: gather (rank {blind} cannot see" in res.stdout, "the table does not say why C was gathered")
        with h5py.File(f"{out}/c.h5", "r") as f:
            check_product(a, b, f["C"][...], np.float64)
        os.remove(f"{out}/c.h5")
        res = jobs.run(jobs.mpirun(1), args + ["--write", "in-place"], expect_ok=False)
        check(res.returncode != 0, "--write in-place where a node cannot see the output must fail")
        errors = [x for x in res.stderr.splitlines() if x.startswith("tessera: error")]
        check(len(errors) == 1 and "in-place is not possible" in errors[0] and f"rank {blind}" in errors[0],
              f"expected one error line naming rank {blind}, got {errors}")
        check(not os.listdir(out), f"left in the output folder: {os.listdir(out)}")
        print(f"ok: {last} without the output folder: gathered (reason in the report), in-place refused")
    finally:
        jobs.cluster.private_unmount(last, out)


def case_sbatch(jobs):
    src = os.path.abspath(jobs.args.source_dir)
    n = len(jobs.nodes)
    submit = os.path.join(jobs.work, "submit")
    os.makedirs(os.path.join(submit, "data"))
    a = (jobs.rng.random((67, 45)) * 2 - 1).astype(np.float32)
    b = (jobs.rng.random((45, 53)) * 2 - 1).astype(np.float32)
    with h5py.File(os.path.join(submit, "data", "a.h5"), "w") as f:
        f.create_dataset("A", data=a)
    with h5py.File(os.path.join(submit, "data", "b.h5"), "w") as f:
        f.create_dataset("B", data=b)
    env = jobs.env({"TESSERA_HOME": src, "TESSERA": jobs.tessera, "TESSERA_PYTHON": sys.executable})
    # The scripts' resources scaled to these nodes (2 CPUs, 2 placeholder GPUs each); the GPU
    # script computes on the CPU (--backend cpu).
    gpu = [f"--nodes={n}", "--ntasks-per-node=2", "--cpus-per-task=1", "--gpus-per-node=2"]
    # The multi-node job with the launcher the script detects (srun --mpi=pmix); the others with
    # TESSERA_LAUNCHER=mpirun, as docs/cluster.md advises for Debian 12's Open MPI (srun's start-up
    # race, upstream_startup_crash).
    specs = [("multinode", "tessera-multinode.sbatch", gpu, ["--backend", "cpu"], 2 * n, {}),
             ("cpu", "tessera-cpu.sbatch", [f"--nodes={n}", "--ntasks-per-node=1", "--cpus-per-task=2"], [], n,
              {"TESSERA_LAUNCHER": "mpirun"}),
             ("scaling", "strong-scaling.sbatch", gpu, ["--backend", "cpu"], 2 * n, {"TESSERA_LAUNCHER": "mpirun"})]
    def submit_job(opts, script, extra, more_env):
        cmd = [tool("sbatch"), "--wait", "--parsable"] + opts + [os.path.join(src, "slurm", script)] + extra
        print("$ " + "".join(f"{k}={v} " for k, v in more_env.items()) + " ".join(cmd), flush=True)
        return subprocess.Popen(cmd, cwd=submit, env=dict(env, **more_env), text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)

    def wait_job(proc, script, t0):
        try:
            out, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail(f"sbatch {script}: not done after 240 s")
        job_id = out.strip().split(";")[0]
        with open(os.path.join(src, "slurm", script)) as f:
            job_name = next(x.split("=", 1)[1].strip() for x in f if x.startswith("#SBATCH --job-name="))
        log_path = os.path.join(submit, f"slurm-{job_name}-{job_id}.out")
        log = open(log_path).read() if os.path.exists(log_path) else "(no log)"
        print(f"==== sbatch {script} --nodes={n}: job {job_id}, status {proc.returncode}, "
              f"{time.monotonic() - t0:.1f} s ====\n{err}{log}", flush=True)
        return proc.returncode, job_id, log

    running = [(spec, submit_job(spec[2], spec[1], spec[3], spec[5]), time.monotonic()) for spec in specs]
    for (name, script, opts, extra, ranks, more_env), proc, t0 in running:
        status, job_id, log = wait_job(proc, script, t0)
        if status != 0 and upstream_startup_crash(log):
            RETRIED.append(f"sbatch {script}")
            print("note: Open MPI's start-up race under srun (see upstream_startup_crash): the job submitted once more",
                  flush=True)
            status, job_id, log = wait_job(submit_job(opts, script, extra, more_env), script, time.monotonic())
        check(status == 0, f"{script}: exit status {status}")
        launcher = more_env.get("TESSERA_LAUNCHER", "srun-pmix")
        check(f"launcher {launcher}" in log, f"{script}: the log does not name the launcher {launcher}")
        out_dir = os.path.join(submit, "runs", job_id)
        with h5py.File(os.path.join(out_dir, "c.h5"), "r") as f:
            check_product(a, b, f["C"][...], np.float32)
        placements = [x for x in log.splitlines() if x.startswith("placement: rank ")]
        if name != "cpu":
            per_node = ranks // n
            check(len(placements) == ranks, f"{script}: {len(placements)} placement lines, expected {ranks}")
            for node in jobs.nodes:
                local = sorted(int(x.split("local rank ")[1].split(",")[0]) for x in placements if f" on {node}," in x)
                check(local == list(range(per_node)), f"{script}: local ranks on {node}: {local}")
        if name == "scaling":
            check_scaling(out_dir, [c for c in (1, 2, 4) if c <= n], ranks // n)
        else:
            rep = jobs.check_report(os.path.join(out_dir, "report.json"), jobs.nodes, ranks // n,
                                    log.split("tessera-slurm: result")[0])
            check(rep["write"].startswith("in place"), f"{script}: write {rep['write']!r}")
        print(f"ok: {script} with --nodes={n}: C right, every node used")


def md_rows(lines):
    """The rows of the first markdown table in `lines`, as dicts by header."""
    start = next(i for i, x in enumerate(lines) if x.startswith("| "))
    head = [h.strip() for h in lines[start].strip("|").split("|")]
    rows = []
    for x in lines[start + 2:]:
        if not x.startswith("| "):
            break
        rows.append(dict(zip(head, (c.strip() for c in x.strip("|").split("|")))))
    return rows


def close(text, value, tol, what):
    check(text not in ("", "–") and abs(float(text.rstrip("%")) - value) <= tol, f"{what}: table {text!r}, reports {value}")


def check_scaling(out_dir, node_counts, per_node):
    """scaling.md against the reports it was made from: each row's nodes, the slowest rank's time of
    every phase, the wall time, speedup and efficiency (against the first row); every rank's phases."""
    table = open(os.path.join(out_dir, "scaling.md")).read()
    print(table)
    lines = table.splitlines()
    rows = md_rows(lines)
    reports = []
    for c in node_counts:
        with open(os.path.join(out_dir, f"report-n{c * per_node}.json")) as f:
            reports.append(json.load(f))
    check([int(r["ranks"]) for r in rows] == [c * per_node for c in node_counts], f"scaling.md ranks {rows}")
    base = reports[0]
    for row, rep in zip(rows, reports):
        hosts = {r["host"] for r in rep["ranks"]}
        check(int(row["nodes"]) == len(hosts), f"row {row['ranks']}: nodes {row['nodes']}, report hosts {hosts}")
        for key, text in row.items():
            if key.endswith(" ms") and key != "wall ms":
                phase = key[:-3]
                times = [r["phases"][phase] for r in rep["ranks"] if phase in r["phases"]]
                if times:
                    close(text, 1e3 * max(times), 0.051, f"row {row['ranks']} {key}")
        wall = rep["totals"]["wall_seconds"]
        close(row["wall ms"], 1e3 * wall, 0.051, f"row {row['ranks']} wall")
        speedup = base["totals"]["wall_seconds"] / wall
        close(row["speedup"], speedup, 0.0051, f"row {row['ranks']} speedup")
        close(row["efficiency"], 100 * speedup * base["nranks"] / rep["nranks"], 0.51, f"row {row['ranks']} efficiency")
    sections = [i for i, x in enumerate(lines) if x.startswith("### ")]
    check(len(sections) == len(reports), f"{len(sections)} per-rank tables, expected {len(reports)}")
    for i, rep in zip(sections, reports):
        per_rank = md_rows(lines[i:])
        check([int(r["rank"]) for r in per_rank] == list(range(rep["nranks"])), f"per-rank table {lines[i]}")
        for row, r in zip(per_rank, rep["ranks"]):
            check(row["host"] == r["host"], f"{lines[i]}: rank {r['rank']} host {row['host']}, report {r['host']}")
            for key, text in row.items():
                if key.endswith(" ms") and key[:-3] in r["phases"]:
                    close(text, 1e3 * r["phases"][key[:-3]], 0.051, f"{lines[i]}: rank {r['rank']} {key}")
    png = os.path.join(out_dir, "scaling.png")
    if os.path.exists(png):
        check(open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n", "scaling.png is not a PNG")
    else:
        check("plot skipped" in table, "no plot and no note saying why")
    print(f"ok: scaling.md over {node_counts} node(s): every number matches the reports"
          f"{'; scaling.png written' if os.path.exists(png) else ' (no matplotlib here: plot skipped, as the table says)'}")


def node_pids(jobs, node, want, timeout=60, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = jobs.cluster.pids_on(node, "tessera")
        if len(pids) == want:
            return pids
        if proc is not None and proc.poll() is not None:
            break
        time.sleep(0.05)
    fail(f"did not find {want} tessera rank(s) on {node}")


def wait_for_line(stream_lines, pattern, timeout, proc):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(re.search(pattern, line) for line in stream_lines):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    fail(f"no line matching {pattern!r} within {timeout} s")


def start_collecting(proc):
    """Lines of proc's stdout and stderr as they come (threads), into one list."""
    import threading
    lines = []

    def pump(stream):
        for line in stream:
            lines.append(line)
    threads = [threading.Thread(target=pump, args=(s,), daemon=True) for s in (proc.stdout, proc.stderr)]
    for t in threads:
        t.start()
    return lines, threads


def case_faults(jobs):
    victim_node = jobs.nodes[-1]
    phases = ["read", "compute", "write"] if len(jobs.nodes) == 2 else ["compute"]
    # mpirun: srun's rare start-up crash (upstream_startup_crash) would end the job before the fault.
    for phase, launcher in zip(phases, ["mpirun"] * 3):
        d, a, b = jobs.inputs(90, 80, 70)
        out = os.path.join(d, "out.h5")
        with h5py.File(out, "w") as f:  # an existing file: C goes in as a new dataset
            f.create_dataset("keep/earlier", data=np.arange(1000.0))
            f.attrs["note"] = "made before the job"
        before = open(out, "rb").read()
        print(f"==== {victim_node}'s ranks killed during {phase} ({launcher}) ====", flush=True)
        launch = jobs.mpirun(2) if launcher == "mpirun" else jobs.srun(2)
        cmd = launch + [jobs.tessera, "run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c", f"{out}:/run/C",
                        "--backend", "cpu", "--algorithm", "summa", "-v"]
        print("$ TESSERA_TEST_HOLD=" + phase + ":20 " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=jobs.work,
                                env=jobs.env({"TESSERA_TEST_HOLD": f"{phase}:20"}))
        lines, threads = start_collecting(proc)
        victims = node_pids(jobs, victim_node, 2, proc=proc)
        # Every rank says when it holds; the victims die inside the phase, the others are in it too.
        wait_for_line(lines, rf"rank {2 * len(jobs.nodes) - 1}\): TESSERA_TEST_HOLD: holding in {phase}", 60, proc)
        t0 = time.monotonic()
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            fail(f"the job did not end within 30 s of {victim_node}'s ranks being killed")
        took = time.monotonic() - t0
        for t in threads:
            t.join(timeout=5)
        text = "".join(lines)
        print(text + f"job ended {took:.1f} s after SIGKILL of {victim_node}'s ranks, status {proc.returncode}")
        check(proc.returncode != 0, "a job that lost a node must exit nonzero")
        check(took < 30, f"took {took:.1f} s")
        # One clear message naming the lost node's ranks (the launcher's: the survivors are ended by it).
        said = [x for x in text.splitlines() if victim_node in x and ("signal 9" in x or "Killed" in x)]
        check(said, f"no message names {victim_node}'s killed ranks")
        left = [p for node in jobs.nodes for p in jobs.cluster.pids_on(node, "tessera")]
        check(not left, f"ranks still running: {left}")
        check(not leftovers(d), f"temporary files left: {leftovers(d)}")
        # Rank 0 rolls the file back through its journal (issue 27); should Open MPI's SIGKILL, 1 s
        # after its SIGTERM, cut that rollback, the journal stays and the file may still show C's
        # temporary dataset: never C itself. The next run into the file restores it first.
        with h5py.File(out, "r") as f:
            names = list(f)
            check("run" not in f, f"C appeared in the existing file: {names}")
            check(all(x == "keep" or ".tessera-partial-" in x for x in names), f"the existing file holds {names}")
            check(np.array_equal(f["keep/earlier"][...], np.arange(1000.0)), "the earlier dataset changed")
            check(f.attrs["note"] == "made before the job", "the file's attribute changed")
        print(f"ok: {victim_node} lost during {phase}: every rank ended in {took:.1f} s; the existing file keeps its "
              f"earlier contents ({'byte-identical' if open(out, 'rb').read() == before else 'same datasets'}), "
              f"holds {names}")
        if phase == "write":
            # The leftover's process must be gone (a zombie counts as alive; this machine's init
            # reaps late) before the next run may call it dead.
            for pid in [int(x.rsplit("-", 1)[1]) for x in names if ".tessera-partial-" in x]:
                deadline = time.monotonic() + 20
                while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
                    time.sleep(0.1)
            res = jobs.run(launch, ["run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c", f"{out}:/run/C",
                                    "--backend", "cpu", "--algorithm", "summa"])
            with h5py.File(out, "r") as f:
                check(sorted(f) == ["keep", "run"], f"after the next run the file holds {list(f)}")
                check_product(a, b, f["run/C"][...], np.float64)
            if len(names) > 1 or os.path.exists(out + ".tessera-journal"):
                check("restored" in res.stderr or "removed" in res.stderr,
                      "the next run did not say it restored the file (or removed the leftover)")
            check(not os.path.exists(out + ".tessera-journal"), "the journal is still there after the next run")
            print("ok: the next run into the file added C (restoring the file first where need be)")
    slurmd_stopped(jobs)
    orphan_writers(jobs)


def slurm_ended(rc, d, err, node, wait=10):
    """Why Slurm counts a job that lost `node` as not successful, or None. sbatch --wait's status
    for a job Slurm cancelled on a node failure is not always nonzero (Slurm 22.05: 0 twice in CI,
    2026-12-04 and 2026-12-07), and the batch step's "CANCELLED ... DUE TO NODE FAILURE" line may
    reach job.out after sbatch has returned (2026-12-07: only srun's "Node failure on node4" was
    there when it was read). So: the status, else that line (waited for up to `wait` seconds), else
    srun's own word that its step lost the node (which makes slurmd_stopped's two log checks one)."""
    if rc != 0:
        return f"sbatch status {rc}"
    deadline = time.monotonic() + wait
    while True:
        log = err + (open(f"{d}/job.out").read() if os.path.exists(f"{d}/job.out") else "")
        if "DUE TO NODE FAILURE" in log:
            return "the job's log says it was cancelled due to node failure"
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    if f"srun: error: Node failure on {node}" in log:
        return f"srun says its step lost {node}"
    return None


def slurmd_stopped(jobs):
    """A node's slurmd killed while its ranks compute: Slurm declares the node down (SlurmdTimeout)
    and ends the job's steps on every node, or the job finishes without it; either way every rank
    ends and no C that looks complete is left."""
    node = jobs.nodes[-1]
    d, a, b = jobs.inputs(60, 50, 40)
    script = os.path.join(d, "job.sh")
    with open(script, "w") as f:
        f.write("#!/bin/bash\n#SBATCH --output=" + d + "/job.out\n"
                f"srun --mpi=pmix {shlex.quote(jobs.tessera)} run --a {d}/a.h5:/A --b {d}/b.h5:/B --c {d}/c.h5:/C "
                "--backend cpu -v\n")
    env = jobs.env({"TESSERA_TEST_HOLD": "compute:90"})
    cmd = [tool("sbatch"), "--wait", "--parsable", "--no-requeue", f"--nodes={len(jobs.nodes)}", "--ntasks-per-node=1",
           script]
    print(f"==== {node}'s slurmd killed mid-job ====\n$ TESSERA_TEST_HOLD=compute:90 " + " ".join(cmd), flush=True)
    t_submit = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=d, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    node_pids(jobs, node, 1, proc=proc)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "holding in compute" not in (open(f"{d}/job.out").read()
                                                                      if os.path.exists(f"{d}/job.out") else ""):
        time.sleep(0.1)
    slurmd = next(x for x in jobs.cluster.state["daemons"] if x["name"] == f"slurmd-{node}")
    t0 = time.monotonic()
    os.kill(slurmd["pid"], signal.SIGKILL)
    print(f"killed slurmd on {node} (pid {slurmd['pid']}) {t0 - t_submit:.1f} s after submission", flush=True)
    try:
        out, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the job did not end within 90 s of slurmd's death")
    took = time.monotonic() - t0
    log = open(f"{d}/job.out").read()
    print(err + log + f"job ended {took:.1f} s after slurmd died, sbatch status {proc.returncode}")
    # Their slurmd ends them: allow it a few seconds after sbatch returns on a loaded machine.
    deadline = time.monotonic() + 15
    while True:
        left = [p for n in jobs.nodes if n != node for p in jobs.cluster.pids_on(n, "tessera")]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    check(not left, f"ranks on the other nodes still running 15 s after the job ended: {left}")
    check(took < 30, f"the job took {took:.1f} s to end")
    check(not leftovers(d), f"temporary files left: {leftovers(d)}")
    if os.path.exists(f"{d}/c.h5"):
        with h5py.File(f"{d}/c.h5", "r") as f:
            check_product(a, b, f["C"][...], np.float64)
        print(f"ok: the job finished without {node}'s slurmd (the running step did not need it); C is right")
    else:
        why = slurm_ended(proc.returncode, d, err, node)
        check(why is not None, "no C and yet a successful job")
        log = open(f"{d}/job.out").read()
        check(f"Node failure on {node}" in log, f"the job's log does not say that {node} failed")
        print(f"ok: {node} lost its slurmd: the job ended in {took:.1f} s, status {proc.returncode}, no C")
    # slurmd back on the node: it finds the step of a job that no longer exists and ends it (the
    # node's own ranks, left running while it had no slurmd), and the node serves the cases that follow.
    orphans = jobs.cluster.pids_on(node, "tessera")
    t1 = time.monotonic()
    jobs.cluster.restart_slurmd(node)
    deadline = t1 + 30
    while jobs.cluster.pids_on(node, "tessera") and time.monotonic() < deadline:
        time.sleep(0.2)
    left = jobs.cluster.pids_on(node, "tessera")
    check(not left, f"{node}'s ranks still running 30 s after its slurmd came back: {left}")
    print(f"ok: slurmd back on {node}: its {len(orphans)} orphaned rank(s) ended {time.monotonic() - t1:.1f} s later; "
          f"{node} idle again")


def rank_log(d, rank):
    path = f"{d}/rank-{rank}.err"
    return open(path).read() if os.path.exists(path) else ""


def orphan_writers(jobs):
    """Issue 40 item 3: a node's slurmd killed while its ranks are about to write their C blocks
    into an existing file (sbatch, srun). Slurm ends the job and rank 0 rolls the file back, but
    that node's ranks keep running, cut off (stopped here with SIGSTOP, as a write stalled on the
    file system, so that the next step does not race them). A second job into the same file (with
    another A) exits 0 with a correct C; then the orphans go on: they must write nothing (their run's journal is gone:
    fencing), so C stays correct and the file does not grow, and they must end by themselves within
    60 s of losing their peers (the watchdog), with slurmd still gone. Before fencing they wrote
    their old blocks into the second job's C and then spun in MPI_Allreduce until slurmd came back."""
    node, others = jobs.nodes[-1], jobs.nodes[:-1]
    d, a, b = jobs.inputs(600, 500, 200)
    out = os.path.join(d, "out.h5")
    with h5py.File(out, "w") as f:
        f.create_dataset("keep/earlier", data=np.arange(1000.0))
    before = open(out, "rb").read()
    # panels: every rank writes its block after the hold (summa on a 2x2 grid writes its bands
    # during the compute, before a write-phase hold).
    run_args = ["run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c", f"{out}:/run/C", "--backend", "cpu",
                "--algorithm", "panels"]
    script = os.path.join(d, "job.sh")
    with open(script, "w") as f:
        # Each rank's stderr straight into a file (the orphan's lines have no srun to go to).
        f.write("#!/bin/bash\n#SBATCH --output=" + d + "/job.out\n"
                f"srun --mpi=pmix --error={d}/rank-%t.err {shlex.quote(jobs.tessera)} " + " ".join(run_args) + " -v\n")
    cmd = [tool("sbatch"), "--wait", "--parsable", "--no-requeue", f"--nodes={len(jobs.nodes)}", "--ntasks-per-node=1",
           script]
    print(f"==== {node}'s slurmd killed while its rank writes C into an existing file; a second job; the orphan "
          f"goes on ====\n$ TESSERA_TEST_HOLD=write:20 " + " ".join(cmd), flush=True)
    proc = subprocess.Popen(cmd, cwd=d, env=jobs.env({"TESSERA_TEST_HOLD": "write:20"}), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    orphans = node_pids(jobs, node, 1, proc=proc)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if sum("holding in write" in rank_log(d, r) for r in range(len(jobs.nodes))) == len(jobs.nodes):
            break
        time.sleep(0.1)
    else:
        proc.kill()
        fail("the ranks did not all reach their hold in the write")
    slurmd = next(x for x in jobs.cluster.state["daemons"] if x["name"] == f"slurmd-{node}")
    os.kill(slurmd["pid"], signal.SIGKILL)
    for pid in orphans:
        os.kill(pid, signal.SIGSTOP)
    t_kill = time.monotonic()
    print(f"killed slurmd on {node}, stopped its rank (pid {orphans})", flush=True)
    try:
        _, err = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the job did not end within 90 s of slurmd's death")
    t_lost = time.monotonic()  # the orphan's peers are gone from here on
    print(err + open(f"{d}/job.out").read() + rank_log(d, 0) + f"job ended {t_lost - t_kill:.1f} s after slurmd died, "
          f"sbatch status {proc.returncode}", flush=True)
    # Slurm's verdict (see slurm_ended): read now without waiting (the orphan's 60 s run from
    # t_lost), else again once the orphan is done; that no C appeared is checked below either way.
    why = slurm_ended(proc.returncode, d, err, node, wait=0)
    if why is not None:
        print(f"ok: Slurm ended the job: {why}", flush=True)
    check(all(os.path.exists(f"/proc/{p}") for p in orphans), f"{node}'s rank is gone already: no orphan to test")
    with h5py.File(out, "r") as f:
        check("run" not in f, f"C appeared in the existing file: {list(f)}")
    # The resubmission, on the nodes that are left (srun: the first job's node is down), with another
    # A: the orphan's old block of C would differ from the new C where it lands.
    a2 = jobs.rng.random(a.shape) * 2 - 1
    with h5py.File(f"{d}/a2.h5", "w") as f:
        f.create_dataset("A", data=a2)
    res = jobs.run(jobs.srun(1, others), [f"{d}/a2.h5:/A" if x == f"{d}/a.h5:/A" else x for x in run_args])
    with h5py.File(out, "r") as f:
        check(sorted(f) == ["keep", "run"], f"after the second job the file holds {list(f)}")
        check_product(a2, b, f["run/C"][...], np.float64)
    after = open(out, "rb").read()
    print(f"ok: the second job exited 0 in {res.seconds:.1f} s with a correct C; the orphan resumes now", flush=True)
    for pid in orphans:
        os.kill(pid, signal.SIGCONT)
    deadline = t_lost + 75
    while any(os.path.exists(f"/proc/{p}") and alive(p) for p in orphans) and time.monotonic() < deadline:
        time.sleep(0.2)
    ended = time.monotonic() - t_lost
    left = [p for p in orphans if os.path.exists(f"/proc/{p}") and alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    # What the orphan did to the file first (before fencing: its block written into the second
    # job's C), then whether it ended (before the watchdog: it spun until slurmd came back).
    now = open(out, "rb").read()
    check(len(now) == len(after), f"the file grew by {len(now) - len(after)} bytes after the orphan resumed")
    with h5py.File(out, "r") as f:
        check_product(a2, b, f["run/C"][...], np.float64)
    check(now == after, "the orphan changed the file after the second job")
    check(not left, f"{node}'s orphaned rank still running {ended:.0f} s after its peers were gone")
    check(ended < 60, f"{node}'s orphaned rank took {ended:.1f} s to end after its peers were gone")
    log = rank_log(d, len(jobs.nodes) - 1)
    print(f"{node}'s rank said:\n{log}", flush=True)
    check("this run is no longer live" in log, f"the orphan did not say it stopped writing C:\n{log}")
    check(f"on {node}): waited" in log and "(step: write)" in log,
          f"no watchdog line naming {node} and the write step:\n{log}")
    check(not os.path.exists(out + ".tessera-journal"), "a journal is left")
    if why is None:
        why = slurm_ended(proc.returncode, d, err, node)
        check(why is not None, "the job lost a node and yet succeeded")
        print(f"ok: Slurm ended the job: {why}", flush=True)
    print(f"ok: the orphan wrote nothing after its run was rolled back (C right, the file unchanged, "
          f"{len(now)} bytes; {len(before)} before the first job) and ended {ended:.1f} s after losing its peers")
    jobs.cluster.restart_slurmd(node)
    print(f"ok: slurmd back on {node}; {node} idle again")


def shape_or_skip(jobs, rate, case):
    """The links shaped, or False (the case skipped, saying why) where tc has no tbf here."""
    try:
        jobs.cluster.shape(rate)
        return True
    except ClusterError as e:
        print(f"SKIP ({case}): the links cannot be shaped here: {e}", flush=True)
        return False


def case_slow_link(jobs):
    n = len(jobs.nodes)
    m = nn = k = 600
    d, a, b = jobs.inputs(m, nn, k)
    grid = f"{n}x1"
    times = {}
    rate_mbit = 100
    for shaped in (False, True):
        if shaped:
            if not shape_or_skip(jobs, f"{rate_mbit}mbit", "slow-link"):
                return
            print(f"every node's link shaped to {rate_mbit} Mbit/s (tc tbf)")
        report = os.path.join(d, f"r{int(shaped)}.json")
        try:
            res = jobs.run(jobs.mpirun(1), ["run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c",
                                            f"{d}/c{int(shaped)}.h5:/C", "--backend", "cpu", "--algorithm", "summa",
                                            "--grid", grid, "--panel-width", "100", "--report", report])
        finally:
            if shaped:
                jobs.cluster.unshape()
        rep = jobs.check_report(report, jobs.nodes, 1, res.stdout)
        with h5py.File(f"{d}/c{int(shaped)}.h5", "r") as f:
            check_product(a, b, f["C"][...], np.float64)
        comm = max(r["phases"].get("comm_wait", 0) for r in rep["ranks"])
        times[shaped] = (comm, rep["totals"]["wall_seconds"], max(r["recv_bytes"] for r in rep["ranks"])
                         if "recv_bytes" in rep["ranks"][0] else None)
    # summa on an n x 1 grid: B's panels go down the grid column, each rank receiving all of B's
    # rows it does not hold: (n-1)/n of B.
    crossing = (n - 1) / n * k * nn * 8
    floor = crossing / (rate_mbit * 1e6 / 8)
    print(f"comm_wait unshaped {times[False][0]:.3f} s, shaped {times[True][0]:.3f} s; wall {times[False][1]:.3f} "
          f"-> {times[True][1]:.3f} s; {crossing / 1e6:.1f} MB per rank over {rate_mbit} Mbit/s: >= {floor:.3f} s")
    check(times[True][0] >= 0.5 * floor, f"shaped comm_wait {times[True][0]:.3f} s, below half of {floor:.3f} s")
    check(times[True][0] > times[False][0] + 0.3 * floor, "the communication time did not grow with the slower link")
    print("ok: a slower link: the job completed and its communication time grew accordingly")


def case_model(jobs):
    n = len(jobs.nodes)
    # Slow enough that the communication dominates the run; the other phases come from
    # default.json's rates, not this machine's (2 cores under up to 8 ranks).
    rate_mbit = 100
    src = os.path.abspath(jobs.args.source_dir)
    if not shape_or_skip(jobs, f"{rate_mbit}mbit", "model"):
        return
    print(f"every node's link shaped to {rate_mbit} Mbit/s (tc tbf)", flush=True)
    try:
        res = jobs.run(jobs.mpirun(2), ["info", "--probe-network"])
        keys = json.loads(res.stdout.split("machine file keys: ", 1)[1].splitlines()[0])
        check(0.5 * rate_mbit * 1e6 / 8 < keys["internode_bytes_per_s"] < 1.1 * rate_mbit * 1e6 / 8,
              f"probed {keys['internode_bytes_per_s'] / 1e6:.1f} MB/s between nodes over a {rate_mbit} Mbit/s link")
        with open(os.path.join(src, "configs", "machines", "default.json")) as f:
            default = json.load(f)

        def machine_for(per_node, grid):
            """default.json, the probed network, and this layout's start-up measured by a tiny job
            (process start plus the job's set-up: on 2 cores under 8 ranks far from default.json's)."""
            d, _, _ = jobs.inputs(16, 16, 16)
            report = os.path.join(d, "tiny.json")
            jobs.run(jobs.mpirun(per_node), ["run", "--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--c",
                                             f"{d}/c.h5:/C", "--backend", "cpu", "--grid", grid, "--report", report])
            with open(report) as f:
                rep = json.load(f)
            startup = max(r["startup_seconds"] for r in rep["ranks"]) + max(r["phases"]["setup"] for r in rep["ranks"])
            machine = dict(default, **keys, name=f"cluster-shaped-{per_node}", startup_seconds=startup,
                           comment="default.json with this cluster's probed network and measured start-up")
            path = os.path.join(jobs.work, f"cluster-shaped-{per_node}.json")
            with open(path, "w") as f:
                json.dump(machine, f, indent=1)
            print(f"machine file {path}: {keys}, startup_seconds {startup:.2f}")
            return path
        # (algorithm, ranks per node, grid, m, n, k, extra options): communication well above the rest.
        cases = [("summa", 1, f"{n}x1", 256, 256, 12000 if n == 2 else 6000, []),
                 ("summa", 2, f"2x{n}", 384, 384, 8000 if n == 2 else 6000, []),
                 ("panels", 1, f"{n}x1", 3000 if n == 2 else 2000, 1000, 16, ["--write", "gather"])]
        machines = {}
        for alg, per_node, grid, m, nn, k, extra in cases:
            if per_node not in machines:
                machines[per_node] = machine_for(per_node, grid)
            machine_file = machines[per_node]
            d, a, b = jobs.inputs(m, nn, k)
            common = ["--a", f"{d}/a.h5:/A", "--b", f"{d}/b.h5:/B", "--backend", "cpu", "--algorithm", alg,
                      "--grid", grid, "--machine", machine_file] + extra
            dry_json = os.path.join(d, "dry.json")
            jobs.run([], ["run", "--dry-run", "--ranks", str(per_node * n), "--ranks-per-node", str(per_node),
                          "--report", dry_json] + common)
            with open(dry_json) as f:
                dry = json.load(f)
            report = os.path.join(d, "r.json")
            res = jobs.run(jobs.mpirun(per_node), ["run", "--c", f"{d}/c.h5:/C", "--report", report] + common)
            rep = jobs.check_report(report, jobs.nodes, per_node, res.stdout)
            with h5py.File(f"{d}/c.h5", "r") as f:
                check_product(a, b, f["C"][...], np.float64)
            if alg == "summa":
                comm = max(r["phases"].get("comm_wait", 0) for r in rep["ranks"])
            else:
                comm = rep["ranks"][0]["phases"].get("gather", 0)
            total = rep["totals"]["wall_seconds"] + max(r["startup_seconds"] for r in rep["ranks"])
            p_comm, p_total = dry["predicted"]["communication"], dry["predicted_seconds"]
            print(f"{alg} on {n} nodes x {per_node}, grid {grid}, {m}x{nn}x{k}: communication predicted {p_comm:.2f} s, "
                  f"measured {comm:.2f} s ({100 * (p_comm / comm - 1):+.0f}%); total predicted {p_total:.2f} s, "
                  f"measured {total:.2f} s ({100 * (p_total / total - 1):+.0f}%)", flush=True)
            check(abs(p_comm - comm) <= 0.25 * comm, "the dry run's communication time is not within 25% of the run's")
            check(abs(p_total - total) <= 0.25 * total, "the dry run's total time is not within 25% of the run's")
        print(f"ok: the model with the probed network predicts communication and total within 25% on {n} nodes")
    finally:
        jobs.cluster.unshape()


def main():
    p = parser(__doc__)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--cases", default=",".join(ALL_CASES))
    p.add_argument("--keep", action="store_true", help="leave the cluster up (debugging)")
    args = p.parse_args()
    cases = args.cases.split(",")
    unknown = [c for c in cases if c not in ALL_CASES]
    if unknown:
        fail(f"unknown cases {unknown}; choose from {ALL_CASES}")
    if os.geteuid() != 0:
        skip("needs root: namespaces, mounts, a bridge, and slurmd")
    missing = [t for t in ("unshare", "nsenter", "ip", "tc", "munged", "slurmctld", "slurmd", "sbatch", "srun")
               if not tool(t)]
    if missing:
        print(f"missing {', '.join(missing)}: bash scripts/setup.sh --cluster", flush=True)
        subprocess.run(["bash", os.path.join(args.source_dir, "scripts", "setup.sh"), "--cluster"])
        missing = [t for t in ("unshare", "nsenter", "ip", "tc", "munged", "slurmctld", "slurmd") if not tool(t)]
        if missing:
            skip(f"could not install {', '.join(missing)}")
    for sig in (signal.SIGTERM, signal.SIGHUP):  # so that `finally` takes the cluster down
        signal.signal(sig, lambda s, f: sys.exit(f"killed by signal {s}"))
    t_start = time.monotonic()
    import tempfile
    root = tempfile.mkdtemp(prefix="tessera-cluster-")
    cluster = Cluster(root)
    try:
        try:
            cluster.up(args.nodes, slurm=True, gpus=2)
        except ClusterError as e:
            cluster.dump_logs()
            skip(f"the simulated cluster could not be made here: {e}")
        work = os.path.join(root, "work")
        os.makedirs(work)
        jobs = Jobs(args, cluster, work)
        for case in cases:
            t0 = time.monotonic()
            print(f"######## {case} on {args.nodes} nodes ########", flush=True)
            globals()["case_" + case.replace("-", "_")](jobs)
            print(f"######## {case}: passed ({time.monotonic() - t0:.1f} s) ########", flush=True)
    finally:
        if args.keep:
            print(f"cluster left up in {root}: python3 tests/cluster/cluster.py down --dir {root}")
        else:
            cluster.down()
    if RETRIED:
        print(f"note: launched again after Open MPI's start-up race under srun: {RETRIED}")
    print(f"PASS ({time.monotonic() - t_start:.1f} s)")


if __name__ == "__main__":
    main()
