"""Boot tests on the distribution-like flavours (kernel/flavours.ini
`stock-distro`, `ukl-distro`): the CPU mitigations Debian ships, entry and
lock checking, preemption, probes and tracing, under an Intel and an AMD
CPU model for which Linux turns those mitigations on.

Each boot must leave a clean kernel log (tests/conftest.py): with
DEBUG_ENTRY, PROVE_LOCKING and DEBUG_ATOMIC_SLEEP, what UKL's entry paths
get wrong shows up as a warning here.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from tests.conftest import (GUEST, PROGRAMS, assert_suite_passed, build_image, fixture_name,
                            ukl)
from ukl.kbuild import flavour, module
from ukl.matrix import BASE_CHECKS
from ukl.qemu import models
from ukl.qemu.command import CPU_MODELS

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "600"


def _image_fixture(fixture: str, source: Path, kernel: str,
                   module_dir: Path | None = None,
                   files: tuple[str, ...] = ()) -> Callable[..., str]:
    """A module fixture named `fixture`: `source` built as an image on the
    flavour `kernel` (its kernel built first, by its session fixture), with
    the kernel module in `module_dir`, if any, built for it as /NAME.ko,
    and the files that the fixtures named in `files` give (--file args)."""
    def build(request: pytest.FixtureRequest) -> str:
        request.getfixturevalue(fixture_name(kernel))
        extra: list[str] = []
        if module_dir is not None:
            ko = module.build_module(flavour.get(kernel), module_dir)
            extra = ["--file", f"{ko}:/{ko.name}"]
        for name in files:
            extra += ["--file", request.getfixturevalue(name)]
        return build_image(f"t-{fixture.replace('_', '-')}", str(source), "--kernel", kernel,
                           *extra)
    return pytest.fixture(scope="module", name=fixture)(build)


@pytest.fixture(scope="module")
def ist_rsp(tmp_path_factory: pytest.TempPathFactory) -> str:
    """tests/programs/ist_rsp.c, an ordinary static program (the host's
    gcc, not the UKL toolchain), as a --file argument."""
    out = tmp_path_factory.mktemp("ist_rsp") / "ist_rsp"
    subprocess.run(["gcc", "-static", "-O2", "-o", str(out), str(PROGRAMS / "ist_rsp.c")],
                   check=True)
    return f"{out}:/ist_rsp"


suite_ukl_distro = _image_fixture("suite_ukl_distro", GUEST / "ukl_suite.c", "ukl-distro")
suite_ukl_ret_distro = _image_fixture("suite_ukl_ret_distro", GUEST / "ukl_suite.c",
                                      "ukl-ret-distro")
suite_stock_distro = _image_fixture("suite_stock_distro", GUEST / "ukl_suite.c", "stock-distro")
# With tests/programs/ukl_probe: register_kprobe() from a module.
trace_ukl_distro = _image_fixture("trace_ukl_distro", PROGRAMS / "trace_vdso.c", "ukl-distro",
                                  PROGRAMS / "ukl_probe")
trace_stock_distro = _image_fixture("trace_stock_distro", PROGRAMS / "trace_vdso.c",
                                    "stock-distro", PROGRAMS / "ukl_probe")
# With tests/programs/ukl_nmi_nest and ist_rsp: NMIs against the IST stacks.
nmi_ukl_distro = _image_fixture("nmi_ukl_distro", PROGRAMS / "nmi_nest.c", "ukl-distro",
                                PROGRAMS / "ukl_nmi_nest", ("ist_rsp",))
nmi_stock_distro = _image_fixture("nmi_stock_distro", PROGRAMS / "nmi_nest.c", "stock-distro",
                                  PROGRAMS / "ukl_nmi_nest", ("ist_rsp",))


def _run(image: str, vendor: str, *args: str, smp: int = 1) -> tuple[int, str]:
    res = ukl("run", image, "--cpu", CPU_MODELS[vendor], "--smp", str(smp), "--mem", "1G",
              "--timeout", BOOT_TIMEOUT, "--", *args, timeout=float(BOOT_TIMEOUT) + 120)
    return res.returncode, res.stdout + res.stderr


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
@pytest.mark.parametrize("kernel", ["stock-distro", "ukl-distro"])
def test_mitigations_are_on(request: pytest.FixtureRequest, kernel: str, vendor: str) -> None:
    request.getfixturevalue(kernel.replace("-", "_") + "_kernel")
    image = build_image(f"t-vulns-{kernel}", str(PROGRAMS / "cpu_vulns.c"), "--kernel", kernel)
    code, out = _run(image, vendor)
    assert code == 0, out
    assert not models.missing_mitigations(models.parse_vulnerabilities(out), vendor), out


@pytest.mark.parametrize("smp", [1, 2])
@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_base_model_suite_at_cpl0(suite_ukl_distro: str, vendor: str, smp: int) -> None:
    code, out = _run(suite_ukl_distro, vendor, smp=smp)
    assert code == 0 and "ukl_suite: cpl=0" in out, out
    assert_suite_passed(out, list(BASE_CHECKS))


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_same_suite_on_stock(suite_stock_distro: str, vendor: str) -> None:
    code, out = _run(suite_stock_distro, vendor, smp=2)
    assert code == 0 and "ukl_suite: cpl=3" in out, out
    assert_suite_passed(out, list(BASE_CHECKS))


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_ret_suite_at_cpl0(suite_ukl_ret_distro: str, vendor: str) -> None:
    code, out = _run(suite_ukl_ret_distro, vendor, smp=2)
    assert code == 0 and "ukl_suite: cpl=0" in out, out
    assert_suite_passed(out, list(BASE_CHECKS))


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
    assert_suite_passed(out, ["irq-storm"])


# UKL_RET returns with POPF, which cannot set RF: after an instruction
# breakpoint it must take IRET, or the breakpoint fires forever.
@pytest.mark.parametrize("image", ["suite_ukl_distro", "suite_ukl_ret_distro",
                                   "suite_stock_distro"])
def test_instruction_breakpoint_counts_and_moves_on(request: pytest.FixtureRequest,
                                                    image: str) -> None:
    code, out = _run(request.getfixturevalue(image), "amd", "hw-breakpoint")
    assert code == 0, out
    assert_suite_passed(out, ["hw-breakpoint"])


# kprobes (ftrace-based and INT3) and the function tracer beside an
# application reading clocks: the kernel's own code is traced as usual, and
# the vDSO stand-ins the application calls are its code, which no probe
# reaches (kernel 0027; before it, a probe on ktime_get_real_ts64() made
# the application's return schedule in atomic context, or killed it with
# SIGTRAP), not even register_kprobe() from a module (ukl_probe.ko; before
# kernel 0032 it accepted them). First, an INT3 probe set after the
# application forked is hit in the child: its instruction slot is module
# memory allocated after the child's copy of the kernel image's page tables
# was made (kernel 0030).
@pytest.mark.parametrize("image,smp", [("trace_ukl_distro", 1), ("trace_ukl_distro", 2),
                                       ("trace_stock_distro", 1)])
def test_tracing_beside_the_application(request: pytest.FixtureRequest, image: str,
                                        smp: int) -> None:
    code, out = _run(request.getfixturevalue(image), "amd", smp=smp)
    assert code == 0 and "trace_vdso: 0 failure(s)" in out, out
    for check in ("kprobe-int3-forked-child", "kprobe-syscall", "kprobe-int3-syscall",
                  "ftrace-syscall",
                  "kprobe-timekeeping", "kprobe-int3-timekeeping", "ftrace-timekeeping",
                  "kprobe-refused-vdso", "kprobe-refused-app", "ftrace-refused-vdso",
                  "kprobe-module-kernel", "kprobe-module-refused-app"):
        assert f"trace_vdso: ok {check}\n" in out, out
    if image == "trace_ukl_distro":
        assert "trace_vdso: ok kprobe-module-refused-vdso\n" in out, out


# NMIs against the IST stacks (kernel 0034). First, an NMI that comes
# while a fault's frame is still on the IST stack the fault came in on (on
# UKL, every gate without an IST stack of its own has one; page faults
# their own with UKL_PF_SS), and whose handler faults the same way, as
# perf's does when it reads a user stack: before 0034 the second fault's
# frame overwrote the first's and the machine hung. Then, on 2 CPUs, an
# unprivileged ordinary process that points its stack pointer just above
# the bottom of CPU 1's UKL IST stacks while NMIs come: the NMI must not
# take that stack pointer for the kernel's and move the IST entry into the
# guard page (a panic in the first version of 0034). Stock, whose faults
# have no IST stack, is the reference.
@pytest.mark.parametrize("image,smp", [("nmi_ukl_distro", 1), ("nmi_ukl_distro", 2),
                                       ("nmi_stock_distro", 2)])
def test_nmis_against_the_ist_stacks(request: pytest.FixtureRequest, image: str,
                                     smp: int) -> None:
    code, out = _run(request.getfixturevalue(image), "amd", smp=smp)
    assert code == 0 and "nmi_nest: 0 failure(s)" in out, out
    assert "nmi_nest: ok nmi-during-fault-entry\n" in out, out
    # The module's own report: the NMI came at the fault handler's first
    # instruction, and both faults reached their fixups.
    for fault, entry in (("general protection", "asm_exc_general_protection"),
                         ("page fault", "asm_exc_page_fault")):
        assert re.search(f"ukl_nmi_nest: {fault}: NMI at {entry}\\+0x0/\\S+; its own fault "
                         "fixed up; the fault it interrupted fixed up", out), out
    if image == "nmi_ukl_distro" and smp == 2:
        for what in ("user-sp-on-ukl-ist", "user-sp-on-ukl-pf-ist"):
            assert f"nmi_nest: ok {what}\n" in out, out
        # The NMIs did interrupt the process in user mode (each part sends 5).
        assert len(re.findall(r"NMI on cpu 1 at sp [0-9a-f]+, CPL3", out)) >= 2, out
