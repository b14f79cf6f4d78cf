"""Boot tests: the application's returns and indirect branches are what the
kernel makes of its own (ukl-cc compiles them through the kernel's
speculation thunks; ukl/kbuild/thunks.py lists the sites for a kernel with
thunks, which patches them at boot for its CPU, and rewrites them into
plain branches for a kernel without).

The suite check `thunks` calls through a function pointer and prints the
code of two of its functions as the running kernel left it; here that code
is disassembled and each branch target named from the image's vmlinux.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GUEST, assert_suite_passed, build_image, ukl
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


def _symbols(image: str) -> dict[int, str]:
    vmlinux = paths.build_root() / "images" / image / "vmlinux"
    nm = subprocess.run(["nm", str(vmlinux)], capture_output=True, text=True, check=True)
    table = {}
    for line in nm.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            table[int(parts[0], 16)] = parts[2]
    return table


def _branches(out: str, image: str, tmp_path: Path) -> dict[str, list[str]]:
    """For each printed function, its call, jump and return instructions
    up to its first return or jump, targets named: ["call *%rax",
    "jmp srso_return_thunk", "ret", ...]."""
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
            m = re.match(r"^\s*[0-9a-f]+:\t(?:[0-9a-f]{2} )+\s*\t(call|jmp|ret)\S*\s*(\S*)", line)
            if not m:
                continue
            op, target = m.groups()
            if re.fullmatch(r"(0x)?[0-9a-f]+", target):
                target = symbols.get(int(target, 16), target)
            branches.append(f"{op} {target}".strip())
            if op in ("ret", "jmp"):
                break
        found[name] = branches
    assert set(found) == {"thunk_return", "thunk_call"}, out
    return found


def test_without_thunks_the_application_branches_plainly(suite_lab: str, tmp_path: Path) -> None:
    # The lab kernel has no thunks: the kernel link rewrote every site.
    branches = _branches(_run(suite_lab), suite_lab, tmp_path)
    assert branches["thunk_return"] == ["ret"]
    assert branches["thunk_call"][0] == "call *%rax", branches


def _expected_return(vulns: dict[str, str]) -> set[str]:
    """The return thunks the kernel's own returns take for these findings
    (arch/x86/kernel/cpu/bugs.c)."""
    if vulns.get("spec_rstack_overflow", "").lower().startswith("mitigation: safe ret"):
        return {"jmp srso_return_thunk", "jmp srso_alias_return_thunk"}
    if "untrained return thunk" in vulns.get("retbleed", ""):
        return {"jmp retbleed_return_thunk"}
    return {"ret"}


def _expected_call(vulns: dict[str, str]) -> set[str]:
    """Indirect calls: through the retpoline thunk when the kernel uses
    retpolines, else plain (or fenced: lfence is not a branch)."""
    if "Retpolines" in vulns.get("spectre_v2", ""):
        return {"call __x86_indirect_thunk_rax"}
    return {"call *%rax"}


@pytest.mark.parametrize("vendor", sorted(CPU_MODELS))
def test_with_thunks_the_application_branches_as_the_kernel(suite_distro: str, vendor: str,
                                                            tmp_path: Path) -> None:
    out = _run(suite_distro, "--cpu", CPU_MODELS[vendor])
    vulns = models.parse_vulnerabilities(out)
    branches = _branches(out, suite_distro, tmp_path)
    assert branches["thunk_return"][-1] in _expected_return(vulns), (vulns, branches)
    assert branches["thunk_call"][0] in _expected_call(vulns), (vulns, branches)
    if vendor == "amd":
        # The AMD model is the one with SRSO: its returns must not be plain.
        assert branches["thunk_return"][-1] != "ret", (vulns, branches)
