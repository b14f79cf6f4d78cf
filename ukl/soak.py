"""`ukl soak`: everything at once for a long time (guest/soak.c), as a
flavour's application and, beside it, as an ordinary process.

The image links guest/soak.c into the kernel (an ordinary process on
stock) and carries the same program built as an ordinary static binary,
which its init starts beside the application. Both run for the same time
on the CPUs asked for. A run passes when both report every activity
advancing in every window (no stall), exit 0, and the kernel log holds no
complaint. Results go to results/NAME/ (soak.md, meta.json) when a name
is given.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from ukl import pipeline
from ukl.app import process
from ukl.common import paths
from ukl.common.errors import UklError
from ukl.image.initramfs import NO_HELPERS_LINE, InitramfsSpec
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.qemu import run
from ukl.results import ResultsWriter

# TCG, asked for by name: a soak's runs must be comparable whatever host
# KVM there is (`ukl run --accel auto` would probe for it).
ACCEL = "tcg"

SOAK = paths.REPO_ROOT / "guest" / "soak.c"
PEER_PATH = "/soak-peer"
# Boot and image unpacking, beyond the soak's own seconds, and a tenth
# more for a slow end on a loaded host.
BOOT_MARGIN_S = 240.0
SLACK = 0.1


@dataclass(frozen=True)
class Outcome:
    flavour: str
    seconds: int
    cpus: int
    cpu_model: str
    result: str
    detail: str
    # The last progress line of each side ("app", "peer").
    progress: dict[str, str]
    log: Path | None


def _done(console: str, who: str) -> re.Match[str] | None:
    return re.search(rf"^soak {who}: done seconds \d+ stalls (\d+) rounds (\d+)", console,
                     re.M)


def soak(kernel: Flavour, seconds: int, cpus: int, cpu_model: str = "max") -> Outcome:
    # The length in the name: the CI soak and a long run can share a machine.
    name = f"soak-{kernel.dir_name}-{seconds}s"
    try:
        peer = process.compile_static([SOAK], "soak-peer")
        spec = InitramfsSpec(files=[(peer, PEER_PATH)],
                             helpers=[f"{PEER_PATH} {seconds} peer"])
        img = pipeline.build_image(name, kernel, [SOAK], spec)
    except UklError as e:
        return Outcome(kernel.name, seconds, cpus, cpu_model, "no build",
                       e.message.splitlines()[0], {}, None)
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=cpus, mem="1G",
                           cpu=cpu_model, accel=ACCEL, program_args=[str(seconds), "app"])
    ran = run.run(opts, log_name=name, timeout=seconds * (1 + SLACK) + BOOT_MARGIN_S, echo=False)
    console = ran.log.read_text(errors="replace")
    sides = ["app"] if NO_HELPERS_LINE in console else ["app", "peer"]
    problems = re.findall(r"^soak \w+: stalled .*$", console, re.M)
    problems += [f"kernel: {c}" for c in ran.complaints]
    progress: dict[str, str] = {}
    for who in sides:
        lines = re.findall(rf"^soak {who}: t=.*$", console, re.M)
        if lines:
            progress[who] = lines[-1]
        if _done(console, who) is None:
            problems.append(f"the {who} did not finish its {seconds} s")
    if ran.exit_code != 0:
        problems.append(f"exit status {ran.exit_code}"
                        + (f" ({ran.problem})" if ran.problem else ""))
    result = "fail" if problems else "pass"
    return Outcome(kernel.name, seconds, cpus, cpu_model, result,
                   "; ".join(problems) or "every activity advanced in every window",
                   progress, ran.log)


def run_soak(kernel: Flavour, seconds: int, cpus: int, name: str | None,
             command: str, cpu_model: str = "max") -> Outcome:
    print(f"ukl: soak: {kernel.name}, {seconds} s on {cpus} CPU(s) ({cpu_model})",
          file=sys.stderr)
    o = soak(kernel, seconds, cpus, cpu_model)
    print(f"   [soak] {kernel.name}: {o.result}: {o.detail}", file=sys.stderr)
    if o.log:
        print(f"   [soak] console log: {o.log}", file=sys.stderr)
    if name:
        out = ResultsWriter(name, command)
        lines = ["guest/soak.c as the application and, beside it, as an ordinary "
                 "process (QEMU TCG, 1 GiB): mmap churn, pipes, vfork+exec, clock reads, "
                 "pthread_kill, bypass and run-to-completion switches, a 1 ms timer, "
                 "stack growth. Each counter must advance in every 10 s window.", "",
                 f"- flavour: `{o.flavour}`, {o.seconds} s on {o.cpus} CPUs, "
                 f"QEMU CPU model `{o.cpu_model}`",
                 f"- result: **{o.result}**: {o.detail}", ""]
        lines += [f"- last progress, {who}: `{line}`" for who, line in o.progress.items()]
        out.markdown("soak.md", "\n".join(lines))
        out.meta("meta.json", [kernel],
                 qemu_mode=f"TCG, -cpu {cpu_model}, {cpus} CPUs, 1 GiB", accel=ACCEL)
    return o
