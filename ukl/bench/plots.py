"""PNG plots of a benchmark run, in the style of the UKL paper: Figure 3
(per-syscall ratios), Figure 4 (latency vs request size) and Table 2 (page
faults). Needs matplotlib (`ukl setup` installs it from PyPI)."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from ukl.bench.report import Row, index
from ukl.common.errors import UklError

# clock_gettime is the floor, not a system call on stock (vDSO): see results.md.
SYSCALLS = ["getppid", "read-file", "write-file", "read-pipe", "write-pipe",
            "sendto-udp", "recvfrom-udp", "sendto-unix", "recvfrom-unix",
            "send-tcp", "recv-tcp"]
SIZED = SYSCALLS[1:]
FAULTS = ["page-fault", "stack-fault"]
YLABEL = "guest instructions (median, icount)"


def pyplot() -> Any:
    """matplotlib.pyplot, drawing to files (Debian's matplotlib has no types)."""
    try:
        import matplotlib
    except ImportError as e:
        raise UklError(f"plots need matplotlib, which {sys.executable} cannot import: "
                       "run `ukl setup` or `python3 -m pip install matplotlib`") from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def require() -> None:
    """Fail now, not after the runs, if the plots could not be drawn."""
    pyplot()


def _median(rows: dict[tuple[str, str, int], Row], config: str, op: str,
            size: int) -> int | None:
    row = rows.get((config, op, size))
    return row.median if row else None


def _smallest_size(op: str) -> int:
    """getppid has no request size (0); the others start at 1 byte."""
    return 0 if op == "getppid" else 1


def figure3(rows: list[Row], configs: list[str], out: Path) -> None:
    """Per-system-call median at the smallest size, relative to the baseline."""
    plt = pyplot()
    base = configs[0]
    by_key = index(rows)
    ops = [op for op in SYSCALLS if _median(by_key, base, op, _smallest_size(op))]
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / max(1, len(configs) - 1)
    for i, c in enumerate(configs[1:]):
        ratios = []
        for op in ops:
            size = _smallest_size(op)
            b, v = _median(by_key, base, op, size), _median(by_key, c, op, size)
            ratios.append(100.0 * (v - b) / b if b and v is not None else 0.0)
        bars = ax.bar([x + i * width for x in range(len(ops))], ratios, width, label=c)
        ax.bar_label(bars, fmt="%+.1f%%", fontsize=8)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks([x + width * (len(configs) - 2) / 2 for x in range(len(ops))])
    ax.set_xticklabels(ops, rotation=30, ha="right")
    ax.set_ylabel(f"change vs {base} (%)\n(instructions, 1-byte requests)")
    ax.set_title("System calls: instructions relative to stock Linux (cf. UKL paper Fig. 3)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def figure4(rows: list[Row], configs: list[str], out: Path) -> None:
    """Median instructions against request size, one panel per operation."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 5, figsize=(17, 6), sharex=True)
    for ax, op in zip(axes.flat, SIZED):
        for c in configs:
            pts = sorted((r.size, r.median) for r in rows if r.config == c and r.op == op)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=".", label=c)
        ax.set_title(op)
        ax.set_xlabel("request size (bytes)")
    axes[0][0].set_ylabel(YLABEL)
    axes[1][0].set_ylabel(YLABEL)
    axes[0][0].legend()
    fig.suptitle("Latency vs request size, in instructions (cf. UKL paper Fig. 4)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def table2(rows: list[Row], configs: list[str], out: Path) -> None:
    """Page faults: anonymous and stack, median instructions per fault."""
    plt = pyplot()
    by_key = index(rows)
    fig, ax = plt.subplots(figsize=(6, 4))
    width = 0.8 / len(configs)
    for i, c in enumerate(configs):
        vals = [_median(by_key, c, op, 0) or 0 for op in FAULTS]
        bars = ax.bar([x + i * width for x in range(len(FAULTS))], vals, width, label=c)
        ax.bar_label(bars, fontsize=8)
    ax.set_xticks([x + width * (len(configs) - 1) / 2 for x in range(len(FAULTS))])
    ax.set_xticklabels(FAULTS)
    ax.set_ylabel(YLABEL)
    ax.set_title("Page faults (cf. UKL paper Table 2)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def write_all(rows: list[Row], configs: list[str], out_dir: Path) -> list[Path]:
    outs = [out_dir / "fig3-syscalls.png", out_dir / "fig4-sizes.png",
            out_dir / "table2-page-faults.png"]
    figure3(rows, configs, outs[0])
    figure4(rows, configs, outs[1])
    table2(rows, configs, outs[2])
    return outs
