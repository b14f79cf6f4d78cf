"""`ukl matrix`: every combination of the UKL options, built from the same
patched tree and checked with the base-model boot suite (not a benchmark,
but a long recorded run like one: results/NAME/).

The options, their exclusions and their checks come from the options table
(kernel/options.ini): each combination composes option fragments onto the
`ukl` flavour (`ukl`, `ukl+byp`, ..., `ukl+byp+ret+shortcuts+rtc`), less
the combinations Kconfig forbids. A combination with the same fragments as
a named flavour builds as that flavour, whose build tree is already warm;
the others share one output directory (SHARED_BUILD). Kconfig refusing a
combination is a result too (the build fails naming the option that did
not stick).

Each combination's kernel links guest/ukl_suite.c and boots on two CPUs;
it passes when every check of suite_checks(combination) passes: the
base-model checks plus the checks its options add, minus those their
restrictions rule out by design. Results go to results/NAME/: matrix.csv,
matrix.md and meta.json, rewritten after every combination, so a long run
can be resumed (--resume skips combinations that passed).
"""
from __future__ import annotations

import csv
import itertools
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ukl import pipeline
from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.image.initramfs import InitramfsSpec
from ukl.kbuild import flavour
from ukl.kbuild.flavour import Flavour
from ukl.kbuild.options import table
from ukl.qemu import command as qemu
from ukl.qemu import run
from ukl.results import ResultsWriter, results_dir

# TCG, asked for by name: every combination runs the same way whatever
# host KVM there is (`ukl run --accel auto` would probe for it).
ACCEL = "tcg"

# The base-model checks of guest/ukl_suite.c.
BASE_CHECKS = ("files", "pipe", "ids", "time", "clocks", "mmap", "malloc", "stack",
               "threads", "signals", "fork", "fork-data", "fork-threads", "fork-cycles",
               "efault", "smap", "spawn", "flags", "single-step", "bss-stack")
SUITE = paths.REPO_ROOT / "guest" / "ukl_suite.c"
# The kernel output directory (build/kernel/NAME) composed flavours share.
SHARED_BUILD = "matrix"
SUITE_TIMEOUT = 900.0
FIELDS = ("combination", "flavour", "result", "build_s", "suite_s", "detail")
_FAILURES = re.compile(r"ukl_suite: (\d+) failure\(s\)")


@dataclass(frozen=True)
class Outcome:
    combination: str
    flavour: str
    result: str          # "pass", "fail" (suite), "no build"
    build_s: float
    suite_s: float
    detail: str


def combinations(base: str = "ukl") -> list[str]:
    """BASE (a UKL flavour made of fragments: `ukl`, `ukl-distro`) and every
    subset of the options that Kconfig allows composed onto it, fewest
    options first."""
    opts = table()
    return ["+".join((base, *subset))
            for k in range(len(opts) + 1)
            for subset in itertools.combinations(opts, k)
            if not any(opts[a].excludes & set(subset) for a in subset)]


def by_rebuild_cost() -> list[str]:
    """Options by how much of a kernel build toggling them redoes, cheapest
    first (the table's `rebuild` rank; ties in table order)."""
    return sorted(table(), key=lambda name: table()[name].rebuild)


def build_order(combination: str) -> int:
    """Where a combination comes in a run: reflected Gray code order of its
    option bits, the cheapest option in the lowest bit, so that the next
    combination mostly differs by one option, and seldom by a costly one,
    and the shared output directory rebuilds little."""
    options = combination.split("+")
    code = sum(1 << i for i, option in enumerate(by_rebuild_cost()) if option in options)
    index = code
    while code:
        code >>= 1
        index ^= code
    return index


def suite_checks(combination: str) -> list[str]:
    """The ukl_suite checks a combination must pass."""
    options = [table()[o] for o in combination.split("+")[1:]]
    dropped = {c for opt in options for c in opt.drops}
    checks = [*BASE_CHECKS, *(c for opt in options for c in opt.checks)]
    return [c for c in checks if c not in dropped]


def canonical(combination: str) -> str:
    """A combination with its options in table order, as combinations()
    names it: ukl+ret+byp is ukl+byp+ret."""
    base, *options = combination.split("+")
    order = list(table())
    # Unknown options go last; run_matrix() then refuses the name.
    return "+".join((base, *sorted(options, key=lambda o: order.index(o) if o in order
                                   else len(order))))


def shared_build(base: str) -> str:
    """The output directory the composed flavours of BASE take turns in:
    one per base, since two bases differ in most of their objects."""
    return SHARED_BUILD if base == "ukl" else f"{SHARED_BUILD}-{base}"


