"""tessera.run, dry_run, generate and verify: build the command line (options checked against the
binary's --help-json), launch the binary, read what it wrote."""
from __future__ import annotations

import json
import math
import numbers
import os
import shutil
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from .binary import command_spec, find_binary
from .errors import EXIT_USAGE, TesseraError, UsageError, tessera_message
from .launch import Launcher, child_env, execute, launcher_prefix
from .options import Dataset, dataset_file, dataset_ref
from .report import DryRun, Report
from .results import Generated, Verification
from .typed import OptionError, check_value, options_type, to_args

# Set by the functions' own arguments, never through **options.
RESERVED = {"run": {"a", "b", "c", "dry_run", "m", "n", "k", "ranks"}, "generate": {"out", "rows", "cols"},
            "verify": {"a", "b", "c"}}


def _unchecked(options: Mapping[str, Any]) -> List[str]:
    """check_options=False: each option taken for what its value looks like (True a flag, a
    pair for grid 'AxB', a list joined by commas)."""
    args: List[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is None or value is False:
            continue
        if value is True:
            args.append(flag)
        elif isinstance(value, (list, tuple)):
            args += [flag, ("x" if name in ("grid", "chunk") else ",").join(str(v) for v in value)]
        else:
            args += [flag, os.fspath(value) if isinstance(value, os.PathLike) else str(value)]
    return args


def option_args(binary: str, command: str, options: Mapping[str, Any], check: bool = True) -> List[str]:
    """`tessera COMMAND`'s options as command-line words: through the command's options dataclass
    (typed.options_type), which refuses an unknown option or a value it cannot take."""
    options = {name.replace("-", "_"): value for name, value in options.items()}
    for name in options:
        if name in RESERVED.get(command, ()) or name in ("help", "help_json", "version"):
            raise OptionError(f"option {name!r} is not an option here: it is set by the function's own "
                              "arguments", option=name)
    if not check:
        return _unchecked(options)
    return options_type(command, binary)(**options).to_args()
def _own_args(binary: str, command: str, values: Mapping[str, Any], check: bool) -> List[str]:
    """Options set by a function's own arguments (dry_run's m, n, k; generate's rows, cols) as
    words, checked against the binary's --help-json like any other option: a value outside the
    parser's range raises OptionError before anything is launched."""
    values = {name: int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v
              for name, v in values.items()}
    if not check:
        return _unchecked(values)
    spec = command_spec(binary, command)
    return to_args(spec, {name: check_value(command, spec.options[name], v) for name, v in values.items()})


def _recover_output(binary: str, file: str, env: Optional[Mapping[str, str]], cwd: Optional[str]):
    """After a failed job that wrote to `file`: `tessera recover FILE` (the binary alone), so that
    the next step of a pipeline never reads a file a dead job left half-written. Returns what it
    found, for the exception, and whether the file was restored."""
    where = file if os.path.isabs(file) or not cwd else os.path.join(cwd, file)
    if not os.path.exists(where):
        return f"the output file {file} does not exist (nothing to restore)", False
    # The crash tests' hooks stop the job, never its recovery.
    recover_env = {k: v for k, v in child_env([], env).items() if not k.startswith("TESSERA_TEST_")}
    command = [binary, "recover", file]
    try:
        done = execute(command, env=recover_env, cwd=cwd, timeout=300)
    except TesseraError as e:
        return f"the output file {file} could not be restored ({e.message}): run `tessera recover {file}`", False
    said = (done.stdout or "").strip()
    if done.returncode != 0:
        why = tessera_message(done.stderr) or (done.stderr or "").strip() or f"exit status {done.returncode}"
        return f"the output file {file} could not be restored: {why}", False
    if "no interrupted tessera write" in said:
        return f"the output file {file} needed no restoring (no interrupted write to undo)", False
    return f"the output file {file} was restored by `tessera recover`: {said}", True


def _failed_job(e: TesseraError, binary: str, output: Optional[str], env, cwd) -> TesseraError:
    """The exception for a failed job, after its output file's recovery where it has one."""
    if output is None:
        return e
    return e.with_recovery(*_recover_output(binary, output, env, cwd))


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


def _run_args(binary: str, options: Dict[str, Any], check: bool):
    """`tessera run`'s options as words, and report= apart (the report path is always given)."""
    options = dict(options)
    keep = options.pop("report", None)
    if keep is not None:
        option_args(binary, "run", {"report": keep}, check)  # its type checked as any other
    return option_args(binary, "run", options, check), keep


def _launch(kind, command_tail: List[str], *, binary: str, prefix: List[str], args: List[str], keep,
            near: Optional[str], env, cwd, timeout, echo, extra_args: Iterable[str], output: Optional[str] = None):
    folder = None
    if keep is not None:
        report_path = os.fspath(keep)
    else:
        folder = _report_dir(os.path.join(cwd, near) if cwd and near else near)
        report_path = os.path.join(folder, "report.json")
    command = [*prefix, binary, "run", *command_tail, *args, "--report", report_path, *map(str, extra_args)]
    try:
        try:
            done = execute(command, env=child_env(prefix, env), cwd=cwd, timeout=timeout, echo=echo)
            if done.returncode != 0:
                raise TesseraError.from_job(done.returncode, command, done.stdout, done.stderr)
        except TesseraError as e:
            raise _failed_job(e, binary, output, env, cwd) from None
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


_PRODUCT_KEYS = {"transpose_a": "transpose-a", "transpose_b": "transpose-b", "alpha": "alpha", "beta": "beta"}


def _manifest(products: Sequence[Any]) -> str:
    """products as a manifest's [[product]] tables (TOML; its strings written as JSON writes them,
    which TOML's basic strings read alike)."""
    if isinstance(products, (str, bytes)) or not products:
        raise UsageError("run: products must be a non-empty list of (a, b, c) or dicts with a, b and c",
                         exit_code=EXIT_USAGE)
    tables = []
    for i, item in enumerate(products):
        given = dict(item) if isinstance(item, Mapping) else dict(zip("abc", item))
        if isinstance(item, (tuple, list)) and len(item) == 4 and isinstance(item[3], Mapping):
            given = {**dict(zip("abc", item[:3])), **item[3]}
        missing = [key for key in "abc" if given.get(key) is None]
        unknown = sorted(set(given) - set("abc") - set(_PRODUCT_KEYS))
        if missing or unknown:
            raise UsageError(f"run: product {i + 1} " + (f"lacks {', '.join(missing)}" if missing else
                             f"has unknown keys {', '.join(unknown)} (it takes a, b, c, "
                             f"{', '.join(_PRODUCT_KEYS)})"), exit_code=EXIT_USAGE)
        lines = ["[[product]]"] + [f"{key} = {json.dumps(dataset_ref(given[key], key), ensure_ascii=False)}"
                                   for key in "abc"]
        for key, word in _PRODUCT_KEYS.items():
            if key in given:
                value = given[key]
                if key.startswith("transpose"):
                    if not isinstance(value, bool):
                        raise UsageError(f"run: product {i + 1}'s {key} must be True or False", exit_code=EXIT_USAGE)
                    lines.append(f"{word} = {'true' if value else 'false'}")
                else:
                    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                        raise UsageError(f"run: product {i + 1}'s {key} must be a finite number", exit_code=EXIT_USAGE)
                    lines.append(f"{word} = {float(value)!r}")
        tables.append("\n".join(lines))
    return "\n\n".join(tables) + "\n"


def run(a: Optional[Dataset] = None, b: Optional[Dataset] = None, c: Optional[Dataset] = None, ranks: int = 1, *,
        products: Optional[Sequence[Any]] = None, binary: Optional[os.PathLike] = None,
        launcher: Launcher = None, env: Optional[Mapping[str, str]] = None, cwd: Optional[os.PathLike] = None,
        timeout: Optional[float] = None, echo: bool = False, extra_args: Iterable[str] = (),
        check_options: bool = True, **options: Any) -> Report:
    """C = A·B on `ranks` MPI ranks with the tessera binary; returns its report.

    a, b, c   datasets: "file.h5:/path" as tessera reads it, or a (file, path) pair; wildcards
              over groups run many products in one launch (`--a in.h5:/runs/*/A`)
    products  instead of a, b, c: many products in one launch (one MPI start, one backend), a
              list of (a, b, c), (a, b, c, {...}) or dicts with a, b, c and optionally
              transpose_a, transpose_b, alpha, beta; passed as a manifest (--manifest). The
              report's .products holds each product's report.
    ranks     MPI ranks to start
    options   `tessera run` options by name, underscores for dashes: backend="cpu", grid="2x2"
              or (2, 2), algorithm="summa", overwrite=True (a flag), report="r.json" (also keep
              the JSON file), config="job.toml". Checked before anything runs against the
              binary's `run --help-json` (tessera.options_type("run")): an unknown option or a
              value of the wrong type or range raises OptionError (a UsageError)
    binary    the tessera executable (default $TESSERA_BIN, else `tessera` on PATH)
    launcher  None/"auto": srun inside a Slurm allocation, else mpirun, and one rank outside
              Slurm as the binary alone (no launcher: an MPI singleton); "mpirun", "srun",
              "srun-pmix", "srun-pmi2", "none" (one rank), or a command list (["mpiexec", "-x", "V"])
    env       variables added to the job's environment; cwd: where it runs
    timeout   seconds; past it the job is ended and TesseraError raised
    echo      also print tessera's output (the table, progress) as it comes
    extra_args  further command-line arguments, unchecked

    Raises TesseraError (exit_code 1), UsageError (2) or VerificationError (3) with tessera's
    message; the report's .stdout holds the table tessera printed."""
    binary = find_binary(binary)
    if products is not None:
        if a is not None or b is not None or c is not None:
            raise UsageError("run: give a, b and c, or products (not both)", exit_code=EXIT_USAGE)
        text = _manifest(products)
        first_c = dataset_ref(products[0]["c"] if isinstance(products[0], Mapping) else products[0][2], "c")
        args, keep = _run_args(binary, options, check_options)
        near = dataset_file(first_c)
        folder = _report_dir(os.path.join(os.fspath(cwd), near) if cwd else near)
        try:
            manifest = os.path.join(folder, "products.toml")
            with open(manifest, "w", encoding="utf-8") as f:
                f.write(text)
            return _launch(Report, ["--manifest", manifest], binary=binary, prefix=launcher_prefix(ranks, launcher),
                           args=args, keep=keep, near=near, env=env, cwd=os.fspath(cwd) if cwd else None,
                           timeout=timeout, echo=echo, extra_args=extra_args, output=None)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    if a is None or b is None or c is None:
        raise UsageError("run: give a, b and c (or products=[...])", exit_code=EXIT_USAGE)
    refs = {name: dataset_ref(value, name) for name, value in (("a", a), ("b", b), ("c", c))}
    args, keep = _run_args(binary, options, check_options)
    prefix = launcher_prefix(ranks, launcher)
    tail = ["--a", refs["a"], "--b", refs["b"], "--c", refs["c"]]
    return _launch(Report, tail, binary=binary, prefix=prefix, args=args, keep=keep,
                   near=dataset_file(refs["c"]), env=env, cwd=os.fspath(cwd) if cwd else None, timeout=timeout,
                   echo=echo, extra_args=extra_args, output=dataset_file(refs["c"]))


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
        tail = _own_args(binary, "run", sizes, check_options)
    args, keep = _run_args(binary, options, check_options)
    return _launch(DryRun, ["--dry-run", *tail, "--ranks", str(ranks)], binary=binary, prefix=[],
                   args=args, keep=keep, near=None, env=env, cwd=os.fspath(cwd) if cwd else None,
                   timeout=timeout, echo=False, extra_args=extra_args)


def _checked_run(command: List[str], *, env, cwd, timeout, echo, prefix=(), ok=(0,), output=None):
    cwd = os.fspath(cwd) if cwd else None
    try:
        done = execute(command, env=child_env(list(prefix), env), cwd=cwd, timeout=timeout, echo=echo)
        if done.returncode not in ok:
            raise TesseraError.from_job(done.returncode, command, done.stdout, done.stderr)
    except TesseraError as e:
        raise _failed_job(e, command[len(prefix)], output, env, cwd) from None
    return done


def generate(out: Dataset, rows: int, cols: int, *, binary: Optional[os.PathLike] = None,
             env: Optional[Mapping[str, str]] = None, cwd: Optional[os.PathLike] = None,
             timeout: Optional[float] = None, echo: bool = False, check_options: bool = True,
             **options: Any) -> Generated:
    """A random rows x cols matrix written to `out` by `tessera generate` (one process: the
    binary alone). options: dtype="f64", seed=7, dist="normal", low=, high=, chunk=(256, 256),
    gzip=4, overwrite=True; checked against `tessera generate --help-json`. Returns Generated."""
    binary = find_binary(binary)
    ref = dataset_ref(out, "out")
    for name, value in (("rows", rows), ("cols", cols)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise OptionError(f"generate: {name} must be a whole number >= 1, got {value!r}", option=name)
    args = option_args(binary, "generate", options, check_options)
    shape = _own_args(binary, "generate", {"rows": rows, "cols": cols}, check_options)
    command = [binary, "generate", "--out", ref, *shape, *args]
    done = _checked_run(command, env=env, cwd=cwd, timeout=timeout, echo=echo, output=dataset_file(ref))
    dtype = options.get("dtype")
    if dtype is None and check_options:
        dtype = command_spec(binary, "generate").options["dtype"].default  # the binary's own default
    return Generated(ref, rows, cols, dtype, command, done.stdout, done.stderr, done.seconds)


def verify(a: Dataset, b: Dataset, c: Dataset, ranks: int = 1, *, binary: Optional[os.PathLike] = None,
           launcher: Launcher = None, env: Optional[Mapping[str, str]] = None, cwd: Optional[os.PathLike] = None,
           timeout: Optional[float] = None, echo: bool = False, check: bool = True, check_options: bool = True,
           **options: Any) -> Verification:
    """`tessera verify`: is C = A·B? Freivalds' test on `ranks` ranks (launched as run() does),
    or full=True (recompute in float64). options: vectors=, safety=, tolerance=, dtype=,
    transpose_a=, transpose_b=, alpha=; checked against `tessera verify --help-json`.

    Returns a Verification (true when C passed). A wrong C raises VerificationError (exit 3)
    unless check=False, which returns it with passed False; other failures raise TesseraError."""
    binary = find_binary(binary)
    refs = [dataset_ref(value, name) for name, value in (("a", a), ("b", b), ("c", c))]
    args = option_args(binary, "verify", options, check_options)
    prefix = launcher_prefix(ranks, launcher)
    command = [*prefix, binary, "verify", "--a", refs[0], "--b", refs[1], "--c", refs[2], *args]
    done = _checked_run(command, env=env, cwd=cwd, timeout=timeout, echo=echo, prefix=prefix,
                        ok=(0,) if check else (0, 3))
    lines = [line for line in (done.stdout + "\n" + done.stderr).splitlines() if line.startswith("verify ")]
    summary = lines[0] if lines else (done.stdout or done.stderr).strip()
    return Verification(done.returncode == 0, summary, done.returncode, command, done.stdout, done.stderr,
                        done.seconds)
