"""`ukl bench-apps [APP...]`: application throughput on every config,
under icount -> results/NAME/apps.*."""
from __future__ import annotations

import argparse
import sys

from ukl.bench import apps, apps_host
from ukl.cli.args import Invocation, add_configs, flavours
from ukl.common.errors import UsageError

SUMMARY = "Redis/memcached throughput on every config, under icount -> results/NAME/apps.*"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("apps", nargs="*", metavar="APP", help="redis, memcached (default: all)")
    p.add_argument("--name", default="apps", help="results/NAME (default: apps)")
    add_configs(p, "stock,ukl,ukl-byp")
    p.add_argument("--requests", type=int, default=20000,
                   help="requests per operation (default 20000)")
    p.add_argument("--client", choices=["guest", "host"], default="guest",
                   help="where the load generator runs: in the guest beside the server "
                   "(throughput per guest instruction; default), or on the host through the "
                   "port forward (the server side only: guest instructions and privilege "
                   "transitions per request, from the ukl_counts plugin) -> apps-host.*")
    p.add_argument("--connections", type=int, default=apps_host.CLIENTS,
                   help="with --client host: connections the client keeps open (default "
                   f"{apps_host.CLIENTS}; 1 sends each request after the last reply, so no "
                   "request arrives while the server works on another)")
    p.add_argument("--reps", type=int, default=1,
                   help="with --client host: boots per app and config, reported as the "
                   "median with the lowest and highest (default 1)")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.requests < 1:
        raise UsageError("--requests must be at least 1")
    if args.reps < 1:
        raise UsageError("--reps must be at least 1")
    if args.connections < 1:
        raise UsageError("--connections must be at least 1")
    if args.client != "host" and (args.reps > 1 or args.connections != apps_host.CLIENTS):
        raise UsageError("--reps and --connections need --client host (the guest "
                         "client's figures are throughput per instruction, one boot each)")
    if args.client == "host":
        out = apps_host.bench_apps_host(args.name, list(args.apps), flavours(args.configs),
                                        args.requests, inv.command_line, args.reps,
                                        args.connections)
        print(f"ukl: results in {out} (apps-host.md, apps-host.csv, apps-host-meta.json)",
              file=sys.stderr)
        return 0
    out = apps.bench_apps(args.name, list(args.apps), flavours(args.configs), args.requests,
                          inv.command_line)
    print(f"ukl: results in {out} (apps.md, apps.csv, apps-meta.json)", file=sys.stderr)
    return 0
