"""`ukl bench`: build guest/lebench.c for every kernel config, run each
under icount, and write results/NAME/: results.csv, results.md, meta.json
and the plots.

All configs are built from the same patched kernel tree and run in one
invocation, so they can be compared side by side.
"""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from ukl import pipeline
from ukl.bench import anchors, counts, plots, report
from ukl.common import paths
from ukl.common.buildenv import jobs
from ukl.common.errors import UklError, UsageError
from ukl.common.proc import run_logged
from ukl.image import image
from ukl.image.initramfs import InitramfsSpec
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.qemu import models, run
from ukl.results import ResultsWriter, results_dir

# -icount and the counting plugin exist only under TCG; recorded in meta.json.
ACCEL = "tcg"

LEBENCH = paths.REPO_ROOT / "guest" / "lebench.c"
# Measurements per benchmark group (see lebench.c): 33 sizes per size sweep.
GROUP_LINES = {"floor": 3, "file": 66, "pipe": 66, "udp": 66, "unix": 66,
               "tcp": 66, "page-fault": 1, "stack-fault": 1, "thread": 1, "fork": 1}
# Generous: a full run of one config takes a few minutes under icount.
RUN_TIMEOUT = 3600.0


def _expected_lines(groups: list[str]) -> int:
    return sum(GROUP_LINES[g] for g in (groups or GROUP_LINES))


# How often a measurement's status is printed while something else runs.
_SPARSE_EVERY = 30.0


def _progress(config_name: str, log: Path, total: int, done: threading.Event,
              shared: bool) -> None:
    """The measurement's status, as the guest reports measurements. With
    `shared`, builds or other measurements draw progress too, so the status
    comes as a whole line now and then instead of a line redrawn in place."""
    start = time.monotonic()
    last_line = start
    while not done.wait(1.0):
        count = log.read_text(errors="replace").count("\nbench,") if log.is_file() else 0
        now = time.monotonic()
        status = f"   [bench {config_name}] {count}/{total} measurements, {now - start:.0f} s"
        if not shared:
            sys.stderr.write(f"\r{status} ")
        elif now - last_line >= _SPARSE_EVERY:
            sys.stderr.write(f"\r\033[K{status}\n" if sys.stderr.isatty() else f"{status}\n")
            last_line = now
        sys.stderr.flush()
    sys.stderr.write("\n")


@dataclass(frozen=True)
class Prepared:
    """A config's benchmark image, built and ready to boot."""
    flavour: Flavour
    img: image.Image
    groups: list[str]
    args: list[str]


def prepare_config(flavour: Flavour, quick: bool, groups: list[str]) -> Prepared | None:
    """Build the benchmark image for `flavour` (None: every group it was
    asked for is ruled out by its options)."""
    ruled_out = flavour.bench_skips
    if ruled_out:
        # Reported as n/a: what the option forbids is not a measurement.
        groups = [g for g in (groups or GROUP_LINES) if g not in ruled_out]
        print(f"ukl: {flavour.name} skips {', '.join(ruled_out)} (ruled out by its options)",
              file=sys.stderr)
        if not groups:
            return None
    img = pipeline.build_image(f"bench-{flavour.dir_name}", flavour, [LEBENCH],
                               InitramfsSpec())
    # Each option's bench-args (kernel/options.ini) measure what it is for:
    # a bypass flavour with bypass on, a shortcut flavour's TCP through
    # its shortcuts.
    args = [*flavour.bench_args, *(["--quick"] if quick else []), *groups]
    return Prepared(flavour, img, groups, args)


@dataclass(frozen=True)
class Measured:
    """Figures of one or more configs: instructions (rdtsc), the plugin's
    counts, and what each config's kernel said of the CPU's bugs."""
    rows: list[report.Row]
    counted: list[report.Counted]
    vulnerabilities: dict[str, dict[str, str]]


