"""`ukl profile IMAGE [--window [N]] [--between F G] [--every N --track F,G]
[-p HOST:GUEST] [--load CMD] [--stacks] [-o DIR] [-- ARGS]`: boot an image
under -icount and the ukl_profile QEMU plugin and write an exact
per-function profile of everything the guest executed (application and
kernel in one table), its call tree, folded stacks and a flame graph to DIR
(default build/profiles/IMAGE/); with --every, the tracked functions' calls
per interval (series.csv, series.png). Exits with the program's status."""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from ukl.cli.args import Invocation
from ukl.common.errors import UsageError
from ukl.profile import analysis, series
from ukl.profile import run as profiler
from ukl.qemu import command as qemu
from ukl.qemu import models

SUMMARY = "an exact per-function profile of an image, kernel and application (flame graph)"
TAKES_PROGRAM_ARGS = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("image", help="image name (build/images/NAME) or directory")
    p.add_argument("-o", "--out", type=Path, metavar="DIR",
                   help="where to write the profile (default build/profiles/IMAGE)")
    p.add_argument("--window", nargs="?", const="markers", metavar="N",
                   help="count only between the UKL_COUNT_BEGIN/END markers "
                   "(guest/ukl_marks.h): of every window, or of window N")
    p.add_argument("--between", nargs=2, metavar=("START", "END"),
                   help="count from each entry of function START to the next entry of "
                   "function END")
    p.add_argument("--every", metavar="N",
                   help="a series: every N million guest instructions, the --track "
                   "functions' calls and self instructions (series.csv, series.png)")
    p.add_argument("--track", metavar="F[,F...]",
                   help="the functions whose calls --every samples")
    p.add_argument("-p", "--port", action="append", default=[], metavar="HOST:GUEST",
                   help="forward TCP port HOST on 127.0.0.1 to GUEST in the guest "
                   "(repeatable)")
    p.add_argument("--load", metavar="COMMAND",
                   help="a host shell command to run while the guest runs (a client through "
                   "-p); it must wait for the server and should stop it")
    p.add_argument("--stacks", action="store_true",
                   help="also print the heaviest call stacks (they are always written)")
    p.add_argument("--top", type=int, default=30, metavar="N",
                   help="functions in the printed table (default 30)")
    p.add_argument("--program", type=Path, metavar="ELF",
                   help="an ordinary process's program, for its symbols (default: the "
                   "image's own)")
    p.add_argument("--smp", type=int, default=1, help="CPUs: profiling needs exactly 1")
    p.add_argument("--mem", default="512M", help="guest memory (default 512M)")
    p.add_argument("--cpu", default="max", metavar="MODEL", help="QEMU CPU model (default max)")
    p.add_argument("--append", action="append", default=[], metavar="ARG",
                   help="extra kernel command-line argument (repeatable)")
    p.add_argument("--timeout", type=float, default=None, metavar="SECONDS",
                   help="stop the guest after this long (exit 124)")
    p.add_argument("--quiet-console", action="store_true",
                   help="do not echo the console (it is still logged)")


def request(args: argparse.Namespace, inv: Invocation) -> profiler.Request:
    """Check the command line; the profile's request."""
    if args.smp != 1:
        raise UsageError(f"--smp {args.smp}: a profile runs on 1 CPU (the plugin attributes "
                         "one instruction stream exactly)")
    if args.window is not None and args.between is not None:
        raise UsageError("give --window or --between, not both")
    if args.window is not None and args.window != "markers":
        if not re.fullmatch(r"\d+", args.window) or int(args.window) > 255:
            raise UsageError(f"--window {args.window}: give a window number from 0 to 255")
    if args.top < 1:
        raise UsageError("--top must be at least 1")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if (args.every is None) != (args.track is None):
        raise UsageError("give --every and --track together")
    every = series.every_instructions(args.every) if args.every is not None else 0
    track = series.track_names(args.track) if args.track is not None else []
    forwards = [qemu.parse_forward(p) for p in args.port]
    if args.load is not None and not forwards:
        raise UsageError("--load needs a port forward (-p HOST:GUEST) to reach the guest")
    models.check_known(args.cpu)
    out = (args.out or profiler.default_dir(Path(args.image).name)).resolve()
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {args.out}: {out} is not a directory")
    # A profile overwrites its own files in DIR: only an empty directory or
    # an earlier profile (its raw.tsv) may be reused, never a user's folder.
    if out.is_dir() and any(out.iterdir()) and not (out / "raw.tsv").is_file():
        raise UsageError(f"-o {args.out}: {out} holds other files and no earlier profile; "
                         "give a new or empty directory")
    return profiler.Request(image=args.image, out=out, window=args.window,
                            between=(args.between[0], args.between[1]) if args.between else None,
                            program=args.program, cpu=args.cpu, mem=args.mem,
                            append=list(args.append), program_args=inv.program_args,
                            timeout=args.timeout, top=args.top, echo=not args.quiet_console,
                            every=every, track=track, forwards=forwards, load=args.load)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    result = profiler.profile(request(args, inv))
    print(analysis.table(result.profile, args.top), end="")
    if args.stacks:
        print("heaviest stacks:")
        print(analysis.heaviest_stacks(result.profile), end="")
    more = ", series.csv, series.png" if args.every is not None else ""
    print(f"ukl: profile in {result.out} (flame.svg, flat.csv, calltree.txt, stacks.folded"
          f"{more})", file=sys.stderr)
    return result.exit_code
