"""`ukl fuzz`: the system call fuzzer (guest/fuzz.c) as the application of
each kernel flavour, checked from outside.

Each flavour's kernel links guest/fuzz.c (an ordinary process on stock)
and boots on the CPUs asked for, with an ordinary busybox process beside
it that counts every second into /tmp/peer.count and says its count on
the console every PEER_EVERY. A run passes when the fuzzer finishes its
time with a worker still making calls (one blocked for good in a call is
replaced by a spare; none left to take over ends the fuzzing early, a
failure), no call raised a signal in it, the kernel log holds no
complaint (ukl/qemu/complaints.py) and the ordinary process was still
counting at the end, as its console lines show. Results go to results/NAME/:
fuzz.csv, fuzz.md and meta.json, rewritten after every flavour. A failure
prints the seed and the call the fuzzer was making, and how to replay it
with every call logged.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ukl import pipeline
from ukl.common import paths
from ukl.common.errors import UklError
from ukl.image.initramfs import NO_HELPERS_LINE, InitramfsSpec
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.qemu import run
from ukl.results import ResultsWriter

# TCG, asked for by name: the fuzzer's runs must be comparable whatever
# host KVM there is (`ukl run --accel auto` would probe for it).
ACCEL = "tcg"

FUZZER = paths.REPO_ROOT / "guest" / "fuzz.c"
# The ordinary process beside the application. It says its count on the
# console every PEER_EVERY counts, and when it cannot write its count or
# sleep. Whether it lived to the end is judged from those lines, outside
# the guest: the fuzzer's own reading of /tmp/peer.count fails when the
# application fuzzes itself (no fork under UKL_NSS) and its calls have
# taken its file descriptors, limits or root.
PEER_EVERY = 5
PEER = ("n=0; while :; do n=$((n+1)); "
        "echo $n > /tmp/peer.count || echo \"fuzz: peer: cannot write its count $n\"; "
        f"[ $((n % {PEER_EVERY})) -eq 0 ] && echo \"fuzz: peer-count $n\"; "
        "sleep 1 || echo \"fuzz: peer: sleep failed at $n\"; done")
# The peer must have said its count after the fuzzer's progress line at
# this many seconds before the end (half the run for a short one).
PEER_LAST_S = 60
# Boot, image unpacking and the fuzzer's own wind-down, beyond its seconds.
BOOT_MARGIN_S = 240.0
FIELDS = ("flavour", "cpu_model", "seed", "seconds", "cpus", "threads", "calls", "distinct", "ok",
          "stalled", "result", "detail")
_DONE = re.compile(r"^fuzz: done calls (\d+) distinct (\d+) ok (\d+) stalled (\d+) "
                   r"peer-alive (\w+)", re.M)
_FINDING = re.compile(r"^fuzz: signal .*$", re.M)
# guest/fuzz.c, when a stalled worker found no spare to take its place.
NO_WORKER_LEFT = "fuzz: no slot for another worker"
_PROGRESS = re.compile(r"^fuzz: progress (\d+)(?: at (\d+) s)?$", re.M)
_PEER_COUNT = re.compile(r"^fuzz: peer-count (\d+)$", re.M)


@dataclass(frozen=True)
class Outcome:
    flavour: str
    cpu_model: str
    seed: int
    seconds: int
    cpus: int
    threads: int
    calls: int
    distinct: int
    ok: int
    stalled: int
    result: str
    detail: str
    log: Path | None


def counts(console: str) -> tuple[int, int, int, int]:
    """(calls, distinct, ok, stalled) from the fuzzer's end-of-run line; a
    run that ended early has none, and then its calls are the last progress
    count (the other figures are only counted at the end)."""
    done = _DONE.search(console)
    if done:
        return int(done.group(1)), int(done.group(2)), int(done.group(3)), int(done.group(4))
    progress = _PROGRESS.findall(console)
    return (int(progress[-1][0]) if progress else 0), 0, 0, 0


def peer_counted_to_the_end(console: str, seconds: int) -> bool:
    """Whether the ordinary process said its count on the console after
    the fuzzer's progress line at PEER_LAST_S seconds before the end (at
    half time for a run shorter than twice that)."""
    mark = seconds - min(PEER_LAST_S, seconds // 2)
    late = next((m for m in _PROGRESS.finditer(console)
                 if m.group(2) is not None and int(m.group(2)) >= mark), None)
    return late is not None and _PEER_COUNT.search(console, late.end()) is not None


def program_args(seed: int, seconds: int, threads: int, log_calls: bool) -> list[str]:
    return [str(seed), str(seconds), str(threads), *(["--log-calls"] if log_calls else [])]


def fuzz(kernel: Flavour, seed: int, seconds: int, cpus: int, threads: int,
         log_calls: bool = False, cpu_model: str = "max") -> Outcome:
    """Build the fuzzer's image on `kernel`, boot it, judge the run."""
    name = f"fuzz-{kernel.dir_name}"
    spec = InitramfsSpec(helpers=[PEER])

    def outcome(result: str, detail: str, log: Path | None = None,
                figures: tuple[int, ...] = (0, 0, 0, 0)) -> Outcome:
        calls, distinct, ok, stalled = figures
        return Outcome(kernel.name, cpu_model, seed, seconds, cpus, threads, calls, distinct,
                       ok, stalled, result, detail, log)

    try:
        img = pipeline.build_image(name, kernel, [FUZZER], spec)
    except UklError as e:
        return outcome("no build", e.message.splitlines()[0])
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=cpus, mem="1G",
                           cpu=cpu_model, accel=ACCEL,
                           program_args=program_args(seed, seconds, threads, log_calls))
    # One console log per CPU model: a campaign runs a flavour on several.
    log_name = name if cpu_model == "max" else f"{name}-{cpu_model}"
    ran = run.run(opts, log_name=log_name, timeout=seconds + BOOT_MARGIN_S, echo=False)
    console = ran.log.read_text(errors="replace")
    problems = findings(console, ran.exit_code, ran.problem, ran.complaints, seconds)
    if problems:
        return outcome("fail", "; ".join(problems), ran.log, counts(console))
    return outcome("pass", "no finding", ran.log, counts(console))


