"""`ukl bench-apps`: application throughput, stock vs UKL configs, one run.

Each application (a Debian package, see recipes/) is built for every
kernel config, and its client runs inside the same guest as an ordinary
process, so under `-icount shift=0,sleep=off` the whole exchange is
deterministic and guest time counts instructions: "requests per second"
are requests per 10^9 guest instructions, not wall-clock throughput.
Bypass configs boot with ukl_bypass=1 (unmodified programs, see
CONFIG_UKL_BYP).

Output, results/NAME/: apps.csv, apps.md (table, ratios to the first
config, image sizes), apps-meta.json.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ukl import pipeline
from ukl.app import process
from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.common.proc import run_quiet
from ukl.image.initramfs import InitramfsSpec
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.qemu import run
from ukl.results import ResultsWriter

# -icount exists only under TCG; recorded in apps-meta.json.
ACCEL = "tcg"

MEMCLIENT = paths.REPO_ROOT / "guest" / "memclient.c"
RUN_TIMEOUT = 3600.0
CLIENTS = 4


@dataclass(frozen=True)
class AppBench:
    package: str
    # Guest shell script: wait for the server, load it, print
    # "appbench,APP,OP,RPS" lines, stop the server.
    script: str
    ops: tuple[str, ...]


def _apps(requests: int) -> dict[str, AppBench]:
    return {
        "redis": AppBench("redis", (
            "until redis-cli ping >/dev/null 2>&1; do sleep 1; done; "
            f"redis-benchmark -n {requests} -c {CLIENTS} -t set,get --csv > /tmp/rb 2>&1; "
            "awk -F'\"' '/^\"(SET|GET)\"/ {print \"appbench,redis,\" $2 \",\" $4}' /tmp/rb; "
            "redis-cli shutdown nosave"), ("SET", "GET")),
        "memcached": AppBench("memcached", (
            "sleep 2; "
            f"/usr/bin/memclient 127.0.0.1 11211 {CLIENTS} {max(requests // CLIENTS, 1)}; "
            "printf 'shutdown\\r\\n' | nc 127.0.0.1 11211"), ("SET", "GET")),
    }


@dataclass(frozen=True)
class Result:
    config: str
    app: str
    op: str
    rps: float


def parse(console: str, config_name: str) -> list[Result]:
    out = []
    for line in console.splitlines():
        parts = line.strip().split(",")
        if len(parts) == 4 and parts[0] == "appbench":
            out.append(Result(config_name, parts[1], parts[2], float(parts[3])))
    return out


def _loaded_size(vmlinux: Path) -> int:
    """Bytes the kernel occupies in memory: the sum of its PT_LOAD segments."""
    text = run_quiet(["readelf", "-lW", str(vmlinux)], what="readelf")
    return sum(int(line.split()[5], 16) for line in text.splitlines()
               if line.strip().startswith("LOAD"))


def run_app(app: str, bench: AppBench, flavour: Flavour
            ) -> tuple[list[Result], dict[str, int]]:
    spec = InitramfsSpec(helpers=[bench.script])
    if app == "memcached":
        spec.files.append((process.compile_static([MEMCLIENT], "memclient"),
                           "/usr/bin/memclient"))
    name = f"appbench-{app}-{flavour.dir_name}"
    img = pipeline.build_debian_image(name, flavour, bench.package, spec)
    # Each option's boot-args (kernel/options.ini) make an unmodified
    # server use it: ukl_bypass=1 for UKL_BYP.
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=1, mem="1G",
                           icount=True, gdb=False, accel=ACCEL,
                           append=list(flavour.boot_args))
    print(f"   [bench-apps] {app} on {flavour.name} (under icount) ...", file=sys.stderr)
    outcome = run.run(opts, log_name=name, timeout=RUN_TIMEOUT, echo=False)
    results = parse(outcome.log.read_text(errors="replace"), flavour.name)
    if outcome.exit_code != 0 or {r.op for r in results} != set(bench.ops):
        if outcome.problem:
            run.report_problem(outcome)
        raise UklError(f"{app} on {flavour.name}: status {outcome.exit_code}, results for "
                       f"{sorted(r.op for r in results)}; console log: {outcome.log}")
    if outcome.complaints:
        raise UklError(f"{app} on {flavour.name}: the kernel complained "
                       f"({outcome.complaints[0]}); console log: {outcome.log}")
    sizes = {"vmlinux_loaded_bytes": _loaded_size(img.kernel),
             "initramfs_bytes": img.initramfs.stat().st_size}
    return results, sizes


def markdown(results: list[Result], configs: list[str],
             sizes: dict[str, dict[str, int]]) -> str:
    base = configs[0]
    lines = ["Throughput in requests per second of **guest time under `-icount "
             "shift=0,sleep=off`**, i.e. requests per 10^9 guest instructions, with the "
             f"client running in the same guest ({CLIENTS} connections). TCG does not model "
             "the cycle cost of syscall/sysret/iret/swapgs or of cache and TLB misses.", "",
             "| app | op | " + " | ".join(configs) + " | " +
             " | ".join(f"{c}/{base}" for c in configs[1:]) + " |",
             "|---|---|" + "---|" * (2 * len(configs) - 1)]
    index = {(r.config, r.app, r.op): r.rps for r in results}
    for app, op in dict.fromkeys((r.app, r.op) for r in results):
        vals = [index.get((c, app, op)) for c in configs]
        cells = [f"{v:.0f}" if v is not None else "-" for v in vals]
        ratios = [f"{v / vals[0]:.2f}" if v and vals[0] else "-" for v in vals[1:]]
        lines.append(f"| {app} | {op} | " + " | ".join(cells + ratios) + " |")
    lines += ["", "Image sizes (kernel: bytes loaded in memory, PT_LOAD; initramfs: "
              "file size):", "", "| image | kernel loaded | initramfs |", "|---|---|---|"]
    for image, s in sizes.items():
        lines.append(f"| {image} | {s['vmlinux_loaded_bytes'] / 2**20:.1f} MiB | "
                     f"{s['initramfs_bytes'] / 2**20:.1f} MiB |")
    return "\n".join(lines) + "\n"


def bench_apps(name: str, apps: list[str], configs: list[Flavour], requests: int,
               command: str) -> Path:
    """Every app on every config; write results/NAME/apps.* for `command`."""
    known = _apps(requests)
    unknown = [a for a in apps if a not in known]
    if unknown:
        raise UsageError(f"unknown app(s) {', '.join(unknown)}; choose from {', '.join(known)}")
    results: list[Result] = []
    sizes: dict[str, dict[str, int]] = {}
    for app in apps or list(known):
        for c in configs:
            got, size = run_app(app, known[app], c)
            results += got
            sizes[f"{app} ({c.name})"] = size
    out = ResultsWriter(name, command)
    out.csv("apps.csv", ("config", "app", "op", "requests_per_second"),
            [(r.config, r.app, r.op, f"{r.rps:.0f}") for r in results])
    out.markdown("apps.md", markdown(results, [c.name for c in configs], sizes))
    out.meta("apps-meta.json", configs, requests=requests, clients=CLIENTS, sizes=sizes,
             accel=ACCEL)
    return out.dir
