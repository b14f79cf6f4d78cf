"""`ukl bench [GROUP...]`: LEBench-style microbenchmarks, every config in
one run, instruction counts under icount -> results/NAME/."""
from __future__ import annotations

import argparse
import sys

from ukl.bench import lebench
from ukl.cli.args import Invocation, add_configs, flavours

SUMMARY = ("microbenchmarks on every config in one run, instruction counts under icount "
           "-> results/NAME/")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("groups", nargs="*", metavar="GROUP",
                   help="benchmark groups (default all): " + " ".join(lebench.GROUP_LINES))
    p.add_argument("--name", default="latest", help="results/NAME (default: latest)")
    add_configs(p, "stock,ukl")
    p.add_argument("--quick", action="store_true",
                   help="1,000 iterations instead of 10,000 (for tests)")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the plots of results/NAME from its results.csv")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.replot:
        print(f"ukl: plots redrawn in {lebench.replot(args.name)}", file=sys.stderr)
        return 0
    out = lebench.bench(args.name, flavours(args.configs), args.quick, list(args.groups),
                        inv.command_line)
    print(f"ukl: results in {out} (results.md, results.csv, meta.json)", file=sys.stderr)
    return 0
