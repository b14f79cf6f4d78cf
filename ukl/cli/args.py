"""Argument helpers several commands share, and the Invocation they get."""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ukl.image.initramfs import InitramfsSpec, parse_file_arg
from ukl.kbuild import flavour
from ukl.kbuild.flavour import Flavour


@dataclass(frozen=True)
class Invocation:
    """What a command gets besides its parsed arguments."""
    # The command line as the user typed it, for results/ files.
    command_line: str
    # Arguments after `--` (only `ukl run` takes them).
    program_args: list[str] = field(default_factory=list)


def add_image_contents(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", action="append", default=[], metavar="HOST[:GUEST]",
                   help="copy a host file into the image (default guest path /NAME)")
    p.add_argument("--helper", action="append", default=[], metavar="CMD",
                   help="shell command started in the background before the program")


def add_kernel(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--kernel", default=default, metavar="FLAVOUR",
                   help=f"kernel flavour (default: {default}; `ukl kernel list` shows them); "
                   "a UKL flavour links the program into the kernel, any other runs "
                   "it as an ordinary process")


def add_configs(p: argparse.ArgumentParser, default: str) -> None:
    p.add_argument("--configs", default=default, metavar="A,B",
                   help=f"kernel flavours, the first is the baseline (default: {default})")


def image_spec(args: argparse.Namespace, program: Path | None) -> InitramfsSpec:
    return InitramfsSpec(program=program, files=[parse_file_arg(f) for f in args.file],
                         helpers=list(args.helper))


def flavours(csv: str) -> list[Flavour]:
    """A comma-separated list of flavours, looked up once, here."""
    return flavour.get_all([c for c in csv.split(",") if c])


def print_table(rows: Sequence[Sequence[str]]) -> None:
    """Rows (the first the header) as columns as wide as their widest cell."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
