"""`ukl kernel build|list [FLAVOUR...]`: kernel flavours."""
from __future__ import annotations

import argparse
import sys

from ukl.cli.args import Invocation
from ukl.kbuild import build, flavour
from ukl.kbuild.options import table

SUMMARY = "build kernel flavours (incremental, ccache), or list them and the UKL options"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["build", "list"])
    p.add_argument("flavours", nargs="*", metavar="FLAVOUR",
                   help="named flavours or BASE+OPTION+... (default: every named flavour "
                   "but those built on demand)")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.flavours:
        wanted = flavour.get_all(args.flavours)
    elif args.action == "list":
        wanted = list(flavour.named().values())
    else:
        wanted = [f for f in flavour.named().values() if not f.on_demand]
    if args.action == "list":
        for f in wanted:
            note = " (built on demand)" if f.on_demand else ""
            print(f"{f.name:14} {f.description}{note}")
        if not args.flavours:
            print("\nUKL options (compose them as ukl+OPTION+...; kernel/options.ini):")
            for o in table().values():
                print(f"  {o.name:12} {o.config:22} {o.summary}")
        return 0
    for f in wanted:
        print(f"ukl: kernel {f.name}: {build.build(f)}", file=sys.stderr)
    return 0
