"""`ukl bench-net`: TCP and UDP throughput sweeps of guest/netbench.c, in
bytes per guest instruction -> results/NAME/net.*.

A command of its own rather than a mode of `bench-apps`: bench-apps
measures Debian packages per request on a fixed load; this sweeps a
program of ours over message sizes and in-flight levels, from both client
sides in one run, and draws plots."""
from __future__ import annotations

import argparse
import sys

from ukl.bench import net
from ukl.cli.args import Invocation, add_configs, flavours
from ukl.common.errors import UsageError

SUMMARY = ("TCP/UDP throughput sweeps of a server of ours, bytes per guest instruction "
           "-> results/NAME/net.*")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--name", default="bench-net", help="results/NAME (default: bench-net)")
    add_configs(p, "stock,ukl-ret-byp")
    p.add_argument("--protocols", default=",".join(net.PROTOCOLS), metavar="P,Q",
                   help="tcp (stream into a sink), udp (echo) (default: tcp,udp)")
    p.add_argument("--clients", default=",".join(net.CLIENTS), metavar="A,B",
                   help="where the client runs: guest (beside the server, both ends "
                   "counted), host (through QEMU's port forwards: the guest's side only, its "
                   "idle ticks included) "
                   "(default: guest,host)")
    p.add_argument("--sizes", metavar="N,M",
                   help="message sizes in bytes, 64 to 65536 (default: "
                   + ",".join(str(s) for s in net.SIZES) + ")")
    p.add_argument("--inflight", metavar="N,M",
                   help="requests in flight: TCP connections, UDP datagrams out, 1 to 32 "
                   "(default: " + ",".join(str(n) for n in net.INFLIGHT) + ")")
    p.add_argument("--budget", type=int, metavar="BYTES",
                   help=f"payload bytes per measurement (default {net.BUDGET})")
    p.add_argument("--quick", action="store_true",
                   help="sizes " + ",".join(str(s) for s in net.QUICK_SIZES) + ", "
                   + ",".join(str(n) for n in net.QUICK_INFLIGHT)
                   + f" in flight, {net.QUICK_BUDGET} bytes each (for tests)")
    p.add_argument("--replot", action="store_true",
                   help="only redraw the plots of results/NAME from its net.csv")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.replot:
        print(f"ukl: plots redrawn in {net.replot(args.name)}", file=sys.stderr)
        return 0
    if not args.name or "/" in args.name:
        raise UsageError(f"--name {args.name!r}: give a directory name under results/")
    sw = net.sweep(args.protocols, args.clients, args.sizes, args.inflight, args.budget,
                   args.quick)
    out = net.bench_net(args.name, flavours(args.configs), sw, inv.command_line)
    print(f"ukl: results in {out} (net.md, net.csv, meta.json, net-*.png)", file=sys.stderr)
    return 0
