"""The errors users see.

Every failure the user can act on is raised as UklError with a message that
says what went wrong and, where possible, what to do next. The CLI prints it
as a single `ukl: error: ...` line (plus an optional log tail). A UsageError
means the command line itself is wrong (an unknown name, a missing file, a
bad value): exit status 2. Any other UklError is a failure of the work
(a build, a boot): exit status 1.
"""
from __future__ import annotations


class UklError(Exception):
    """A failure with an actionable, user-facing message."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        # Extra lines (for example a build log tail) shown below the message.
        self.detail = detail


class UsageError(UklError):
    """The command line names something that does not exist or is malformed."""


class Interrupted(UklError):
    """A command stopped by a signal (Ctrl-C, the OOM killer): not a
    failure of its own, so nothing that remembers failures keeps it, and
    no retry follows."""
