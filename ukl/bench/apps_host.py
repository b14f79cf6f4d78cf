"""`ukl bench-apps --client host`: the server side only. The load
generator runs on the host and reaches the server through QEMU's port
forward, so everything the guest executes is the server's: its code, the
network stack, interrupts. The ukl_counts plugin counts it, per request,
in windows that guest/count_window.c opens and closes when the host says
(the client's own work is not the guest's).

Per application and operation: guest instructions per request (at CPL3,
in the kernel, in the UKL application), privilege transitions per request
and their causes, SWAPGS, CR3 writes, VERW and serialising instructions.
Output, results/NAME/: apps-host.md, apps-host.csv, apps-host-meta.json.
"""
from __future__ import annotations

import socket
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ukl import pipeline
from ukl.app import process
from ukl.app.debian import build as debbuild
from ukl.bench import counts
from ukl.bench.apps import MEMCLIENT
from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.image.initramfs import InitramfsSpec
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.qemu import run
from ukl.results import ResultsWriter

# -icount and the counting plugin exist only under TCG; recorded in
# apps-host-meta.json.
ACCEL = "tcg"

COUNT_WINDOW = paths.REPO_ROOT / "guest" / "count_window.c"
CONTROL_PORT = 7777
HOST_CONTROL_PORT = 17777
# Connections the host's client keeps open (the default of --connections).
CLIENTS = 4
RUN_TIMEOUT = 3600.0
READY_WITHIN = 600.0


@dataclass(frozen=True)
class Server:
    package: str
    guest_port: int
    host_port: int
    # The request that says the server answers, and the reply's start.
    ping: bytes
    pong: bytes
    shutdown: bytes
    ops: tuple[str, ...]


SERVERS = {
    "redis": Server("redis", 6379, 16379, b"PING\r\n", b"+PONG", b"SHUTDOWN NOSAVE\r\n",
                    ("SET", "GET")),
    "memcached": Server("memcached", 11211, 11211 + 10000, b"version\r\n", b"VERSION",
                        b"shutdown\r\n", ("SET", "GET")),
}

# Per-request columns of the report: (plugin counter or derived, heading).
COLUMNS = (
    ("insns", "guest insns"),
    ("insns_user", "CPL3"),
    ("insns_kernel", "kernel"),
    ("insns_app", "UKL app"),
    ("entries", "transitions in"),
    ("entries_syscall", "by SYSCALL"),
    ("swapgs", "SWAPGS"),
    ("cr3_writes", "CR3 writes"),
    ("verw", "VERW"),
    ("serialising", "serialising"),
)


@dataclass(frozen=True)
class Served:
    config: str
    app: str
    op: str
    requests: int
    per_request: dict[str, float]
    # Which repetition (a boot of its own) the figures come from.
    rep: int = 0


def _answers(port: int, server: Server) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
            conn.sendall(server.ping)
            return conn.recv(64).startswith(server.pong)
    except OSError:
        return False


class _Control:
    """The connection to guest/count_window.c."""

    def __init__(self) -> None:
        self.conn = socket.create_connection(("127.0.0.1", HOST_CONTROL_PORT), timeout=600)
        self.lines = self.conn.makefile("r")

    def say(self, what: str, window: int) -> None:
        self.conn.sendall(f"{what} {window}\n".encode())
        reply = self.lines.readline()
        if reply != f"ok {window}\n":
            raise UklError(f"count_window answered {reply!r} to {what} {window}")

    def close(self) -> None:
        self.lines.close()
        self.conn.close()


def _load(app: str, server: Server, requests: int, connections: int) -> int:
    """Run the host's client against the server, each operation in its
    counting window (window k: server.ops[k]); the requests each operation
    sent."""
    if app == "redis":
        tools = {t.name: t for t in debbuild.build("redis", ukl=False).tools}
        control = _Control()
        try:
            for k, op in enumerate(server.ops):
                control.say("begin", k)
                subprocess.run([str(tools["redis-benchmark"]), "-h", "127.0.0.1", "-p",
                                str(server.host_port), "-n", str(requests), "-c", str(connections),
                                "-t", op.lower(), "-q"], check=True, capture_output=True,
                               timeout=RUN_TIMEOUT)
                control.say("end", k)
        finally:
            control.close()
        return requests
    # memclient: each connection sends the same number of requests.
    per_connection = max(requests // connections, 1)
    memclient = process.compile_static([MEMCLIENT], "memclient")
    subprocess.run([str(memclient), "127.0.0.1", str(server.host_port), str(connections),
                    str(per_connection), str(HOST_CONTROL_PORT)],
                   check=True, capture_output=True, timeout=RUN_TIMEOUT)
    return connections * per_connection


def _stop(server: Server) -> None:
    try:
        with socket.create_connection(("127.0.0.1", server.host_port), timeout=20) as conn:
            conn.sendall(server.shutdown)
            conn.recv(64)
    except OSError:
        pass


def run_app(app: str, flavour: Flavour, requests: int, plugin: Path,
            rep: int = 0, connections: int = CLIENTS) -> list[Served]:
    server = SERVERS[app]
    window_tool = process.compile_static([COUNT_WINDOW], "count_window",
                                         [f"-I{COUNT_WINDOW.parent}"])
    spec = InitramfsSpec(helpers=[f"/usr/bin/count_window {CONTROL_PORT}"],
                         files=[(window_tool, "/usr/bin/count_window")])
    name = f"appbench-host-{app}-{flavour.dir_name}"
    img = pipeline.build_debian_image(name, flavour, server.package, spec)
    counts_csv = paths.logs_dir() / f"counts-{name}.csv"
    counts_csv.unlink(missing_ok=True)
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=1, mem="1G",
                           cpu=flavour.cpu, icount=True, accel=ACCEL,
                           append=list(flavour.boot_args),
                           forwards=[(server.host_port, server.guest_port),
                                     (HOST_CONTROL_PORT, CONTROL_PORT)],
                           plugin=counts.plugin_argument(plugin, counts_csv,
                                                         counts.layout(img.kernel)))
    print(f"   [bench-apps] {app} on {flavour.name}, clients on the host ...", file=sys.stderr)
    guest = run.Background(opts, log_name=name, timeout=RUN_TIMEOUT)
    try:
        guest.wait_until(lambda: _answers(server.host_port, server), READY_WITHIN,
                         f"{server.package} did not answer on port {server.host_port}")
        sent = _load(app, server, requests, connections)
    finally:
        _stop(server)
        ended = guest.join()
    run.ended_cleanly(ended, f"{app} on {flavour.name}")
    windows = counts.read(counts_csv)
    served = []
    for k, op in enumerate(server.ops):
        w = windows.get(str(k))
        if w is None or w.passes != 1:
            raise UklError(f"{app} on {flavour.name}: no counting window for {op} "
                           f"({counts_csv})")
        served.append(Served(flavour.name, app, op, sent,
                             {key: value / sent for key, value in w.counts.items()}, rep))
    return served


