"""`ukl bench-net`: network throughput sweeps of a server of our own
(guest/netbench.c), in bytes per guest instruction.

The server runs in the guest (linked into the kernel on a UKL flavour, an
ordinary process otherwise): a TCP sink and a UDP echo. Its client runs
either in the same guest, as an ordinary process beside it (the window
then holds both ends and the loopback stack, and under `-icount
shift=0,sleep=off`, with the guest's randomness and clock from fixed
seeds, a second run counts exactly the same), or on the host through
QEMU's port forwards (the window holds only what the guest ran: the
server, its network stack, the virtio NIC's interrupts, and the timer
ticks the guest runs while it waits for the host, whose number follows
the host's pace: these figures are not repeatable). Each measurement is
one window of the ukl_counts plugin, opened and closed around it and
flushed, so its guest instructions are counted exactly; throughput is
the payload bytes moved in it over those instructions. Not time: TCG prices a SYSCALL like a mov.

Output, results/NAME/: net.csv, net.md, meta.json, net-guest.png and
net-host.png (netplots).
"""
from __future__ import annotations

import csv
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ukl import pipeline
from ukl.app import process
from ukl.bench import counts, netplots
from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.image.initramfs import InitramfsSpec
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.qemu import run
from ukl.results import ResultsWriter, results_dir

# -icount and the counting plugin exist only under TCG; recorded in meta.json.
ACCEL = "tcg"

NETBENCH = paths.REPO_ROOT / "guest" / "netbench.c"
PROTOCOLS = ("tcp", "udp")
CLIENTS = ("guest", "host")
SIZES = (64, 256, 1024, 4096, 16384, 65536)
INFLIGHT = (1, 4, 16, 32)
# Payload bytes per measurement (each connection sends at least 2 messages).
BUDGET = 1 << 20
QUICK_SIZES = (64, 16384)
QUICK_INFLIGHT = (1,)
QUICK_BUDGET = 256 << 10
MIN_SIZE, MAX_SIZE, MAX_INFLIGHT = 64, 65536, 32
# UDP's largest payload: a 64 KiB UDP message is sent as this.
UDP_MAX = 65507

# Guest ports of the server, and the host ports forwarded to them.
CTL_PORT, TCP_PORT, UDP_PORT = 7100, 7101, 7102
HOST_OFFSET = 10000
RUN_TIMEOUT = 3600.0
READY_WITHIN = 600.0

CSV_HEADER = ("config", "client", "protocol", "inflight", "size", "messages", "bytes",
              "guest_insns", "bytes_per_insn", "insns_per_message", "entries_per_message",
              "irets_per_message", "irets", "retransmits")


@dataclass(frozen=True)
class Sweep:
    """What one run measures."""
    protocols: tuple[str, ...]
    clients: tuple[str, ...]
    sizes: tuple[int, ...]
    inflight: tuple[int, ...]
    budget: int


def _ints(text: str, what: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v)
    except ValueError:
        raise UsageError(f"{what} {text!r}: give whole numbers separated by commas") from None
    if not values:
        raise UsageError(f"{what}: give at least one value")
    if len(set(values)) != len(values):
        raise UsageError(f"{what} {text!r}: give each value once")
    return values


