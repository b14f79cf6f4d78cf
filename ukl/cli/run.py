"""`ukl run IMAGE [options] [-- ARGS]`: boot an image; exit with the
program's own status (124: timeout, 125: no status from the guest)."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path

from ukl.bench import counts
from ukl.cli.args import Invocation
from ukl.common.errors import UklError, UsageError
from ukl.image import disk, image, runargs
from ukl.kbuild import build as kbuild
from ukl.kbuild import kconfig
from ukl.qemu import accel
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
    p.add_argument("--accel", default=None, metavar="auto|kvm|tcg",
                   help="QEMU accelerator (default: $UKL_ACCEL, else auto: KVM when a "
                   "short probe boot proves it works on this host, else TCG; --icount, "
                   "--count and --gdb need TCG)")
    p.add_argument("-e", "--env", action="append", default=[], metavar="NAME=VALUE",
                   help="set NAME in the program's environment (repeatable; overrides "
                   "the image's own)")
    p.add_argument("--disk", action="append", default=[], metavar="FILE[:SIZE[:GUEST_PATH]]",
                   help="attach FILE as a virtio-blk disk with an ext4 file system, made "
                   f"(SIZE, default {disk.DEFAULT_SIZE >> 20}M) when FILE does not exist, "
                   f"mounted at GUEST_PATH (default {disk.DEFAULT_GUEST_PATH}); repeatable")
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
    requested = _requested_accel(args)
    env = runargs.check_env(list(args.env))
    disks = [disk.parse(d) for d in args.disk]
    img = image.find(args.image)
    if disks:
        _check_kernel_has_disks(img)
    # The program's arguments and environment travel in the initramfs, not
    # on the kernel command line (ukl/image/runargs.py).
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=args.smp,
                           mem=args.mem, cpu=args.cpu, icount=args.icount, gdb=args.gdb,
                           append=list(args.append),
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
    opts.accel = _accelerator(requested, opts)
    # Before anything is written or booted: --accel kvm with what needs TCG.
    qemu.check_accel(opts)
    timeout = None if args.gdb else args.timeout
    with contextlib.ExitStack() as stack:
        opts.disks = [stack.enter_context(disk.attached(d)) for d in disks]
        # virtio-blk disks become /dev/vda, /dev/vdb, ... in -drive order.
        mounts = [(f"/dev/vd{chr(ord('a') + i)}", d.guest_path) for i, d in enumerate(disks)]
        opts.initramfs = stack.enter_context(
            runargs.initramfs_for_run(img.initramfs, inv.program_args, env, mounts))
        outcome = boot.run(opts, log_name=img.meta.name, timeout=timeout,
                           echo=not args.quiet_console)
    if outcome.problem:
        boot.report_problem(outcome)
    boot.report_complaints(outcome)
    if args.count:
        print(f"ukl: counts in {args.count}", file=sys.stderr)
    return outcome.exit_code


def _requested_accel(args: argparse.Namespace) -> str:
    """--accel, else $UKL_ACCEL (the test suite sets tcg, so that no test
    pays for a probe), else auto."""
    requested: str = args.accel or os.environ.get("UKL_ACCEL") or "auto"
    if requested not in accel.CHOICES:
        source = f"--accel {requested}" if args.accel else f"UKL_ACCEL={requested}"
        raise UsageError(f"{source}: use one of {', '.join(accel.CHOICES)}")
    return requested


def _accelerator(requested: str, opts: qemu.RunOptions) -> str:
    """The accelerator to boot with; says in one line why auto chose TCG."""
    choice = accel.choose(requested, opts)
    if choice.why_not_kvm:
        print(f"ukl: using TCG: {choice.why_not_kvm}", file=sys.stderr)
    return choice.accel


def _check_kernel_has_disks(img: image.Image) -> None:
    """Refuse --disk before anything is made when the image's kernel
    flavour cannot mount it (its .config under build/kernel/)."""
    where = kbuild.output_dir(img.meta.kernel_flavour) / ".config"
    config = kconfig.parse(where.read_text(), str(where)) if where.is_file() else None
    problem = disk.kernel_problem(config, img.meta.kernel_flavour, where)
    if problem:
        raise UklError(f"--disk: {problem}")
