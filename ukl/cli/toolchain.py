"""`ukl toolchain build`: the UKL C library and gcc runtime (build/toolchain)."""
from __future__ import annotations

import argparse
import sys

from ukl.cli.args import Invocation
from ukl.toolchain import build

SUMMARY = "build the UKL toolchain: glibc + libgcc/libstdc++ for CPL0 into build/toolchain"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["build"])


def run(args: argparse.Namespace, inv: Invocation) -> int:
    print(f"ukl: UKL toolchain ready in {build.build()}", file=sys.stderr)
    return 0
