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
    keys = sorted({(r.op, r.size) for r in rows}, key=lambda k: (_op_order(rows, k[0]), k[1]))
    head = ["operation", "size"] + [f"{c} median (min)" for c in configs] + \
        [f"{c}/{base}" for c in configs[1:]]
    lines = [NOTE, "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for op, size in keys:
        if size not in TABLE_SIZES:
            continue
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


def _op_order(rows: list[Row], op: str) -> int:
    """Keep the guest's order of operations."""
    for i, r in enumerate(rows):
        if r.op == op:
            return i
    return len(rows)
