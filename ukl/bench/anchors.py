"""Native anchors: what a function call, a null system call, getppid and
VERW cost on the build host itself, in nanoseconds and TSC ticks
(ukl/bench/anchors.c), recorded beside each `ukl bench` run. They are the
host's kernel and CPU, not the guest's: they say what one round trip to a
kernel is worth on real hardware, which the guest's instruction counts
cannot."""
from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from ukl.common import cprogram, paths
from ukl.common.errors import UklError
from ukl.common.proc import run_quiet

SOURCE = Path(__file__).with_name("anchors.c")
NAMES = ("call", "syscall", "getppid", "verw")


@dataclass(frozen=True)
class Anchor:
    name: str
    ns: float
    ticks: float


def _binary() -> Path:
    return cprogram.compiled(SOURCE, paths.build_root() / "bench" / "anchors",
                             ["-O2", "-Wall", "-Werror"], "compiling the native anchors")


def parse(output: str) -> list[Anchor]:
    """The `anchor,NAME,NANOSECONDS,TICKS` lines, every name once."""
    found = []
    for line in output.splitlines():
        if line.startswith("anchor,"):
            _, name, ns, ticks = line.split(",")
            found.append(Anchor(name, float(ns), float(ticks)))
    if sorted(a.name for a in found) != sorted(NAMES):
        raise UklError(f"the native anchors printed {[a.name for a in found]}, "
                       f"expected {list(NAMES)}")
    return found


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return "unknown"


def measure() -> list[Anchor]:
    return parse(run_quiet([_binary()], what="measuring the native anchors"))


def meta(found: list[Anchor]) -> dict[str, object]:
    """For meta.json: the figures and what they were measured on."""
    return {"measured_on": "the build host, natively (its kernel, not the guest's)",
            "host_kernel": platform.release(), "cpu": cpu_model(),
            "figures": {a.name: {"ns": a.ns, "tsc_ticks": a.ticks} for a in found}}


def markdown(found: list[Anchor]) -> str:
    lines = [f"Measured natively on the build host ({cpu_model()}, its own Linux "
             f"{platform.release()}, not the guest's kernel): the fastest batch of 1,000, "
             "per operation. What removing one round trip to the kernel is worth on this "
             "CPU.", "", "| operation | ns | TSC ticks |", "|---|---|---|"]
    what = {"call": "function call", "syscall": "null system call (`syscall(-1)`)",
            "getppid": "getppid", "verw": "VERW"}
    lines += [f"| {what[a.name]} | {a.ns:.2f} | {a.ticks:.1f} |" for a in found]
    return "\n".join(lines) + "\n"
