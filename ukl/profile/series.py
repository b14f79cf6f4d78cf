"""The series of a profile (`ukl profile --every N --track F,G`): per
interval of N instructions of the run, how many times each tracked
function was entered and how many instructions of its own it executed.

    DIR/series.csv   interval, insns_end, then F_calls, F_self per function
    DIR/series.png   calls per interval against the run's instructions

The plugin cuts the intervals (qemu/plugins/ukl_profile.c); this side
names and draws them.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from ukl.bench import plots
from ukl.common.errors import UsageError
from ukl.profile.data import Raw
from ukl.profile.symbols import Function

MILLION = 1_000_000
# Below this an interval is shorter than one system call's path: rows would
# outnumber anything a plot or a reader can use.
LEAST_EVERY = 1000


def every_instructions(text: str) -> int:
    """--every N (millions of instructions, a decimal) as instructions: a
    whole number of them, at least LEAST_EVERY."""
    if not re.fullmatch(r"\d+(\.\d+)?", text):
        raise UsageError(f"--every {text}: give a positive number of millions of instructions")
    whole, _, fraction = text.partition(".")
    # Decimal arithmetic on the digits: 0.1 million is exactly 100000, and a
    # float would not say so.
    digits = (fraction + "000000")[:6]
    if fraction[6:].strip("0"):
        raise UsageError(f"--every {text}: a whole number of instructions (at most six "
                         "decimals)")
    insns = int(whole) * MILLION + int(digits)
    if insns < LEAST_EVERY:
        raise UsageError(f"--every {text}: at least {LEAST_EVERY / MILLION:g} "
                         f"({LEAST_EVERY} instructions)")
    return insns


def track_names(text: str) -> list[str]:
    """--track F,G: the functions, in order, each once."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise UsageError(f"--track {text}: give function names separated by commas")
    if len(set(names)) != len(names):
        raise UsageError(f"--track {text}: a function is named twice")
    return names


def indices(funcs: list[Function], names: list[str]) -> list[int]:
    """The tracked functions' indices in the plugin's table (a line each)."""
    out = []
    for name in names:
        found = [i for i, f in enumerate(funcs) if f.name == name]
        if not found:
            raise UsageError(f"--track {name}: no function {name!r} in the image's symbols")
        if len(found) > 1:
            raise UsageError(f"--track {name}: {len(found)} functions are named {name!r}; "
                             "give one that is unique")
        out.append(found[0])
    return out


def to_csv(raw: Raw, names: list[str]) -> str:
    """`names`: each function index's name (symbols.names)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    tracked = [names[i] for i in raw.tracked]
    w.writerow(["interval", "insns_end",
                *(f"{n}_{what}" for n in tracked for what in ("calls", "self"))])
    for k, row in enumerate(raw.series):
        w.writerow([k, row.end, *(v for pair in zip(row.calls, row.self_insns) for v in pair)])
    return out.getvalue()


def plot(raw: Raw, names: list[str], title: str, out: Path) -> None:
    """Calls per interval (above) and self instructions per interval
    (below) against the run's instructions, one line per function."""
    plt = plots.pyplot()
    fig, (calls, insns) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    x = [row.end / MILLION for row in raw.series]
    lines = []
    for slot in range(len(raw.tracked)):
        # Steps: a count belongs to the whole interval that ends at x.
        lines += calls.step(x, [row.calls[slot] for row in raw.series], where="pre")
        insns.step(x, [row.self_insns[slot] for row in raw.series], where="pre")
    every = f"{raw.every / MILLION:g}"
    calls.set_ylabel(f"calls per {every}M instructions")
    insns.set_ylabel(f"self instructions per {every}M")
    insns.set_xlabel("guest instructions (millions)")
    calls.set_title(title)
    # Labels given to legend(), not to step(): matplotlib leaves out a line
    # whose label starts with "_", as kernel functions' names often do.
    calls.legend(lines, [names[i] for i in raw.tracked])
    calls.set_ylim(bottom=0)
    insns.set_ylim(bottom=0)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def require() -> None:
    """Fail before the boot, not after it, if the plot could not be drawn."""
    plots.require()