def check_mitigations(flavour: Flavour, vulns: dict[str, str]) -> None:
    """A flavour built with the CPU mitigations, booted on a vendor model,
    must show them on: else it would be measured as deployed without
    being so."""
    vendor = models.vendor_of(flavour.cpu)
    if flavour.kconfig.get("CONFIG_CPU_MITIGATIONS") != "y" or vendor is None:
        return
    missing = models.missing_mitigations(vulns, vendor)
    if missing:
        raise UklError(f"{flavour.name} on {flavour.cpu}: mitigations not active: "
                       + "; ".join(missing))


def measure(prep: Prepared, shared: bool, plugin: Path) -> Measured:
    """Boot a prepared image under icount and the ukl_counts plugin and
    read its measurements (`shared`: see _progress)."""
    config_name, groups = prep.flavour.name, prep.groups
    counts_csv = paths.logs_dir() / f"counts-bench-{prep.flavour.dir_name}.csv"
    counts_csv.unlink(missing_ok=True)
    # norandmaps: with a random mmap base the page-fault loop's VMA lookup
    # walks a differently shaped tree in about one boot in six (5252 vs
    # 5264 instructions); fixed placement makes every boot count the same.
    opts = qemu.RunOptions(kernel=prep.img.kernel, initramfs=prep.img.initramfs, smp=1,
                           mem="1G", cpu=prep.flavour.cpu, icount=True, gdb=False,
                           accel=ACCEL,
                           append=["norandmaps"],
                           program_args=prep.args,
                           plugin=counts.plugin_argument(plugin, counts_csv,
                                                         counts.layout(prep.img.kernel)))
    log = paths.logs_dir() / f"run-bench-{prep.flavour.dir_name}.log"
    log.unlink(missing_ok=True)
    done = threading.Event()
    ticker = threading.Thread(target=_progress,
                              args=(config_name, log, _expected_lines(groups), done, shared))
    ticker.start()
    try:
        outcome = run.run(opts, log_name=f"bench-{prep.flavour.dir_name}", timeout=RUN_TIMEOUT,
                          echo=False)
    finally:
        done.set()
        ticker.join()
    if outcome.exit_code != 0:
        if outcome.problem:
            run.report_problem(outcome)
        raise UklError(f"benchmark on {config_name} failed (status {outcome.exit_code}); "
                       f"console log: {outcome.log}")
    if outcome.complaints:
        raise UklError(f"benchmark on {config_name}: the kernel complained "
                       f"({outcome.complaints[0]}); console log: {outcome.log}")
    console = outcome.log.read_text(errors="replace")
    vulns = models.parse_vulnerabilities(console)
    check_mitigations(prep.flavour, vulns)
    rows = report.parse(console, config_name)
    if len(rows) != _expected_lines(groups):
        raise UklError(f"benchmark on {config_name}: {len(rows)} measurements, expected "
                       f"{_expected_lines(groups)}; console log: {outcome.log}")
    windows = counts.read(counts_csv)
    try:
        counted = report.counted(rows, {n: w.counts for n, w in windows.items()},
                                 {n: w.passes for n, w in windows.items()})
    except ValueError as e:
        raise UklError(f"benchmark on {config_name}: {e}; counts: {counts_csv}") from e
    return Measured(rows, counted, {config_name: vulns})


def _toolchain_beside(configs: list[Flavour]) -> Future[None] | None:
    """Start the UKL toolchain build now, beside the first config's kernel,
    if a UKL config will need it: from clean, the toolchain and the stock
    kernel are the two long compiles, and run one after the other each
    leaves a core idle in its serial stretches (configure scripts, the
    kernel's final link). It runs as its own `ukl toolchain build`, its
    output in a log, so its progress does not draw over the kernel's."""
    if not any(c.is_ukl for c in configs):
        return None
    cmd = [sys.executable, str(paths.REPO_ROOT / "bin" / "ukl"), "toolchain", "build"]
    builder = ThreadPoolExecutor(max_workers=1)
    done = builder.submit(run_logged, cmd, label="UKL toolchain, beside the kernel",
                          log_path=paths.logs_dir() / "bench-toolchain.log", progress=False)
    builder.shutdown(wait=False)
    return done


