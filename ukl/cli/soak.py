"""`ukl soak`: guest/soak.c (threads, mmap churn, pipes, vfork+exec, clock
reads, signals, mode switches, stack growth) for a long time as the
application of a flavour, with the same program as an ordinary process
beside it; every activity must keep advancing and the kernel log must
stay clean. Exit status 1 when it does not."""
from __future__ import annotations

import argparse
import sys

from ukl import soak
from ukl.cli.args import Invocation
from ukl.common.errors import UsageError
from ukl.kbuild import flavour
from ukl.qemu import models

SUMMARY = "everything at once for a long time, the application and a process beside it"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernel", default="ukl-ret-byp", metavar="FLAVOUR",
                   help="kernel flavour (default: ukl-ret-byp, which can switch bypass "
                   "and run-to-completion)")
    p.add_argument("--seconds", type=int, default=1800,
                   help="soak time, a multiple of 10 (default 1800)")
    p.add_argument("--cpus", type=int, default=2, help="guest CPUs (default 2)")
    p.add_argument("--cpu", default="max", metavar="MODEL",
                   help="QEMU CPU model (default max; EPYC or Skylake-Client turn on the "
                   "mitigations of a kernel built with them, see `ukl run --cpu`)")
    p.add_argument("--name", default=None,
                   help="record the run in results/NAME/ (default: not recorded)")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.seconds < 10 or args.seconds % 10 or args.cpus < 1:
        raise UsageError("--seconds must be a multiple of 10 (the progress window) and "
                         "--cpus at least 1")
    models.check_known(args.cpu)
    o = soak.run_soak(flavour.get(args.kernel), args.seconds, args.cpus, args.name,
                      inv.command_line, args.cpu)
    if args.name:
        print(f"ukl: results in results/{args.name}/ (soak.md, meta.json)", file=sys.stderr)
    return 0 if o.result == "pass" else 1
