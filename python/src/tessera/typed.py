"""Typed options: a dataclass per tessera command whose fields are that command's options, made
from the binary's own `--help-json` (binary.command_spec). Building one checks every value: an
option the command does not have, a value of the wrong type, one outside the allowed values or
the range raise OptionError (a UsageError, exit_code 2) before anything is launched.

    RunOptions = tessera.options_type("run")
    opts = RunOptions(backend="cpu", grid=(2, 2), panel_width=256, overwrite=True)
    opts.to_args()        # ['--grid', '2x2', '--backend', 'cpu', '--panel-width', '256', '--overwrite']
    tessera.run(a, b, c, ranks=4, **opts.given())
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .binary import CommandSpec, OptionSpec, command_spec, find_binary
from .errors import EXIT_USAGE, UsageError

# Options written "AxB" that may be given as a pair of whole numbers: (2, 3) -> "2x3".
PAIRS = {"grid", "chunk"}
_PY_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "count": int}
_WORDS = {"string": "text (str)", "integer": "a whole number (int)", "number": "a number (int or float)",
          "boolean": "True or False", "count": "True, False or a count (int >= 0)"}


class OptionError(UsageError):
    """An option the command does not have, or a value it cannot take (wrong type, not an
    allowed value, out of range): found by the package, nothing was launched (exit_code 2)."""

    def __init__(self, message: str, *, option: Optional[str] = None):
        super().__init__(message, exit_code=EXIT_USAGE)
        self.option = option


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def _pair(opt: OptionSpec, value: Any, where: str) -> str:
    if len(value) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value):
        raise OptionError(f"{where} takes 'AxB' or a pair of positive whole numbers, got {value!r}",
                          option=opt.py_name)
    return f"{value[0]}x{value[1]}"


def _in_range(opt: OptionSpec, value: Any, where: str) -> None:
    low, high = opt.minimum, opt.maximum
    if low is not None and (value < low or (opt.minimum_exclusive and value == low)):
        raise OptionError(f"{where} must be {'above' if opt.minimum_exclusive else 'at least'} {low}, got {value!r}",
                          option=opt.py_name)
    if high is not None and (value > high or (opt.maximum_exclusive and value == high)):
        raise OptionError(f"{where} must be {'below' if opt.maximum_exclusive else 'at most'} {high}, got {value!r}",
                          option=opt.py_name)


def _scalar(opt: OptionSpec, value: Any, where: str) -> Any:
    """One value checked against the option's type, allowed values and range; returned as the
    text tessera reads for value options (the flag's bool / count as it is)."""
    t = opt.type
    if not opt.takes_value:
        if isinstance(value, bool) or (t == "count" and isinstance(value, int) and value >= 0):
            return value
        raise OptionError(f"{where} is a flag ({opt.flag}): give {_WORDS[t]}, got {_describe(value)}",
                          option=opt.py_name)
    if isinstance(value, bool) and t != "boolean":
        raise OptionError(f"{where} takes a value ({opt.flag} {opt.cli_type or t.upper()}), got True",
                          option=opt.py_name)
    if t == "string":
        if opt.name in PAIRS and isinstance(value, (tuple, list)):
            text = _pair(opt, value, where)
        elif isinstance(value, (str, os.PathLike)):
            text = os.fspath(value)
            if opt.name in PAIRS and text and not re.fullmatch(r"[1-9][0-9]*[xX][1-9][0-9]*", text):
                raise OptionError(f"{where} takes 'AxB' or a pair of positive whole numbers, got {value!r}",
                                  option=opt.py_name)
        else:
            raise OptionError(f"{where} takes {_WORDS[t]}, got {_describe(value)}", option=opt.py_name)
    elif t == "boolean":
        if not isinstance(value, bool):
            raise OptionError(f"{where} takes {_WORDS[t]}, got {_describe(value)}", option=opt.py_name)
        text = "true" if value else "false"
    else:
        ok = isinstance(value, int) if t == "integer" else isinstance(value, (int, float)) and math.isfinite(value)
        if not ok:
            raise OptionError(f"{where} takes {_WORDS[t]}, got {_describe(value)}", option=opt.py_name)
        _in_range(opt, value, where)
        text = str(value) if isinstance(value, int) else repr(float(value))
    if opt.allowed is not None and text not in opt.allowed:
        near = difflib.get_close_matches(text, opt.allowed, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise OptionError(f"{where} takes one of {', '.join(opt.allowed)}; got {value!r}{hint}", option=opt.py_name)
    return text


def check_value(command: str, opt: OptionSpec, value: Any) -> Any:
    """The value of one option as tessera reads it (text, a list of texts, a flag's bool or
    count), None for 'not given'; OptionError where it cannot be taken."""
    where = f"{command} option {opt.py_name!r} ({opt.flag})"
    if value is None:
        return None
    if opt.list:
        items = list(value) if isinstance(value, (list, tuple)) else [value]
        if not items:
            raise OptionError(f"{where} takes one or more values, got an empty {type(value).__name__}",
                              option=opt.py_name)
        return [_scalar(opt, v, where) for v in items]
    return _scalar(opt, value, where)


def unknown(spec: CommandSpec, names) -> None:
    """OptionError for the first name the command does not have."""
    for name in names:
        if name not in spec.options:
            dashed = name.replace("_", "-")
            raise OptionError(f"unknown option {name!r}: tessera {spec.command} has no --{dashed} "
                              f"(see `tessera {spec.command} --help`)", option=name)


def to_args(spec: CommandSpec, values: Mapping[str, Any]) -> List[str]:
    """The command-line words of checked values (check_value's results), in the order given;
    positional arguments last."""
    args: List[str] = []
    tail: List[str] = []
    for name, value in values.items():
        opt = spec.options[name]
        if value is None or value is False or (opt.type == "count" and value == 0):
            continue
        if opt.positional:
            tail += value if isinstance(value, list) else [value]
        elif not opt.takes_value:
            args += [opt.flag] * (1 if value is True else int(value))
        elif isinstance(value, list) and opt.delimiter:
            args += [opt.flag, opt.delimiter.join(value)]
        elif isinstance(value, list):
            for v in value:
                args += [opt.flag, v]
        else:
            args += [opt.flag, value]
    return args + tail


def _post_init(self) -> None:
    spec: CommandSpec = type(self).spec
    for f in dataclasses.fields(self):
        check_value(spec.command, spec.options[f.name], getattr(self, f.name))


def _given(self) -> Dict[str, Any]:
    """The options set (not None), by Python name: for run(**opts.given())."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}


def _to_args(self) -> List[str]:
    """The command-line words for these options."""
    spec: CommandSpec = type(self).spec
    return to_args(spec, {n: check_value(spec.command, spec.options[n], v) for n, v in self.given().items()})


def _init_refusing_unknown(cls):
    """The dataclass's __init__, with OptionError (not TypeError) for an option it lacks."""
    generated = cls.__init__

    def __init__(self, **values):
        unknown(cls.spec, values)
        generated(self, **values)
    __init__.__doc__ = generated.__doc__
    return __init__


def make_options_type(spec: CommandSpec) -> type:
    """A frozen dataclass, one field per option of the command (None: not given), typed as the
    binary describes them; building an instance checks every value."""
    fields: List[Tuple[str, Any, Any]] = []
    for name, opt in spec.options.items():
        base = _PY_TYPES.get(opt.type, str)
        annotation = Optional[List[base]] if opt.list else Optional[base]  # type: ignore[valid-type]
        fields.append((name, annotation, dataclasses.field(default=None, metadata={"spec": opt})))
    title = "".join(part.capitalize() for part in (spec.command or "tessera").split("-"))
    cls = dataclasses.make_dataclass(f"{title}Options", fields, frozen=True, namespace={
        "spec": spec, "__post_init__": _post_init, "given": _given, "to_args": _to_args,
        "__doc__": f"Options of `tessera {spec.command}` (tessera {spec.version}), from its --help-json."})
    cls.__init__ = _init_refusing_unknown(cls)
    return cls


_types: Dict[Tuple[int, str], type] = {}


def options_type(command: str = "run", binary: Optional[os.PathLike] = None) -> type:
    """The options dataclass of `tessera COMMAND` (run, generate, verify, ...) for the binary that
    would run (binary=, else $TESSERA_BIN, else PATH), made once per binary file."""
    spec = command_spec(find_binary(binary), command)
    key = (id(spec), command)
    if key not in _types:
        _types[key] = make_options_type(spec)
    return _types[key]