def run_configs(configs: list[Flavour], quick: bool, groups: list[str]) -> Measured:
    """Every config's measurements, in order. Configs are built one after
    the other, and each is measured as soon as it is built, beside the
    next one's build and the other measurements (one guest per core): QEMU
    runs one single-threaded guest, and under icount the figures do not
    depend on what else the host is doing."""
    toolchain_done = _toolchain_beside(configs)
    plugin = counts.build()
    # With more than one config, builds and guests overlap on the terminal.
    shared = len(configs) > 1
    guests = ThreadPoolExecutor(max_workers=max(1, min(len(configs), jobs())))
    running: list[Future[Measured]] = []
    try:
        for i, c in enumerate(configs, 1):
            print(f"ukl: bench config {i}/{len(configs)}: {c.name}", file=sys.stderr)
            if toolchain_done is not None and c.is_ukl:
                toolchain_done.result()
            prep = prepare_config(c, quick, groups)
            if prep is not None:
                running.append(guests.submit(measure, prep, shared, plugin))
        done = [r.result() for r in running]
        return Measured([row for m in done for row in m.rows],
                        [c for m in done for c in m.counted],
                        {k: v for m in done for k, v in m.vulnerabilities.items()})
    finally:
        if toolchain_done is not None and not toolchain_done.done():
            # A failure elsewhere still lets it finish (and be cached) rather
            # than leave a build running behind the next command.
            print("ukl: waiting for the UKL toolchain build beside it to finish "
                  f"(log: {paths.logs_dir() / 'bench-toolchain.log'})", file=sys.stderr)
            toolchain_done.exception()
        guests.shutdown(wait=True)


def bench(name: str, configs: list[Flavour], quick: bool, groups: list[str],
          command: str) -> Path:
    """Measure every config; write results/NAME/ for `command`."""
    unknown = [g for g in groups if g not in GROUP_LINES]
    if unknown:
        raise UsageError(f"unknown benchmark group(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(GROUP_LINES)}")
    plots.require()  # before the builds and runs, not after them
    native = anchors.measure()
    measured = run_configs(configs, quick, groups)
    rows = measured.rows
    names = [c.name for c in configs]
    out = ResultsWriter(name, command)
    out.csv("results.csv", report.CSV_HEADER, report.csv_rows(rows))
    out.csv("counts.csv", report.COUNTS_CSV_HEADER, report.counts_csv_rows(measured.counted))
    out.markdown("results.md", report.markdown(rows, names) + "\n## What costs cycles\n\n" +
                 report.counts_markdown(measured.counted, names) +
                 "\n## Native anchors\n\n" + anchors.markdown(native))
    out.meta("meta.json", configs,
             qemu_mode="TCG, -icount shift=0,sleep=off, 1 CPU, 1 GiB, the config's CPU model",
             accel=ACCEL,
             iterations=1000 if quick else 10000, groups=groups or list(GROUP_LINES),
             note=report.NOTE, native_anchors=anchors.meta(native),
             cpu_models={c.name: c.cpu for c in configs},
             vulnerabilities=measured.vulnerabilities)
    plots.write_all(rows, names, out.dir)
    return out.dir


def replot(name: str) -> Path:
    """Redraw the plots of results/NAME from its results.csv."""
    out = results_dir() / name
    csv_path = out / "results.csv"
    if not csv_path.is_file():
        raise UklError(f"no {csv_path}; run `ukl bench --name {name}` first")
    rows = report.read_csv(csv_path)
    configs = list(dict.fromkeys(r.config for r in rows))
    plots.write_all(rows, configs, out)
    return out
