"""Boot tests: code that keeps data in the red zone (tests/programs/red_zone.c),
under QEMU TCG.

x86-64 leaf code may use the 128 bytes below %rsp without moving it;
OpenSSL's assembly does. At CPL0 the CPU would push an interrupt's frame
there, but a UKL kernel sends every event taken in application code to an
IST stack and on to the task stack, and returns with IRET: the data must
survive timer interrupts, page faults and signals, as it does for an
ordinary process. UKL_RET and UKL_PF_DF do write there (kernel/options.ini
`red-zone = no`), and the kernel link refuses such code for them.
"""
from __future__ import annotations

import re

import pytest

from tests.boot.test_ukl_boot import BOOT_TIMEOUT
from tests.conftest import PROGRAMS, build_image, ukl

pytestmark = pytest.mark.boot
PROGRAM = str(PROGRAMS / "red_zone.c")
RESULT = re.compile(r"red-zone: rounds=(\d+) faults=(\d+) signals=(\d+) preempted=(\d+) "
                    r"corrupted=(\d+)")


def _held(image: str) -> dict[str, int]:
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT)
    out = res.stdout + res.stderr
    m = RESULT.search(out)
    assert m, out
    counts = dict(zip(("rounds", "faults", "signals", "preempted", "corrupted"),
                      map(int, m.groups())))
    assert counts["corrupted"] == 0, out
    # It was hit by what it is meant to survive.
    assert counts["faults"] >= counts["rounds"] > 0, out
    assert counts["signals"] > 0 and counts["preempted"] > 0, out
    assert res.returncode == 0, out
    return counts


def test_red_zone_survives_as_an_ordinary_process(stock_kernel) -> None:
    _held(build_image("t-red-zone-stock", PROGRAM, "--kernel", "stock"))


def test_red_zone_survives_interrupts_faults_and_signals_at_cpl0(ukl_kernel) -> None:
    _held(build_image("t-red-zone", PROGRAM))


@pytest.mark.parametrize("flavour", ["ukl-ret", "ukl-pf-df"])
def test_kernels_that_write_below_the_stack_pointer_refuse_it(flavour: str) -> None:
    res = ukl("build", PROGRAM, "--kernel", flavour, "-o", f"t-red-zone-{flavour}")
    assert res.returncode == 1, res.stdout + res.stderr
    config = {"ukl-ret": "CONFIG_UKL_RET", "ukl-pf-df": "CONFIG_UKL_PF_DF"}[flavour]
    assert re.search(rf"^ukl: error: kernel {flavour}: the application keeps data below its "
                     r"stack pointer \(the red zone: \S*red_zone_hold, \d+ access\(es\) in "
                     rf"all\), which the kernel's {config} write\(s\) over; link it into a "
                     r"kernel without that \(--kernel ukl\)$", res.stderr, re.M), res.stderr
