"""Find the kernel's complaints in a console log: oopses, BUG and WARNING
splats, RCU stalls, lockups, hung tasks and unexpected panics.

Every boot checks its console with this (`ukl run` reports what it finds;
the test suite fails a test whose boot logged any). The console shows
KERN_WARNING and worse because images boot with `loglevel=5`: under
`quiet` alone a WARN() splat never reaches it.
"""
from __future__ import annotations

import re

# One pattern per kind of complaint; each matches the splat's first line
# (what the kernel prints in 6.1).
_PATTERNS = [
    re.compile(r"\bOops\b"),
    # die()'s header, e.g. "general protection fault, ...: 0000 [#1] SMP".
    re.compile(r": [0-9a-f]{4} \[#\d+\]"),
    # BUG(), "BUG: unable to handle page fault", "watchdog: BUG: soft
    # lockup", "BUG: sleeping function called from invalid context", ...
    re.compile(r"\bBUG:|kernel BUG at"),
    # WARN(), lockdep ("WARNING: possible circular locking dependency").
    re.compile(r"\bWARNING:"),
    re.compile(r"rcu: INFO: .*detected stall|self-detected stall"),
    re.compile(r"soft lockup|hard LOCKUP|NMI watchdog: .*LOCKUP"),
    re.compile(r"INFO: task .* blocked for more than"),
    re.compile(r"\bdouble fault\b", re.IGNORECASE),
    re.compile(r"Kernel panic - not syncing"),
]
# A program that replaced init (UKL_NSS images, `ukl run` of a plain
# process as PID 1) ends with this panic: it is how its status is reported.
_EXPECTED_PANIC = re.compile(r"Kernel panic - not syncing: Attempted to kill init!")


def find(console: str) -> list[str]:
    """The console lines that are kernel complaints, in order."""
    found = []
    for line in console.splitlines():
        if _EXPECTED_PANIC.search(line):
            continue
        if any(p.search(line) for p in _PATTERNS):
            found.append(line.strip())
    return found
