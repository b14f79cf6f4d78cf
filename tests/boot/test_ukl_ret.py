"""Boot tests: UKL_RET (interrupts and exceptions return to the application
with popfq; ret instead of iret), under QEMU TCG."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.boot.test_ukl_boot import CHECKS, _run
from tests.conftest import GUEST, assert_suite_passed, build_image, ukl
from ukl.bench import report

pytestmark = pytest.mark.boot


def test_whole_base_model_suite_with_ret(ukl_ret_kernel) -> None:
    # Page faults (stack growth, 256 MiB malloc), timer interrupts under 8
    # threads on 2 CPUs and signals all return to the app through ret.
    image = build_image("t-ret-suite", str(GUEST / "ukl_suite.c"), "--kernel", "ukl-ret")
    rc, out = _run(image, *CHECKS, smp=2)
    assert "ukl_suite: cpl=0" in out, out
    assert_suite_passed(out, CHECKS)
    assert rc == 0, out


def test_faults_take_the_ret_path(tmp_path: Path, ukl_kernel, ukl_ret_kernel) -> None:
    # Exact instruction counts: the fault return path differs from the base
    # model's IRET (by the stack write and the frame check, a few dozen
    # instructions; TCG counts IRET as one and does not model its cost).
    res = ukl("bench", "--quick", "--name", "ret", "--configs", "ukl,ukl-ret",
              "page-fault", env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = report.read_csv(tmp_path / "ret" / "results.csv")
    fault = {r.config: r.median for r in rows if r.op == "page-fault"}
    assert fault["ukl-ret"] != fault["ukl"], fault
    assert abs(fault["ukl-ret"] - fault["ukl"]) < 100, fault
