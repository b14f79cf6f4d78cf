"""ukl/qemu/complaints.py: which console lines are kernel complaints."""
from __future__ import annotations

import pytest

from ukl.qemu import complaints

QUIET_BOOT = """ukl_suite: ok files
ukl-init: exit status 0
Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000000
"""


@pytest.mark.parametrize("line", [
    "BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "BUG: unable to handle page fault for address: ffffc90000013ff8",
    "Oops: 0002 [#1] PREEMPT SMP NOPTI",
    "general protection fault, probably for non-canonical address 0xdead: 0000 [#1] SMP",
    "------------[ cut here ]------------ WARNING: CPU: 1 PID: 57 at kernel/fork.c:1 x+0x1/0x2",
    "WARNING: possible circular locking dependency detected",
    "kernel BUG at mm/mmap.c:3161!",
    "watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [ukl:1]",
    "rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    "rcu: INFO: rcu_sched self-detected stall on CPU",
    "INFO: task kworker/0:1:12 blocked for more than 120 seconds.",
    "traps: PANIC: double fault, error_code: 0x0",
    "Kernel panic - not syncing: Fatal exception",
])
def test_splats_are_complaints(line: str) -> None:
    assert complaints.find(QUIET_BOOT + line + "\n") == [line.strip()]


def test_clean_boot_and_init_exit_are_not() -> None:
    assert complaints.find(QUIET_BOOT) == []
    assert complaints.find("Kernel panic - not syncing: Attempted to kill init! "
                           "exitcode=0x0000000b\n") == []


def test_cpu_model_advice_is_not_but_a_missing_mitigation_is() -> None:
    advice = ("RETBleed: WARNING: Spectre v2 mitigation leaves CPU vulnerable to RETBleed "
              "attacks, data leaks possible!\n"
              "Speculative Return Stack Overflow: WARNING: See https://kernel.org/doc/html/"
              "latest/admin-guide/hw-vuln/srso.html for mitigation options.\n")
    assert complaints.find(QUIET_BOOT + advice) == []
    missing = "Speculative Return Stack Overflow: WARNING: kernel not compiled with CPU_SRSO."
    assert complaints.find(advice + missing + "\n") == [missing]
