"""`ukl matrix`: every combination of the UKL options, built from the same
patched tree and checked with the base-model boot suite (not a benchmark,
but a long recorded run like one: results/NAME/).

The options are the fragments in OPTIONS (kernel/configs/OPTION.config), each
composed onto the `ukl` flavour (config.compose): `ukl`, `ukl+byp`, ...,
`ukl+byp+ret+shortcuts+rtc`, less the combinations Kconfig forbids
(EXCLUSIVE: UKL_NSS and UKL_NSS_PS are two answers to one question). A
combination with the same fragments as a named flavour (kernel/flavours.ini)
builds as that flavour, whose build tree is already warm; the others share
one output directory (SHARED_BUILD). Kconfig refusing a combination is a result too (the build
fails naming the option that did not stick).

Each combination's kernel links tests/programs/ukl_suite.c and boots on two
CPUs; it passes when every check of suite_checks(combination) passes: the
base-model checks plus the checks of the stack options it has (pf-df,
nss-*, nss-ps-*), minus the base checks an option rules out by design (with
UKL_NSS_PS: a 7.5 MiB recursion on a fixed-size stack, fork from it; with
UKL_NSS: fork, other programs, SMAP). Results go to
results/NAME/: matrix.csv and matrix.md, rewritten after every combination,
so a long run can be resumed (--resume skips combinations that passed).
"""
from __future__ import annotations

import csv
import itertools
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ukl.bench.runner import results_dir
from ukl.common import paths
from ukl.common.errors import UklError
from ukl.image import appbuild
from ukl.image.initramfs import InitramfsSpec
from ukl.kernel import config
from ukl.runner import qemu, run

OPTIONS = ("byp", "ret", "shortcuts", "rtc", "pf_df", "nss_ps", "nss")
# Options Kconfig never turns on together (UKL_NSS depends on !UKL_NSS_PS).
EXCLUSIVE = (frozenset({"nss", "nss_ps"}),)
# The base-model checks of tests/programs/ukl_suite.c.
BASE_CHECKS = ("files", "pipe", "ids", "time", "clocks", "mmap", "malloc", "stack",
               "threads", "signals", "fork", "efault", "smap", "spawn")
# Per option: the checks it adds, and the checks its restrictions rule out
# by design (its own checks show the enforced restriction instead).
OPTION_CHECKS = {"pf_df": ("pf-df",),
                 "nss_ps": ("nss-ps-stack", "nss-ps-fork", "nss-ps-limit"),
                 "nss": ("nss-stack", "nss-mirror", "nss-alone")}
# NSS_PS: fixed-size pinned stacks do not grow (7.5 MiB recursion, and the
# stack growth pf-df needs), and fork from them is refused. NSS: the
# application's address space is the only one (no fork, no other program,
# which pf-df's copy-on-write part needs too) and SMAP is off.
OPTION_DROPS = {"nss_ps": ("stack", "fork", "pf-df"),
                "nss": ("fork", "spawn", "smap", "pf-df")}
SUITE = paths.REPO_ROOT / "tests" / "programs" / "ukl_suite.c"
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


def combinations() -> list[str]:
    """`ukl` and every subset of OPTIONS that Kconfig allows composed onto it,
    fewest options first."""
    return ["+".join(("ukl", *subset))
            for k in range(len(OPTIONS) + 1)
            for subset in itertools.combinations(OPTIONS, k)
            if not any(pair <= set(subset) for pair in EXCLUSIVE)]


# Options by how much of a kernel build toggling them redoes, cheapest first:
# RET and NSS change entry code and a few files; the others change headers
# included almost everywhere (asm/ukl.h, cpu_entry_area.h, thread_struct).
BY_REBUILD_COST = ("ret", "nss", "pf_df", "shortcuts", "rtc", "byp", "nss_ps")


def build_order(combination: str) -> int:
    """Where a combination comes in a run: reflected Gray code order of its
    option bits, the cheapest option in the lowest bit, so that the next
    combination mostly differs by one option, and seldom by a costly one,
    and the shared output directory rebuilds little."""
    options = combination.split("+")
    code = sum(1 << i for i, option in enumerate(BY_REBUILD_COST) if option in options)
    index = code
    while code:
        code >>= 1
        index ^= code
    return index


def flavour_for(combination: str, flavours: dict[str, config.Flavour]) -> str:
    """The named flavour with the same fragments, else the composed name."""
    wanted = set(config.compose(combination, flavours).fragments) \
        if "+" in combination else set(flavours[combination].fragments)
    for flavour in flavours.values():
        if set(flavour.fragments) == wanted:
            return flavour.name
    return combination


