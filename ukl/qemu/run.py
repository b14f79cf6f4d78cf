"""Boot an image: stream the console, enforce the timeout, decode the status.

Exit status of `ukl run`:
  0..255  the guest program's own exit status
  124     the run timed out (console tail and log path printed)
  125     the guest or QEMU stopped without reporting a status (panic, crash)
"""
from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ukl.common import paths
from ukl.common.errors import UklError
from ukl.common.proc import log_tail
from ukl.qemu import command as qemu
from ukl.qemu import complaints

EXIT_TIMEOUT = 124
EXIT_NO_STATUS = 125
_STATUS_LINE = re.compile(rb"ukl-init: exit status (\d+)")
# On a UKL_NSS kernel the program replaces init (ukl/image/init.sh), so its
# exit is init's: the kernel's panic message carries it, as a wait status.
_REPLACED_INIT = re.compile(rb"ukl-init: UKL_NSS: \S+ replaces init")
_INIT_EXIT = re.compile(rb"Attempted to kill init! exitcode=0x([0-9a-f]+)")
# What init.sh's ukl_fail prints before it stops the machine (a disk or
# shared folder that does not mount).
_INIT_ERROR = re.compile(rb"ukl-init: error: ([^\n]*)")


@dataclass
class Outcome:
    exit_code: int
    # Why there is no guest status (empty when the guest reported one).
    problem: str
    log: Path
    # Kernel complaints on the console (ukl/qemu/complaints.py), in order.
    complaints: list[str] = field(default_factory=list)


def decode_status(qemu_rc: int, console: bytes) -> int | None:
    """The guest program's status, or None if the guest did not report one.

    Both channels must agree: the status line init printed, and QEMU's exit
    code from the debug-exit port (which carries the low 7 bits).
    """
    matches = _STATUS_LINE.findall(console)
    if not matches and _REPLACED_INIT.search(console):
        return init_exit_status(console)
    if qemu_rc % 2 != 1 or not matches:
        return None
    status = int(matches[-1])
    return status if status & 127 == qemu_rc >> 1 else None


def init_exit_status(console: bytes) -> int | None:
    """The status of a program that replaced init, from the kernel's panic:
    its exit status, or 128 + the signal that killed it (as a shell says)."""
    found = _INIT_EXIT.findall(console)
    if not found:
        return None
    wait_status = int(found[-1], 16)
    signal_nr = wait_status & 0x7F
    return 128 + signal_nr if signal_nr else (wait_status >> 8) & 0xFF


