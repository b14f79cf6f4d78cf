"""The plots of `ukl bench-net`: throughput (payload bytes per guest
instruction) against message size, one line per config; one figure per
client side (net-guest.png, net-host.png), a panel per protocol (rows)
and in-flight level (columns)."""
from __future__ import annotations

from pathlib import Path
from typing import Protocol, Sequence

from ukl.bench import plots


class Measured(Protocol):
    """What a plot needs of a measurement (ukl.bench.net.Measured; named
    here so that this module does not import the one that calls it)."""

    @property
    def config(self) -> str: ...
    @property
    def client(self) -> str: ...
    @property
    def protocol(self) -> str: ...
    @property
    def inflight(self) -> int: ...
    @property
    def size(self) -> int: ...
    @property
    def bytes_per_insn(self) -> float: ...
    @property
    def retransmits(self) -> int: ...


def require() -> None:
    """Fail now, not after the runs, if the plots could not be drawn."""
    plots.require()


def _label(size: int) -> str:
    return f"{size // 1024}K" if size >= 1024 else str(size)


def figure(rows: Sequence[Measured], configs: list[str], client: str, out: Path) -> None:
    plt = plots.pyplot()
    mine = [r for r in rows if r.client == client]
    protocols = list(dict.fromkeys(r.protocol for r in mine))
    inflight = sorted({r.inflight for r in mine})
    fig, axes = plt.subplots(len(protocols), len(inflight), squeeze=False,
                             figsize=(3.6 * len(inflight) + 1.4, 3.2 * len(protocols) + 0.8))
    for i, protocol in enumerate(protocols):
        for j, n in enumerate(inflight):
            ax = axes[i][j]
            for c in configs:
                points = sorted((r.size, r.bytes_per_insn, r.retransmits) for r in mine
                                if (r.config, r.protocol, r.inflight) == (c, protocol, n))
                if not points:
                    continue
                line = ax.plot([p[0] for p in points], [p[1] for p in points], marker="o",
                               label=c)
                # A point with retransmits counts mostly the guest's wait: ringed.
                lossy = [p for p in points if p[2]]
                if lossy:
                    ax.scatter([p[0] for p in lossy], [p[1] for p in lossy], s=140,
                               facecolors="none", edgecolors=line[0].get_color())
            sizes = sorted({r.size for r in mine if r.protocol == protocol})
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_xticks(sizes)
            ax.set_xticklabels([_label(s) for s in sizes], fontsize=7)
            ax.set_title(f"{protocol.upper()}, {n} in flight", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            if j == 0:
                ax.set_ylabel("payload bytes / guest insn")
            if i == len(protocols) - 1:
                ax.set_xlabel("message size (bytes)")
    axes[0][0].legend(fontsize=8)
    side = ("client in the guest: both ends counted" if client == "guest"
            else "client on the host: the guest's side only")
    # Two lines: a one-column figure (--quick) is narrow.
    ringed = "; ringed: with retransmits" if any(r.retransmits for r in mine) else ""
    fig.suptitle(f"bench-net, {side}\npayload bytes per guest instruction "
                 f"(icount, ukl_counts){ringed}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def write_all(rows: Sequence[Measured], configs: list[str], out_dir: Path) -> list[Path]:
    """net-CLIENT.png for each client side in `rows`."""
    written = []
    for client in dict.fromkeys(r.client for r in rows):
        path = out_dir / f"net-{client}.png"
        figure(rows, configs, client, path)
        written.append(path)
    return written
