#!/usr/bin/env python3
"""A simulated cluster of N nodes on one Linux machine, for tessera's multi-node tests.

    python3 tests/cluster/cluster.py up [--nodes 2] [--dir DIR] [--no-slurm] [--net bridge|loopback]
    python3 tests/cluster/cluster.py status [--dir DIR]
    python3 tests/cluster/cluster.py down [--dir DIR]
    python3 tests/cluster/cluster.py exec NODE [--dir DIR] -- COMMAND...
    python3 tests/cluster/cluster.py shape --rate 1gbit [--dir DIR]    (tc on the nodes' links; unshape)
    python3 tests/cluster/cluster.py private NODE PATH [--dir DIR]     (a tmpfs over PATH on NODE only)
    python3 tests/cluster/cluster.py env [--dir DIR]                   (lines VAR=value for a shell)

(scripts/cluster.sh runs this file.) Needs root. Each node `nodeK` is a set of Linux namespaces
held open by one small process: its own host name (UTS), its own mounts (a private /etc/hosts
naming every node, and whatever `private` mounts over a folder) and, with `--net bridge` (the
default), its own network stack: a veth pair to a bridge that `up` makes, address
<subnet>.K/24, where <subnet> is the first 10.213.X free on this machine; the bridge itself
has <subnet>.254. Traffic between nodes stays on that bridge. `--net loopback` keeps the host's
network (every node on 127.0.0.1: for a machine without veth or bridges, no Slurm then).

With Slurm (default; `--no-slurm` leaves it out): one munged (its own key and socket), one
slurmctld on the bridge address, and one slurmd per node started inside the node's namespaces
(its own spool folder, pid file and log: %n in slurm.conf). `env` prints SLURM_CONF and PATH for
sbatch/srun/sinfo. Plain mpirun reaches the nodes through DIR/bin/rsh (an rsh agent that enters
a node's namespaces) with DIR/bin/mpirun-args (the MCA options: plm rsh, that agent, TCP on the
bridge's subnet).

`up` is idempotent (a cluster already up with the same shape is kept; anything else in DIR is
taken down first), `down` stops every process it started by PID, and every other process still
inside a node's namespaces (a job's ranks), removes the bridge (the veths go with their
namespaces) and DIR. Everything lives in DIR (default /tmp/tessera-cluster): state.json names
the PIDs, log/ the daemons' logs. Standard library only.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time

DEFAULT_DIR = "/tmp/tessera-cluster"
SBIN_PATH = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
SLURM_TOOLS = ("munged", "mungekey", "munge", "slurmctld", "slurmd", "sbatch", "sinfo", "scancel", "scontrol", "srun")
NET_TOOLS = ("unshare", "nsenter", "mount")  # and ip for --net bridge
CPUS_PER_NODE = 2  # what slurm.conf declares per node (SlurmdParameters=config_overrides)

# The node holder: in the namespaces `unshare` made, name the host, bind its private files and
# folders (/etc/hosts, the node's TmpFS), bring its loopback up, say so on stdout, then wait to be killed.
HOLDER = r"""
import json, os, signal, socket, subprocess, sys
name, net, binds = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
socket.sethostname(name)
for source, target in binds:
    subprocess.run(["mount", "--bind", source, target], check=True)
if net == "bridge":
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
print("ready", flush=True)
signal.signal(signal.SIGTERM, lambda *a: os._exit(0))
while True:
    signal.pause()
"""


class ClusterError(RuntimeError):
    pass


def tool(name):
    return shutil.which(name, path=SBIN_PATH)


def run(cmd, check=True, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if check and p.returncode != 0:
        raise ClusterError(f"{' '.join(cmd)}: exit {p.returncode}: {(p.stderr or p.stdout).strip()}")
    return p


def alive(pid, program=None):
    """Whether `pid` runs, and (given `program`) still runs that program: a PID reused by
    something else since is not ours."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().split(b"\0")
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return False
    except OSError:
        return False
    return program is None or any(os.path.basename(a.decode(errors="replace")) == program for a in argv[:3])


def stop_pid(pid, program, timeout=10.0, sig=signal.SIGTERM):
    if not alive(pid, program):
        return
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and alive(pid):
        time.sleep(0.1)
    if alive(pid):
        os.kill(pid, signal.SIGKILL)
        while alive(pid):
            time.sleep(0.05)


