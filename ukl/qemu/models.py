"""The CPU models this machine's QEMU knows, so that `--cpu` with a name it
lacks is one clear error before anything is built or booted, not a failed
boot after a kernel build."""
from __future__ import annotations

import functools
import subprocess

from ukl.common.errors import UsageError
from ukl.qemu.command import QEMU, check_cpu


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
