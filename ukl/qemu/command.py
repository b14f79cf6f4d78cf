"""Compose the QEMU command line for booting an image (pure, unit-tested)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ukl.common.errors import UsageError

QEMU = "qemu-system-x86_64"
# QEMU's isa-debug-exit device: a byte written to this port ends QEMU with
# exit status (byte << 1) | 1. init.sh writes the program's status there.
DEBUG_EXIT_PORT = 0xF4
GDB_PORT = 1234
# The guest's boot date in a repeatable run (RunOptions.repeatable).
REPEATABLE_CLOCK = "2026-01-01T00:00:00"
# x86 COMMAND_LINE_SIZE, and the kernel's limit on init arguments
# (MAX_INIT_ARGS = CONFIG_INIT_ENV_ARG_LIMIT = 32, argv[0] included).
CMDLINE_MAX = 2048
INIT_ARGS_MAX = 31
# CPU models under which Linux 6.1 finds a vendor's CPU bugs and turns on
# their mitigations (checked by tests/boot/test_distro.py): an Intel model
# for PTI, MDS/VERW, retbleed and ITS; an AMD model for SRSO Safe-RET and
# retbleed untraining. TCG leaves out a few of their features and says so.
CPU_MODELS = {"intel": "Skylake-Client", "amd": "EPYC"}
# loglevel=5 after quiet: the console still shows KERN_WARNING, so WARN()
# and lockdep splats reach the log that ukl/qemu/complaints.py checks.
BASE_CMDLINE = ["console=ttyS0", "panic=-1", "quiet", "loglevel=5"]
# QEMU accelerators a command line can name. `ukl run --accel auto` picks
# one of them before the command is built (ukl/qemu/accel.py).
ACCELS = ("kvm", "tcg")
# The guest's device for RunOptions.control: the second serial port.
CONTROL_DEVICE = "/dev/ttyS1"


@dataclass
class RunOptions:
    kernel: Path
    initramfs: Path
    smp: int = 1
    mem: str = "512M"
    # QEMU CPU model: 'max' gives every feature TCG implements (SMEP, SMAP,
    # FSGSBASE...); a named model (Skylake-Client, EPYC) makes Linux see
    # that vendor's CPU bugs and turn on their mitigations.
    cpu: str = "max"
    icount: bool = False
    # Under icount, the guest's own randomness and clock from fixed
    # seeds (QEMU's -seed feeds RDRAND, a fixed -rtc base the boot
    # clock): a guest that talks to nothing outside runs the same
    # instructions again (`ukl bench-net`'s client in the guest).
    repeatable: bool = False
    # TCG translates one guest instruction per block (QEMU's -singlestep),
    # and checks for interrupts before each block: an interrupt can then
    # come between any two instructions, not only at branches. Slow; for
    # tests of entry code.
    one_insn_per_tb: bool = False
    gdb: bool = False
    append: list[str] = field(default_factory=list)
    program_args: list[str] = field(default_factory=list)
    # TCP port forwards (host port, guest port) through QEMU user networking.
    forwards: list[tuple[int, int]] = field(default_factory=list)
    # UDP port forwards, the same way (`ukl bench-net`'s UDP echo).
    udp_forwards: list[tuple[int, int]] = field(default_factory=list)
    # A TCG plugin and its arguments (QEMU's -plugin), e.g. ukl_counts.
    plugin: str = ""
    # "tcg" or "kvm" (ACCELS). TCG is the default because every measurement
    # (-icount, plugins) and the test suite depend on it; KVM only when
    # asked for, or when `ukl run --accel auto` has proved it works.
    accel: str = "tcg"
    # Raw disk image files, attached as virtio-blk disks in order (the
    # guest's /dev/vda, /dev/vdb, ...); ukl/image/disk.py prepares them.
    disks: list[Path] = field(default_factory=list)
    # Host folders (directory, read_only) exported over virtio-9p with the
    # mount tags share_tag(0), share_tag(1), ... (ukl/image/shares.py).
    shares: list[tuple[Path, bool]] = field(default_factory=list)
    # A background instance's control channel (`ukl stop`): QEMU's second
    # serial port, the guest's CONTROL_DEVICE, on the FIFOs PATH.in and
    # PATH.out (ukl/qemu/instances.py).
    control: Path | None = None


def tcg_only_features(opts: RunOptions) -> list[str]:
    """The options set in `opts` that work only under TCG: -icount and
    plugins are TCG features; gdb's software breakpoints on kernel
    addresses not yet mapped work only when QEMU translates the code."""
    return [name for name, on in (("--icount", opts.icount), ("--count", bool(opts.plugin)),
                                  ("--gdb", opts.gdb),
                                  ("--one-insn-per-tb", opts.one_insn_per_tb)) if on]


def parse_forward(spec: str) -> tuple[int, int]:
    """'HOST:GUEST' (TCP ports) -> (host, guest)."""
    m = re.fullmatch(r"(\d+):(\d+)", spec)
    ports = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if not m or not all(1 <= p <= 65535 for p in ports):
        raise UsageError(f"-p {spec}: use HOST:GUEST with TCP ports 1-65535, e.g. -p 8080:80")
    return ports


def _network(opts: RunOptions) -> list[str]:
    """No network unless ports are forwarded: then a virtio-net NIC on QEMU
    user networking (guest 10.0.2.15, set up by the image's init)."""
    if not opts.forwards and not opts.udp_forwards:
        return ["-nic", "none"]
    fwd = ",".join([f"hostfwd=tcp:127.0.0.1:{h}-:{g}" for h, g in opts.forwards] +
                   [f"hostfwd=udp:127.0.0.1:{h}-:{g}" for h, g in opts.udp_forwards])
    return ["-nic", f"user,model=virtio-net-pci,{fwd}"]


def check_cpu(cpu: str) -> str:
    # A model name, optionally with ,+feature/,-feature/,key=value settings.
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*(,[+-]?[A-Za-z0-9_.=-]+)*", cpu):
        raise UsageError(f"--cpu {cpu!r}: give a QEMU CPU model, e.g. max, "
                         "Skylake-Client or EPYC (`qemu-system-x86_64 -cpu help` lists them)")
    return cpu


def check_mem(mem: str) -> str:
    if not re.fullmatch(r"[1-9][0-9]*[MG]?", mem):
        raise UsageError(f"--mem {mem}: use a size such as 512M or 2G")
    return mem


def _quote_init_arg(arg: str) -> str:
    """Quote one program argument for the kernel command line.

    The kernel's parser understands only double quotes around a whole word
    and has no escapes, so arguments containing '"' or newlines cannot pass.
    """
    if arg == "" or '"' in arg or "\n" in arg:
        raise UsageError(f"program argument {arg!r} cannot be passed on the kernel "
                         "command line (empty, or contains '\"' or a newline)")
    return f'"{arg}"' if any(c.isspace() for c in arg) else arg


def kernel_cmdline(opts: RunOptions) -> str:
    if len(opts.program_args) > INIT_ARGS_MAX - 1:
        raise UsageError(f"too many program arguments ({len(opts.program_args)}); "
                         f"the kernel passes at most {INIT_ARGS_MAX - 1} to init")
    words = BASE_CMDLINE + opts.append
    if opts.program_args:
        # Everything after '--' goes to init (and so to the program) verbatim.
        words += ["--"] + [_quote_init_arg(a) for a in opts.program_args]
    cmdline = " ".join(words)
    if len(cmdline) >= CMDLINE_MAX:
        raise UsageError(f"kernel command line is {len(cmdline)} bytes; the limit is "
                         f"{CMDLINE_MAX - 1}")
    return cmdline


def check_accel(opts: RunOptions) -> str:
    if opts.accel not in ACCELS:
        raise UsageError(f"accelerator {opts.accel!r}: use one of {', '.join(ACCELS)}")
    tcg_only = tcg_only_features(opts)
    if opts.accel == "kvm" and tcg_only:
        raise UsageError(f"--accel kvm cannot be combined with {', '.join(tcg_only)}: "
                         "they need TCG (use --accel tcg or auto)")
    return opts.accel


def command(opts: RunOptions) -> list[str]:
    if opts.smp < 1 or opts.smp > 64:
        raise UsageError(f"--smp {opts.smp}: use 1 to 64 CPUs")
    cmd = [
        QEMU,
        "-accel", check_accel(opts),
        "-cpu", check_cpu(opts.cpu),
        "-smp", str(opts.smp),
        "-m", check_mem(opts.mem),
        "-kernel", str(opts.kernel),
        "-initrd", str(opts.initramfs),
        "-append", kernel_cmdline(opts),
        "-display", "none",
        "-monitor", "none",
        "-serial", "stdio",
        *_network(opts),
        "-no-reboot",
        "-device", f"isa-debug-exit,iobase={DEBUG_EXIT_PORT:#x},iosize=0x01",
    ]
    for disk in opts.disks:
        cmd += ["-drive", f"file={_escape(disk)},if=virtio,format=raw"]
    for i, (folder, read_only) in enumerate(opts.shares):
        fsdev = f"local,id={share_tag(i)},path={_escape(folder)},security_model=none"
        cmd += ["-fsdev", fsdev + (",readonly=on" if read_only else ""),
                "-device", f"virtio-9p-pci,fsdev={share_tag(i)},mount_tag={share_tag(i)}"]
    if opts.control:
        cmd += ["-serial", f"pipe:{opts.control}"]
    if opts.icount:
        # One guest instruction per virtual nanosecond: rdtsc deltas become
        # exact instruction counts, and runs are repeatable.
        cmd += ["-icount", "shift=0,sleep=off"]
        if opts.repeatable:
            cmd += ["-seed", "1", "-rtc", f"base={REPEATABLE_CLOCK},clock=vm"]
    if opts.one_insn_per_tb:
        cmd += ["-singlestep"]
    if opts.gdb:
        cmd += ["-gdb", f"tcp::{GDB_PORT}", "-S"]
    if opts.plugin:
        cmd += ["-plugin", opts.plugin]
    return cmd


def share_tag(index: int) -> str:
    """The virtio-9p mount tag of the index-th shared folder; init.sh
    mounts it by this name (`ukl run` passes the tags in run.conf)."""
    return f"ukl9p{index}"


def _escape(path: Path) -> str:
    # QEMU's option syntax escapes a comma by doubling it.
    return str(path).replace(",", ",,")


def gdb_hint(kernel: Path) -> str:
    return f"gdb -ex 'target remote localhost:{GDB_PORT}' {kernel}"
