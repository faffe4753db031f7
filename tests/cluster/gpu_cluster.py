#!/usr/bin/env python3
"""The runs of scripts/gpu-cluster.sh on the GPU machine (see there): two simulated nodes sharing
the GPU(s), 2 ranks each, mpirun through the rsh agent; a plain MPI_Comm_split_type program, then
tessera with --backend cpu and --backend cuda --comm host (panels, summa), C against numpy, each
rank's GPU, the report's network. Appends one line per check to OUT/summary.txt; exit 1 when any
check failed."""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cluster import Cluster, ClusterError  # noqa: E402

SPLIT_PROBE = r"""
#include <mpi.h>
#include <stdio.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, size, lrank, lsize, len;
  char host[MPI_MAX_PROCESSOR_NAME];
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Get_processor_name(host, &len);
  double x = rank, y = 0;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  fprintf(stderr, "rank %d on %s: allreduce ok (%g); calling MPI_Comm_split_type(SHARED)\n", rank, host, y);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  MPI_Comm_rank(local, &lrank);
  MPI_Comm_size(local, &lsize);
  printf("rank %d of %d on %s: node communicator rank %d of %d\n", rank, size, host, lrank, lsize);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return 0;
}
"""


class Runs:
    def __init__(self, args):
        self.args = args
        self.out = args.out
        self.t0 = time.monotonic()
        self.failed = 0
        self.reports = {}
        self.tessera = os.path.abspath(args.tessera)
        try:
            listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
        except OSError:
            listed = ""
        self.gpus = len([x for x in listed.splitlines() if x.startswith("GPU ")])

    def left(self):
        return self.args.deadline - (time.monotonic() - self.t0)

    def say(self, line, ok=True):
        if not ok:
            self.failed += 1
        with open(os.path.join(self.out, "summary.txt"), "a") as f:
            f.write(line + "\n")
        print(line, flush=True)

    def log(self, name, text):
        with open(os.path.join(self.out, name), "a") as f:
            f.write(text)

    def launch(self, cluster, cmd, limit, logname, what):
        """cmd under its own process group; (status, output, seconds), status None on a hang (after
        the ranks' stacks were saved and everything killed)."""
        self.log(logname, f"\n==== {what}\n$ {' '.join(cmd)}\n")
        t = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        try:
            text, _ = proc.communicate(timeout=limit)
            status = proc.returncode
        except subprocess.TimeoutExpired:
            self.save_stacks(cluster, what)
            os.killpg(proc.pid, signal.SIGKILL)
            for node in cluster.nodes:
                for pid in cluster.pids_on(node):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            text, _ = proc.communicate()
            status = None
        took = time.monotonic() - t
        self.log(logname, text + f"---- {what}: {'HUNG (killed after %d s)' % limit if status is None else 'exit %d' % status}"
                 f", {took:.1f} s\n")
        return status, text, took

    def save_stacks(self, cluster, what):
        lines = [f"==== {what}: still running after its limit; every process on the nodes:"]
        gdb = shutil.which("gdb")
        for node in cluster.nodes:
            for pid in cluster.pids_on(node):
                cmd = ""
                try:
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
                    lines.append(f"-- {node} pid {pid}: {cmd[:200]}")
                    for task in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
                        stat = open(f"/proc/{pid}/task/{task}/stat").read().rsplit(")", 1)[1].split()
                        wchan = open(f"/proc/{pid}/task/{task}/wchan").read()
                        lines.append(f"   thread {task}: state {stat[0]}, utime {stat[11]}, wchan {wchan}")
                    lines.append("   kernel stack:\n" + open(f"/proc/{pid}/stack").read())
                except OSError as e:
                    lines.append(f"   ({e})")
                if gdb and ("tessera" in cmd or "split" in cmd):
                    try:
                        p = subprocess.run([gdb, "-batch", "-p", str(pid), "-ex", "thread apply all bt 30"],
                                           capture_output=True, text=True, timeout=40)
                        lines.append(p.stdout[-6000:])
                    except subprocess.TimeoutExpired:
                        lines.append("   (gdb took over 40 s)")
        if not gdb:
            lines.append("(no gdb here: user-space backtraces not taken)")
        self.log("hangs.log", "\n".join(lines) + "\n")

    # ---- the checks ----
    def probe(self, cluster, mode):
        work = tempfile.mkdtemp(prefix="tessera-split-", dir=cluster.root)
        src = os.path.join(work, "split.c")
        with open(src, "w") as f:
            f.write(SPLIT_PROBE)
        exe = os.path.join(work, "split")
        p = subprocess.run(["mpicc", "-o", exe, src], capture_output=True, text=True)
        if p.returncode != 0:
            self.say(f"[{mode}] split_type probe not run: mpicc failed: {p.stderr.strip()[:200]}")
            return
        for per_node in (1, 2):
            cmd = self.mpirun(cluster, per_node) + [exe]
            status, text, took = self.launch(cluster, cmd, 25, "probe.log",
                                             f"[{mode}] MPI_Comm_split_type, 2 nodes x {per_node}")
            sizes = sorted(x.split("rank ")[-1] for x in text.splitlines() if "node communicator" in x)
            verdict = "HUNG" if status is None else f"exit {status}"
            self.say(f"[{mode}] plain MPI_Comm_split_type(SHARED), 2 nodes x {per_node}: {verdict} in {took:.1f} s; "
                     f"node communicators: {sizes or 'none'} (expected {per_node} per node); a library observation, "
                     "not a tessera check")

    def mpirun(self, cluster, per_node):
        return (["mpirun", "--allow-run-as-root", "--bind-to", "none"] + cluster.mpirun_args() +
                ["--host", f"node1:{per_node},node2:{per_node}", "-np", str(2 * per_node)])

    def tessera_runs(self, cluster, mode):
        work = tempfile.mkdtemp(prefix="tessera-gpu-runs-", dir=cluster.root)
        rng = np.random.default_rng(5)
        m, n, k = 1031, 1029, 1027
        a = rng.random((m, k)) * 2 - 1
        b = rng.random((k, n)) * 2 - 1
        with h5py.File(f"{work}/a.h5", "w") as f:
            f.create_dataset("A", data=a)
        with h5py.File(f"{work}/b.h5", "w") as f:
            f.create_dataset("B", data=b)
        ref = a @ b
        mag = np.abs(a) @ np.abs(b)
        hangs = 0
        for backend in self.args.backends.split(","):
            for alg in ("panels", "summa"):
                name = f"{backend}-{alg}"
                if self.left() < 70:
                    self.say(f"[{mode}] {name}: skipped (out of time)", ok=False)
                    continue
                if hangs >= 2:
                    self.say(f"[{mode}] {name}: skipped (two runs hung already)", ok=False)
                    continue
                c = f"{work}/{name}.h5"
                report = f"{work}/{name}.json"
                cmd = self.mpirun(cluster, 2) + [self.tessera, "run", "--a", f"{work}/a.h5:/A", "--b",
                                                 f"{work}/b.h5:/B", "--c", f"{c}:/C", "--backend", backend,
                                                 "--algorithm", alg, "--grid", "2x2", "--report", report, "-vv"]
                if backend == "cuda":
                    cmd += ["--comm", "host"]
                status, text, took = self.launch(cluster, cmd, 60, f"runs-{mode}.log",
                                                 f"[{mode}] {name}, 2 nodes x 2 ranks")
                if status is None:
                    hangs += 1
                    last = [x for x in text.splitlines() if x.startswith("tessera:")][-1:]
                    self.say(f"[{mode}] {name}: HUNG (killed after 60 s; last line {last}; stacks in hangs.log)",
                             ok=False)
                    continue
                if status != 0:
                    self.say(f"[{mode}] {name}: FAILED, exit {status} in {took:.1f} s (runs-{mode}.log)", ok=False)
                    continue
                self.check(mode, name, backend, c, report, ref, mag, k, took)

    def check(self, mode, name, backend, c, report, ref, mag, k, took):
        with h5py.File(c, "r") as f:
            got = f["C"][...].astype(np.float64)
        gamma = lambda u: k * u / (1 - k * u)  # noqa: E731
        bound = 2 * gamma(2.0**-53) + 4 * gamma(2.0**-53)
        err = np.abs(got - ref)
        worst = float(np.max(err / np.where(mag > 0, mag, 1)))
        rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        c_ok = bool(np.all(err <= bound * mag))
        with open(report) as f:
            rep = json.load(f)
        self.reports.setdefault(mode, {})[name] = rep
        hosts = [r["host"] for r in rep["ranks"]]
        local = [hosts[:i].count(h) for i, h in enumerate(hosts)]
        devices = [r["device_id"] for r in rep["ranks"]]
        if backend == "cuda":
            expect = [lr % max(self.gpus, 1) for lr in local]
            map_ok = devices == expect
            mapping = f"GPUs {devices} (node-local rank mod {self.gpus} GPU(s): {expect})"
        else:
            map_ok = all(d == -1 for d in devices)
            mapping = f"devices {[r['device'] for r in rep['ranks']][:1]}..."
        net = rep.get("network", {})
        # Open MPI's own choice across nodes: tcp and vader with ob1 (as on Debian), or ucx where
        # that machine's Open MPI takes it; either is right, "none" between two nodes is not.
        net_ok = net.get("nodes") == 2 and net.get("between_nodes") not in (None, "none", "none open", "unknown")
        hosts_ok = sorted(set(hosts)) == ["node1", "node2"] and hosts.count("node1") == 2
        ok = c_ok and map_ok and net_ok and hosts_ok
        self.say(f"[{mode}] {name}: {'ok' if ok else 'FAILED'} in {took:.1f} s: C rel. error {rel:.1e}, max "
                 f"normalized {worst:.1e} (bound {bound:.1e}){'' if c_ok else ' WRONG'}; hosts {hosts}; {mapping}"
                 f"{'' if map_ok else ' WRONG'}; network between nodes {net.get('between_nodes')}, within "
                 f"{net.get('within_node')}{'' if net_ok else ' UNEXPECTED'}; wall {rep['totals']['wall_seconds']:.2f} s",
                 ok=ok)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--tessera", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--deadline", type=float, default=420, help="seconds for all runs")
    p.add_argument("--backends", default="cpu,cuda", help="cpu,cuda (cpu alone: a try on a machine without GPU)")
    args = p.parse_args()
    runs = Runs(args)
    runs.say(f"GPUs visible: {runs.gpus}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(f"killed by signal {s}"))
    probed = False
    for mode in ("bridge", "loopback"):
        if runs.left() < 60:
            runs.say(f"[{mode}] not run (out of time)", ok=False)
            continue
        cluster = Cluster(f"/tmp/tessera-gpu-cluster-{mode}")
        try:
            try:
                cluster.up(2, slurm=False, net=mode, quiet=True)
            except ClusterError as e:
                runs.say(f"[{mode}] the two nodes could not be made: {e}", ok=mode == "bridge")
                continue
            runs.say(f"[{mode}] nodes node1, node2 up ({cluster.cidr}); mpirun {' '.join(cluster.mpirun_args())}")
            if not probed:
                runs.probe(cluster, mode)
                probed = True
            runs.tessera_runs(cluster, mode)
        finally:
            with open(os.path.join(args.out, "cluster.log"), "a") as f:
                f.write(f"==== {mode}\n")
                logdir = os.path.join(cluster.root, "log")
                for name in sorted(os.listdir(logdir)) if os.path.isdir(logdir) else []:
                    f.write(f"-- {name}\n" + open(os.path.join(logdir, name), errors="replace").read()[-3000:])
            cluster.down(quiet=True)
    with open(os.path.join(args.out, "reports.json"), "w") as f:
        json.dump(runs.reports, f, indent=1)
    runs.say(f"checks failed: {runs.failed}")
    return 1 if runs.failed else 0


if __name__ == "__main__":
    sys.exit(main())
