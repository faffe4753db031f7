"""How tessera's ranks are started (mpirun, srun or nothing) and the job run as a child process."""
from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Union

from .errors import EXIT_USAGE, TesseraError, UsageError

Launcher = Union[None, str, Sequence[str]]

# Names a launcher may be given by (launcher=..., or $TESSERA_LAUNCHER as the slurm/ scripts read it).
NAMES = ("auto", "mpirun", "mpiexec", "srun", "srun-pmix", "srun-pmi2", "none")


def _mpi_flavour(mpirun: str) -> str:
    """'openmpi', 'hydra' (MPICH, Intel MPI) or 'unknown', from `mpirun --version`."""
    try:
        p = subprocess.run([mpirun, "--version"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        text = p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    if "Open MPI" in text or "OpenRTE" in text:
        return "openmpi"
    if "HYDRA" in text or "Intel(R) MPI" in text:
        return "hydra"
    return "unknown"


def _srun_mpi_types(srun: str) -> str:
    try:
        p = subprocess.run([srun, "--mpi=list"], capture_output=True, text=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        return p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired):
        return ""


@dataclass
class Probe:
    """What the launcher choice asks of the machine; replaced in tests."""
    which: Callable[[str], Optional[str]] = shutil.which
    mpi_flavour: Callable[[str], str] = _mpi_flavour
    srun_mpi_types: Callable[[str], str] = _srun_mpi_types
    is_root: Callable[[], bool] = lambda: hasattr(os, "geteuid") and os.geteuid() == 0


_cache: Dict[tuple, str] = {}


def _cached(kind: str, fn: Callable[[str], str], arg: str) -> str:
    if (kind, arg, fn) not in _cache:
        _cache[(kind, arg, fn)] = fn(arg)
    return _cache[(kind, arg, fn)]


def _auto(ranks: int, env: Mapping[str, str], probe: Probe) -> str:
    """The launcher name for launcher='auto': $TESSERA_LAUNCHER; inside a Slurm allocation srun
    with PMIx, else with PMI-2, else mpirun (which reads the allocation), as slurm/common.sh
    chooses; outside one, a single rank runs the binary alone (an MPI singleton: no mpirun and
    its daemon to start), more ranks mpirun (or mpiexec)."""
    if env.get("TESSERA_LAUNCHER"):
        return env["TESSERA_LAUNCHER"]
    if ranks == 1 and not env.get("SLURM_JOB_ID"):
        # Inside Slurm srun still starts it: the rank then runs in a step of the allocation, on
        # its CPUs, and does not inherit this process's own step (PMI) environment.
        return "none"
    if env.get("SLURM_JOB_ID"):
        srun = probe.which("srun")
        if srun:
            types = [line.split()[0] for line in _cached("srun", probe.srun_mpi_types, srun).splitlines()
                     if line.split()]
            # `srun --mpi=list` prints the plugin names one per line (after a header).
            if "pmix" in types:
                return "srun-pmix"
            if "pmi2" in types:
                return "srun-pmi2"
    for name in ("mpirun", "mpiexec"):
        if probe.which(name):
            return name
    if ranks == 1:
        return "none"
    raise TesseraError(f"no MPI launcher to start {ranks} ranks: neither mpirun nor mpiexec is on PATH "
                       "(install Open MPI, or pass launcher=[...])")


def launcher_prefix(ranks: int, launcher: Launcher = None, *, env: Optional[Mapping[str, str]] = None,
                    probe: Optional[Probe] = None) -> List[str]:
    """The command that starts `ranks` ranks, to be followed by the tessera command line.

    launcher: None or "auto" (see _auto); "mpirun"/"mpiexec" (-np N, --bind-to none so each
    rank's BLAS threads are not pinned to one core, --allow-run-as-root for Open MPI as root),
    a path to one of them; "srun" (-n N, the site's default MPI plugin), "srun-pmix",
    "srun-pmi2"; "none" (one rank: the binary alone); or a list, the command as it is, to which
    "-n N" (srun) or "-np N" (anything else) is added."""
    env = os.environ if env is None else env
    probe = probe or Probe()
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise UsageError(f"ranks must be a whole number >= 1, got {ranks!r}", exit_code=EXIT_USAGE)
    if launcher is not None and not isinstance(launcher, str):
        prefix = [os.fspath(part) for part in launcher]
        if not prefix:
            raise UsageError("launcher=[]: give a command, or launcher='none'", exit_code=EXIT_USAGE)
        flag = "-n" if os.path.basename(prefix[0]) == "srun" else "-np"
        return prefix + [flag, str(ranks)]
    name = launcher or "auto"
    origin = "launcher"
    if name == "auto":
        name = _auto(ranks, env, probe)
        origin = "$TESSERA_LAUNCHER" if env.get("TESSERA_LAUNCHER") else origin
    path = None
    if os.path.basename(name) in ("mpirun", "mpiexec", "srun") and os.sep in name:
        path, name = name, os.path.basename(name)
    if name not in NAMES[1:]:
        raise UsageError(f"{origin} {name!r}: use one of {', '.join(NAMES)}, or a command as a list",
                         exit_code=EXIT_USAGE)
    if name == "none":
        if ranks != 1:
            raise UsageError(f"launcher 'none' starts one rank, not {ranks}", exit_code=EXIT_USAGE)
        return []
    program = path or probe.which(name.split("-")[0])
    if not program:
        raise TesseraError(f"launcher {name}: {name.split('-')[0]} is not on PATH")
    if name.startswith("srun"):
        mpi = [f"--mpi={name[5:]}"] if "-" in name else []
        return [program, *mpi, "-n", str(ranks)]
    flavour = _cached("mpi", probe.mpi_flavour, program)
    extra = []
    if flavour == "openmpi":
        # As slurm/common.sh: Open MPI binds each rank to a core by default, and the rank's
        # OpenBLAS threads would all share that core.
        extra = ["--bind-to", "none"] + (["--allow-run-as-root"] if probe.is_root() else [])
    elif flavour == "hydra":
        extra = ["-bind-to", "none"]
    return [program, "-np", str(ranks), *extra]


def child_env(prefix: Sequence[str], extra: Optional[Mapping[str, str]]) -> Dict[str, str]:
    env = dict(os.environ)
    env.update({k: str(v) for k, v in (extra or {}).items()})
    if prefix and os.path.basename(prefix[0]) == "srun" and env.get("SLURM_CPUS_PER_TASK"):
        # srun no longer passes the allocation's --cpus-per-task on to its steps (Slurm >= 22.05).
        env.setdefault("SRUN_CPUS_PER_TASK", env["SLURM_CPUS_PER_TASK"])
    return env


@dataclass
class Finished:
    command: List[str]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def _pump(stream, sink: List[str], echo) -> None:
    for line in iter(stream.readline, ""):
        sink.append(line)
        if echo is not None:
            echo.write(line)
            echo.flush()
    stream.close()


def _stop(proc: subprocess.Popen) -> None:
    """End the launcher and the ranks it started: SIGTERM to its process group, SIGKILL after 10 s."""
    for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def execute(command: Sequence[str], *, env: Mapping[str, str], cwd: Optional[str] = None,
            timeout: Optional[float] = None, echo: bool = False) -> Finished:
    """Run the job, capturing stdout and stderr (also copied to this process's as they come when
    `echo`). A timeout or an interrupt ends the whole job before the exception goes on."""
    command = list(command)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True, errors="replace", env=dict(env), cwd=cwd, start_new_session=True)
    except OSError as e:
        raise TesseraError(f"cannot start {command[0]}: {e.strerror or e}", command=command) from e
    out: List[str] = []
    err: List[str] = []
    pumps = [threading.Thread(target=_pump, args=(proc.stdout, out, sys.stdout if echo else None), daemon=True),
             threading.Thread(target=_pump, args=(proc.stderr, err, sys.stderr if echo else None), daemon=True)]
    for t in pumps:
        t.start()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(proc)
        for t in pumps:
            t.join(timeout=10)
        raise TesseraError(f"tessera did not finish within {timeout} s: the job was ended", command=command,
                           stdout="".join(out), stderr="".join(err)) from None
    except BaseException:
        _stop(proc)
        raise
    for t in pumps:
        t.join()
    return Finished(command, proc.returncode, "".join(out), "".join(err), time.monotonic() - t0)


def describe(command: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in command)