def run(opts: qemu.RunOptions, *, log_name: str, timeout: float | None,
        echo: bool = True, log: Path | None = None,
        on_start: Callable[[int], None] | None = None) -> Outcome:
    """Boot `opts`; the console goes to `log` (default
    build/logs/run-LOG_NAME.log) and, with `echo`, to stdout. `on_start`
    gets QEMU's process id as soon as it runs."""
    if shutil.which(qemu.QEMU) is None:
        raise UklError(f"{qemu.QEMU} not found; run `make setup` or, as root, "
                       "`apt-get install qemu-system-x86`")
    for f in (opts.kernel, opts.initramfs):
        if not f.is_file():
            raise UklError(f"{f} does not exist")
    cmd = qemu.command(opts)
    log = log or paths.logs_dir() / f"run-{log_name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    if opts.gdb:
        print(f"ukl: QEMU waits for gdb; attach with:\n   {qemu.gdb_hint(opts.kernel)}",
              file=sys.stderr)
    # On a terminal the user can type to the guest (a shell image, a program
    # reading stdin); otherwise the guest sees end-of-file.
    interactive = sys.stdin.isatty() and echo
    proc = subprocess.Popen(
        cmd, stdin=None if interactive else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        if on_start:
            on_start(proc.pid)
        console, timed_out = _stream(proc, log, cmd, timeout, interactive, echo)
    finally:
        if proc.poll() is None:
            _stop(proc)
    rc = proc.wait()
    found = complaints.find(console.decode(errors="replace"))
    if timed_out:
        return Outcome(EXIT_TIMEOUT, f"timed out after {timeout:g} s", log, found)
    status = decode_status(rc, console)
    init_error = _INIT_ERROR.search(console)
    if status is None and init_error:
        return Outcome(EXIT_NO_STATUS, "the guest's init stopped the run: "
                       + init_error.group(1).decode(errors="replace").strip(), log, found)
    if status is None:
        return Outcome(EXIT_NO_STATUS,
                       f"the guest stopped without reporting an exit status (QEMU exit "
                       f"status {rc}; kernel panic, crash or QEMU error?)", log, found)
    return Outcome(status, "", log, found)


def _stream(proc: subprocess.Popen[bytes], log: Path, cmd: list[str],
            timeout: float | None, interactive: bool, echo: bool) -> tuple[bytes, bool]:
    """Copy QEMU's output to the log (and stdout) until it ends or time runs out."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    console = bytearray()
    deadline = time.monotonic() + timeout if timeout else None
    with log.open("wb") as logf:
        logf.write(("$ " + " ".join(cmd) + "\n").encode())
        while True:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], wait)
            if not ready:
                return bytes(console), True
            chunk = os.read(fd, 65536)
            if not chunk:
                return bytes(console), False
            if not interactive:
                chunk = chunk.replace(b"\r", b"")
            console += chunk
            logf.write(chunk)
            logf.flush()
            if echo:
                sys.stdout.buffer.write(chunk)
                sys.stdout.buffer.flush()


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()


def report_complaints(outcome: Outcome) -> None:
    """Warn, on one line plus the first complaint, that the kernel logged
    oopses, splats, stalls or lockups during the run."""
    if not outcome.complaints:
        return
    print(f"ukl: warning: the kernel logged {len(outcome.complaints)} complaint line(s), "
          f"first: {outcome.complaints[0]}; full log: {outcome.log}", file=sys.stderr)


def report_problem(outcome: Outcome) -> None:
    """Print why a run failed: one line, the console tail, the log path."""
    print(f"\nukl: error: {outcome.problem}", file=sys.stderr)
    print("---- console tail ----", file=sys.stderr)
    print(log_tail(outcome.log).rstrip(), file=sys.stderr)
    print(f"---- full log: {outcome.log}", file=sys.stderr)


class Background:
    """A boot in a thread of its own, for a client on the host to talk to
    meanwhile (`ukl bench-apps --client host`, `ukl bench-net`, `ukl
    profile --load`)."""

    def __init__(self, opts: qemu.RunOptions, *, log_name: str, timeout: float | None,
                 echo: bool = False) -> None:
        self._outcome: list[Outcome] = []
        self._thread = threading.Thread(target=lambda: self._outcome.append(
            run(opts, log_name=log_name, timeout=timeout, echo=echo)))
        self._thread.start()

    def wait_until(self, ready: Callable[[], bool], within: float, failure: str) -> None:
        """Poll `ready` every second until it holds; UklError(`failure`)
        if the guest ends first or `within` seconds pass."""
        deadline = time.monotonic() + within
        while not ready():
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise UklError(failure)
            time.sleep(1)

    def join(self) -> Outcome | None:
        """Wait for the guest to end; its outcome, None if it did not run
        (the error was reported as it happened)."""
        self._thread.join()
        return self._outcome[0] if self._outcome else None


def ended_cleanly(ended: Outcome | None, what: str) -> Outcome:
    """`ended` if the program exited 0 and the kernel logged no complaint;
    otherwise UklError naming `what`, the reason and the console log."""
    if ended is None or ended.exit_code != 0 or ended.complaints:
        why = (ended.complaints[0] if ended and ended.complaints else
               f"status {ended.exit_code if ended else 'none'}")
        raise UklError(f"{what} ({why}); console log: "
                       f"{ended.log if ended else paths.logs_dir()}")
    return ended
