"""What tessera.generate and tessera.verify return."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional


@dataclass
class Generated:
    """A matrix `tessera generate` wrote: `dataset` (FILE:/PATH as passed to tessera), its shape
    and dtype (f32 or f64; None with check_options=False and no dtype given); the command line
    and what it printed."""
    dataset: str
    rows: int
    cols: int
    dtype: Optional[str]
    command: List[str] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0


@dataclass
class Verification:
    """The outcome of `tessera verify`: `passed`, and tessera's one-line `summary` ("verify
    PASSED: ..." or "verify FAILED: ..."); true in a boolean context when C passed."""
    passed: bool
    summary: str
    exit_code: int
    command: List[str] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0

    def __bool__(self) -> bool:
        return self.passed
