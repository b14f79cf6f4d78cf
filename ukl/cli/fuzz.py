"""`ukl fuzz`: the system call fuzzer (guest/fuzz.c) as the application of
each kernel flavour, checked from outside: no signal in the fuzzer, no
stalled worker, a clean kernel log, the ordinary process beside it still
alive. Exit status 1 when any run fails."""
from __future__ import annotations

import argparse
import random
import sys

from ukl import fuzz
from ukl.cli.args import Invocation
from ukl.common.errors import UsageError
from ukl.kbuild import flavour
from ukl.qemu import models

SUMMARY = "the system call fuzzer as each flavour's application -> results/NAME/fuzz.*"
MAX_THREADS = 8


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kernels", default="ukl", metavar="A,B",
                   help="kernel flavours, or `all` for every named one (default: ukl)")
    p.add_argument("--seed", type=int, default=None,
                   help="the fuzzer's seed (default: a random one, printed)")
    p.add_argument("--seconds", type=int, default=60, help="fuzzing time per flavour "
                   "(default 60)")
    p.add_argument("--cpus", type=int, default=2, help="guest CPUs (default 2)")
    p.add_argument("--cpu", default="max", metavar="MODEL",
                   help="QEMU CPU model (default max; EPYC or Skylake-Client turn on the "
                   "mitigations of a kernel built with them, see `ukl run --cpu`)")
    p.add_argument("--threads", type=int, default=2,
                   help=f"fuzzing threads, 1-{MAX_THREADS} (default 2)")
    p.add_argument("--log-calls", action="store_true",
                   help="print every call before it is made (to replay a finding)")
    p.add_argument("--name", default=None,
                   help="record the runs in results/NAME/ (default: not recorded)")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.seconds < 1 or args.cpus < 1:
        raise UsageError("--seconds and --cpus must be at least 1")
    if not 1 <= args.threads <= MAX_THREADS:
        raise UsageError(f"--threads must be 1-{MAX_THREADS}")
    names = list(flavour.named()) if args.kernels == "all" else \
        [k for k in args.kernels.split(",") if k]
    if not names:
        raise UsageError("--kernels names no flavour (`ukl kernel list` shows them)")
    kernels = flavour.get_all(names)
    seed = args.seed if args.seed is not None else random.randrange(1, 2**31)
    models.check_known(args.cpu)
    outcomes = fuzz.run_fuzz(kernels, seed, args.seconds, args.cpus, args.threads,
                             args.log_calls, args.name, inv.command_line, args.cpu)
    failed = [o for o in outcomes if o.result != "pass"]
    if args.name:
        print(f"ukl: results in results/{args.name}/ (fuzz.md, fuzz.csv, meta.json)",
              file=sys.stderr)
    print(f"ukl: fuzz: {len(outcomes) - len(failed)} of {len(outcomes)} runs pass "
          f"(seed {seed})", file=sys.stderr)
    return 1 if failed else 0
