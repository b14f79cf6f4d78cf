"""Boot tests: UKL_BYP, per-thread system call bypass (<ukl.h>), under QEMU TCG.

Bypass must be invisible to the program except in cost: the whole base-model
suite passes with it on, signals (with restart) and scheduling still happen
in a thread that only makes bypassed calls, and the kernel without the option
says so instead of pretending.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.boot.test_ukl_boot import BOOT_TIMEOUT, CHECKS, _run
from tests.conftest import GUEST, PROGRAMS, assert_suite_passed, build_image, ukl
from ukl.bench import report

pytestmark = pytest.mark.boot
BYPASS_CHECKS = ["toggle", "inherit", "signal-in-loop", "restart", "signal-frame", "sched"]


def test_bypass_keeps_signals_restart_and_scheduling(ukl_byp_kernel) -> None:
    image = build_image("t-byp", str(PROGRAMS / "bypass.c"), "--kernel", "ukl-byp")
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT)
    out = res.stdout + res.stderr
    assert "bypass: cpl=0" in out, out
    assert_suite_passed(out, BYPASS_CHECKS, program="bypass")
    assert res.returncode == 0, out


def test_signals_at_any_instruction_of_the_fast_bypass(ukl_byp_kernel) -> None:
    # One instruction per translation block: the timer interrupt that
    # delivers SIGALRM can come at any instruction of the fast bypass, the
    # stack switch included, and the handler makes bypassed calls itself.
    # Before kernel 0046 a signal at the switch made the call return on the
    # stack of the handler's last call.
    image = build_image("t-byp", str(PROGRAMS / "bypass.c"), "--kernel", "ukl-byp")
    res = ukl("run", image, "--one-insn-per-tb", "--timeout", BOOT_TIMEOUT, "--", "--storm")
    out = res.stdout + res.stderr
    assert_suite_passed(out, ["signal-storm"], program="bypass")
    assert res.returncode == 0, out


def test_whole_base_model_suite_with_bypass_on(ukl_byp_kernel) -> None:
    image = build_image("t-byp-suite", str(GUEST / "ukl_suite.c"), "--kernel", "ukl-byp")
    rc, out = _run(image, "--bypass", *CHECKS, smp=2)
    assert "ukl_suite: cpl=0" in out and "ukl_suite: bypass on" in out, out
    assert_suite_passed(out, CHECKS)
    assert rc == 0, out


def test_kernel_without_byp_refuses_bypass(ukl_kernel) -> None:
    image = build_image("t-byp-off", str(PROGRAMS / "bypass.c"))
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT)
    out = res.stdout + res.stderr
    assert "bypass: cpl=0" in out and "bypass: unsupported (errno 95)" in out, out
    assert res.returncode == 3, out


def test_bypass_cuts_system_call_instructions(tmp_path: Path, ukl_kernel,
                                              ukl_byp_kernel) -> None:
    # Exact instruction counts (icount): bypass must take the short path
    # (kernel 0031: 147 of ukl's 223 for getppid; 159, 0.71x, with the
    # whole frame every time).
    res = ukl("bench", "--quick", "--name", "byp", "--configs", "ukl,ukl-byp", "floor",
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = report.read_csv(tmp_path / "byp" / "results.csv")
    getppid = {r.config: r.median for r in rows if r.op == "getppid"}
    assert getppid["ukl-byp"] < 0.69 * getppid["ukl"], getppid
