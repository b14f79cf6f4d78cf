"""Benchmark results: parse the guest's lines, write CSV and markdown."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

NOTE = ("Figures are guest **instructions** (rdtsc deltas under QEMU TCG with "
        "`-icount shift=0,sleep=off`, one tick per instruction), min and median over "
        "the iterations, rdtsc pair included. TCG does not model the cycle cost of "
        "syscall/sysret/iret/swapgs or of cache and TLB misses, so these are not "
        "times: they count the work each path executes.")

# Request sizes shown in the markdown table (the CSV has every size).
TABLE_SIZES = {0, 1, 4096, 8192}


@dataclass(frozen=True)
class Row:
    config: str
    op: str
    size: int
    iterations: int
    min: int
    median: int


@dataclass(frozen=True)
class Counted:
    """What the ukl_counts plugin saw in one measurement's timed iterations
    (the call, the rdtsc pair and the loop's few instructions): each
    counter's median over the iterations."""

    config: str
    op: str
    size: int
    iterations: int
    per_call: dict[str, int]


# The plugin's columns that cost cycles on hardware, as the counts table
# shows them: (column, heading).
COST_COLUMNS = (
    ("insns_kernel", "kernel insns"),
    ("entries", "transitions in"),
    ("swapgs", "SWAPGS"),
    ("cr3_writes", "CR3 writes"),
    ("verw", "VERW"),
    ("serialising", "serialising"),
    ("indirect", "indirect branches"),
    ("retpolines", "of them retpolines"),
    ("return_thunks", "return thunks"),
)
COUNTS_NOTE = ("Per call: each count's median over the timed iterations, from the "
               "ukl_counts QEMU plugin "
               "(qemu/plugins/ukl_counts.c): instructions in the kernel (the UKL "
               "application's own code not included), privilege transitions into the "
               "kernel (SYSCALL, INT n, exceptions and interrupts), SWAPGS, CR3 writes, "
               "VERW, serialising instructions (CPUID, IRET, WRMSR, MOV to CR...), "
               "indirect calls and jumps (those through retpolines among them) and "
               "entries into return thunks. Each cell: "
               + " / ".join(h for _, h in COST_COLUMNS) + ".")


def counted(rows: list[Row], windows: dict[str, dict[str, int]],
            passes: dict[str, int]) -> list[Counted]:
    """Pair the K-th measurement with the plugin's row 0.K.med, each
    counter's median over its iterations (guest/lebench.c flushes window 0
    after each measurement), as the instruction figures are medians."""
    out = []
    for k, r in enumerate(rows):
        name = f"0.{k}.med"
        if name not in windows or passes[name] != r.iterations:
            raise ValueError(f"plugin row {name} does not match measurement {r.op} "
                             f"{r.size} ({passes.get(name)} passes, {r.iterations} "
                             "iterations)")
        out.append(Counted(r.config, r.op, r.size, r.iterations, dict(windows[name])))
    return out


COUNTS_CSV_COLUMNS = ("insns", "insns_user", "insns_kernel", "insns_app", "entries",
                      "entries_syscall", "entries_int", "entries_other", "exits",
                      "exits_sysret", "exits_iret", "exits_other", "lost_user_blocks",
                      "syscall", "sysret", "iret", "swapgs", "cr3_writes", "wrmsr", "verw",
                      "lfence", "mfence", "cpuid", "serialising", "indirect",
                      "indirect_calls", "indirect_jumps", "returns", "retpolines",
                      "retpoline_calls", "return_thunks")
COUNTS_CSV_HEADER = ("config", "op", "size", "iterations", *COUNTS_CSV_COLUMNS)


def counts_csv_rows(rows: list[Counted]) -> list[tuple[object, ...]]:
    return [(r.config, r.op, r.size, r.iterations,
             *(r.per_call[c] for c in COUNTS_CSV_COLUMNS)) for r in rows]


def counts_markdown(rows: list[Counted], configs: list[str]) -> str:
    """One row per operation (the table's sizes), a cell per config."""
    by_key = {(r.config, r.op, r.size): r for r in rows}
    head = ["operation", "size", *configs]
    lines = _table_head(COUNTS_NOTE, head)
    for op, size in _shown([(r.op, r.size) for r in rows]):
        cells = [op, str(size) if size else "-"]
        for c in configs:
            r = by_key.get((c, op, size))
            cells.append(" / ".join(str(r.per_call[k]) for k, _ in COST_COLUMNS)
                         if r else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def parse(console: str, config: str) -> list[Row]:
    """The `bench,OP,SIZE,ITERATIONS,MIN,MEDIAN` lines of one guest run."""
    rows = []
    for line in console.splitlines():
        line = line.strip()
        if not line.startswith("bench,"):
            continue
        _, op, size, iters, lo, median = line.split(",")
        rows.append(Row(config, op, int(size), int(iters), int(lo), int(median)))
    return rows


CSV_HEADER = ("config", "op", "size", "iterations", "min", "median")


def csv_rows(rows: list[Row]) -> list[tuple[object, ...]]:
    return [(r.config, r.op, r.size, r.iterations, r.min, r.median) for r in rows]


def read_csv(path: Path) -> list[Row]:
    with path.open() as f:
        return [Row(r["config"], r["op"], int(r["size"]), int(r["iterations"]),
                    int(r["min"]), int(r["median"])) for r in csv.DictReader(f)]


def index(rows: list[Row]) -> dict[tuple[str, str, int], Row]:
    """Rows by (config, op, size)."""
    return {(r.config, r.op, r.size): r for r in rows}


def markdown(rows: list[Row], configs: list[str]) -> str:
    """Stock (the first config) vs each other config: medians and ratios."""
    base = configs[0]
    by_key = index(rows)
    head = ["operation", "size"] + [f"{c} median (min)" for c in configs] + \
        [f"{c}/{base}" for c in configs[1:]]
    lines = _table_head(NOTE, head)
    for op, size in _shown([(r.op, r.size) for r in rows]):
        cells = [op, str(size) if size else "-"]
        for c in configs:
            r = by_key.get((c, op, size))
            cells.append(f"{r.median} ({r.min})" if r else "n/a")
        b = by_key.get((base, op, size))
        for c in configs[1:]:
            r = by_key.get((c, op, size))
            cells.append(f"{r.median / b.median:.2f}" if r and b and b.median else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Sizes shown: 1, 4096 and 8192 bytes; `results.csv` has every size "
              "from 1 to 8192 in 256-byte steps."]
    return "\n".join(lines) + "\n"


def _shown(keys: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The (operation, size) pairs a table shows: the table's sizes, in the
    guest's order of operations."""
    ops = [op for op, _ in keys]
    return sorted({k for k in keys if k[1] in TABLE_SIZES},
                  key=lambda k: (ops.index(k[0]), k[1]))


def _table_head(note: str, head: list[str]) -> list[str]:
    return [note, "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
