"""Boot tests: the C library's syscall() through the kernel's ukl_syscall entry
(tests/programs/syscall_fn.c), under QEMU TCG.

syscall() enters with its own registers (number in rdi, the sixth argument
in rax) and, with UKL_BYP, takes the fast bypass from there: its arguments,
errno, restarts after a signal (SA_RESTART, and restart_syscall() after a
stop) and the registers a signal at the end of a call sees must be as
through ukl_entry_SYSCALL_64, and as on stock.
"""
from __future__ import annotations

import pytest

from tests.boot.test_ukl_boot import BOOT_TIMEOUT
from tests.conftest import PROGRAMS, assert_suite_passed, build_image, ukl

pytestmark = pytest.mark.boot
CHECKS = ["args6", "errno", "restart", "restart-block", "signal-frame"]


def _check(out: str, code: int) -> None:
    assert_suite_passed(out, CHECKS, program="syscall_fn")
    assert code == 0, out


def test_syscall_on_stock(stock_kernel) -> None:
    image = build_image("t-syscall-fn-stock", str(PROGRAMS / "syscall_fn.c"),
                        "--kernel", "stock")
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT)
    _check(res.stdout + res.stderr, res.returncode)


def test_syscall_through_ukl_syscall(ukl_kernel) -> None:
    image = build_image("t-syscall-fn", str(PROGRAMS / "syscall_fn.c"))
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT)
    _check(res.stdout + res.stderr, res.returncode)


@pytest.mark.parametrize("smp", [1, 2])
def test_syscall_with_bypass(ukl_byp_kernel, smp: int) -> None:
    image = build_image("t-syscall-fn-byp", str(PROGRAMS / "syscall_fn.c"),
                        "--kernel", "ukl-byp")
    res = ukl("run", image, "--smp", str(smp), "--timeout", BOOT_TIMEOUT, "--", "--bypass")
    out = res.stdout + res.stderr
    assert "syscall_fn: bypass on" in out, out
    _check(out, res.returncode)
