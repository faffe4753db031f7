"""Python arguments to tessera's command line: dataset references and `tessera run` options."""
from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Tuple, Union

from .binary import CliOption
from .errors import EXIT_USAGE, UsageError

Dataset = Union[str, os.PathLike, Tuple[Union[str, os.PathLike], str]]

# Set by run()/dry_run() themselves: never through **options.
RESERVED = {"a", "b", "c", "dry-run", "m", "n", "k", "ranks", "help", "version"}


def _escape(text: str, *, colon: bool, trailing_backslash: bool) -> str:
    """`text` written so that tessera's parser (docs/usage.md, "Datasets") reads it back unchanged: a '\\'
    followed by ':' or '\\' (or, in the file name, by the separating ':') becomes '\\\\'; with
    `colon`, a ':' followed by '/' becomes '\\:'. Everything else stays as it is, so a name with
    neither ':/' nor '\\' is passed as written (and works with tesseras that know no escapes)."""
    out = []
    for i, ch in enumerate(text):
        nxt = text[i + 1] if i + 1 < len(text) else None
        if ch == "\\" and (nxt in (":", "\\") or (nxt is None and trailing_backslash)):
            out.append("\\\\")
        elif ch == ":" and colon and nxt == "/":
            out.append("\\:")
        else:
            out.append(ch)
    return "".join(out)


def dataset_ref(value: Dataset, what: str) -> str:
    """FILE:/PATH for tessera from "file.h5:/A" (passed as it is: the caller wrote tessera's
    syntax) or a (file, path) pair (escaped here, so any file name and dataset path work)."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise UsageError(f"{what}: a (file, dataset path) pair, got {value!r}", exit_code=EXIT_USAGE)
        file, path = os.fspath(value[0]), str(value[1])
        if not file or not path.strip("/"):
            raise UsageError(f"{what}: empty file name or dataset path in {value!r}", exit_code=EXIT_USAGE)
        if not path.startswith("/"):
            path = "/" + path
        # The last unescaped ':/' splits file and path: file names may hold ':' (even ':/'), a
        # path's ':/' must be escaped.
        return _escape(file, colon=False, trailing_backslash=True) + ":" + _escape(
            path, colon=True, trailing_backslash=False)
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        if ":/" not in text:
            raise UsageError(f"{what}: {text!r} names no dataset: write 'file.h5:/path' or (file, path)",
                             exit_code=EXIT_USAGE)
        return text
    raise UsageError(f"{what}: a 'file.h5:/path' string or a (file, path) pair, got {type(value).__name__}",
                     exit_code=EXIT_USAGE)


def dataset_file(ref: str) -> str:
    """The file of a FILE:/PATH reference (the part before the last unescaped ':/')."""
    split, i, plain = None, 0, []
    while i < len(ref):
        ch = ref[i]
        if ch == "\\" and i + 1 < len(ref) and ref[i + 1] in ":\\":
            plain.append(ref[i + 1])
            i += 2
            continue
        if ch == ":" and ref[i + 1:i + 2] == "/":
            split = len(plain)
        plain.append(ch)
        i += 1
    return "".join(plain[:split]) if split is not None else "".join(plain)


def _value(name: str, value: Any) -> str:
    if name == "grid" and isinstance(value, (tuple, list)):
        return "x".join(str(int(v)) for v in value)  # (2, 3) -> 2x3
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, (list, tuple)):
        return ",".join(_value(name, v) for v in value)
    return str(value)


def cli_args(options: Mapping[str, Any], known: Dict[str, CliOption]) -> List[str]:
    """`--name value` / `--flag` for each option, Python names mapped to tessera's (underscores
    become dashes): True gives a flag, False and None leave the option out; a flag given an int
    n > 0 is repeated n times. Checked against `known` (tessera's `run --help`)."""
    args: List[str] = []
    for py_name, value in options.items():
        name = py_name.replace("_", "-")
        if name in RESERVED:
            raise UsageError(f"option {py_name!r} is not an option here: it is set by the function's own "
                             "arguments", exit_code=EXIT_USAGE)
        if name not in known:
            raise UsageError(f"unknown option {py_name!r}: tessera run has no --{name} (see `tessera run --help`)",
                             exit_code=EXIT_USAGE)
        if value is None or value is False:
            continue
        if known[name].takes_value:
            if value is True:
                raise UsageError(f"option {py_name!r} takes a value (--{name} VALUE), got True", exit_code=EXIT_USAGE)
            args += [f"--{name}", _value(name, value)]
        elif value is True or (isinstance(value, int) and value > 0):
            args += [f"--{name}"] * int(value)
        elif isinstance(value, int) and value == 0:
            continue
        else:
            raise UsageError(f"option {py_name!r} is a flag (--{name}): give True or False, got {value!r}",
                             exit_code=EXIT_USAGE)
    return args

