"""Background instances: `ukl run -d`, `ukl ps`, `ukl logs`, `ukl stop`, `ukl rm`.

Each instance is a directory build/instances/NAME/ that outlives the
command that made it:

  instance.json   what was started (image, ports, disks, folders, QEMU's pid)
  console.log     the guest's console, as `ukl run` logs it
  result.json     how it ended (exit status as `ukl run` gives it, problem);
                  absent while it runs
  monitor.lock    held (flock) by the monitor process for as long as it runs
  control.in/out  FIFOs of QEMU's second serial port, which the guest's
                  init reads for "stop" (init.sh)

The monitor (ukl/qemu/detach.py) is a process of its own that runs QEMU,
waits for it and writes result.json. Whether an instance runs is whether
its monitor still holds monitor.lock: a pid can be reused, a lock dies
with its holder. Nothing here touches a disk or shared folder the
instance used; `ukl rm` removes only the instance's own directory.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ukl.common import paths
from ukl.common.errors import UklError, UsageError

STATE = "instance.json"
RESULT = "result.json"
CONSOLE = "console.log"
LOCK = "monitor.lock"
CONTROL = "control"
INITRAMFS = "initramfs.cpio"
# Left by kill_qemu, so that the end is recorded as a kill, not a crash.
KILLED = "killed"
# What init.sh prints when it has passed `stop` on as SIGTERM.
STOP_SEEN = b"ukl-init: stop: SIGTERM to the program"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass
class Instance:
    name: str
    image: str
    created: float
    ports: list[tuple[int, int]] = field(default_factory=list)
    disks: list[str] = field(default_factory=list)
    shares: list[str] = field(default_factory=list)
    qemu_pid: int = 0

    @property
    def dir(self) -> Path:
        return root() / self.name

    @property
    def console(self) -> Path:
        return self.dir / CONSOLE


@dataclass(frozen=True)
class Result:
    exit_code: int
    # Why the guest reported no status ('' when it did).
    problem: str
    ended: float


def root() -> Path:
    return paths.build_root() / "instances"


def check_name(name: str) -> str:
    if not _NAME.fullmatch(name):
        raise UsageError(f"instance name {name!r}: use letters, digits, '.', '_' and '-' "
                         "(at most 64, starting with a letter or digit)")
    return name


def claim(name: str | None, image: str) -> Path:
    """A new, empty directory for an instance named `name` (default: the
    image's name and the first free number). mkdir is atomic, so two
    `ukl run -d` never share one, and an existing instance is never
    overwritten."""
    root().mkdir(parents=True, exist_ok=True)
    if name is not None:
        try:
            (root() / check_name(name)).mkdir()
        except FileExistsError:
            raise UsageError(f"instance {name} exists; `ukl rm {name}` it first or choose "
                             "another --name") from None
        return root() / name
    for n in range(1, 10000):
        candidate = root() / f"{image}-{n}"
        with contextlib.suppress(FileExistsError):
            candidate.mkdir()
            return candidate
    raise UklError(f"no free instance name {image}-N in {root()}; `ukl rm` old ones")


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    # Atomic: a reader sees the old file or the new one, never half.
    tmp.replace(path)


def save(inst: Instance) -> None:
    _write_json(inst.dir / STATE, asdict(inst))


def save_result(inst: Instance, result: Result) -> None:
    _write_json(inst.dir / RESULT, asdict(result))


def load(name: str) -> Instance:
    where = root() / name
    try:
        data = json.loads((where / STATE).read_text())
        data["ports"] = [tuple(p) for p in data["ports"]]
        return Instance(**data)
    except FileNotFoundError:
        raise UsageError(f"no instance {name} (`ukl ps` lists them)") from None
    except (ValueError, TypeError, KeyError) as e:
        raise UklError(f"{where / STATE} is unreadable ({e}); remove {where} by hand") from None


def all_instances() -> list[Instance]:
    """Every instance whose state is readable, oldest first. A directory
    still being set up (no instance.json yet) is left out."""
    found = []
    for d in sorted(root().iterdir()) if root().is_dir() else []:
        if (d / STATE).is_file():
            with contextlib.suppress(UklError):
                found.append(load(d.name))
    return sorted(found, key=lambda i: i.created)


def result(inst: Instance) -> Result | None:
    try:
        return Result(**json.loads((inst.dir / RESULT).read_text()))
    except (OSError, ValueError, TypeError):
        return None


@contextlib.contextmanager
def monitor_lock(inst: Instance) -> Iterator[None]:
    """Held by the monitor while it runs (is_running)."""
    with (inst.dir / LOCK).open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def is_running(inst: Instance) -> bool:
    try:
        with (inst.dir / LOCK).open("a") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(f, fcntl.LOCK_UN)
            return False
    except OSError:
        return False


def state(inst: Instance) -> str:
    """'running', 'exited (STATUS)', or 'exited (unknown)' when the monitor
    died without recording an end (killed from outside)."""
    if is_running(inst):
        return "running"
    res = result(inst)
    return f"exited ({res.exit_code})" if res else "exited (unknown)"


def describe(inst: Instance) -> dict[str, Any]:
    """What `ukl ps --json` shows of an instance."""
    res = result(inst)
    return {"name": inst.name, "image": inst.image, "state": state(inst),
            "exit_code": res.exit_code if res else None, "problem": res.problem if res else "",
            "ports": [f"{h}:{g}" for h, g in inst.ports], "disks": inst.disks,
            "shares": inst.shares, "created": inst.created,
            "ended": res.ended if res else None, "log": str(inst.console)}


def holder_of_port(port: int) -> str:
    """The running instance forwarding host port `port` ('' if none)."""
    for inst in all_instances():
        if any(h == port for h, _ in inst.ports) and is_running(inst):
            return inst.name
    return ""


def holder_of_disk(file: Path) -> str:
    """The running instance with disk `file` attached ('' if none)."""
    wanted = str(file.resolve())
    for inst in all_instances():
        if wanted in inst.disks and is_running(inst):
            return inst.name
    return ""


def make_control(inst: Instance) -> Path:
    """The FIFOs QEMU's `-serial pipe:PATH` opens (PATH.in, PATH.out);
    returns PATH."""
    base = inst.dir / CONTROL
    for suffix in (".in", ".out"):
        os.mkfifo(base.with_name(CONTROL + suffix), 0o600)
    return base


def send_stop(inst: Instance) -> bool:
    """Ask the guest's init to SIGTERM the program; False when nothing
    reads the control channel (QEMU is gone). Non-blocking: a FIFO's
    buffer is far larger than the few lines ever sent."""
    try:
        fd = os.open(inst.dir / f"{CONTROL}.in", os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        if e.errno in (errno.ENXIO, errno.ENOENT):
            return False
        raise
    try:
        os.write(fd, b"stop\n")
    finally:
        os.close(fd)
    return True


def stop_seen(inst: Instance) -> bool:
    """Whether the guest's init has passed the stop on to the program."""
    try:
        return STOP_SEEN in inst.console.read_bytes()
    except OSError:
        return False


def wait_ended(inst: Instance, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while is_running(inst):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _is_its_qemu(inst: Instance) -> bool:
    """Whether inst.qemu_pid is still this instance's QEMU (pids are
    reused): its command line names the instance's own initramfs."""
    if not inst.qemu_pid:
        return False
    try:
        cmdline = Path(f"/proc/{inst.qemu_pid}/cmdline").read_bytes()
    except OSError:
        return False
    return str(inst.dir / INITRAMFS).encode() in cmdline


def kill_qemu(inst: Instance, grace: float = 5.0) -> None:
    """End the instance's QEMU: SIGTERM (QEMU exits at once), then SIGKILL.
    The monitor records the end (no status from the guest), and why."""
    (inst.dir / KILLED).touch()
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _is_its_qemu(inst):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(inst.qemu_pid, sig)
        if wait_ended(inst, grace):
            return


def remove(inst: Instance) -> None:
    """Delete a stopped instance's directory (its state and console log)."""
    if is_running(inst):
        raise UsageError(f"instance {inst.name} is running; `ukl stop {inst.name}` first "
                         "(or `ukl rm --force`)")
    shutil.rmtree(inst.dir)
