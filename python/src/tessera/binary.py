"""Which tessera binary runs, and which options it has (read from its own --help, once per
binary)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from .errors import TesseraError


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
class CliOption:
    """One long option of `tessera run`: `--name`, and whether it takes a value."""
    name: str
    takes_value: bool


# A help line opens with the option's names (comma separated, no spaces); one space, then its type
# (TEXT, INT, TEXT:{a,b}=auto, ...) when it takes a value; the description after two or more.
_HELP_LINE = re.compile(r"^  (-\S+)(.*)$")


def parse_help(text: str) -> Dict[str, CliOption]:
    """Long options listed in CLI11's --help text, by name without the dashes."""
    options: Dict[str, CliOption] = {}
    for line in text.splitlines():
        m = _HELP_LINE.match(line)
        if not m:
            continue
        takes_value = re.match(r" \S", m.group(2)) is not None
        for name in m.group(1).split(","):
            if name.startswith("--") and len(name) > 2:
                options[name[2:]] = CliOption(name[2:], takes_value)
    return options


_help_cache: Dict[Tuple[str, int, int, Tuple[str, ...]], Dict[str, CliOption]] = {}


def cli_options(binary: str, *subcommand: str) -> Dict[str, CliOption]:
    """The long options of `binary [subcommand] --help`, cached per binary file (path, size,
    modification time): a rebuilt binary is asked again."""
    st = os.stat(binary)
    key = (binary, st.st_mtime_ns, st.st_size, subcommand)
    if key not in _help_cache:
        command = [binary, *subcommand, "--help"]
        try:
            p = subprocess.run(command, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise TesseraError(f"cannot ask tessera for its options: {e}", command=command) from e
        if p.returncode != 0:
            e = TesseraError.from_job(p.returncode, command, p.stdout, p.stderr)
            raise type(e)(e.message + " (asking tessera for its options; check_options=False skips the check)",
                          exit_code=e.exit_code, command=command, stdout=p.stdout, stderr=p.stderr)
        options = parse_help(p.stdout)
        options.pop("help", None)
        if not options:
            raise TesseraError("tessera's --help lists no options: cannot check option names", command=command,
                               stdout=p.stdout, stderr=p.stderr)
        _help_cache[key] = options
    return _help_cache[key]