def findings(console: str, exit_code: int, problem: str,
             complaints: list[str], seconds: int) -> list[str]:
    """What fails a run of `seconds`, from the fuzzer's console, how the
    guest ended and the kernel's complaints: empty for a pass."""
    done = _DONE.search(console)
    problems = [m.group(0) for m in _FINDING.finditer(console)]
    problems += [f"kernel: {c}" for c in complaints]
    if done is None:
        why = f": {problem}" if problem else ""
        problems.append(f"no end of run (status {exit_code}{why})")
    elif NO_HELPERS_LINE not in console and not peer_counted_to_the_end(console, seconds):
        # The fuzzer's own `peer-alive` is not the verdict (see PEER); its
        # `fuzz: peer:` lines, and the peer's own, say why it may have
        # stopped.
        peer = re.findall(r"^fuzz: peer: (.*)$", console, re.M)
        problems.append("the ordinary process beside the fuzzer stopped counting" +
                        (f" ({'; '.join(dict.fromkeys(peer))[:400]})" if peer else ""))
    elif exit_code != 0:
        problems.append(f"exit status {exit_code}")
    # A worker blocked for good in a call (a signal mask it was given, a
    # wait nothing ends) is not a finding while a spare takes its place;
    # with none left the rest of the run made no calls.
    if NO_WORKER_LEFT in console:
        problems.append("every worker blocked for good in a call and none was left to take "
                        "over: the fuzzing stopped early")
    return problems


def replay_hint(o: Outcome) -> str:
    return (f"ukl fuzz --kernels {o.flavour} --cpu {o.cpu_model} --seed {o.seed} "
            f"--seconds {o.seconds} --cpus {o.cpus} --threads {o.threads} --log-calls")


def _write(out: ResultsWriter, outcomes: list[Outcome], kernels: list[Flavour]) -> None:
    out.csv("fuzz.csv", FIELDS,
            [(o.flavour, o.cpu_model, o.seed, o.seconds, o.cpus, o.threads, o.calls,
              o.distinct, o.ok, o.stalled, o.result, o.detail) for o in outcomes])
    lines = ["guest/fuzz.c as each flavour's application (an ordinary process on stock), "
             "QEMU TCG; a run passes with no signal in the fuzzer, no stalled worker, a "
             "clean kernel log and the ordinary process beside it still counting. `calls` "
             "counts the calls made, `distinct` the numbers that answered other than "
             "ENOSYS, `ok` the calls that succeeded, `stalled` the workers left blocked in a "
             "call (another takes over).", "",
             "| flavour | CPU model | seed | seconds | CPUs | threads | calls | distinct | ok "
             "| stalled | result | detail |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| `{o.flavour}` | {o.cpu_model} | {o.seed} | {o.seconds} | {o.cpus} | "
              f"{o.threads} | {o.calls} | {o.distinct} | {o.ok} | {o.stalled} | {o.result} | "
              f"{o.detail} |"
              for o in outcomes]
    passed = sum(o.result == "pass" for o in outcomes)
    lines += ["", f"{passed} of {len(outcomes)} runs pass."]
    out.markdown("fuzz.md", "\n".join(lines))
    out.meta("meta.json", kernels, qemu_mode="TCG, 1 GiB", accel=ACCEL)


def run_fuzz(kernels: list[Flavour], seed: int, seconds: int, cpus: int, threads: int,
             log_calls: bool, name: str | None, command: str,
             cpu_model: str = "max") -> list[Outcome]:
    """Fuzz each of `kernels` in turn; results/NAME/ when `name` is given."""
    out = ResultsWriter(name, command) if name else None
    outcomes: list[Outcome] = []
    for i, kernel in enumerate(kernels, 1):
        print(f"ukl: fuzz {i}/{len(kernels)}: {kernel.name}, seed {seed}, {seconds} s on "
              f"{cpus} CPU(s) ({cpu_model}), {threads} thread(s)", file=sys.stderr)
        start = time.monotonic()
        o = fuzz(kernel, seed, seconds, cpus, threads, log_calls, cpu_model)
        outcomes.append(o)
        print(f"   [fuzz] {kernel.name}: {o.result} ({o.calls} calls, "
              f"{time.monotonic() - start:.0f} s): {o.detail}", file=sys.stderr)
        if o.result == "fail":
            print(f"   [fuzz] console log: {o.log}\n   [fuzz] replay with every call "
                  f"logged: {replay_hint(o)}", file=sys.stderr)
        if out:
            _write(out, outcomes, kernels[:i])
    return outcomes
