"""Choose QEMU's accelerator for `ukl run --accel auto|kvm|tcg`.

`auto` takes KVM only after proving it works: /dev/kvm can exist and open
while the guest still cannot run (nested or emulated KVM that fails on the
kernel's first instructions, or crawls), and a run that hangs under KVM is
worse than a slower one under TCG. The proof is a short probe boot of the
image's own kernel and initramfs that must reach init within
PROBE_TIMEOUT_S. Its verdict is cached per host and boot (the /dev/kvm
node, the host's boot id and kernel release) for VERDICT_TTL_S, so that
not every run pays for it. Whatever needs TCG (-icount, plugins, gdb)
gets TCG without a probe.
"""
from __future__ import annotations

import json
import os
import platform
import select
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ukl.common import paths
from ukl.common.errors import UsageError
from ukl.qemu import command as qemu

CHOICES = ("auto", *qemu.ACCELS)
KVM_DEVICE = Path("/dev/kvm")
PROBE_TIMEOUT_S = 20.0
# Short: a host's KVM can be fixed (a module loaded, a permission granted)
# without a reboot, and a probe costs at most PROBE_TIMEOUT_S.
VERDICT_TTL_S = 30 * 60
# What the probe's init prints. The command line holds the arithmetic, not
# its result, so the kernel echoing its command line cannot fake it.
PROBE_MARKER = b"ukl-kvm-probe-42"
_PROBE_SCRIPT = "echo ukl-kvm-probe-$((6*7)); /bin/busybox poweroff -f"
# QEMU does not exit on this: it stops the vCPU and waits.
_KVM_FAILURE = b"KVM internal error"


@dataclass(frozen=True)
class Verdict:
    works: bool
    # Why KVM does not work (empty when it does).
    reason: str = ""


@dataclass(frozen=True)
class Choice:
    accel: str
    # Why `auto` did not take KVM, for one line to the user (empty when it
    # did, or when the user named the accelerator).
    why_not_kvm: str = ""


# (kernel, initramfs) -> whether a KVM boot of them reached init.
Probe = Callable[[Path, Path], Verdict]


def cache_file() -> Path:
    return paths.build_root() / "accel" / "kvm-probe.json"


def host_key(device: Path) -> str:
    """Identifies this host's KVM until a reboot or kernel change: the
    device node (devtmpfs makes it anew each boot), the boot id and the
    host kernel's release."""
    st = device.stat()
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot_id = "?"
    return f"{device} rdev={st.st_rdev:#x} ctime={st.st_ctime_ns} boot={boot_id} " \
        f"release={platform.release()}"


def _cached(path: Path, key: str, now: float) -> tuple[Verdict, float] | None:
    try:
        data = json.loads(path.read_text())
        if data["key"] != key or not 0 <= now - float(data["time"]) < VERDICT_TTL_S:
            return None
        return Verdict(bool(data["works"]), str(data["reason"])), float(data["time"])
    except (OSError, ValueError, KeyError, TypeError):
        # No cache, or one from another version: probe again.
        return None


def _store(path: Path, key: str, verdict: Verdict, now: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"key": key, "time": now, "works": verdict.works,
                               "reason": verdict.reason}) + "\n")
    # Atomic: two runs probing at once each leave a whole file.
    tmp.replace(path)


def choose(requested: str, opts: qemu.RunOptions, *, probe: Probe | None = None,
           device: Path = KVM_DEVICE, cache: Path | None = None) -> Choice:
    """The accelerator for booting `opts` when the user asked for
    `requested` (CHOICES)."""
    if requested not in CHOICES:
        raise UsageError(f"--accel {requested}: use one of {', '.join(CHOICES)}")
    if requested != "auto":
        # qemu.command() refuses KVM with what needs TCG.
        return Choice(requested)
    if qemu.tcg_only_features(opts) or shutil.which(qemu.QEMU) is None:
        # Without QEMU there is nothing to probe (nor a verdict to keep): the
        # boot says what is missing.
        return Choice("tcg")
    if not device.exists():
        return Choice("tcg", f"there is no {device}")
    if not os.access(device, os.R_OK | os.W_OK):
        return Choice("tcg", f"{device} is not readable and writable by this user")
    cache = cache or cache_file()
    key = host_key(device)
    now = time.time()
    found = _cached(cache, key, now)
    if found is None:
        verdict = (probe or probe_boot)(opts.kernel, opts.initramfs)
        _store(cache, key, verdict, now)
        note = ""
    else:
        verdict, when = found
        note = f" (verdict of {time.strftime('%H:%M', time.localtime(when))}, " \
            f"cached in {cache} for {VERDICT_TTL_S // 60} minutes)"
    return Choice("kvm") if verdict.works else Choice("tcg", verdict.reason + note)


def probe_command(kernel: Path, initramfs: Path) -> list[str]:
    """QEMU under KVM with init replaced by a busybox shell that prints
    PROBE_MARKER and powers off: it proves the kernel boots to user space.
    Every image has /bin/busybox (ukl/image/initramfs.py)."""
    return qemu.command(qemu.RunOptions(
        kernel=kernel, initramfs=initramfs, mem="256M", accel="kvm",
        append=["rdinit=/bin/busybox"], program_args=["sh", "-c", _PROBE_SCRIPT]))


def probe_boot(kernel: Path, initramfs: Path, timeout: float = PROBE_TIMEOUT_S) -> Verdict:
    """Boot under KVM until init prints the marker, KVM fails or `timeout`
    passes; the console goes to build/logs/kvm-probe.log."""
    cmd = probe_command(kernel, initramfs)
    log = paths.logs_dir() / "kvm-probe.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
    except OSError as e:
        return Verdict(False, f"a KVM probe boot could not start {qemu.QEMU}: {e}")
    assert proc.stdout is not None
    console = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while PROBE_MARKER not in console and _KVM_FAILURE not in console:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([proc.stdout], [], [], left)[0]:
                break
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            console += chunk
    finally:
        # The verdict is in; the guest has nothing more to say.
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        log.write_bytes(("$ " + " ".join(cmd) + "\n").encode() + bytes(console))
    if PROBE_MARKER in console:
        return Verdict(True)
    if _KVM_FAILURE in console:
        return Verdict(False, "a KVM probe boot stopped with a KVM internal error")
    if time.monotonic() >= deadline:
        return Verdict(False, f"a KVM probe boot did not reach init in {timeout:g} s")
    lines = bytes(console).decode(errors="replace").strip().splitlines()
    last = lines[-1].strip() if lines else f"{qemu.QEMU} exited"
    return Verdict(False, f"a KVM probe boot failed: {last}")
