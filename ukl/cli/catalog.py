"""`ukl catalog [PACKAGE...]`: build Debian packages with `ukl build
--debian`, boot each on UKL and on the stock kernel, and test what it does
(catalog/packages.ini; ukl/catalog.py). Exit status 1 if any failed."""
from __future__ import annotations

import argparse
import sys

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
                   help="record the run in results/NAME/ (catalog.md, catalog.csv, meta.json)")
    p.add_argument("--resume", action="store_true",
                   help="with --name: keep the packages that passed everything in "
                   "results/NAME/catalog.csv and run only the others")


def _record(out: ResultsWriter, rows: list[catalog.Row], planned: int,
            flavours: list[flavour.Flavour]) -> None:
    header, body = catalog.rows_table(rows)
    text = catalog.markdown(rows)
    if len(rows) < planned:
        text += f"\n(In progress: {len(rows)} of {planned} packages so far.)\n"
    out.markdown("catalog.md", text)
    out.csv("catalog.csv", header, body)
    out.meta("meta.json", flavours, accel="tcg", packages=[r.entry.name for r in rows])


def run(args: argparse.Namespace, inv: Invocation) -> int:
    entries = catalog.select(catalog.load(), list(args.packages), args.small)
    ukl, stock = flavour.get(args.kernel), flavour.get(args.stock)
    if args.resume and not args.name:
        raise UsageError("--resume needs --name NAME: the run whose results/NAME/catalog.csv "
                         "to resume")
    kept = (catalog.passed_before(results_dir() / args.name / "catalog.csv", entries)
            if args.resume else {})
    out = ResultsWriter(args.name, inv.command_line) if args.name else None
    rows: list[catalog.Row] = []
    for i, entry in enumerate(entries, 1):
        if entry.name in kept:
            print(f"ukl: catalog {i}/{len(entries)}: {entry.name} passed in the earlier run, kept",
                  file=sys.stderr)
            row = kept[entry.name]
        else:
            print(f"ukl: catalog {i}/{len(entries)}: {entry.name} ({entry.test})",
                  file=sys.stderr)
            row = catalog.run_entry(entry, ukl, stock)
            failure = catalog.first_failure(row)[0]
            print(f"ukl: catalog {entry.name}: build {catalog.cell(row.build)}, "
                  f"UKL {catalog.cell(row.ukl)}, stock {catalog.cell(row.stock)}"
                  + (f"; {failure}" if failure else ""), file=sys.stderr)
        rows.append(row)
        if out is not None:
            # After every package, kept ones too: a long run stopped part
            # way still says what it found, and keeps what it was to keep
            # of the packages it has not reached.
            later = [kept[e.name] for e in entries[i:] if e.name in kept]
            _record(out, rows + later, len(entries), [ukl, stock])
    header, body = catalog.rows_table(rows)
    print_table([header[:7]] + [r[:7] for r in body])
    print(catalog.summary(rows))
    if out is not None:
        print(f"ukl: results in {out.dir}", file=sys.stderr)
    ok = all(r.ukl is not None and r.ukl.ok and r.stock is not None and r.stock.ok
             for r in rows)
    return 0 if ok else 1
