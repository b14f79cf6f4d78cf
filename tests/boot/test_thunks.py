"""Boot tests: the application's returns and indirect branches are what the
kernel makes of its own (ukl-cc compiles them through the kernel's
speculation thunks; ukl/kbuild/thunks.py lists the sites for a kernel with
thunks, which patches them at boot for its CPU, and rewrites them into
plain branches for a kernel without).

The suite check `thunks` calls through a function pointer and prints the
code of two of its functions, of one of the C library's (labs) and of a
vDSO stand-in (ukl_vdso_time) as the running kernel left it; here that
code is disassembled and each branch target named from the image's
vmlinux. C++ exceptions, whose unwinder returns through a register
(`__x86_return_thunk_rcx`, made the kernel's `__x86_indirect_thunk_rcx`),
are thrown and caught on each CPU model.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import GUEST, PROGRAMS, assert_suite_passed, build_image, ukl
from ukl.common import paths
from ukl.qemu import models
from ukl.qemu.command import CPU_MODELS

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "600"
_CODE = re.compile(r"^ukl_suite: code (\w+) (0x[0-9a-f]+)((?: [0-9a-f]{2})+)$", re.M)


@pytest.fixture(scope="module")
def suite_lab(ukl_kernel: Path) -> str:
    return build_image("t-thunks-ukl", str(GUEST / "ukl_suite.c"), "--kernel", "ukl")


@pytest.fixture(scope="module")
def suite_distro(ukl_distro_kernel: Path) -> str:
    return build_image("t-thunks-ukl-distro", str(GUEST / "ukl_suite.c"),
                       "--kernel", "ukl-distro")


def _run(image: str, *qemu: str) -> str:
    res = ukl("run", image, *qemu, "--mem", "1G", "--timeout", BOOT_TIMEOUT, "--", "thunks",
              timeout=float(BOOT_TIMEOUT) + 120)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out
    assert_suite_passed(out, ["thunks"])
    return out


def _symbols(image: str) -> dict[int, set[str]]:
    """Every name of each address in the image's vmlinux (thunk arrays
    share their first thunk's address)."""
    vmlinux = paths.images_dir() / image / "vmlinux"
    nm = subprocess.run(["nm", str(vmlinux)], capture_output=True, text=True, check=True)
    table: dict[int, set[str]] = {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table.setdefault(int(parts[0], 16), set()).add(parts[2])
    return table


@dataclass(frozen=True)
class Branch:
    """A call, jump or return at `address`: `forms` are its text with each
    name of its target ("call *%rax", "jmp srso_return_thunk", "ret")."""
    address: int
    forms: frozenset[str]


def _branches(out: str, image: str, tmp_path: Path) -> dict[str, list[Branch]]:
    """For each printed function, its calls, jumps and returns up to its
    first return or jump."""
    symbols = _symbols(image)
    found = {}
    for name, address, code in _CODE.findall(out):
        raw = tmp_path / f"{name}.bin"
        raw.write_bytes(bytes(int(b, 16) for b in code.split()))
        dump = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                               f"--adjust-vma={address}", str(raw)],
                              capture_output=True, text=True, check=True).stdout
        branches = []
        for line in dump.splitlines():
            m = re.match(r"^\s*([0-9a-f]+):\t(?:[0-9a-f]{2} )+\s*\t(call|jmp|ret)\S*\s*(\S*)",
                         line)
            if not m:
                continue
            at, op, target = m.groups()
            names = {target}
            if re.fullmatch(r"(0x)?[0-9a-f]+", target):
                names = symbols.get(int(target, 16), {target})
            branches.append(Branch(int(at, 16), frozenset(f"{op} {n}".strip() for n in names)))
            if op in ("ret", "jmp"):
                break
        found[name] = branches
    assert set(found) == {"thunk_return", "thunk_call", "libc_return", "vdso_return"}, out
    return found


def test_without_thunks_the_application_branches_plainly(suite_lab: str, tmp_path: Path) -> None:
    # The lab kernel has no thunks: the kernel link rewrote every site.
    branches = _branches(_run(suite_lab), suite_lab, tmp_path)
    assert [b.forms for b in branches["thunk_return"]] == [{"ret"}]
    assert [b.forms for b in branches["libc_return"]] == [{"ret"}]
    assert branches["vdso_return"][-1].forms == {"ret"}, branches
    assert branches["thunk_call"][0].forms == {"call *%rax"}, branches


def _its_aligned(vulns: dict[str, str]) -> bool:
    return vulns.get("indirect_target_selection", "").startswith(
        "Mitigation: Aligned branch/return thunks")


def _expected_return(vulns: dict[str, str], address: int) -> set[str]:
    """What the kernel makes of a return at `address` for these findings
    (arch/x86/kernel/cpu/bugs.c, alternative.c's cpu_wants_rethunk_at())."""
    if vulns.get("spec_rstack_overflow", "").lower().startswith("mitigation: safe ret"):
        return {"jmp srso_return_thunk", "jmp srso_alias_return_thunk"}
    if "untrained return thunk" in vulns.get("retbleed", ""):
        return {"jmp retbleed_return_thunk"}
    if _its_aligned(vulns) and not address & 0x20:
        # ITS: a return in the lower half of a cache line.
        return {"jmp its_return_thunk"}
    return {"ret"}


def _expected_call(vulns: dict[str, str], address: int) -> set[str]:
    """An indirect call through %rax at `address`: through the retpoline
    thunk when the kernel uses retpolines, through the ITS thunk when its
    branch would end in the lower half of a cache line, else plain."""
    if "Retpolines" in vulns.get("spectre_v2", ""):
        return {"call __x86_indirect_thunk_rax"}
    if _its_aligned(vulns) and not (address + 1) & 0x20:
        return {"call __x86_indirect_its_thunk_rax"}
    return {"call *%rax"}


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_with_thunks_the_application_branches_as_the_kernel(suite_distro: str, vendor: str,
                                                            tmp_path: Path) -> None:
    out = _run(suite_distro, "--cpu", CPU_MODELS[vendor])
    vulns = models.parse_vulnerabilities(out)
    branches = _branches(out, suite_distro, tmp_path)
    for name, sites in branches.items():
        last = sites[-1]
        assert last.forms & _expected_return(vulns, last.address), (name, vulns, sites)
    call = branches["thunk_call"][0]
    assert call.forms & _expected_call(vulns, call.address), (vulns, branches)
    if vendor == "amd":
        # The AMD model is the one with SRSO: its returns must not be plain.
        assert all("ret" not in s[-1].forms for s in branches.values()), (vulns, branches)


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_cxx_exceptions_unwind_through_the_kernels_thunks(ukl_distro_kernel: Path, vendor: str,
                                                          tmp_path: Path) -> None:
    image = build_image("t-thunks-cxx-distro", str(PROGRAMS / "cxx_suite.cc"),
                        "--kernel", "ukl-distro")
    res = ukl("run", image, "--cpu", CPU_MODELS[vendor], "--smp", "2", "--mem", "1G",
              "--timeout", BOOT_TIMEOUT, timeout=float(BOOT_TIMEOUT) + 120)
    out = res.stdout + res.stderr
    assert "ok exception" in out and "cxx_suite: all passed" in out, out
    assert res.returncode == 0, out
    vmlinux = paths.images_dir() / image / "vmlinux"
    nm = subprocess.run(["nm", str(vmlinux)], capture_output=True, text=True, check=True).stdout
    assert "__x86_return_thunk_rcx" not in nm
