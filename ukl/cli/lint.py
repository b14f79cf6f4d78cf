"""`ukl lint FILE...`: code that cannot run at CPL0 in the kernel."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ukl.cli.args import Invocation
from ukl.common.errors import UklError, UsageError
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
        if findings:
            failed = True
            print(lint.report(path, findings), file=sys.stderr)
        else:
            print(f"ukl lint: {path}: clean", file=sys.stderr)
    return 1 if failed else 0
