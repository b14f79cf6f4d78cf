"""`ukl run IMAGE [options] [-- ARGS]`: boot an image; exit with the
program's own status (124: timeout, 125: no status from the guest)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ukl.bench import counts
from ukl.cli.args import Invocation
from ukl.common.errors import UsageError
from ukl.image import image
from ukl.qemu import command as qemu
from ukl.qemu import models
from ukl.qemu import run as boot

SUMMARY = "boot an image under QEMU (arguments after -- go to the program)"
TAKES_PROGRAM_ARGS = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("image", help="image name (build/images/NAME) or directory")
    p.add_argument("--smp", type=int, default=1, help="number of CPUs (default 1)")
    p.add_argument("--mem", default="512M", help="guest memory (default 512M)")
    p.add_argument("--cpu", default="max", metavar="MODEL",
                   help="QEMU CPU model (default max: every feature TCG has); a vendor "
                   "model such as Skylake-Client or EPYC turns on Linux's mitigations "
                   "for that CPU's bugs")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop the guest after this long (exit 124)")
    p.add_argument("--icount", action="store_true",
                   help="deterministic mode: -icount shift=0,sleep=off (rdtsc = instructions)")
    p.add_argument("--gdb", action="store_true",
                   help="start paused with a gdbstub; prints the gdb command to attach")
    p.add_argument("-p", "--port", action="append", default=[], metavar="HOST:GUEST",
                   help="forward TCP port HOST on 127.0.0.1 to GUEST in the guest "
                   "(adds a virtio-net NIC on QEMU user networking)")
    p.add_argument("--append", action="append", default=[], metavar="ARG",
                   help="extra kernel command-line argument (repeatable)")
    p.add_argument("--quiet-console", action="store_true",
                   help="do not echo the console (it is still logged)")
    p.add_argument("--count", metavar="CSV", type=Path,
                   help="count what costs cycles (instructions, privilege transitions, "
                   "SWAPGS, CR3 writes, VERW, serialising instructions...) with the "
                   "ukl_counts QEMU plugin, per window marked with guest/ukl_marks.h "
                   "and in total, into CSV; with --icount the counts are exact")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    models.check_known(args.cpu)
    img = image.find(args.image)
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=args.smp,
                           mem=args.mem, cpu=args.cpu, icount=args.icount, gdb=args.gdb,
                           append=list(args.append), program_args=inv.program_args,
                           forwards=[qemu.parse_forward(p) for p in args.port])
    if args.count:
        if args.smp > 1 and not args.icount:
            raise UsageError("--count with --smp > 1 needs --icount: the plugin's counters "
                             "are exact only when the CPUs run in one thread")
        out = args.count.resolve()
        if not out.parent.is_dir():
            raise UsageError(f"--count {args.count}: directory {out.parent} does not exist")
        out.unlink(missing_ok=True)
        opts.plugin = counts.plugin_argument(counts.build(), out, counts.layout(img.kernel))
    timeout = None if args.gdb else args.timeout
    outcome = boot.run(opts, log_name=img.meta.name, timeout=timeout,
                       echo=not args.quiet_console)
    if outcome.problem:
        boot.report_problem(outcome)
    boot.report_complaints(outcome)
    if args.count:
        print(f"ukl: counts in {args.count}", file=sys.stderr)
    return outcome.exit_code
