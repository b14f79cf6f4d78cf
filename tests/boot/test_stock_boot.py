"""Boot tests: the stock kernel runs a program as an ordinary process.

Each test boots QEMU (TCG) through `ukl run`, exactly as a user would, and
checks the console output and the exit status that reaches the host.
"""
from __future__ import annotations

import re

import pytest

from tests.conftest import PROGRAMS, gdb_break_session, ukl

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "120"


@pytest.fixture(scope="module")
def exit_image(stock_kernel) -> str:
    res = ukl("build", str(PROGRAMS / "exit_with.c"), "-o", "t-exit", "--kernel", "stock")
    assert res.returncode == 0, res.stderr
    return "t-exit"


def test_program_runs_and_status_zero_reaches_host(exit_image: str) -> None:
    res = ukl("run", exit_image, "--timeout", BOOT_TIMEOUT, "--", "0", "two words")
    assert res.returncode == 0, res.stdout + res.stderr
    # An ordinary process on stock Linux runs in ring 3.
    assert "exit_with: cpl=3 cpus=1 argc=3" in res.stdout
    assert "exit_with: argv[1]=<0>" in res.stdout
    assert "exit_with: argv[2]=<two words>" in res.stdout


@pytest.mark.parametrize("status", [3, 200])
def test_nonzero_status_reaches_host(exit_image: str, status: int) -> None:
    # 200 needs more than the 7 bits QEMU's debug-exit code carries.
    res = ukl("run", exit_image, "--timeout", BOOT_TIMEOUT, "--", str(status))
    assert res.returncode == status, res.stdout + res.stderr
    assert f"ukl-init: exit status {status}" in res.stdout


def test_smp_two_cpus_online(exit_image: str) -> None:
    res = ukl("run", exit_image, "--smp", "2", "--timeout", BOOT_TIMEOUT, "--", "0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "exit_with: cpl=3 cpus=2" in res.stdout


def test_icount_mode_boots(exit_image: str) -> None:
    res = ukl("run", exit_image, "--icount", "--timeout", BOOT_TIMEOUT, "--", "5")
    assert res.returncode == 5, res.stdout + res.stderr


def test_helper_process_runs_beside_program(stock_kernel) -> None:
    # The helper is a busybox shell command started by init before the
    # program; its output shares the console.
    res = ukl("build", str(PROGRAMS / "exit_with.c"), "-o", "t-helper", "--kernel", "stock",
              "--helper", "echo helper-ran-as-pid-$$")
    assert res.returncode == 0, res.stderr
    res = ukl("run", "t-helper", "--timeout", BOOT_TIMEOUT, "--", "0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"helper-ran-as-pid-\d+", res.stdout)


def test_timeout_gives_124_tail_and_log(stock_kernel) -> None:
    res = ukl("build", str(PROGRAMS / "hang.c"), "-o", "t-hang", "--kernel", "stock")
    assert res.returncode == 0, res.stderr
    res = ukl("run", "t-hang", "--timeout", "15")
    assert res.returncode == 124, res.stdout + res.stderr
    assert "ukl: error: timed out after 15 s" in res.stderr
    assert "hang: sleeping forever" in res.stderr  # the console tail
    assert re.search(r"full log: \S+run-t-hang\.log", res.stderr)


def test_kernel_panic_gives_125_with_console_tail(exit_image: str) -> None:
    # Run the program as PID 1: when it exits the kernel panics ("Attempted
    # to kill init"); panic=-1 reboots and -no-reboot ends QEMU.
    res = ukl("run", exit_image, "--timeout", BOOT_TIMEOUT,
              "--append", "rdinit=/app/t-exit")
    assert res.returncode == 125, res.stdout + res.stderr
    assert "without reporting an exit status" in res.stderr
    assert "Kernel panic" in res.stderr


def test_gdb_attaches_with_symbols(exit_image: str) -> None:
    """--gdb starts paused; gdb attaches, stops in start_kernel with source info."""
    gdb, status, out = gdb_break_session(exit_image, "start_kernel", "7")
    assert "Breakpoint 1, start_kernel" in gdb.stdout, gdb.stdout + gdb.stderr
    assert "init/main.c" in gdb.stdout, gdb.stdout
    assert status == 7, out
