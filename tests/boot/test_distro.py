"""Boot tests on the distribution-like flavours (kernel/flavours.ini
`stock-distro`, `ukl-distro`): the CPU mitigations Debian ships, entry and
lock checking, preemption, probes and tracing, under an Intel and an AMD
CPU model for which Linux turns those mitigations on.

Each boot must leave a clean kernel log (tests/conftest.py): with
DEBUG_ENTRY, PROVE_LOCKING and DEBUG_ATOMIC_SLEEP, what UKL's entry paths
get wrong shows up as a warning here.
"""
from __future__ import annotations

import pytest

from tests.conftest import GUEST, PROGRAMS, ukl
from ukl.matrix import BASE_CHECKS
from ukl.qemu.command import CPU_MODELS

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "600"

# What /sys/devices/system/cpu/vulnerabilities must say (a substring of
# each named file) on each vendor's model: the mitigations are on, not
# merely the bugs found. TCG has no microcode, so some read "Vulnerable:
# ... attempted, no microcode" while the mitigation's code still runs.
MITIGATIONS = {
    "intel": {
        "spectre_v2": "Mitigation: Retpolines",
        "mds": "Clear CPU buffers",
        "meltdown": "Mitigation: PTI",
        "indirect_target_selection": "Mitigation",
    },
    "amd": {
        "spectre_v2": "Mitigation: Retpolines",
        "spec_rstack_overflow": "Mitigation: safe RET",
        "retbleed": "Mitigation: untrained return thunk",
    },
}


def _build(name: str, *args: str) -> str:
    res = ukl("build", *args, "-o", name)
    assert res.returncode == 0, res.stdout + res.stderr
    return name


def _run(image: str, vendor: str, *args: str, smp: int = 1) -> tuple[int, str]:
    res = ukl("run", image, "--cpu", CPU_MODELS[vendor], "--smp", str(smp), "--mem", "1G",
              "--timeout", BOOT_TIMEOUT, "--", *args, timeout=float(BOOT_TIMEOUT) + 120)
    return res.returncode, res.stdout + res.stderr


def _vulns(out: str) -> dict[str, str]:
    found = {}
    for line in out.splitlines():
        if line.startswith("vuln ") and ": " in line:
            name, status = line[5:].split(": ", 1)
            found[name] = status
    return found


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
@pytest.mark.parametrize("kernel", ["stock-distro", "ukl-distro"])
def test_mitigations_are_on(request: pytest.FixtureRequest, kernel: str, vendor: str) -> None:
    request.getfixturevalue(kernel.replace("-", "_") + "_kernel")
    image = _build(f"t-vulns-{kernel}", str(PROGRAMS / "cpu_vulns.c"), "--kernel", kernel)
    code, out = _run(image, vendor)
    assert code == 0, out
    vulns = _vulns(out)
    for name, wanted in MITIGATIONS[vendor].items():
        assert wanted in vulns.get(name, "(missing)"), f"{name}: {vulns.get(name)}\n{out}"


@pytest.fixture(scope="module")
def suite_ukl_distro(ukl_distro_kernel) -> str:
    return _build("t-ukl-distro-suite", str(GUEST / "ukl_suite.c"), "--kernel", "ukl-distro")


@pytest.fixture(scope="module")
def suite_ukl_ret_distro(ukl_ret_distro_kernel) -> str:
    return _build("t-ukl-ret-distro-suite", str(GUEST / "ukl_suite.c"),
                  "--kernel", "ukl-ret-distro")


@pytest.fixture(scope="module")
def suite_stock_distro(stock_distro_kernel) -> str:
    return _build("t-stock-distro-suite", str(GUEST / "ukl_suite.c"), "--kernel", "stock-distro")


def _assert_suite_passed(out: str, checks: list[str]) -> None:
    for name in checks:
        assert f"ukl_suite: ok {name}\n" in out, f"check {name} did not pass:\n{out}"
    assert "ukl_suite: 0 failure(s)" in out, out


@pytest.mark.parametrize("smp", [1, 2])
@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_base_model_suite_at_cpl0(suite_ukl_distro: str, vendor: str, smp: int) -> None:
    code, out = _run(suite_ukl_distro, vendor, smp=smp)
    assert code == 0 and "ukl_suite: cpl=0" in out, out
    _assert_suite_passed(out, list(BASE_CHECKS))


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_same_suite_on_stock(suite_stock_distro: str, vendor: str) -> None:
    code, out = _run(suite_stock_distro, vendor, smp=2)
    assert code == 0 and "ukl_suite: cpl=3" in out, out
    _assert_suite_passed(out, list(BASE_CHECKS))


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_ret_suite_at_cpl0(suite_ukl_ret_distro: str, vendor: str) -> None:
    code, out = _run(suite_ukl_ret_distro, vendor, smp=2)
    assert code == 0 and "ukl_suite: cpl=0" in out, out
    _assert_suite_passed(out, list(BASE_CHECKS))


# With SRSO Safe-RET (the AMD model) every return to the application runs
# the return thunk on the application's stack with interrupts on; a 100 us
# timer while it makes system calls lands interrupts there, and the entry
# must unwind them reading that stack as user memory (kernel 0023).
@pytest.mark.parametrize("image", ["suite_ukl_distro", "suite_ukl_ret_distro",
                                   "suite_stock_distro"])
def test_interrupt_storm_in_the_return_thunk(request: pytest.FixtureRequest,
                                             image: str) -> None:
    code, out = _run(request.getfixturevalue(image), "amd", "irq-storm", smp=2)
    assert code == 0, out
    _assert_suite_passed(out, ["irq-storm"])


# UKL_RET returns with POPF, which cannot set RF: after an instruction
# breakpoint it must take IRET, or the breakpoint fires forever.
@pytest.mark.parametrize("image", ["suite_ukl_distro", "suite_ukl_ret_distro",
                                   "suite_stock_distro"])
def test_instruction_breakpoint_counts_and_moves_on(request: pytest.FixtureRequest,
                                                    image: str) -> None:
    code, out = _run(request.getfixturevalue(image), "amd", "hw-breakpoint")
    assert code == 0, out
    _assert_suite_passed(out, ["hw-breakpoint"])
