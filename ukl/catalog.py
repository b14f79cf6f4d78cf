"""`ukl catalog`: build Debian packages with `ukl build --debian`, boot
each as a UKL program and as an ordinary process on the stock kernel, and
give it a one-line test of what it does (catalog/packages.ini).

A command-line program's own output must match the entry's `expect`. A
server gets a probe: a shell command (busybox nc, wget, nslookup) run in
the guest beside it once it has had time to start, whose output must
match; then every process gets SIGTERM and the guest ends. A run with a
kernel complaint (Oops, BUG, WARNING, stalls) fails whatever the output.

Results go to results/NAME/catalog.md and catalog.csv (package, version,
build, UKL, stock, minutes, what was left out, the first failure and its
log).
"""
from __future__ import annotations

import configparser
import csv
import re
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from ukl import pipeline
from ukl.app.debian import build as debbuild
from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.image import runargs
from ukl.image.initramfs import InitramfsSpec
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.qemu import run

CATALOG_DIR = paths.REPO_ROOT / "catalog"
CATALOG = CATALOG_DIR / "packages.ini"
FILES_DIR = CATALOG_DIR / "files"
DEFAULT_TIMEOUT = 240.0
_KEYS = {"package", "program", "test", "args", "files", "helper", "probe", "expect", "timeout",
         "small"}
# What the probe helper prints around its output, and the status line.
PROBE_BEGIN = "ukl-catalog: probe begin"
PROBE_END = re.compile(r"ukl-catalog: probe end, status (\d+)")
# Seconds a server gets to start before the probe runs (it retries too).
PROBE_DELAY = 5


@dataclass(frozen=True)
class Entry:
    name: str
    package: str
    program: str | None
    test: str
    args: list[str]
    expect: str
    files: list[tuple[Path, str]] = field(default_factory=list)
    helper: str = ""
    probe: str = ""
    timeout: float = DEFAULT_TIMEOUT
    small: bool = False


def load(path: Path = CATALOG) -> list[Entry]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error as e:
        raise UklError(f"{path}: {e}") from e
    entries = []
    for name in parser.sections():
        sec = parser[name]
        unknown = set(sec) - _KEYS
        if unknown:
            raise UklError(f"{path}: [{name}]: unknown keys: {', '.join(sorted(unknown))}")
        if "expect" not in sec or "test" not in sec:
            raise UklError(f"{path}: [{name}]: `test` and `expect` are required")
        try:
            re.compile(sec["expect"])
        except re.error as e:
            raise UklError(f"{path}: [{name}]: expect is not a regular expression: {e}") from e
        files = []
        for item in shlex.split(sec.get("files", "")):
            host, sep, guest = item.partition(":")
            if not sep or not guest.startswith("/") or not (FILES_DIR / host).is_file():
                raise UklError(f"{path}: [{name}]: files entry {item!r}: expected "
                               f"relpath:/guest/path with relpath in {FILES_DIR}")
            files.append((FILES_DIR / host, guest))
        entries.append(Entry(
            name=name, package=sec.get("package", name), program=sec.get("program"),
            test=sec["test"], args=shlex.split(sec.get("args", "")), expect=sec["expect"],
            files=files, helper=sec.get("helper", ""), probe=sec.get("probe", ""),
            timeout=float(sec.get("timeout", str(DEFAULT_TIMEOUT))),
            small=sec.get("small", "no").lower() in ("yes", "true", "1")))
    return entries


def select(entries: list[Entry], names: list[str], small: bool) -> list[Entry]:
    if names:
        known = {e.name: e for e in entries}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"not in {CATALOG}: {', '.join(unknown)} (it lists "
                             f"{', '.join(known)})")
        return [known[n] for n in names]
    return [e for e in entries if e.small] if small else entries


@dataclass
class Verdict:
    ok: bool
    # One line: what went wrong (empty when ok).
    why: str = ""
    log: Path | None = None


@dataclass
class Row:
    entry: Entry
    version: str = ""
    build: Verdict | None = None
    ukl: Verdict | None = None
    stock: Verdict | None = None
    without: list[str] = field(default_factory=list)
    # The recipe's [build] settings ("" when Debian's build needs none).
    recipe: str = ""
    seconds: float = 0.0
    # The day the row was run (UTC, YYYY-MM-DD; "" if not recorded).
    ran: str = ""
    # Taken from an earlier run's catalog.csv, not run now.
    kept: bool = False

    def passed(self) -> bool:
        return all(v is not None and v.ok for v in (self.build, self.ukl, self.stock))


