"""`ukl rm NAME... [--force]`: remove stopped background instances.

Removes the instance's own directory under build/instances/ (its state
and console log) and nothing else: its disks and shared folders stay.
"""
from __future__ import annotations

import argparse
import sys

from ukl.cli.args import Invocation
from ukl.qemu import instances

SUMMARY = "remove stopped background instances (their state and log; never their disks)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="+", metavar="NAME", help="instance name (`ukl ps`)")
    p.add_argument("--force", action="store_true",
                   help="kill a running instance's QEMU first")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    found = [instances.load(n) for n in args.names]
    for inst in found:
        if args.force and instances.is_running(inst):
            instances.kill_qemu(inst)
        instances.remove(inst)
        print(f"ukl: instance {inst.name} removed", file=sys.stderr)
    return 0