def _names(text: str, what: str, known: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(v for v in text.split(",") if v)
    bad = [n for n in names if n not in known]
    if not names or bad:
        raise UsageError(f"{what} {text!r}: choose from {', '.join(known)}")
    if len(set(names)) != len(names):
        raise UsageError(f"{what} {text!r}: give each value once")
    return names


def sweep(protocols: str, clients: str, sizes: str | None, inflight: str | None,
          budget: int | None, quick: bool) -> Sweep:
    """The sweep the command line asks for (UsageError if it makes no sense)."""
    if quick and (sizes is not None or inflight is not None or budget is not None):
        raise UsageError("--quick picks its own sizes, in-flight levels and budget; "
                         "drop --sizes, --inflight and --budget, or --quick")
    got_sizes = _ints(sizes, "--sizes") if sizes else (QUICK_SIZES if quick else SIZES)
    bad = [s for s in got_sizes if not MIN_SIZE <= s <= MAX_SIZE]
    if bad:
        raise UsageError(f"--sizes: {bad[0]} is out of range; message sizes are "
                         f"{MIN_SIZE} to {MAX_SIZE} bytes")
    got_inflight = (_ints(inflight, "--inflight") if inflight
                    else (QUICK_INFLIGHT if quick else INFLIGHT))
    bad = [n for n in got_inflight if not 1 <= n <= MAX_INFLIGHT]
    if bad:
        raise UsageError(f"--inflight: {bad[0]} is out of range; 1 to {MAX_INFLIGHT} "
                         "requests in flight")
    got_budget = budget if budget is not None else (QUICK_BUDGET if quick else BUDGET)
    if got_budget < 1024:
        raise UsageError(f"--budget {got_budget}: at least 1024 bytes per measurement")
    return Sweep(_names(protocols, "--protocols", PROTOCOLS),
                 _names(clients, "--clients", CLIENTS), got_sizes, got_inflight, got_budget)


@dataclass(frozen=True)
class Measured:
    """One measurement: a protocol, in-flight level and size on a config."""
    config: str
    client: str
    protocol: str
    inflight: int
    size: int
    messages: int
    bytes: int
    insns: int
    entries: int
    # IRETs: returns from interrupts and exceptions, the timer's ticks among
    # them (what the guest does while it waits for the host is mostly ticks).
    irets: int
    retransmits: int

    @property
    def bytes_per_insn(self) -> float:
        return self.bytes / self.insns if self.insns else 0.0


@dataclass(frozen=True)
class Line:
    """A client's report of one measurement (before its counts are known)."""
    protocol: str
    inflight: int
    size: int
    messages: int
    bytes: int
    retransmits: int


def parse(text: str) -> list[Line]:
    """The client's `netbench,PROTO,INFLIGHT,SIZE,MESSAGES,BYTES,RETRANSMITS`
    lines, in order (other lines are ignored)."""
    out = []
    for raw in text.splitlines():
        parts = raw.strip().split(",")
        if len(parts) == 7 and parts[0] == "netbench" and parts[1] in PROTOCOLS:
            try:
                numbers = [int(p) for p in parts[2:]]
            except ValueError:
                continue
            out.append(Line(parts[1], *numbers))
    return out


def expected(sw: Sweep) -> list[tuple[str, int, int]]:
    """(protocol, in-flight, size) of each measurement, in the client's order."""
    return [(p, n, min(s, UDP_MAX) if p == "udp" else s)
            for p in sw.protocols for n in sw.inflight for s in sw.sizes]


def combine(lines: list[Line], windows: dict[str, counts.Window], config: str,
            client: str, sw: Sweep) -> list[Measured]:
    """Measurement k is the k-th flush of window 0 (row `0.k`)."""
    got = [(ln.protocol, ln.inflight, ln.size) for ln in lines]
    if got != expected(sw):
        raise ValueError(f"the client reported {len(lines)} of {len(expected(sw))} "
                         "measurements, or others than asked")
    out = []
    for k, ln in enumerate(lines):
        w = windows.get(f"0.{k}")
        if w is None or w.passes != 1:
            raise ValueError(f"no counting window for measurement {k} "
                             f"({ln.protocol}, {ln.inflight} in flight, {ln.size} B)")
        out.append(Measured(config, client, ln.protocol, ln.inflight, ln.size, ln.messages,
                            ln.bytes, w.counts["insns"], w.counts["entries"],
                            w.counts["iret"], ln.retransmits))
    return out


def _client_args(host: str, offset: int, marks: str, sw: Sweep) -> list[str]:
    return ["client", host, str(CTL_PORT + offset), str(TCP_PORT + offset),
            str(UDP_PORT + offset), marks, str(sw.budget), ",".join(sw.protocols),
            ",".join(str(s) for s in sw.sizes), ",".join(str(n) for n in sw.inflight)]


def _netbench() -> Path:
    """guest/netbench.c as an ordinary static program (the client, in
    the guest or on the host; the server on a stock flavour)."""
    return process.compile_static([NETBENCH], "netbench", [f"-I{NETBENCH.parent}"])


def _answers(port: int) -> bool:
    """The server answers a ping (through the port forward a connection
    succeeds before anything listens in the guest)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
            conn.sendall(b"ping\n")
            return conn.recv(16) == b"ok\n"
    except OSError:
        return False


def measure(flavour: Flavour, client: str, sw: Sweep, plugin: Path) -> list[Measured]:
    """Boot the server on `flavour`, run the sweep from `client`, read the
    plugin's windows."""
    netbench = _netbench()
    spec = InitramfsSpec()
    if client == "guest":
        spec.files.append((netbench, "/usr/bin/netbench"))
        spec.helpers.append(" ".join(["/usr/bin/netbench",
                                      *_client_args("127.0.0.1", 0, "local", sw)]))
    name = f"netbench-{client}-{flavour.dir_name}"
    # The server sources as its own program: a UKL flavour links it into
    # the kernel (the client stays an ordinary process in /usr/bin).
    img = pipeline.build_image(name, flavour, [NETBENCH], spec)
    counts_csv = paths.logs_dir() / f"counts-{name}.csv"
    counts_csv.unlink(missing_ok=True)
    host = client == "host"
    # Each option's boot-args make the unmodified server use it
    # (ukl_bypass=1 for UKL_BYP), as in `ukl bench-apps`; norandmaps as in
    # `ukl bench`, and fixed seeds (repeatable), so the guest client's runs
    # repeat exactly.
    opts = qemu.RunOptions(
        kernel=img.kernel, initramfs=img.initramfs, smp=1, mem="1G", cpu=flavour.cpu,
        icount=True, repeatable=not host, accel=ACCEL,
        append=["norandmaps", *flavour.boot_args],
        program_args=["server", str(CTL_PORT), str(TCP_PORT), str(UDP_PORT)],
        forwards=([(CTL_PORT + HOST_OFFSET, CTL_PORT), (TCP_PORT + HOST_OFFSET, TCP_PORT)]
                  if host else []),
        udp_forwards=[(UDP_PORT + HOST_OFFSET, UDP_PORT)] if host else [],
        plugin=counts.plugin_argument(plugin, counts_csv, counts.layout(img.kernel)))
    print(f"   [bench-net] {flavour.name}, client in the {client} ...", file=sys.stderr)
    guest = run.Background(opts, log_name=name, timeout=RUN_TIMEOUT)
    report = ""
    try:
        if host:
            guest.wait_until(lambda: _answers(CTL_PORT + HOST_OFFSET), READY_WITHIN,
                             f"the netbench server on {flavour.name} did not answer "
                             f"on port {CTL_PORT + HOST_OFFSET}")
            done = subprocess.run([str(netbench),
                                   *_client_args("127.0.0.1", HOST_OFFSET, "remote", sw)],
                                  capture_output=True, text=True, timeout=RUN_TIMEOUT)
            report = done.stdout
            if done.returncode != 0:
                raise UklError(f"the host's netbench client failed on {flavour.name}: "
                               f"{done.stderr.strip() or done.returncode}")
    finally:
        outcome = guest.join()
    ended = run.ended_cleanly(outcome, f"bench-net on {flavour.name}, client in the {client}")
    if not host:
        report = ended.log.read_text(errors="replace")
    try:
        return combine(parse(report), counts.read(counts_csv), flavour.name, client, sw)
    except ValueError as e:
        raise UklError(f"bench-net on {flavour.name}, client in the {client}: {e}; "
                       f"console log: {ended.log}, counts: {counts_csv}") from e


def csv_rows(rows: list[Measured]) -> list[tuple[object, ...]]:
    return [(r.config, r.client, r.protocol, r.inflight, r.size, r.messages, r.bytes,
             r.insns, f"{r.bytes_per_insn:.6f}", f"{r.insns / r.messages:.1f}",
             f"{r.entries / r.messages:.3f}", f"{r.irets / r.messages:.3f}", r.irets,
             r.retransmits) for r in rows]


def read_csv(path: Path) -> list[Measured]:
    """net.csv back into measurements (for --replot)."""
    with path.open(newline="") as f:
        try:
            return _measured(csv.DictReader(f))
        except (KeyError, ValueError) as e:
            raise UklError(f"{path} is not a bench-net CSV of this version ({e})") from e


def _measured(rows: csv.DictReader[str]) -> list[Measured]:
    return [Measured(r["config"], r["client"], r["protocol"], int(r["inflight"]),
                     int(r["size"]), int(r["messages"]), int(r["bytes"]),
                     int(r["guest_insns"]),
                     round(float(r["entries_per_message"]) * int(r["messages"])),
                     int(r["irets"]), int(r["retransmits"]))
            for r in rows]


WHAT = {
    ("tcp", "guest"): "TCP stream into the sink, the client in the guest: both ends counted",
    ("tcp", "host"): "TCP stream into the sink, the client on the host: the server side only",
    ("udp", "guest"): "UDP echo, the client in the guest: both ends counted",
    ("udp", "host"): "UDP echo, the client on the host: the server side only",
}


def markdown(rows: list[Measured], configs: list[str]) -> str:
    base = configs[0]
    lines = ["Throughput in **payload bytes per guest instruction**: the bytes the client "
             "sent to the server in a measurement over every instruction the guest executed "
             "in it, counted exactly by the ukl_counts plugin under `-icount "
             "shift=0,sleep=off` (not time: TCG prices a SYSCALL, SWAPGS or cache miss like "
             "a mov). TCP: INFLIGHT connections stream messages of SIZE bytes into a sink. "
             "UDP: INFLIGHT sockets each keep one datagram of SIZE bytes in flight to an echo "
             "(a 64 KiB datagram is 65507 bytes, UDP's limit; the reply is not counted "
             "again). With the client in the guest the instructions are both ends' and the "
             "loopback stack's, and a second run repeats them; with the client on the host "
             "(QEMU's port forward) the server's, its stack's, its NIC's and the timer ticks "
             "the guest runs while it waits for the host, which follow the host's pace: "
             "those figures move from run to run (IRETs/msg shows the ticks), and a row with "
             "retransmits (QEMU's user network dropped datagrams: too many bytes in flight) "
             "mostly counts ticks during the 500 ms wait.", ""]
    index = {(r.config, r.client, r.protocol, r.inflight, r.size): r for r in rows}
    for client, protocol in dict.fromkeys((r.client, r.protocol) for r in rows):
        lines += [f"### {WHAT[(protocol, client)]}", "",
                  "| in flight | size | " + " | ".join(f"{c} B/insn" for c in configs) +
                  " | " + " | ".join(f"{c}/{base}" for c in configs[1:]) +
                  f" | {base} insns/msg | {base} IRETs/msg | retransmits |",
                  "|---|---|" + "---|" * (2 * len(configs) + 2)]
        keys = dict.fromkeys((r.inflight, r.size) for r in rows
                             if (r.client, r.protocol) == (client, protocol))
        for inflight, size in keys:
            got = [index.get((c, client, protocol, inflight, size)) for c in configs]
            cells = [f"{g.bytes_per_insn:.4f}" if g else "-" for g in got]
            first = got[0]
            ratios = [f"{g.bytes_per_insn / first.bytes_per_insn:.3f}"
                      if g and first and first.bytes_per_insn else "-" for g in got[1:]]
            per_msg = f"{first.insns / first.messages:.0f}" if first else "-"
            irets = f"{first.irets / first.messages:.2f}" if first else "-"
            resent = sum(g.retransmits for g in got if g)
            lines.append(f"| {inflight} | {size} | " + " | ".join(cells + ratios) +
                         f" | {per_msg} | {irets} | {resent} |")
        lines.append("")
    return "\n".join(lines) + "\n"


def write(out: ResultsWriter, rows: list[Measured], configs: list[Flavour], sw: Sweep,
          **meta: object) -> None:
    """net.csv, net.md, meta.json and the plots of `rows`."""
    names = [c.name for c in configs]
    out.csv("net.csv", CSV_HEADER, csv_rows(rows))
    out.markdown("net.md", markdown(rows, names))
    out.meta("meta.json", configs, accel=ACCEL,
             qemu_mode="TCG, -icount shift=0,sleep=off, 1 CPU, 1 GiB, the config's CPU model, "
             "norandmaps", protocols=list(sw.protocols), clients=list(sw.clients),
             sizes=list(sw.sizes), inflight=list(sw.inflight), budget_bytes=sw.budget,
             cpu_models={c.name: c.cpu for c in configs},
             boot_args={c.name: list(c.boot_args) for c in configs}, **meta)
    netplots.write_all(rows, names, out.dir)


def bench_net(name: str, configs: list[Flavour], sw: Sweep, command: str) -> Path:
    """The sweep on every config, each client side; results/NAME/."""
    netplots.require()  # before the builds and runs, not after them
    plugin = counts.build()
    rows: list[Measured] = []
    started = time.monotonic()
    for client in sw.clients:
        for c in configs:
            rows += measure(c, client, sw, plugin)
    out = ResultsWriter(name, command)
    write(out, rows, configs, sw, wall_seconds=round(time.monotonic() - started))
    return out.dir


def replot(name: str) -> Path:
    """Redraw the plots of results/NAME from its net.csv."""
    out = results_dir() / name
    path = out / "net.csv"
    if not path.is_file():
        raise UklError(f"no {path}; run `ukl bench-net --name {name}` first")
    rows = read_csv(path)
    netplots.write_all(rows, list(dict.fromkeys(r.config for r in rows)), out)
    return out