def _median(rows: list[Served]) -> dict[str, float]:
    return {k: statistics.median(r.per_request[k] for r in rows) for k, _ in COLUMNS}


def markdown(rows: list[Served], configs: list[str], connections: int = CLIENTS) -> str:
    """Each cell is the median over the repetitions; with more than one,
    the instructions cell adds the lowest and highest in brackets, since
    how the host's packets meet the guest's instruction clock changes the
    network stack's batching from one boot to the next."""
    base = configs[0]
    reps = len({r.rep for r in rows})
    lines = [f"Per request, everything the guest executed while a client on the host sent "
             f"its requests ({connections} connection{'s' if connections > 1 else ''}) "
             "through QEMU's port forward: the server, "
             "the network stack, interrupts (and the few system calls that open and close "
             "each counting window). Counted by the ukl_counts QEMU plugin under "
             "`-icount shift=0,sleep=off`; instructions, not time."]
    if reps > 1:
        lines.append(f"Each figure is the median of {reps} boots (repetitions, taken in turn "
                     "over the configurations); guest instructions show the lowest and "
                     "highest in brackets.")
    lines += ["", "| app | op | config | " + " | ".join(h for _, h in COLUMNS) +
              f" | {base} insns / these |", "|---|---|---|" + "---|" * (len(COLUMNS) + 1)]
    groups: dict[tuple[str, str, str], list[Served]] = {}
    for r in rows:
        groups.setdefault((r.config, r.app, r.op), []).append(r)
    for app, op in dict.fromkeys((r.app, r.op) for r in rows):
        first = groups.get((base, app, op))
        base_insns = _median(first)["insns"] if first else 0.0
        for c in configs:
            group = groups.get((c, app, op))
            if group is None:
                continue
            med = _median(group)
            ratio = f"{base_insns / med['insns']:.2f}" if first and med["insns"] else "-"
            cells = [f"{med[k]:.1f}" if k.startswith("insns") else f"{med[k]:.3f}"
                     for k, _ in COLUMNS]
            if len(group) > 1:
                insns = [r.per_request["insns"] for r in group]
                cells[0] += f" ({min(insns):.0f}-{max(insns):.0f})"
            lines.append(f"| {app} | {op} | {c} | " + " | ".join(cells) + f" | {ratio} |")
    return "\n".join(lines) + "\n"


def bench_apps_host(name: str, apps: list[str], configs: list[Flavour], requests: int,
                    command: str, reps: int = 1, connections: int = CLIENTS) -> Path:
    unknown = [a for a in apps if a not in SERVERS]
    if unknown:
        raise UsageError(f"unknown app(s) {', '.join(unknown)}; choose from "
                         f"{', '.join(SERVERS)}")
    plugin = counts.build()
    rows: list[Served] = []
    # Repetitions outermost: a drift in the host's timing then spreads over
    # every configuration instead of landing on one.
    for rep in range(reps):
        for app in apps or list(SERVERS):
            for c in configs:
                rows += run_app(app, c, requests, plugin, rep, connections)
    out = ResultsWriter(name, command)
    keys = [k for k, _ in COLUMNS]
    out.csv("apps-host.csv", ("config", "app", "op", "rep", "requests", *keys),
            [(r.config, r.app, r.op, r.rep, r.requests,
              *(f"{r.per_request[k]:.3f}" for k in keys)) for r in rows])
    out.markdown("apps-host.md", markdown(rows, [c.name for c in configs], connections))
    out.meta("apps-host-meta.json", configs, requests=requests, clients=connections, reps=reps,
             client="the host, through QEMU's port forward",
             cpu_models={c.name: c.cpu for c in configs}, accel=ACCEL)
    return out.dir
