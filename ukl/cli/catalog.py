"""`ukl catalog [PACKAGE...]`: build Debian packages with `ukl build
--debian`, boot each on UKL and on the stock kernel, and test what it does
(catalog/packages.ini; ukl/catalog.py). Exit status 1 if any failed."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ukl import catalog
from ukl.cli.args import Invocation, print_table
from ukl.kbuild import flavour
from ukl.common.errors import UsageError
from ukl.results import ResultsWriter, results_dir

SUMMARY = "build, boot and test Debian packages from the catalog (UKL and stock)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("packages", nargs="*", metavar="PACKAGE",
                   help="entries of catalog/packages.ini (default: all of them)")
    p.add_argument("--small", action="store_true",
                   help="only the entries marked small (the short run of make test)")
    p.add_argument("--kernel", default="ukl", metavar="FLAVOUR",
                   help="UKL kernel flavour (default: ukl)")
    p.add_argument("--stock", default="stock", metavar="FLAVOUR",
                   help="kernel flavour for the ordinary processes (default: stock)")
    p.add_argument("--name", default=None,
                   help="record the run in results/NAME/ (catalog.md, catalog.csv, meta.json); "
                   "the run updates the rows of the packages it runs and keeps the others'")
    p.add_argument("--resume", action="store_true",
                   help="with --name: keep the packages that passed everything in "
                   "results/NAME/catalog.csv and run only the others")


def _record(out: ResultsWriter, rows: list[catalog.Row], to_run: int, run: int,
            flavours: list[flavour.Flavour]) -> None:
    header, body = catalog.rows_table(rows)
    text = catalog.markdown(rows)
    if run < to_run:
        text += f"\n(In progress: {run} of the {to_run} packages of this run so far.)\n"
    out.markdown("catalog.md", text)
    out.csv("catalog.csv", header, body)
    out.meta("meta.json", flavours, accel="tcg", packages=[r.entry.name for r in rows])


def _earlier_run_day(run_dir: Path) -> str:
    """The day of the run recorded in run_dir/meta.json ("" if none): rows
    written before the table had a `ran` column were run then or before."""
    try:
        return str(json.loads((run_dir / "meta.json").read_text())["date"])[:10]
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def run(args: argparse.Namespace, inv: Invocation) -> int:
    everything = catalog.load()
    entries = catalog.select(everything, list(args.packages), args.small)
    ukl, stock = flavour.get(args.kernel), flavour.get(args.stock)
    if args.resume and not args.name:
        raise UsageError("--resume needs --name NAME: the run whose results/NAME/catalog.csv "
                         "to resume")
    recorded: dict[str, catalog.Row] = {}
    if args.name:
        run_dir = results_dir() / args.name
        recorded = catalog.recorded(run_dir / "catalog.csv", everything,
                                    _earlier_run_day(run_dir))
    # --resume: what passed everything is not run again.
    kept = catalog.passed_everything(recorded) if args.resume else {}
    # A run updates the rows of the packages it runs, as it runs them: every
    # other row stays as recorded, whatever it says, and so does a row the
    # run has not reached yet.
    carried = recorded
    to_run = [e for e in entries if e.name not in kept]
    out = ResultsWriter(args.name, inv.command_line) if args.name else None
    done: dict[str, catalog.Row] = {}
    for i, entry in enumerate(entries, 1):
        if entry.name in kept:
            print(f"ukl: catalog {i}/{len(entries)}: {entry.name} passed in the earlier run, kept",
                  file=sys.stderr)
            continue
        print(f"ukl: catalog {i}/{len(entries)}: {entry.name} ({entry.test})",
              file=sys.stderr)
        row = catalog.run_entry(entry, ukl, stock)
        failure = catalog.first_failure(row)[0]
        print(f"ukl: catalog {entry.name}: build {catalog.cell(row.build)}, "
              f"UKL {catalog.cell(row.ukl)}, stock {catalog.cell(row.stock)}"
              + (f"; {failure}" if failure else ""), file=sys.stderr)
        done[entry.name] = row
        if out is not None:
            # After every package: a long run stopped part way still says
            # what it found, and keeps what it carried over.
            _record(out, catalog.table_rows(everything, done, carried), len(to_run),
                    len(done), [ukl, stock])
    if out is not None and not done:
        _record(out, catalog.table_rows(everything, done, carried), 0, 0, [ukl, stock])
    rows = catalog.table_rows(entries, done, carried)
    header, body = catalog.rows_table(rows)
    print_table([header[:7]] + [r[:7] for r in body])
    print(catalog.summary(rows))
    if out is not None:
        print(f"ukl: results in {out.dir}", file=sys.stderr)
    return 0 if all(r.passed() for r in rows) else 1
