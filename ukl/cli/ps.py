"""`ukl ps [--json]`: the background instances (`ukl run -d`) and their state."""
from __future__ import annotations

import argparse
import json
import time

from ukl.cli.args import Invocation, print_table
from ukl.qemu import instances

SUMMARY = "list the background instances (`ukl run -d`): running or exited"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="one JSON list: name, image, state, exit_code, problem, ports, disks, "
                   "shares, created, ended, log")


def _age(since: float) -> str:
    seconds = max(0, int(time.time() - since))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"


def run(args: argparse.Namespace, inv: Invocation) -> int:
    rows = [instances.describe(i) for i in instances.all_instances()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    table = [("NAME", "STATE", "IMAGE", "PORTS", "CREATED")]
    table += [(r["name"], r["state"], r["image"], ",".join(r["ports"]) or "-",
               _age(r["created"])) for r in rows]
    print_table(table)
    # Why an instance ended without its program's status (a crash, a
    # kernel panic, QEMU killed), and where its console is.
    for r in rows:
        if r["problem"]:
            print(f"{r['name']}: {r['problem']}; console: {r['log']}")
    return 0
