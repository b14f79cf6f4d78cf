"""`ukl bench-apps [APP...]`: application throughput on every config,
under icount -> results/NAME/apps.*."""
from __future__ import annotations

import argparse
import sys

from ukl.bench import apps
from ukl.cli.args import Invocation, add_configs, flavours

SUMMARY = "Redis/memcached throughput on every config, under icount -> results/NAME/apps.*"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("apps", nargs="*", metavar="APP", help="redis, memcached (default: all)")
    p.add_argument("--name", default="apps", help="results/NAME (default: apps)")
    add_configs(p, "stock,ukl,ukl-byp")
    p.add_argument("--requests", type=int, default=20000,
                   help="requests per operation (default 20000)")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    out = apps.bench_apps(args.name, list(args.apps), flavours(args.configs), args.requests,
                          inv.command_line)
    print(f"ukl: results in {out} (apps.md, apps.csv, apps-meta.json)", file=sys.stderr)
    return 0
