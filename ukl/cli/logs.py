"""`ukl logs NAME [-f]`: a background instance's console."""
from __future__ import annotations

import argparse
import sys
import time

from ukl.cli.args import Invocation
from ukl.qemu import instances

SUMMARY = "show a background instance's console (-f: follow it until the instance ends)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="instance name (`ukl ps`)")
    p.add_argument("-f", "--follow", action="store_true",
                   help="keep printing what the guest writes until the instance ends")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    inst = instances.load(args.name)
    out = sys.stdout.buffer
    offset = 0
    while True:
        # Checked before reading: what the guest wrote before it ended is
        # all in the file by the time is_running() says it has ended.
        running = args.follow and instances.is_running(inst)
        try:
            with inst.console.open("rb") as f:
                f.seek(offset)
                chunk = f.read()
        except FileNotFoundError:
            chunk = b""
        offset += len(chunk)
        out.write(chunk)
        out.flush()
        if not running:
            return 0
        if not chunk:
            time.sleep(0.3)
