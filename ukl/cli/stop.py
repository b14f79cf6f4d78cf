"""`ukl stop NAME... [--force] [--time S]`: stop background instances.

Without --force the guest's init passes SIGTERM to the program (it can
save its data and exit); when the program has exited, init reports its
status and the guest powers off. An instance still running after --time
seconds (a program that ignores SIGTERM, or a UKL_NSS kernel, where no
init is left to listen) has its QEMU killed. --force kills QEMU at once.
"""
from __future__ import annotations

import argparse
import sys
import time

from ukl.cli.args import Invocation
from ukl.common.errors import UsageError
from ukl.qemu import instances

SUMMARY = "stop background instances: SIGTERM to the program, then power off (--force: " \
    "kill QEMU)"
DEFAULT_TIME = 60.0
# `stop` is sent again at this interval until init says it passed it on: a
# line sent while the guest still boots, before init reads the port, is lost.
_RESEND_S = 2.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="+", metavar="NAME", help="instance name (`ukl ps`)")
    p.add_argument("--force", action="store_true", help="kill QEMU at once")
    p.add_argument("--time", type=float, default=DEFAULT_TIME, metavar="SECONDS",
                   help=f"how long the program has to exit before QEMU is killed "
                   f"(default {DEFAULT_TIME:g})")


def run(args: argparse.Namespace, inv: Invocation) -> int:
    if args.time <= 0:
        raise UsageError("--time must be a positive number of seconds")
    found = [instances.load(n) for n in args.names]
    ended = [inst for inst in found if not instances.is_running(inst)]
    for inst in found:
        if inst not in ended:
            _stop(inst, args.force, args.time)
    if ended:
        # The running ones named beside it are stopped first.
        inst = ended[0]
        raise UsageError(f"instance {inst.name} is not running ({instances.state(inst)}); "
                         f"`ukl logs {inst.name}` shows how it ended, `ukl rm {inst.name}` "
                         "removes it")
    return 0


def _stop(inst: instances.Instance, force: bool, grace: float) -> None:
    if force or not _ask_to_stop(inst, grace):
        if not force:
            print(f"ukl: instance {inst.name} did not stop within {grace:g} s; killing its "
                  "QEMU", file=sys.stderr)
        instances.kill_qemu(inst)
    print(f"ukl: instance {inst.name} stopped: {instances.state(inst)}", file=sys.stderr)


def _ask_to_stop(inst: instances.Instance, grace: float) -> bool:
    """Send `stop` until init has passed it on, then wait for the end;
    whether the instance ended within `grace` seconds."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not instances.stop_seen(inst) and not instances.send_stop(inst):
            # QEMU is gone; the monitor is about to record it.
            return instances.wait_ended(inst, 5.0)
        if instances.wait_ended(inst, min(_RESEND_S, max(0.0, deadline - time.monotonic()))):
            return True
    return False
