"""Boot tests: UKL_BYP on the distribution-like configuration (`ukl-distro+byp`),
under QEMU TCG with the Intel and the AMD CPU model.

The bypass is entry code: it must hold with the CPU mitigations Debian
ships (retpolines, return thunks, SRSO Safe-RET on the AMD model), with
DEBUG_ENTRY, PROVE_LOCKING, DEBUG_ATOMIC_SLEEP and objtool's noinstr
validation, on 1 and 2 CPUs. The flavour starts the application bypassing
(`ukl_bypass=1`), and every boot must leave a clean kernel log
(tests/conftest.py).
"""
from __future__ import annotations

import pytest

from tests.boot.test_ukl_byp import BYPASS_CHECKS
from tests.conftest import GUEST, PROGRAMS, assert_suite_passed, build_image, ukl
from ukl.matrix import BASE_CHECKS
from ukl.qemu import models
from ukl.qemu.command import CPU_MODELS

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "600"
KERNEL = "ukl-distro+byp"


@pytest.fixture(scope="module")
def byp_distro_kernel() -> None:
    res = ukl("kernel", "build", KERNEL, timeout=7200.0)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.fixture(scope="module")
def suite_byp_distro(byp_distro_kernel: None) -> str:
    return build_image("t-byp-distro-suite", str(GUEST / "ukl_suite.c"), "--kernel", KERNEL)


def _run(image: str, vendor: str, *args: str, smp: int = 1) -> tuple[int, str]:
    res = ukl("run", image, "--cpu", CPU_MODELS[vendor], "--smp", str(smp), "--mem", "1G",
              "--timeout", BOOT_TIMEOUT, "--", *args, timeout=float(BOOT_TIMEOUT) + 120)
    return res.returncode, res.stdout + res.stderr


# The AMD model: its mitigations (SRSO's Safe-RET, retbleed untraining)
# are the ones the fast bypass's return must cope with; test_distro.py
# checks both models on ukl-distro, of which this is the same
# configuration plus UKL_BYP.
@pytest.mark.parametrize("vendor", ["amd"])
def test_mitigations_are_on(byp_distro_kernel: None, vendor: str) -> None:
    image = build_image("t-byp-distro-vulns", str(PROGRAMS / "cpu_vulns.c"), "--kernel", KERNEL)
    code, out = _run(image, vendor)
    assert code == 0, out
    assert not models.missing_mitigations(models.parse_vulnerabilities(out), vendor), out


# Each model once, the AMD one on 2 CPUs (the bypass's per-CPU and
# cross-CPU paths: migration, IPIs), to keep `make test` in its budget.
@pytest.mark.parametrize(("vendor", "smp"), [("intel", 1), ("amd", 2)])
def test_base_model_suite_with_bypass_on(suite_byp_distro: str, vendor: str, smp: int) -> None:
    code, out = _run(suite_byp_distro, vendor, "--bypass", *BASE_CHECKS, smp=smp)
    assert "ukl_suite: cpl=0" in out and "ukl_suite: bypass on" in out, out
    assert_suite_passed(out, list(BASE_CHECKS))
    assert code == 0, out


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_bypass_keeps_signals_restart_and_scheduling(byp_distro_kernel: None,
                                                     vendor: str) -> None:
    image = build_image("t-byp-distro-bypass", str(PROGRAMS / "bypass.c"), "--kernel", KERNEL)
    code, out = _run(image, vendor)
    assert_suite_passed(out, BYPASS_CHECKS, program="bypass")
    assert code == 0, out


# Interrupts every 100 us while the application makes bypassed calls land
# on every instruction of the fast bypass, the return thunk on the
# application's stack (SRSO Safe-RET) included; an instruction breakpoint
# must fire once and let the application move on.
@pytest.mark.parametrize("check", ["irq-storm", "hw-breakpoint"])
def test_interrupts_and_breakpoints_with_bypass_on(suite_byp_distro: str, check: str) -> None:
    code, out = _run(suite_byp_distro, "amd", "--bypass", check, smp=2)
    assert "ukl_suite: bypass on" in out, out
    assert_suite_passed(out, [check])
    assert code == 0, out
