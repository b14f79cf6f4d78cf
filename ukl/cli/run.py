"""`ukl run IMAGE [options] [-- ARGS]`: boot an image; exit with the
program's own status (124: timeout, 125: no status from the guest)."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import socket
import sys
import time
from pathlib import Path

from ukl.bench import counts
from ukl.cli.args import Invocation
from ukl.common.errors import UklError, UsageError
from ukl.image import disk, image, runargs, shares
from ukl.kbuild import build as kbuild
from ukl.kbuild import kconfig
from ukl.qemu import accel
from ukl.qemu import command as qemu
from ukl.qemu import detach, instances
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
    p.add_argument("-v", "--volume", action="append", default=[],
                   metavar="HOST_DIR:GUEST_DIR[:ro]",
                   help="share the existing host folder HOST_DIR with the guest at GUEST_DIR "
                   "over virtio-9p, read-only with :ro; repeatable")
    p.add_argument("-d", "--detach", action="store_true",
                   help="run as a background instance and print its name (`ukl ps`, "
                   "`ukl logs`, `ukl stop`, `ukl rm`)")
    p.add_argument("--name", default=None,
                   help="with -d: the instance's name (default IMAGE-N)")
    p.add_argument("--icount", action="store_true",
                   help="deterministic mode: -icount shift=0,sleep=off (rdtsc = instructions)")
    p.add_argument("--one-insn-per-tb", action="store_true",
                   help="TCG translates one instruction at a time, so interrupts can come "
                   "between any two instructions (slow; for tests of entry code)")
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
    if args.name is not None and not args.detach:
        raise UsageError("--name names a background instance: use it with -d")
    if args.detach and args.gdb:
        raise UsageError("-d cannot be combined with --gdb: gdb needs the run in the "
                         "foreground")
    models.check_known(args.cpu)
    requested = _requested_accel(args)
    env = runargs.check_env(list(args.env))
    disks = [disk.parse(d) for d in args.disk]
    folders = [shares.parse(v) for v in args.volume]
    _check_mount_points(disks, folders)
    # A program started as init itself (--append rdinit=/init=) never sees
    # the image's init.sh, which sets these up.
    own_init = [a for a in args.append if a.startswith(("rdinit=", "init="))]
    if own_init and (env or disks or folders or args.detach):
        raise UsageError(f"--append {own_init[0]} starts that program instead of the image's "
                         "init, which sets up -e, --disk, -v and -d; drop one or the other")
    img = image.find(args.image)
    if disks:
        _check_kernel(img, disk.KERNEL_NEEDS, "--disk", "mount an ext4 disk")
    if folders:
        _check_kernel(img, shares.KERNEL_NEEDS, "-v", "mount a shared folder over virtio-9p")
    # The program's arguments and environment travel in the initramfs, not
    # on the kernel command line (ukl/image/runargs.py), for init.sh to
    # read. A program started as init itself gets them on the command line,
    # where the kernel hands them to init.
    opts = qemu.RunOptions(kernel=img.kernel, initramfs=img.initramfs, smp=args.smp,
                           mem=args.mem, cpu=args.cpu, icount=args.icount, gdb=args.gdb,
                           one_insn_per_tb=args.one_insn_per_tb,
                           append=list(args.append),
                           program_args=list(inv.program_args) if own_init else [],
                           forwards=[qemu.parse_forward(p) for p in args.port],
                           shares=[(f.host, f.read_only) for f in folders])
    _check_ports(opts.forwards)
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
    for d in disks:
        holder = instances.holder_of_disk(d.file) if d.file.exists() else ""
        if holder:
            raise UsageError(f"--disk {d.file}: in use by instance {holder}; a disk serves "
                             f"one guest at a time (`ukl stop {holder}` first)")
    with contextlib.ExitStack() as stack:
        opts.disks = [stack.enter_context(disk.attached(d)) for d in disks]
        # virtio-blk disks become /dev/vda, /dev/vdb, ... in -drive order.
        attach = runargs.Attachments(
            mounts=[(f"/dev/vd{chr(ord('a') + i)}", d.guest_path) for i, d in enumerate(disks)],
            shares=[(qemu.share_tag(i), f.guest_path, f.read_only)
                    for i, f in enumerate(folders)])
        if args.detach:
            return _detach(args, inv, img, opts, env, attach, timeout, folders)
        opts.initramfs = stack.enter_context(
            runargs.initramfs_for_run(img.initramfs, inv.program_args, env, attach=attach))
        outcome = boot.run(opts, log_name=img.meta.name, timeout=timeout,
                           echo=not args.quiet_console)
    if outcome.problem:
        boot.report_problem(outcome)
    boot.report_complaints(outcome)
    if args.count:
        print(f"ukl: counts in {args.count}", file=sys.stderr)
    return outcome.exit_code


def _detach(args: argparse.Namespace, inv: Invocation, img: image.Image,
            opts: qemu.RunOptions, env: list[str], attach: runargs.Attachments,
            timeout: float | None, folders: list[shares.ShareSpec]) -> int:
    """Start a background instance; print its name (stdout, alone, so that
    scripts can take it) and return at once."""
    where = instances.claim(args.name, img.meta.name)
    inst = instances.Instance(name=where.name, image=img.meta.name, created=time.time(),
                              ports=list(opts.forwards), disks=[str(d) for d in opts.disks],
                              shares=[str(f.host) for f in folders])
    try:
        instances.save(inst)
        opts.control = instances.make_control(inst)
        attach = dataclasses.replace(attach, control=qemu.CONTROL_DEVICE)
        with runargs.initramfs_for_run(img.initramfs, inv.program_args, env, attach=attach,
                                       keep_as=inst.dir / instances.INITRAMFS) as initramfs:
            opts.initramfs = initramfs
    except BaseException:
        # Nothing ran: the directory just made holds nothing of the user's.
        shutil.rmtree(inst.dir, ignore_errors=True)
        raise
    failed = detach.start(opts, inst, timeout=timeout)
    if failed:
        boot.report_problem(failed)
        return failed.exit_code
    print(inst.name)
    print(f"ukl: instance {inst.name} started; `ukl logs -f {inst.name}` shows its console, "
          f"`ukl stop {inst.name}` stops it", file=sys.stderr)
    return 0


def _check_mount_points(disks: list[disk.DiskSpec], folders: list[shares.ShareSpec]) -> None:
    """One mount per guest directory, none inside another."""
    where = sorted([d.guest_path for d in disks] + [f.guest_path for f in folders])
    for a, b in zip(where, where[1:]):
        if b == a or b.startswith(a + "/"):
            raise UsageError(f"--disk/-v: {b} is {'also' if a == b else 'inside'} {a}; "
                             "give each disk and shared folder a directory of its own")


def _check_ports(forwards: list[tuple[int, int]]) -> None:
    """A host port another instance or program listens on is refused here,
    naming the instance when it is one, rather than by QEMU mid-start."""
    for host, guest in forwards:
        holder = instances.holder_of_port(host)
        if holder:
            raise UsageError(f"-p {host}:{guest}: host port {host} is taken by instance "
                             f"{holder} (`ukl stop {holder}` first)")
        with socket.socket() as s:
            # As QEMU's slirp does: a port with connections in TIME_WAIT is free.
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", host))
            except OSError as e:
                raise UsageError(f"-p {host}:{guest}: host port {host} is in use by another "
                                 f"program ({e.strerror})") from None


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


def _check_kernel(img: image.Image, needs: tuple[str, ...], option: str, purpose: str) -> None:
    """Refuse `option` before anything is made when the image's kernel
    flavour lacks `needs` (its .config under build/kernel/)."""
    where = kbuild.output_dir(img.meta.kernel_flavour) / ".config"
    config = kconfig.parse(where.read_text(), str(where)) if where.is_file() else None
    problem = disk.kernel_problem(config, img.meta.kernel_flavour, where, needs, purpose)
    if problem:
        raise UklError(f"{option}: {problem}")
