"""A Debian build that failed is not run again from the same inputs.

A library that cannot be built for UKL (Kerberos without com_err, Cyrus
SASL's plugins) fails the same way for every package that wants it: curl,
cyrus-sasl2 and openldap each tried krb5 again, minutes each time, and a
catalog run paid for it in every row. A failed build records its error
beside its work directory, keyed by the build's state (ukl.common.stamp:
the source version, the dependencies, what was turned off, how Debian's
build is run) and by this tool itself (its code, and the UKL C library
and runtime ukl-cc links): a later build from the same inputs fails at
once with the same error. Anything else that changes builds it again, as
does deleting the record, which the note names.

Only the build's own failure is remembered, never a failure to fetch its
source or install its build dependencies (the network's).
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

from ukl.common import stamp
from ukl.common.errors import Interrupted, UklError
from ukl.toolchain import driver

FAILED_FILE = ".ukl-failed"
# The tool's own code: a change to it (a fix in ukl-cc) may well be what
# the failure needed.
_TOOL_ROOT = Path(__file__).resolve().parents[2]


@functools.cache
def tool_identity() -> str:
    """A digest of this tool's code and of what ukl-cc links."""
    files = sorted(p for p in _TOOL_ROOT.rglob("*.py") if "__pycache__" not in p.parts)
    return stamp.digest(driver.link_identity(),
                        *(str(p.relative_to(_TOOL_ROOT)).encode() + b"\0" + p.read_bytes()
                          for p in files))


def record_path(work: Path) -> Path:
    return work / FAILED_FILE


def remembered(work: Path, state: str) -> UklError | None:
    """The error a build of `state` in `work` failed with, by this tool;
    None if it did not (or it was never built)."""
    try:
        saved = json.loads(record_path(work).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("state") != stamp.digest(state, tool_identity()):
        return None
    return UklError(str(saved.get("message", "")), detail=str(saved.get("detail", "")))


def fail_as_before(work: Path, state: str, what: str) -> None:
    """Raise the error the build of `state` in `work` (`what`) failed with
    before, if it did, saying so."""
    failed = remembered(work, state)
    if failed is not None:
        print(f"ukl: {what}: not built again: it failed from the same inputs, with this ukl "
              f"(delete {record_path(work)} to try anyway)", file=sys.stderr)
        raise failed


def remember(work: Path, state: str, error: UklError) -> None:
    """Record that the build of `state` in `work` failed with `error`,
    unless it was stopped by a signal (Interrupted)."""
    if isinstance(error, Interrupted):
        return
    record_path(work).write_text(json.dumps({
        "state": stamp.digest(state, tool_identity()),
        "message": error.message,
        "detail": error.detail,
    }, indent=1) + "\n")


def forget(work: Path) -> None:
    """The build succeeded: no failure to remember."""
    record_path(work).unlink(missing_ok=True)
