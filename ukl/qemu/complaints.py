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


# Advice arch/x86/kernel/cpu/bugs.c prints at boot about the CPU model, not
# a fault: what a kernel with the mitigations on says under the vendor
# models the distribution-like tests use (CPU_MODELS in ukl/qemu/command.py):
# Skylake has no IBRS under TCG, so retbleed stays on retpolines; SRSO
# always points to its options. Other bugs.c warnings (a mitigation not
# built in) still count.
_CPU_ADVICE = re.compile(
    r"RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed attacks"
    r"|Speculative Return Stack Overflow: WARNING: See https://kernel\.org/doc/html/latest/"
    r"admin-guide/hw-vuln/srso\.html for mitigation options")


def find(console: str) -> list[str]:
    """The console lines that are kernel complaints, in order."""
    found = []
    for line in console.splitlines():
        if _EXPECTED_PANIC.search(line) or _CPU_ADVICE.search(line):
            continue
        if any(p.search(line) for p in _PATTERNS):
            found.append(line.strip())
    return found