def check(combination: str, kernel: Flavour, cpu: str = "max") -> Outcome:
    start = time.monotonic()
    name = f"matrix-{kernel.dir_name}"
    base = combination.split("+")[0]
    try:
        # Composed flavours take turns in one output directory: only what
        # their options change is rebuilt (named flavours keep their own).
        img = pipeline.build_image(name, kernel, [SUITE], InitramfsSpec(),
                                   build_as=shared_build(base) if "+" in kernel.name else None)
    except UklError as e:
        return Outcome(combination, kernel.name, "no build", time.monotonic() - start, 0.0,
                       e.message.splitlines()[0])
    built = time.monotonic()
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=2, mem="1G",
                           cpu=cpu, icount=False, gdb=False, accel=ACCEL,
                           append=["UKL_SUITE_ENV=from-cmdline"],
                           program_args=suite_checks(combination))
    outcome = run.run(opts, log_name=name, timeout=SUITE_TIMEOUT, echo=False)
    console = outcome.log.read_text(errors="replace")
    failures = _FAILURES.search(console)
    failed = [line.split("FAIL ", 1)[1] for line in console.splitlines()
              if line.startswith("ukl_suite: FAIL ")]
    passed = (outcome.exit_code == 0 and failures is not None and failures.group(1) == "0"
              and not outcome.complaints)
    if outcome.complaints:
        failed.append(f"kernel complained: {outcome.complaints[0]}")
    detail = ("all checks passed" if passed else
              "; ".join(failed) or f"status {outcome.exit_code}, console log {outcome.log}")
    return Outcome(combination, kernel.name, "pass" if passed else "fail",
                   built - start, time.monotonic() - built, detail)


def _read(path: Path) -> dict[str, Outcome]:
    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        return {r["combination"]: Outcome(r["combination"], r["flavour"], r["result"],
                                          float(r["build_s"]), float(r["suite_s"]), r["detail"])
                for r in csv.DictReader(f)}


def _write(out: ResultsWriter, outcomes: dict[str, Outcome], base: str) -> None:
    out.csv("matrix.csv", FIELDS,
            [(o.combination, o.flavour, o.result, f"{o.build_s:.0f}", f"{o.suite_s:.0f}",
              o.detail) for o in outcomes.values()])
    lines = ["Every combination of the UKL options (kernel/configs/OPTION.config on top of "
             f"the `{base}` flavour), built from the same patched tree; each kernel links "
             "guest/ukl_suite.c and boots it on 2 CPUs under QEMU TCG. Build times "
             "are with whatever ccache held.", "",
             "| combination | built as | result | build s | suite s | detail |",
             "|---|---|---|---|---|---|"]
    lines += [f"| `{o.combination}` | `{o.flavour}` | {o.result} | {o.build_s:.0f} | "
              f"{o.suite_s:.0f} | {o.detail} |" for o in outcomes.values()]
    passed = sum(o.result == "pass" for o in outcomes.values())
    lines += ["", f"{passed} of {len(combinations())} combinations pass "
              f"({len(outcomes)} run)."]
    out.markdown("matrix.md", "\n".join(lines))
    out.meta("meta.json", [flavour.get(c) for c in outcomes],
             options={o.name: o.config for o in table().values()},
             qemu_mode="TCG, 2 CPUs, 1 GiB", accel=ACCEL)


def run_matrix(name: str, only: list[str], resume: bool, command: str,
               base: str = "ukl", cpu: str = "max") -> Path:
    base_flavour = flavour.get(base)
    if "+" in base or not base_flavour.is_ukl:
        raise UsageError(f"--base {base}: give a named UKL flavour made of fragments "
                         "(ukl, ukl-distro)")
    wanted = combinations(base)
    only = [canonical(c) for c in only]
    unknown = [c for c in only if c not in wanted]
    if unknown:
        raise UsageError(f"not a combination: {', '.join(unknown)}; give {base}+OPTION+... "
                         f"with options from {', '.join(table())} (`ukl kernel list`), "
                         "each once, nss and nss_ps not together")
    out = ResultsWriter(name, command)
    outcomes = _read(results_dir() / name / "matrix.csv") if resume else {}
    todo = sorted((c for c in (only or wanted)
                   if not (resume and c in outcomes and outcomes[c].result == "pass")),
                  key=build_order)
    for i, combination in enumerate(todo, 1):
        # A combination with a named flavour's fragments builds as it,
        # in its own, already warm, build directory (flavour.get).
        kernel = flavour.get(combination)
        print(f"ukl: matrix {i}/{len(todo)}: {combination} (as {kernel.name})",
              file=sys.stderr)
        outcomes[combination] = check(combination, kernel, cpu)
        print(f"   [matrix] {combination}: {outcomes[combination].result}", file=sys.stderr)
        _write(out, {c: outcomes[c] for c in wanted if c in outcomes}, base)
    return out.dir
