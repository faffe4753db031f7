"""Python arguments to tessera's command line: dataset references (FILE:/PATH, escaped)."""
from __future__ import annotations

import os
from typing import Tuple, Union

from .errors import EXIT_USAGE, UsageError

Dataset = Union[str, os.PathLike, Tuple[Union[str, os.PathLike], str]]


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
