"""The one error type users see.

Every failure the user can act on is raised as UklError with a message that
says what went wrong and, where possible, what to do next. The CLI prints it
as a single `ukl: error: ...` line (plus an optional log tail) and exits 2.
"""
from __future__ import annotations


class UklError(Exception):
    """A failure with an actionable, user-facing message."""

    def __init__(self, message: str, *, detail: str = "") -> None:
        super().__init__(message)
        self.message = message
        # Extra lines (for example a build log tail) shown below the message.
        self.detail = detail
