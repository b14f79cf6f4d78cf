"""`ukl matrix`: every combination of the UKL options, built and booted
with the base-model suite -> results/NAME/matrix.*."""
from __future__ import annotations

import argparse
import sys

from ukl import matrix
from ukl.cli.args import Invocation
from ukl.qemu import models

SUMMARY = ("every combination of the UKL options: build, boot the base-model suite "
           "-> results/NAME/matrix.*")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="matrix", help="results/NAME (default: matrix)")
    p.add_argument("--only", default="", metavar="A,B",
                   help="just these combinations (e.g. ukl+byp,ukl+ret+rtc)")
    p.add_argument("--base", default="ukl", metavar="FLAVOUR",
                   help="the UKL flavour the options are composed onto (default ukl; "
                   "ukl-distro: the distribution-like configuration)")
    p.add_argument("--cpu", default="max", metavar="MODEL",
                   help="QEMU CPU model to boot with (default max; see `ukl run --cpu`)")
    p.add_argument("--resume", action="store_true",
                   help="keep earlier results in results/NAME, skip combinations that passed")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    models.check_known(args.cpu)
    out = matrix.run_matrix(args.name, [c for c in args.only.split(",") if c], args.resume,
                            inv.command_line, base=args.base, cpu=args.cpu)
    print(f"ukl: results in {out} (matrix.md, matrix.csv, meta.json)", file=sys.stderr)
    return 0
