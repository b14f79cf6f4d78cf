"""`ukl initramfs -o OUT [--program P]`: just the initramfs archive."""
from __future__ import annotations

import argparse
from pathlib import Path

from ukl.cli.args import Invocation, add_image_contents, image_spec
from ukl.image import initramfs

SUMMARY = "write just an initramfs archive (busybox, init, the program, files)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, type=Path)
    p.add_argument("--program", type=Path)
    add_image_contents(p)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    initramfs.write(image_spec(args, args.program), args.output)
    return 0
