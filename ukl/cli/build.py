"""`ukl build SOURCE... -o NAME` / `ukl build --debian PACKAGE`: a program
and a kernel flavour -> an image (ukl.pipeline)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ukl import pipeline
from ukl.cli.args import Invocation, add_image_contents, add_kernel, image_spec
from ukl.common.errors import UsageError
from ukl.kbuild import flavour

SUMMARY = "compile a program (sources, a Makefile project, a Debian package) into an image"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sources", nargs="*", type=Path,
                   help="C or C++ source files, or one directory with a Makefile "
                   "(built unchanged with CC=ukl-cc CXX=ukl-c++)")
    p.add_argument("--debian", metavar="PACKAGE",
                   help="instead of sources: fetch Debian source package PACKAGE "
                   "(apt-get source) and build it with its own build system "
                   "(recipe, if any: recipes/PACKAGE.ini)")
    p.add_argument("--without", metavar="NAME[,NAME...]", default="",
                   help="with --debian: library build dependencies (libssl-dev) or their "
                   "source packages (openssl) to go without, in the package and in every "
                   "library built for it; its configure switches for them go off")
    p.add_argument("-o", "--output", metavar="NAME",
                   help="image name (default: the --debian package)")
    p.add_argument("--binary", metavar="PATH",
                   help="for a Makefile directory or --debian: the program it builds, "
                   "relative to the source tree (default: NAME, or the recipe's)")
    add_kernel(p, default="ukl")
    add_image_contents(p)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    without = frozenset(w.strip() for w in args.without.split(",") if w.strip())
    if without and not args.debian:
        raise UsageError("--without applies to --debian PACKAGE builds")
    if args.debian and args.sources:
        raise UsageError("give either source files or --debian PACKAGE, not both")
    if not args.debian and not args.sources:
        raise UsageError("nothing to build: give source files, a Makefile directory "
                         "or --debian PACKAGE")
    name = args.output or args.debian
    if not name:
        raise UsageError("name the image with -o NAME")
    kernel = flavour.get(args.kernel)
    spec = image_spec(args, None)
    if args.debian:
        img = pipeline.build_debian_image(name, kernel, args.debian, spec, binary=args.binary,
                                          without=without)
    else:
        img = pipeline.build_image(name, kernel, list(args.sources), spec, binary=args.binary)
    kind = "UKL image" if img.meta.mode == "ukl" else "image"
    print(f"ukl: {kind} {name} ready in {img.path}; boot it with `ukl run {name}`",
          file=sys.stderr)
    return 0
