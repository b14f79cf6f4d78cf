"""`ukl lint FILE...`: code that cannot run at CPL0 in the kernel."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ukl.cli.args import Invocation
from ukl.common.errors import UklError, UsageError
from ukl.kbuild import options
from ukl.toolchain import lint

SUMMARY = ("check objects/archives for code unfit for CPL0 (raw syscalls, red zone, "
           "32-bit relocations, GOT/PLT/IFUNC)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", type=Path)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    failed = False
    for path in args.files:
        try:
            findings = lint.lint(path)
        except UklError as e:
            # The files are the user's: one that is missing or not an
            # object is bad input.
            raise UsageError(e.message, detail=e.detail) from e
        bad, red_zone = lint.problems(findings), [f for f in findings if f.red_zone]
        if bad:
            failed = True
            print(lint.report(path, bad), file=sys.stderr)
        if red_zone:
            writers = " or ".join(o.config for o in options.table().values() if not o.red_zone)
            print(lint.report(path, red_zone, what="red-zone access(es): fine on every "
                              f"UKL kernel but those with {writers}, which refuse it at "
                              "the kernel link"), file=sys.stderr)
        if not findings:
            print(f"ukl lint: {path}: clean", file=sys.stderr)
    return 1 if failed else 0