def suite_checks(combination: str) -> list[str]:
    """The ukl_suite checks a combination must pass."""
    options = combination.split("+")[1:]
    dropped = {c for opt in options for c in OPTION_DROPS.get(opt, ())}
    checks = [*BASE_CHECKS, *(c for opt in options for c in OPTION_CHECKS.get(opt, ()))]
    return [c for c in checks if c not in dropped]


def check(combination: str, flavour: str) -> Outcome:
    start = time.monotonic()
    try:
        # Image names have no '+': ukl+ret+rtc -> matrix-ukl-ret-rtc.
        # Composed flavours take turns in one output directory: only what
        # their options change is rebuilt (named flavours keep their own).
        img = appbuild.build_image(f"matrix-{flavour.replace('+', '-')}", flavour, [SUITE],
                                   InitramfsSpec(),
                                   build_as=SHARED_BUILD if "+" in flavour else None)
    except UklError as e:
        return Outcome(combination, flavour, "no build", time.monotonic() - start, 0.0,
                       e.message.splitlines()[0])
    built = time.monotonic()
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=2, mem="1G",
                           icount=False, gdb=False, append=["UKL_SUITE_ENV=from-cmdline"],
                           program_args=suite_checks(combination))
    outcome = run.run(opts, log_name=f"matrix-{flavour.replace('+', '-')}",
                      timeout=SUITE_TIMEOUT, echo=False)
    console = outcome.log.read_text(errors="replace")
    failures = _FAILURES.search(console)
    failed = [line.split("FAIL ", 1)[1] for line in console.splitlines()
              if line.startswith("ukl_suite: FAIL ")]
    passed = outcome.exit_code == 0 and failures is not None and failures.group(1) == "0"
    detail = ("all checks passed" if passed else
              "; ".join(failed) or f"status {outcome.exit_code}, console log {outcome.log}")
    return Outcome(combination, flavour, "pass" if passed else "fail",
                   built - start, time.monotonic() - built, detail)


def _read(path: Path) -> dict[str, Outcome]:
    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        return {r["combination"]: Outcome(r["combination"], r["flavour"], r["result"],
                                          float(r["build_s"]), float(r["suite_s"]), r["detail"])
                for r in csv.DictReader(f)}


def _write(out: Path, outcomes: dict[str, Outcome], command: str) -> None:
    with (out / "matrix.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(FIELDS)
        for o in outcomes.values():
            writer.writerow((o.combination, o.flavour, o.result, f"{o.build_s:.0f}",
                             f"{o.suite_s:.0f}", o.detail))
    lines = [f"Command: `{command}`", "",
             "Every combination of the UKL options (kernel/configs/OPTION.config on top of "
             "the `ukl` flavour), built from the same patched tree; each kernel links "
             "tests/programs/ukl_suite.c and boots it on 2 CPUs under QEMU TCG. Build times "
             "are with whatever ccache held.", "",
             "| combination | built as | result | build s | suite s | detail |",
             "|---|---|---|---|---|---|"]
    lines += [f"| `{o.combination}` | `{o.flavour}` | {o.result} | {o.build_s:.0f} | "
              f"{o.suite_s:.0f} | {o.detail} |" for o in outcomes.values()]
    passed = sum(o.result == "pass" for o in outcomes.values())
    lines += ["", f"{passed} of {len(combinations())} combinations pass "
              f"({len(outcomes)} run)."]
    (out / "matrix.md").write_text("\n".join(lines) + "\n")


def run_matrix(name: str, only: list[str], resume: bool) -> Path:
    flavours = config.load_flavours()
    wanted = combinations()
    unknown = [c for c in only if c not in wanted]
    if unknown:
        raise UklError(f"not a combination: {', '.join(unknown)}; they are "
                       f"{', '.join(wanted)}")
    out = results_dir() / name
    out.mkdir(parents=True, exist_ok=True)
    outcomes = _read(out / "matrix.csv") if resume else {}
    command = "ukl matrix " + " ".join(sys.argv[2:]) if len(sys.argv) > 2 else "ukl matrix"
    todo = sorted((c for c in (only or wanted)
                   if not (resume and outcomes.get(c, None) and outcomes[c].result == "pass")),
                  key=build_order)
    for i, combination in enumerate(todo, 1):
        flavour = flavour_for(combination, flavours)
        print(f"ukl: matrix {i}/{len(todo)}: {combination} (as {flavour})", file=sys.stderr)
        outcomes[combination] = check(combination, flavour)
        print(f"   [matrix] {combination}: {outcomes[combination].result}", file=sys.stderr)
        ordered = {c: outcomes[c] for c in wanted if c in outcomes}
        _write(out, ordered, command)
    return out
