"""`ukl run -d`: boot in a monitor process that outlives the command.

The monitor is a fork of `ukl run` in a session of its own (a closed
terminal or Ctrl-C does not reach it). It inherits what the run set up
(the disks' locks, so another run still sees them taken), holds the
instance's monitor.lock while QEMU runs, and writes result.json when it
ends (ukl/qemu/instances.py). The command returns once QEMU has started
and survived its first moments, or with QEMU's error when it did not.
"""
from __future__ import annotations

import os
import sys
import time
import traceback

from ukl.qemu import command as qemu
from ukl.qemu import instances
from ukl.qemu import run as boot

# QEMU refuses a bad option or a taken port within this, before the guest
# runs; `ukl run -d` waits that long to report such a failure itself.
EARLY_FAILURE_S = 2.0


def start(opts: qemu.RunOptions, inst: instances.Instance, *,
          timeout: float | None) -> boot.Outcome | None:
    """Fork the monitor for `inst` and wait until QEMU runs. None when it
    does; the outcome when QEMU ended at once (or could not start)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _monitor(opts, inst, timeout, write_end)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        started = pipe.read()
    # The monitor's own exit status says nothing; it is reaped here so that
    # it is not a zombie while `ukl run` finishes, or (if it still runs)
    # by init once `ukl run` exits.
    os.waitpid(pid, os.WNOHANG)
    if not started.startswith(b"started"):
        message = started.decode(errors="replace").strip() or "the monitor process died"
        return boot.Outcome(boot.EXIT_NO_STATUS, f"instance {inst.name}: {message}",
                            inst.console)
    deadline = time.monotonic() + EARLY_FAILURE_S
    while time.monotonic() < deadline:
        if not instances.is_running(inst):
            res = instances.result(inst)
            if res:
                return boot.Outcome(res.exit_code, res.problem or "the guest ended at once",
                                    inst.console)
        time.sleep(0.1)
    return None


def _monitor(opts: qemu.RunOptions, inst: instances.Instance, timeout: float | None,
             report_fd: int) -> None:
    """The monitor process: never returns."""
    try:
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDWR)
        errors = os.open(inst.dir / "monitor.err", os.O_WRONLY | os.O_CREAT | os.O_APPEND,
                         0o644)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        # The monitor's own failures (a bug here) go to monitor.err.
        os.dup2(errors, 2)
        sys.stdin = open(os.devnull)

        def started(qemu_pid: int) -> None:
            inst.qemu_pid = qemu_pid
            instances.save(inst)
            os.write(report_fd, b"started\n")
            os.close(report_fd)

        with instances.monitor_lock(inst):
            outcome = boot.run(opts, log_name=inst.name, timeout=timeout, echo=False,
                               log=inst.console, on_start=started)
            problem = outcome.problem
            if problem and (inst.dir / instances.KILLED).exists():
                problem = "QEMU was killed by `ukl stop` or `ukl rm --force`"
            instances.save_result(inst, instances.Result(outcome.exit_code, problem,
                                                         time.time()))
            # The guest no longer needs its initramfs copy (tens of MB).
            (inst.dir / instances.INITRAMFS).unlink(missing_ok=True)
    except BaseException as e:  # noqa: B902 - whatever it is, the parent must hear of it
        traceback.print_exc()
        try:
            os.write(report_fd, f"{type(e).__name__}: {e}\n".encode())
        except OSError:
            pass
    finally:
        os._exit(0)