def _helpers(entry: Entry) -> list[str]:
    helpers = [entry.helper] if entry.helper else []
    if entry.probe:
        # Every process but init and this shell gets SIGTERM (kill -1):
        # the server ends and init reports its status.
        helpers.append(f"sleep {PROBE_DELAY}; echo '{PROBE_BEGIN}'; ( {entry.probe} ) 2>&1; "
                       f"echo \"ukl-catalog: probe end, status $?\"; kill -TERM -1")
    return helpers


# Terminal colours and cursor moves (jq colours its output on a console).
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def check_output(entry: Entry, console: str, exit_code: int) -> str:
    """Why the run's output fails the entry's test ("" if it passes)."""
    console = _ANSI.sub("", console)
    if entry.probe:
        begin = console.find(PROBE_BEGIN)
        end = PROBE_END.search(console, begin if begin >= 0 else 0)
        if begin < 0 or end is None:
            return "the probe did not run to the end (the server ended first?)"
        output = console[begin + len(PROBE_BEGIN):end.start()]
        if not re.search(entry.expect, output, re.M):
            return f"the probe's output does not match /{entry.expect}/: {output.strip()[:120]!r}"
        return ""
    if exit_code != 0:
        return f"exit status {exit_code}"
    if not re.search(entry.expect, console, re.M):
        return f"its output does not match /{entry.expect}/"
    return ""


def boot(entry: Entry, image_name: str, flavour: Flavour) -> Verdict:
    """Build the image of `entry` on `flavour` and run the test in it."""
    spec = InitramfsSpec(files=list(entry.files), helpers=_helpers(entry))
    try:
        img = pipeline.build_debian_image(image_name, flavour, entry.package, spec,
                                          binary=entry.program, own_recipe=False)
    except UklError as e:
        return Verdict(False, f"build: {e.message}")
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=1, accel="tcg")
    with runargs.initramfs_for_run(img.initramfs, entry.args, []) as initramfs:
        opts.initramfs = initramfs
        outcome = run.run(opts, log_name=image_name, timeout=entry.timeout,
                          echo=False)
    console = outcome.log.read_text(errors="replace")
    if outcome.complaints:
        return Verdict(False, f"kernel log: {outcome.complaints[0]}", outcome.log)
    if outcome.problem and not entry.probe:
        return Verdict(False, outcome.problem, outcome.log)
    why = check_output(entry, console, outcome.exit_code)
    return Verdict(not why, why, outcome.log)


def run_entry(entry: Entry, ukl: Flavour, stock: Flavour) -> Row:
    row = Row(entry, ran=time.strftime("%Y-%m-%d", time.gmtime()))
    # Debian's own build, whatever recipes/ says (own_recipe=False): the
    # entry gives the command line and files, nothing else.
    row.recipe = "none"
    started = time.monotonic()
    try:
        built = debbuild.build(entry.package, ukl=True, binary=entry.program, own_recipe=False)
        row.version, row.without = built.version, list(built.without)
        row.build = Verdict(True)
    except UklError as e:
        row.build = Verdict(False, e.message)
    if row.build.ok:
        row.ukl = boot(entry, f"catalog-{entry.name}", ukl)
    row.stock = boot(entry, f"catalog-{entry.name}-stock", stock)
    row.seconds = time.monotonic() - started
    return row


def _recorded_verdict(cell_text: str, failure: str, log: str, what: str) -> Verdict | None:
    if cell_text == "pass":
        return Verdict(True)
    if cell_text != "FAIL":
        return None
    # The failure column holds the first failure only, as "what: why".
    why = failure.removeprefix(f"{what}: ") if failure.startswith(f"{what}: ") else ""
    return Verdict(False, why, Path(log) if log else None)


