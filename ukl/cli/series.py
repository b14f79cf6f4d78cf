"""`ukl series ACTION COMPONENT`: our patch series <-> git trees under build/src."""
from __future__ import annotations

import argparse
import sys

from ukl.cli.args import Invocation
from ukl.sources import checkpatch, debian, series

SUMMARY = "patch series <-> git trees under build/src; check them with checkpatch"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["prepare", "status", "export", "reset", "check"],
                   help="prepare: the tree = Debian source + series; export: its commits "
                   "-> the series; check: checkpatch.pl --strict on every patch")
    p.add_argument("component", help="a section of sources.ini (linux, glibc, gcc) or 'all'")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    comps = list(debian.load().values()) if args.component == "all" else [
        debian.get(args.component)]
    failed = False
    for comp in comps:
        if args.action == "prepare":
            print(f"ukl: {comp.name} ready in {series.prepare(comp)}", file=sys.stderr)
        elif args.action == "reset":
            print(f"ukl: {comp.name} reset in {series.reset(comp)}", file=sys.stderr)
        elif args.action == "export":
            names = series.export(comp)
            print(f"ukl: exported {len(names)} patch(es) to {comp.series_dir}", file=sys.stderr)
        elif args.action == "check":
            report = checkpatch.check(comp)
            print(report.text())
            failed |= not report.clean
        else:
            print(series.status(comp))
    return 1 if failed else 0
