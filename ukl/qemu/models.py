"""The CPU models this machine's QEMU knows, so that `--cpu` with a name it
lacks is one clear error before anything is built or booted, not a failed
boot after a kernel build."""
from __future__ import annotations

import functools
import subprocess

from ukl.common.errors import UsageError
from ukl.qemu.command import CPU_MODELS, QEMU, check_cpu

# What /sys/devices/system/cpu/vulnerabilities must say (a substring of
# each named file) on each vendor's model (command.CPU_MODELS) when the
# kernel has the CPU mitigations (kernel/configs/mitigations.config): the
# mitigations are on, not merely the bugs found. TCG has no microcode, so
# some read "Vulnerable: ... attempted, no microcode" while the
# mitigation's code still runs.
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


def vendor_of(cpu: str) -> str | None:
    """"intel" or "amd" for the vendor models of CPU_MODELS, else None."""
    model = cpu.split(",", 1)[0]
    return next((v for v, m in CPU_MODELS.items() if m == model), None)


def parse_vulnerabilities(console: str) -> dict[str, str]:
    """The guest's "vuln NAME: STATUS" lines (guest/lebench.c,
    tests/programs/cpu_vulns.c)."""
    found = {}
    for line in console.splitlines():
        line = line.strip()
        if line.startswith("vuln ") and ": " in line:
            name, status = line[5:].split(": ", 1)
            found[name] = status
    return found


def missing_mitigations(vulns: dict[str, str], vendor: str) -> list[str]:
    """The vendor's expected mitigations that `vulns` does not show on."""
    return [f"{name}: {vulns.get(name, 'absent')!r} lacks {want!r}"
            for name, want in MITIGATIONS[vendor].items() if want not in vulns.get(name, "")]


@functools.lru_cache(maxsize=1)
def known_models() -> frozenset[str] | None:
    """The names `qemu-system-x86_64 -cpu help` lists, or None when it
    cannot be asked (then the boot itself reports a bad name)."""
    try:
        res = subprocess.run([QEMU, "-cpu", "help"], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = {line.split()[1] for line in res.stdout.splitlines()
             if line.startswith("x86 ") and len(line.split()) > 1}
    return frozenset(names) or None


def check_known(cpu: str, known: frozenset[str] | None = None) -> str:
    """`cpu` (MODEL[,features]) if its syntax is good and QEMU has MODEL."""
    check_cpu(cpu)
    model = cpu.split(",", 1)[0]
    models = known if known is not None else known_models()
    if models is not None and model not in models:
        raise UsageError(f"--cpu {cpu}: this QEMU has no CPU model {model!r}; give max, "
                         f"Skylake-Client, EPYC or another that `{QEMU} -cpu help` lists")
    return cpu
