"""Exceptions raised when tessera fails: each carries tessera's own message, its exit status,
the command line that ran and what the job printed on stderr."""
from __future__ import annotations

import re
import shlex
from typing import Optional, Sequence

# tessera's exit statuses (docs/usage.md, "Exit status").
EXIT_ERROR = 1  # bad input or option value, a refused path, I/O, device, a lost rank
EXIT_USAGE = 2  # the command line or config file cannot be parsed
EXIT_VERIFICATION = 3  # verification ran and the result is wrong

# The one line tessera prints for a failure: "tessera: error: ...", "tessera: error (rank 1): ...",
# "tessera: verification failed: ...".
_MESSAGE = re.compile(r"^tessera: (error|verification failed)\b.*$", re.MULTILINE)


def _join(command: Sequence[str]) -> str:
    return " ".join(shlex.quote(c) for c in command)


def tessera_message(stderr: str) -> Optional[str]:
    """tessera's failure line in a job's stderr (the first, when several ranks printed one)."""
    m = _MESSAGE.search(stderr or "")
    return m.group(0).strip() if m else None


class TesseraError(RuntimeError):
    """tessera failed, or could not be started.

    message    tessera's line ("tessera: error: ..."), or what the package itself found wrong
    exit_code  tessera's exit status (1 error, 2 usage, 3 verification failed); None when the
               job never ran or never ended (no binary, a timeout)
    command    the command line, as a list (launcher included); [] when nothing was launched
    stderr, stdout  what the job printed
    recovery   after a failed run() or generate(): what `tessera recover` found of the output
               file, run before the exception was raised (str(e) says it after the message); None where
               it did not run (nothing was launched, dry_run, verify)
    output_restored  True where the output file was put back from the journal the failed job
               left, False where there was nothing to put back or it could not be (recovery says
               which), None where recovery did not run
    """

    def __init__(self, message: str, *, exit_code: Optional[int] = None, command: Sequence[str] = (),
                 stderr: str = "", stdout: str = "", recovery: Optional[str] = None,
                 output_restored: Optional[bool] = None):
        self.message = message
        self.exit_code = exit_code
        self.command = list(command)
        self.stderr = stderr
        self.stdout = stdout
        self.recovery = recovery
        self.output_restored = output_restored
        details = []
        if exit_code is not None:
            details.append(f"exit status {exit_code}")
        if self.command:
            details.append(_join(self.command))
        super().__init__(message + (f"; {recovery}" if recovery else "") +
                         (f" [{': '.join(details)}]" if details else ""))

    def with_recovery(self, recovery: str, restored: bool) -> "TesseraError":
        """This failure, of the same type, after the output file's recovery."""
        return type(self)(self.message, exit_code=self.exit_code, command=self.command, stderr=self.stderr,
                          stdout=self.stdout, recovery=recovery, output_restored=restored)

    @classmethod
    def from_job(cls, exit_code: int, command: Sequence[str], stdout: str, stderr: str) -> "TesseraError":
        """The exception for a job that ended with a nonzero exit status: UsageError for 2,
        VerificationError for 3, TesseraError otherwise."""
        message = tessera_message(stderr)
        if message is None:
            # Not tessera's own line (an older tessera's parser, the launcher failed, a rank was
            # killed): the first line that is not the launcher's (Open MPI frames its notices in
            # lines of dashes; srun prefixes its own).
            lines = _outside_launcher_notices(stderr or "")
            message = lines[0] if lines else f"tessera exited with status {exit_code}"
        kind = {EXIT_USAGE: UsageError, EXIT_VERIFICATION: VerificationError}.get(exit_code, TesseraError)
        return kind(message, exit_code=exit_code, command=command, stderr=stderr, stdout=stdout)


def _outside_launcher_notices(stderr: str) -> list:
    lines, framed = [], False
    for line in stderr.splitlines():
        text = line.strip()
        if text and set(text) == {"-"}:
            framed = not framed
        elif text and not framed and not text.startswith(("srun:", "slurmstepd:")):
            lines.append(text)
    # An unbalanced frame (a notice cut short) hid everything after it: show all lines then.
    return lines or [t.strip() for t in stderr.splitlines() if t.strip() and set(t.strip()) != {"-"}]


class UsageError(TesseraError):
    """The options cannot be used: an option tessera does not have, a value of the wrong kind,
    or a command line that tessera's parser refused (exit status 2). Found by the package
    before launching, it carries exit_code 2 and no command."""


class VerificationError(TesseraError):
    """Verification ran and the result is wrong (exit status 3): C was not written."""
