"""Which tessera binary runs, and which options each of its commands has: read from the binary's
own `tessera <command> --help-json` (CLI11's description of every option: type, default, allowed
values, range), asked once per binary file."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

from .errors import TesseraError

SCHEMA = "tessera.options/1"


def find_binary(binary: Optional[os.PathLike] = None) -> str:
    """The tessera executable, as an absolute path: `binary` if given, else $TESSERA_BIN, else
    `tessera` on PATH. Absolute, so that ranks started elsewhere (srun) run the same file."""
    if binary is not None:
        source, name = "binary=", os.fspath(binary)
    elif os.environ.get("TESSERA_BIN"):
        source, name = "TESSERA_BIN", os.environ["TESSERA_BIN"]
    else:
        source, name = "PATH", "tessera"
    found = shutil.which(name) if os.sep not in name else (name if os.access(name, os.X_OK) else None)
    if not found or not os.path.isfile(found):
        hint = ("install it (cmake --install) or put it on PATH, set TESSERA_BIN, or pass binary="
                if source == "PATH" else "check the path")
        raise TesseraError(f"no tessera binary: {name!r} ({source}) is not an executable file; {hint}")
    return os.path.abspath(found)


@dataclass(frozen=True)
class OptionSpec:
    """One option of a tessera command, as its --help-json describes it.

    name      tessera's name (`panel-width`); py_name the Python one (`panel_width`)
    flag      how it is written (`--panel-width`; the name itself for a positional argument)
    type      "string", "integer", "number", "boolean" (a flag when takes_value is False) or
              "count" (a flag that may be repeated: -vv)
    list      takes several values (joined by `delimiter`, else the option repeated)
    allowed   the values it accepts, where tessera's parser lists them; minimum / maximum (and
              whether each is exclusive) where it checks a range; None where it does not"""
    name: str
    py_name: str
    flag: str
    type: str
    takes_value: bool
    positional: bool = False
    list: bool = False
    delimiter: Optional[str] = None
    required: bool = False
    default: Any = None
    allowed: Optional[Tuple[str, ...]] = None
    minimum: Optional[float] = None
    minimum_exclusive: bool = False
    maximum: Optional[float] = None
    maximum_exclusive: bool = False
    help: str = ""
    cli_type: str = ""

    @classmethod
    def from_json(cls, d: Dict[str, Any]) -> "OptionSpec":
        flags = d.get("flags") or []
        longs = [f for f in flags if f.startswith("--")]
        allowed = d.get("allowed")
        return cls(name=d["name"], py_name=d["name"].replace("-", "_"),
                   flag=(longs or flags or [d["name"]])[0], type=d.get("type", "string"),
                   takes_value=bool(d.get("takes_value", True)), positional=bool(d.get("positional")),
                   list=bool(d.get("list")), delimiter=d.get("delimiter"), required=bool(d.get("required")),
                   default=d.get("default"), allowed=tuple(allowed) if allowed else None,
                   minimum=d.get("minimum"), minimum_exclusive=bool(d.get("minimum_exclusive")),
                   maximum=d.get("maximum"), maximum_exclusive=bool(d.get("maximum_exclusive")),
                   help=d.get("help", ""), cli_type=d.get("cli_type", ""))


@dataclass(frozen=True)
class CommandSpec:
    """A command's options (its own, then those it takes from the program: run's --config), by
    Python name; `raw` is the --help-json document."""
    command: str
    version: str
    options: Dict[str, OptionSpec]
    raw: Dict[str, Any]


def parse_spec(doc: Dict[str, Any]) -> CommandSpec:
    """A CommandSpec from a --help-json document (schema tessera.options/1)."""
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        raise TesseraError(f"tessera's --help-json is not a {SCHEMA} document: "
                           f"schema {doc.get('schema') if isinstance(doc, dict) else type(doc).__name__!r}")
    options: Dict[str, OptionSpec] = {}
    for d in list(doc.get("inherited") or []) + list(doc.get("options") or []):
        spec = OptionSpec.from_json(d)
        options[spec.py_name] = spec
    return CommandSpec(command=doc.get("command", ""), version=doc.get("version", ""), options=options, raw=doc)


_spec_cache: Dict[Tuple[str, int, int, Tuple[str, ...]], CommandSpec] = {}


def command_spec(binary: str, *command: str) -> CommandSpec:
    """The options of `binary COMMAND --help-json`, cached per binary file (path, size,
    modification time): a rebuilt binary is asked again."""
    st = os.stat(binary)
    key = (binary, st.st_mtime_ns, st.st_size, tuple(command))
    if key not in _spec_cache:
        _spec_cache[key] = parse_spec(_ask(binary, command))
    return _spec_cache[key]


def _ask(binary: str, command: Sequence[str]) -> Dict[str, Any]:
    argv = [binary, *command, "--help-json"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TesseraError(f"cannot ask tessera for its options: {e}", command=argv) from e
    if p.returncode != 0:
        e = TesseraError.from_job(p.returncode, argv, p.stdout, p.stderr)
        hint = (" (this tessera predates --help-json: update it, or pass check_options=False)" if "help-json" in
                p.stderr else " (asking tessera for its options; check_options=False skips the check)")
        raise type(e)(e.message + hint, exit_code=e.exit_code, command=argv, stdout=p.stdout, stderr=p.stderr)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise TesseraError(f"tessera's --help-json printed no JSON: {e}", command=argv, stdout=p.stdout,
                           stderr=p.stderr) from e