def recorded(csv_path: Path, entries: list[Entry], default_ran: str = "") -> dict[str, Row]:
    """Every row of an earlier run's catalog.csv, passed or failed, by
    entry name, for the entries still in `entries`. `default_ran`: the day
    for rows written before the table had a `ran` column."""
    if not csv_path.is_file():
        return {}
    known = {e.name: e for e in entries}
    rows = {}
    with csv_path.open(newline="") as f:
        for r in csv.DictReader(f):
            entry = known.get(r.get("package", ""))
            # A row of a test since changed says nothing of the new one.
            if entry is None or r.get("test") != entry.test:
                continue
            failure, log = r.get("failure", ""), r.get("log", "")
            rows[entry.name] = Row(
                entry, version=r.get("version", ""),
                build=_recorded_verdict(r.get("build", ""), failure, log, "build"),
                ukl=_recorded_verdict(r.get("UKL", ""), failure, log, "UKL"),
                stock=_recorded_verdict(r.get("stock", ""), failure, log, "stock"),
                without=[w for w in r.get("built without", "").split("; ") if w],
                recipe=r.get("build recipe", ""),
                seconds=float(r.get("minutes") or 0) * 60,
                ran=r.get("ran") or default_ran, kept=True)
    return rows


def passed_everything(rows: dict[str, Row]) -> dict[str, Row]:
    """The rows whose package built and passed on UKL and on stock
    (--resume keeps them)."""
    return {name: row for name, row in rows.items() if row.passed()}


def passed_before(csv_path: Path, entries: list[Entry], default_ran: str = "") -> dict[str, Row]:
    """The rows of an earlier run's catalog.csv that passed everything."""
    return passed_everything(recorded(csv_path, entries, default_ran))


def table_rows(entries: list[Entry], done: dict[str, Row], carried: dict[str, Row]) -> list[Row]:
    """The rows of a run's table, in catalog order: the row run now where
    there is one, else the one carried over from the earlier run."""
    return [done.get(e.name) or carried[e.name] for e in entries
            if e.name in done or e.name in carried]


def cell(v: Verdict | None) -> str:
    if v is None:
        return "not run"
    return "pass" if v.ok else "FAIL"


def first_failure(row: Row) -> tuple[str, str]:
    """(the first failure's line, its log) of a row, ("", "") if none."""
    for what, v in (("build", row.build), ("UKL", row.ukl), ("stock", row.stock)):
        if v is not None and not v.ok:
            return f"{what}: {v.why}", str(v.log or "")
    return "", ""


def rows_table(rows: list[Row]) -> tuple[list[str], list[list[str]]]:
    header = ["package", "version", "test", "build", "UKL", "stock", "minutes", "ran",
              "build recipe", "built without", "failure", "log"]
    out = []
    for r in rows:
        failure, log = first_failure(r)
        out.append([r.entry.name, r.version, r.entry.test, cell(r.build), cell(r.ukl),
                    cell(r.stock), f"{r.seconds / 60:.1f}", r.ran, r.recipe, "; ".join(r.without),
                    failure.replace("|", "/"), log])
    return header, out


def summary(rows: list[Row]) -> str:
    passed = [r for r in rows if r.ukl is not None and r.ukl.ok]
    plain = sum(1 for r in passed if r.recipe == "none")
    stock = sum(1 for r in rows if r.stock is not None and r.stock.ok)
    return (f"{len(passed)} of {len(rows)} packages built and passed their test on UKL, "
            f"{plain} of them with no build recipe (Debian's own build); "
            f"{stock} of {len(rows)} as ordinary processes on the stock kernel.")


def markdown(rows: list[Row]) -> str:
    header, body = rows_table(rows)
    lines = ["# The Debian catalog", "", summary(rows), "",
             "Each package is built by `ukl build --debian` (Debian's own build, its library "
             "build dependencies built for UKL first), booted as a UKL program and as an "
             "ordinary process on the stock kernel, and tested as catalog/packages.ini says. "
             "Minutes: the whole row (builds of both modes and both boots); ran: the "
             "day it was run (UTC).", "",
             "| " + " | ".join(header[:-1]) + " |", "|" + "---|" * (len(header) - 1)]
    for cells in body:
        lines.append("| " + " | ".join(c or " " for c in cells[:-1]) + " |")
    kept = [r.entry.name for r in rows if r.kept]
    if kept:
        lines += ["", "Not run again, as an earlier run recorded under this name left them "
                  f"(column `ran`): {', '.join(kept)}."]
    failed = [(c[0], c[-1]) for c in body if c[-1]]
    if failed:
        lines += ["", "Logs of the failures (under build/, on the machine that ran it):", ""]
        lines += [f"- {name}: {log}" for name, log in failed]
    return "\n".join(lines) + "\n"