def ns_id(pid, kind="uts"):
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except OSError:
        return None


def free_port(addr):
    with socket.socket() as s:
        s.bind((addr, 0))
        return s.getsockname()[1]


def host_subnets():
    """The 10.213.X used by any interface here (another cluster, or the site's own network)."""
    p = run(["ip", "-o", "-4", "addr", "show"], check=False)
    used = set()
    for line in p.stdout.splitlines():
        for word in line.split():
            if word.startswith("10.213."):
                used.add(int(word.split(".")[2]))
    return used


def tail(path, n=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return "(none)\n"


class Cluster:
    """A cluster kept in `root` (see the module's text); the tests use it in-process."""

    def __init__(self, root=DEFAULT_DIR):
        self.root = os.path.abspath(root)
        self.state_path = os.path.join(self.root, "state.json")
        self.state = None
        if os.path.exists(self.state_path):
            with open(self.state_path) as f:
                self.state = json.load(f)

    # ---- what a user of the cluster needs ----
    @property
    def nodes(self):
        return [f"node{i}" for i in range(1, self.state["nodes"] + 1)] if self.state else []

    def address(self, node):
        if self.state["net"] == "loopback":
            return "127.0.0.1"
        return f"{self.state['subnet']}.{int(node[4:])}"

    @property
    def cidr(self):
        return f"{self.state['subnet']}.0/24" if self.state["net"] == "bridge" else "lo"

    @property
    def rsh(self):
        return os.path.join(self.root, "bin", "rsh")

    def env(self):
        """The environment for sbatch, srun and sinfo run from the host (a 'login node')."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SRUN_", "SALLOC_"))}
        env["PATH"] = SBIN_PATH
        if self.state and self.state.get("slurm"):
            env["SLURM_CONF"] = os.path.join(self.root, "etc", "slurm.conf")
        return env

    def mpirun_args(self):
        """mpirun's options to start ranks on the nodes from the host: rsh through the agent,
        TCP (out-of-band and MPI traffic) on the nodes' network only."""
        args = ["--mca", "plm", "rsh", "--mca", "plm_rsh_agent", self.rsh,
                "--mca", "oob_tcp_if_include", self.cidr, "--mca", "btl_tcp_if_include", self.cidr]
        return args

    def enter(self, node, cmd):
        """`cmd` run inside `node`'s namespaces."""
        pid = self.state["holders"][node]
        kinds = ["--uts", "--mount"] + (["--net"] if self.state["net"] == "bridge" else [])
        return [tool("nsenter"), "-t", str(pid)] + kinds + ["--"] + list(cmd)

    def pids_on(self, node, program=None):
        """Every process inside `node` (its UTS namespace), but the holder; those running
        `program` only, when given."""
        holder = self.state["holders"][node]
        uts = ns_id(holder)
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == holder:
                continue
            pid = int(entry)
            if uts and ns_id(pid) == uts and (program is None or alive(pid, program)):
                found.append(pid)
        return sorted(found)

    def private_mount(self, node, path):
        """A tmpfs over `path` on `node` alone: the node no longer sees what the others write there."""
        run(self.enter(node, ["mount", "-t", "tmpfs", "-o", "size=64m", "tessera-private", path]))

    def private_unmount(self, node, path):
        run(self.enter(node, ["umount", path]), check=False)

    def shape(self, rate, burst="256kb", latency="50ms"):
        """Every node's link limited to `rate` each way (tc tbf on both ends of its veth)."""
        self._need_bridge("shape")
        for node in self.nodes:
            host_end, _ = self._veth(node)
            run(["tc", "qdisc", "replace", "dev", host_end, "root", "tbf", "rate", rate, "burst", burst,
                 "latency", latency])
            run(self.enter(node, ["tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", rate,
                                  "burst", burst, "latency", latency]))

    def unshape(self):
        self._need_bridge("unshape")
        for node in self.nodes:
            host_end, _ = self._veth(node)
            run(["tc", "qdisc", "del", "dev", host_end, "root"], check=False)
            run(self.enter(node, ["tc", "qdisc", "del", "dev", "eth0", "root"]), check=False)

    # ---- up ----
    def up(self, nodes, slurm=True, net="bridge", gpus=0, quiet=False):
        say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
        if os.geteuid() != 0:
            raise ClusterError("needs root (namespaces, mounts, network links; slurmd runs as root)")
        if self.state and self.state.get("complete") and self.state["nodes"] == nodes and \
                self.state["net"] == net and bool(self.state.get("slurm")) == slurm and \
                self.state.get("gpus", 0) == gpus and self.healthy():
            say(f"cluster in {self.root} is up already: {', '.join(self.nodes)}")
            return
        if os.path.exists(self.root):
            self.down(quiet=True)
        missing = [t for t in NET_TOOLS + (("ip",) if net == "bridge" else ()) + (SLURM_TOOLS if slurm else ())
                   if not tool(t)]
        if missing:
            raise ClusterError(f"missing tools: {', '.join(missing)} (bash scripts/setup.sh --cluster)")
        if slurm and net != "bridge":
            raise ClusterError("Slurm needs --net bridge (every slurmd its own address)")
        t0 = time.monotonic()
        for d in ("etc", "log", "run", "bin", "spool", "state", "tmp", "munge", "dev"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        os.chmod(self.root, 0o755)
        self.state = {"nodes": nodes, "net": net, "slurm": slurm, "gpus": gpus, "holders": {}, "daemons": [],
                      "bridge": None, "subnet": None, "complete": False}
        try:
            if net == "bridge":
                self._make_bridge()
            self._write_hosts()
            for i in range(1, nodes + 1):
                self._start_node(f"node{i}")
            self._write_rsh()
            if slurm:
                self._start_slurm()
            self.state["complete"] = True
            self._save()
        except BaseException:
            self.dump_logs()
            self.down(quiet=True)
            raise
        say(f"cluster up in {time.monotonic() - t0:.1f} s: {', '.join(self.nodes)}"
            + (f" on {self.cidr} (bridge {self.state['bridge']})" if net == "bridge" else " on the loopback")
            + (", Slurm partition 'cluster'" if slurm else "") + f"; state in {self.root}")

    def _save(self):
        tmp = self.state_path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.state, f, indent=1)
        os.replace(tmp, self.state_path)

    def _need_bridge(self, what):
        if not self.state or self.state["net"] != "bridge":
            raise ClusterError(f"{what}: only a cluster with --net bridge has links of its own")

    def _veth(self, node):
        return f"{self.state['bridge']}-{node[4:]}", "eth0"

    def _make_bridge(self):
        used = host_subnets()
        x = next((x for x in range(1, 255) if x not in used), None)
        if x is None:
            raise ClusterError("no free subnet 10.213.X.0/24")
        self.state["subnet"] = f"10.213.{x}"
        self.state["bridge"] = f"tsbr{x}"
        self._save()  # down() removes it, even when up fails half-way
        br = self.state["bridge"]
        run(["ip", "link", "add", br, "type", "bridge"])
        run(["ip", "addr", "add", f"{self.state['subnet']}.254/24", "dev", br])
        run(["ip", "link", "set", br, "up"])

    def _write_hosts(self):
        lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
        if self.state["net"] == "bridge":
            lines.append(f"{self.state['subnet']}.254 {socket.gethostname().split('.')[0]}")
            lines += [f"{self.state['subnet']}.{i} node{i}" for i in range(1, self.state["nodes"] + 1)]
        else:
            lines += [f"127.0.0.1 node{i}" for i in range(1, self.state["nodes"] + 1)]
        with open(os.path.join(self.root, "etc", "hosts"), "w") as f:
            f.write("\n".join(lines) + "\n")

    def _start_node(self, node):
        kinds = ["--uts", "--mount", "--propagation", "slave"] + (["--net"] if self.state["net"] == "bridge" else [])
        # Node-local folders: Slurm's TmpFS (PMIx puts each step's folder there, named the same
        # on every node) and slurmd's spool.
        node_tmp = os.path.join(self.root, "node-tmp", node)
        for d in (node_tmp, os.path.join(self.root, "spool", node)):
            os.makedirs(d, exist_ok=True)
        binds = [[os.path.join(self.root, "etc", "hosts"), "/etc/hosts"], [node_tmp, os.path.join(self.root, "tmp")]]
        log = open(os.path.join(self.root, "log", f"{node}.holder.out"), "w")
        proc = subprocess.Popen([tool("unshare")] + kinds + ["--", sys.executable, "-c", HOLDER, node,
                                                             self.state["net"], json.dumps(binds)],
                                stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                                start_new_session=True)
        log.close()
        self.state["holders"][node] = proc.pid
        self._save()
        line = proc.stdout.readline().strip()
        proc.stdout.close()
        if line != "ready":
            raise ClusterError(f"{node}: the namespaces could not be made (unshare exit {proc.poll()}): "
                               + tail(os.path.join(self.root, "log", f"{node}.holder.out")))
        if self.state["net"] == "bridge":
            host_end, node_end = self._veth(node)
            run(["ip", "link", "add", host_end, "type", "veth", "peer", "name", node_end, "netns", str(proc.pid)])
            run(["ip", "link", "set", host_end, "master", self.state["bridge"]])
            run(["ip", "link", "set", host_end, "up"])
            run(self.enter(node, ["ip", "addr", "add", f"{self.address(node)}/24", "dev", node_end]))
            run(self.enter(node, ["ip", "link", "set", node_end, "up"]))

    def _write_rsh(self):
        """Open MPI's rsh agent: `rsh HOST COMMAND...` runs COMMAND (a shell line) on HOST."""
        holders = " ".join(f"{n}={p}" for n, p in self.state["holders"].items())
        kinds = "--uts --mount" + (" --net" if self.state["net"] == "bridge" else "")
        script = f"""#!/bin/sh
# Made by tests/cluster/cluster.py: Open MPI's plm_rsh_agent for the simulated nodes.
host=$1
shift
pid=""
for pair in {holders}; do
  [ "${{pair%%=*}}" = "$host" ] && pid=${{pair#*=}}
done
[ -n "$pid" ] || {{ echo "rsh: no node '$host' in {self.root}" >&2; exit 255; }}
exec {tool('nsenter')} -t "$pid" {kinds} -- /bin/sh -c "$*"
"""
        with open(self.rsh, "w") as f:
            f.write(script)
        os.chmod(self.rsh, 0o755)
        with open(os.path.join(self.root, "bin", "mpirun-args"), "w") as f:
            f.write(" ".join(self.mpirun_args()) + "\n")

    def _spawn(self, name, cmd, node=None, **kw):
        log = open(os.path.join(self.root, "log", f"{name}.out"), "w")
        full = self.enter(node, cmd) if node else cmd
        proc = subprocess.Popen(full, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=self.env(), cwd=self.root, start_new_session=True, **kw)
        log.close()
        # nsenter execs the daemon in place (no new PID namespace): the PID is the daemon's
        self.state["daemons"].append({"name": name, "pid": proc.pid, "program": os.path.basename(cmd[0]),
                                      "node": node})
        self._save()
        return proc

    def _wait(self, what, cond, timeout, proc=None):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc is not None and proc.poll() is not None:
                raise ClusterError(f"{what}: the daemon exited with status {proc.returncode}")
            if cond():
                return
            time.sleep(0.2)
        raise ClusterError(f"{what}: not ready after {timeout} s")

    def _start_slurm(self):
        mdir = os.path.join(self.root, "munge")
        shutil.chown(mdir, "munge", "munge")
        sock = os.path.join(mdir, "munge.socket")
        key = os.path.join(mdir, "munge.key")
        as_munge = dict(user="munge", group="munge", extra_groups=[])
        run([tool("mungekey"), "--create", "--keyfile", key], **as_munge)
        munged = self._spawn("munged", [tool("munged"), "--foreground", "--socket", sock, "--key-file", key,
                                        "--pid-file", os.path.join(mdir, "munged.pid"),
                                        "--log-file", os.path.join(self.root, "log", "munged.log"),
                                        "--seed-file", os.path.join(mdir, "munged.seed")], **as_munge)
        self._wait("munged", lambda: run([tool("munge"), "--socket", sock, "-n"], check=False).returncode == 0,
                   15, munged)
        self._write_slurm_conf(sock)
        self._write_gres()
        ctld = self._spawn("slurmctld", [tool("slurmctld"), "-D"])
        self._wait("slurmctld", lambda: self.node_states() != {}, 30, ctld)
        for node in self.nodes:
            self._spawn(f"slurmd-{node}", [tool("slurmd"), "-D"], node=node)
        self._wait("slurmd on every node", lambda: all(s == "idle" for s in self.node_states().values()), 60)

    def _write_gres(self):
        """Placeholder GPUs (--gpus): gres files that are character devices like /dev/null (Slurm
        then sets CUDA_VISIBLE_DEVICES per task), or plain files where mknod is not allowed. They
        let the GPU scripts' --gpus-per-node be scheduled; the jobs compute on the CPU."""
        g = self.state.get("gpus", 0)
        with open(os.path.join(self.root, "etc", "gres.conf"), "w") as f:
            if g:
                f.write(f"Name=gpu File={self.root}/dev/gpu[0-{g - 1}]\n")
        for i in range(g):
            path = os.path.join(self.root, "dev", f"gpu{i}")
            try:
                os.mknod(path, stat.S_IFCHR | 0o600, os.makedev(1, 3))
            except OSError:
                open(path, "w").close()

    def restart_slurmd(self, node):
        """slurmd of `node` started again (after a test stopped it), and the node back in service."""
        self.state["daemons"] = [d for d in self.state["daemons"] if d["name"] != f"slurmd-{node}"]
        self._spawn(f"slurmd-{node}", [tool("slurmd"), "-D"], node=node)
        run([tool("scontrol"), "update", f"nodename={node}", "state=resume"], check=False, env=self.env())
        self._wait(f"slurmd on {node}", lambda: self.node_states().get(node) == "idle", 60)

    def _write_slurm_conf(self, sock):
        r, sub = self.root, self.state["subnet"]
        g = self.state.get("gpus", 0)
        node_lines = "\n".join(f"NodeName=node{i} NodeAddr={sub}.{i} CPUs={CPUS_PER_NODE}"
                               + (f" Gres=gpu:{g}" if g else "") + " State=UNKNOWN"
                               for i in range(1, self.state["nodes"] + 1))
        conf = f"""# Made by tests/cluster/cluster.py: {self.state['nodes']} simulated nodes (namespaces) on one machine.
ClusterName=tessera-cluster
SlurmctldHost={socket.gethostname().split('.')[0]}({sub}.254)
SlurmctldPort={free_port(sub + '.254')}
SlurmdPort=6818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={sock}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool/%n
TmpFS={r}/tmp
SlurmctldPidFile={r}/run/slurmctld.pid
SlurmdPidFile={r}/run/slurmd-%n.pid
SlurmctldLogFile={r}/log/slurmctld.log
SlurmdLogFile={r}/log/slurmd-%n.log
# the nodes share this machine's cores: take the CPUs declared below, not the hardware's
SlurmdParameters=config_overrides
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
# sbatch --wait polls every 2 s only while MinJobAge / 2 <= 2
MinJobAge=4
KillWait=5
# a node whose slurmd is gone is declared down (and its jobs ended) after this many seconds
SlurmdTimeout=10
MessageTimeout=5
{"GresTypes=gpu" if g else ""}
{node_lines}
PartitionName=cluster Nodes=node[1-{self.state['nodes']}] Default=YES MaxTime=INFINITE State=UP
"""
        with open(os.path.join(r, "etc", "slurm.conf"), "w") as f:
            f.write(conf)

    def node_states(self):
        """{node: state} as sinfo says ('idle', 'alloc', 'down*', ...); {} where it cannot tell."""
        p = run([tool("sinfo"), "-h", "-N", "-o", "%N %T"], check=False, env=self.env())
        if p.returncode != 0:
            return {}
        return dict(line.split() for line in p.stdout.splitlines() if len(line.split()) == 2)

    # ---- status, down ----
    def healthy(self):
        if not self.state:
            return False
        if not all(alive(p) for p in self.state["holders"].values()):
            return False
        if not all(alive(d["pid"], d["program"]) for d in self.state["daemons"]):
            return False
        return not self.state.get("slurm") or all(s in ("idle", "mix", "alloc") for s in self.node_states().values())

    def status(self):
        if not self.state:
            print(f"no cluster in {self.root}")
            return False
        print(f"cluster in {self.root}: {self.state['nodes']} node(s), network {self.state['net']}"
              + (f" {self.cidr} (bridge {self.state['bridge']})" if self.state["net"] == "bridge" else ""))
        for node in self.nodes:
            pid = self.state["holders"][node]
            print(f"  {node}: address {self.address(node)}, namespaces held by pid {pid} "
                  f"({'alive' if alive(pid) else 'GONE'}), {len(self.pids_on(node)) if alive(pid) else 0} process(es) inside")
        for d in self.state["daemons"]:
            print(f"  {d['name']}: pid {d['pid']} {'alive' if alive(d['pid'], d['program']) else 'GONE'}")
        if self.state.get("slurm"):
            print("  slurm: " + ", ".join(f"{n} {s}" for n, s in sorted(self.node_states().items())))
        ok = self.healthy()
        print("healthy" if ok else "NOT healthy")
        return ok

    def dump_logs(self):
        logdir = os.path.join(self.root, "log")
        if not os.path.isdir(logdir):
            return
        for name in sorted(os.listdir(logdir)):
            print(f"---- {name} (tail) ----\n{tail(os.path.join(logdir, name))}", end="")

    def down(self, quiet=False):
        say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
        if not self.state:
            if os.path.isdir(self.root):
                shutil.rmtree(self.root, ignore_errors=True)
            say(f"no cluster in {self.root}")
            return
        if self.state.get("slurm") and any(d["name"] == "slurmctld" and alive(d["pid"], d["program"])
                                           for d in self.state["daemons"]):
            run([tool("scancel"), "--full", "--user", "root"], check=False, env=self.env())
        for d in reversed(self.state["daemons"]):  # slurmds, slurmctld, munged
            stop_pid(d["pid"], d["program"])
        # Whatever else runs inside a node (a job's ranks, slurmstepd, orted): by PID, node by node.
        for node, holder in self.state["holders"].items():
            if not alive(holder):
                continue
            for pid in self.pids_on(node):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            stop_pid(holder, None)
        if self.state.get("bridge"):
            run(["ip", "link", "del", self.state["bridge"]], check=False)
            for node in self.nodes:  # gone with their namespaces; in case a holder was not
                run(["ip", "link", "del", self._veth(node)[0]], check=False)
        shutil.rmtree(self.root, ignore_errors=True)
        self.state = None
        say(f"cluster in {self.root} is down; nothing left")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=["up", "down", "status", "exec", "shape", "unshape", "private", "env"])
    p.add_argument("rest", nargs="*", help="exec: NODE COMMAND...; private: NODE PATH")
    p.add_argument("--dir", default=os.environ.get("TESSERA_CLUSTER_DIR", DEFAULT_DIR))
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--no-slurm", action="store_true", help="namespaces and network only")
    p.add_argument("--net", choices=["bridge", "loopback"], default="bridge")
    p.add_argument("--gpus", type=int, default=0, help="placeholder GPUs (Slurm gres) per node")
    p.add_argument("--rate", default="1gbit", help="shape: the links' rate (tc's units)")
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    args = p.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.rest += command
    c = Cluster(args.dir)
    try:
        if args.action == "up":
            if not 1 <= args.nodes <= 64:
                raise ClusterError("--nodes: 1 to 64")
            c.up(args.nodes, slurm=not args.no_slurm, net=args.net, gpus=args.gpus)
        elif args.action == "down":
            c.down()
        elif args.action == "status":
            return 0 if c.status() else 1
        elif c.state is None:
            raise ClusterError(f"no cluster in {c.root}: run 'up' first")
        elif args.action == "exec":
            if len(args.rest) < 2 or args.rest[0] not in c.nodes:
                raise ClusterError(f"exec NODE COMMAND...: NODE one of {', '.join(c.nodes)}")
            return subprocess.call(c.enter(args.rest[0], args.rest[1:]))
        elif args.action == "shape":
            c.shape(args.rate)
            print(f"every node's link limited to {args.rate} each way")
        elif args.action == "unshape":
            c.unshape()
        elif args.action == "private":
            if len(args.rest) != 2 or args.rest[0] not in c.nodes:
                raise ClusterError("private NODE PATH")
            c.private_mount(args.rest[0], args.rest[1])
        elif args.action == "env":
            env = c.env()
            for k in ("SLURM_CONF", "PATH"):
                if k in env:
                    print(f"{k}={env[k]}")
            print(f"TESSERA_CLUSTER_MPIRUN_ARGS='{' '.join(c.mpirun_args())}'")
    except ClusterError as e:
        print(f"cluster: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
