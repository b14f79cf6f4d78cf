"""`ukl image create NAME [--program P]`: an image of an existing program."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ukl import pipeline
from ukl.cli.args import Invocation, add_image_contents, add_kernel, image_spec
from ukl.kbuild import flavour

SUMMARY = "make an image from an existing static program (no program: a shell)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["create"])
    p.add_argument("name")
    p.add_argument("--program", type=Path, help="static program the image runs "
                   "(omit for an interactive shell)")
    add_kernel(p, default="stock")
    add_image_contents(p)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    img = pipeline.image_from_program(args.name, flavour.get(args.kernel),
                                      image_spec(args, args.program))
    print(f"ukl: image {args.name} ready in {img.path}; boot it with `ukl run {args.name}`",
          file=sys.stderr)
    return 0
