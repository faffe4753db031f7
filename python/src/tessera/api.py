"""tessera.run and tessera.dry_run: build the command line, launch the binary, read the report."""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, Optional

from .binary import CliOption, cli_options, find_binary
from .errors import EXIT_USAGE, TesseraError, UsageError
from .launch import Launcher, child_env, execute, launcher_prefix
from .options import Dataset, cli_args, dataset_file, dataset_ref
from .report import DryRun, Report


def _known_options(binary: str, options: Mapping[str, Any], check: bool) -> Dict[str, CliOption]:
    """`tessera run`'s options (and the top-level ones such as --config, asked for only when an
    option is not one of run's). Unchecked: each option taken for what its value looks like."""
    if not check:
        return {n.replace("_", "-"): CliOption(n.replace("_", "-"), not isinstance(v, bool) and v is not None)
                for n, v in options.items()}
    known = dict(cli_options(binary, "run"))
    if any(n.replace("_", "-") not in known for n in options):
        top = {n: o for n, o in cli_options(binary).items() if n not in ("version", "help")}
        known = {**top, **known}
    return known


def _report_dir(near: Optional[str]) -> str:
    """A temporary folder for the report: beside C where its folder is writable (rank 0, which
    writes the report, sees that folder wherever it runs), else the system's temporary folder."""
    if near:
        folder = os.path.dirname(os.path.abspath(near)) or "."
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            try:
                return tempfile.mkdtemp(prefix=".tessera-report-", dir=folder)
            except OSError:
                pass
    return tempfile.mkdtemp(prefix="tessera-report-")


def _launch(kind, command_tail: List[str], *, binary: str, prefix: List[str], options: Dict[str, Any],
            known: Dict[str, CliOption], near: Optional[str], env, cwd, timeout, echo, extra_args: Iterable[str]):
    keep = options.pop("report", None)
    args = cli_args(options, known)
    folder = None
    if keep is not None:
        report_path = os.fspath(keep)
    else:
        folder = _report_dir(os.path.join(cwd, near) if cwd and near else near)
        report_path = os.path.join(folder, "report.json")
    command = [*prefix, binary, "run", *command_tail, *args, "--report", report_path, *map(str, extra_args)]
    try:
        done = execute(command, env=child_env(prefix, env), cwd=cwd, timeout=timeout, echo=echo)
        if done.returncode != 0:
            raise TesseraError.from_job(done.returncode, command, done.stdout, done.stderr)
        path = report_path if os.path.isabs(report_path) or not cwd else os.path.join(cwd, report_path)
        try:
            result = kind.load(path)
        except (OSError, ValueError) as e:
            raise TesseraError(f"tessera exited with status 0 but its report {report_path} cannot be read: {e}",
                               exit_code=0, command=command, stdout=done.stdout, stderr=done.stderr) from e
    finally:
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
    result.command, result.stdout, result.stderr = command, done.stdout, done.stderr
    return result


def run(a: Dataset, b: Dataset, c: Dataset, ranks: int = 1, *, binary: Optional[os.PathLike] = None,
        launcher: Launcher = None, env: Optional[Mapping[str, str]] = None, cwd: Optional[os.PathLike] = None,
        timeout: Optional[float] = None, echo: bool = False, extra_args: Iterable[str] = (),
        check_options: bool = True, **options: Any) -> Report:
    """C = A·B on `ranks` MPI ranks with the tessera binary; returns its report.

    a, b, c   datasets: "file.h5:/path" as tessera reads it, or a (file, path) pair
    ranks     MPI ranks to start
    options   `tessera run` options by name, underscores for dashes: backend="cpu", grid="2x2"
              or (2, 2), algorithm="summa", overwrite=True (a flag), report="r.json" (also keep
              the JSON file), config="job.toml". Checked against the binary's `run --help`.
    binary    the tessera executable (default $TESSERA_BIN, else `tessera` on PATH)
    launcher  None/"auto": srun inside a Slurm allocation, else mpirun; "mpirun", "srun",
              "srun-pmix", "srun-pmi2", "none" (one rank), or a command list (["mpiexec", "-x", "V"])
    env       variables added to the job's environment; cwd: where it runs
    timeout   seconds; past it the job is ended and TesseraError raised
    echo      also print tessera's output (the table, progress) as it comes
    extra_args  further command-line arguments, unchecked

    Raises TesseraError (exit_code 1), UsageError (2) or VerificationError (3) with tessera's
    message; the report's .stdout holds the table tessera printed."""
    binary = find_binary(binary)
    refs = {name: dataset_ref(value, name) for name, value in (("a", a), ("b", b), ("c", c))}
    known = _known_options(binary, options, check_options)
    prefix = launcher_prefix(ranks, launcher)
    tail = ["--a", refs["a"], "--b", refs["b"], "--c", refs["c"]]
    return _launch(Report, tail, binary=binary, prefix=prefix, options=dict(options), known=known,
                   near=dataset_file(refs["c"]), env=env, cwd=os.fspath(cwd) if cwd else None, timeout=timeout,
                   echo=echo, extra_args=extra_args)


def dry_run(a: Optional[Dataset] = None, b: Optional[Dataset] = None, *, m: Optional[int] = None,
            n: Optional[int] = None, k: Optional[int] = None, ranks: int = 1, binary: Optional[os.PathLike] = None,
            env: Optional[Mapping[str, str]] = None, cwd: Optional[os.PathLike] = None,
            timeout: Optional[float] = None, extra_args: Iterable[str] = (), check_options: bool = True,
            **options: Any) -> DryRun:
    """The plan of C = A·B on `ranks` ranks without running it (`tessera run --dry-run`): from the
    datasets a and b, or from the sizes m, n, k. One process plans for any rank count, so no
    launcher is used. Options and errors as for run(); the plan's text is in .stdout."""
    binary = find_binary(binary)
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise UsageError(f"ranks must be a whole number >= 1, got {ranks!r}", exit_code=EXIT_USAGE)
    sizes = {"m": m, "n": n, "k": k}
    if a is not None or b is not None:
        if a is None or b is None or any(v is not None for v in sizes.values()):
            raise UsageError("dry_run: give both a and b, or m, n and k (not both)", exit_code=EXIT_USAGE)
        tail = ["--a", dataset_ref(a, "a"), "--b", dataset_ref(b, "b")]
    else:
        missing = [name for name, v in sizes.items() if v is None]
        if missing:
            raise UsageError(f"dry_run: give a and b, or m, n and k (missing {', '.join(missing)})",
                             exit_code=EXIT_USAGE)
        tail = [arg for name, v in sizes.items() for arg in (f"--{name}", str(int(v)))]
    known = _known_options(binary, options, check_options)
    return _launch(DryRun, ["--dry-run", *tail, "--ranks", str(ranks)], binary=binary, prefix=[],
                   options=dict(options), known=known, near=None, env=env, cwd=os.fspath(cwd) if cwd else None,
                   timeout=timeout, echo=False, extra_args=extra_args)
