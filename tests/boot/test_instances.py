"""Boot test of background instances: `ukl run -d`, `ukl ps`, `ukl logs`,
`ukl stop` (SIGTERM to the program through init, then power off; --force),
`ukl rm`, and what two instances cannot share."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, build_image, ukl
from ukl.qemu import instances

pytestmark = pytest.mark.boot
PORT = 28931


@pytest.fixture(scope="module")
def waiting_image(ukl_kernel) -> str:
    """tests/programs/wait_for_term.c in the UKL kernel: waits for SIGTERM,
    then exits with 7."""
    return build_image("t-inst-wait", str(PROGRAMS / "wait_for_term.c"))


def _ps() -> dict[str, dict[str, object]]:
    res = ukl("ps", "--json")
    assert res.returncode == 0, res.stderr
    return {i["name"]: i for i in json.loads(res.stdout)}


def _wait_for_console(name: str, text: str, within: float = 240) -> None:
    deadline = time.monotonic() + within
    while text not in ukl("logs", name).stdout:
        assert time.monotonic() < deadline, ukl("logs", name).stdout
        time.sleep(1)


def test_instance_lifecycle(waiting_image: str, tmp_path: Path) -> None:
    for name in ("t-inst-a", "t-inst-b", "t-inst-c"):
        ukl("rm", "--force", name)
    data = tmp_path / "d.ext4"
    started = ukl("run", "-d", "--name", "t-inst-a", waiting_image, "-p", f"{PORT}:80",
                  "--disk", f"{data}:16M", "--timeout", "600")
    assert started.returncode == 0 and started.stdout == "t-inst-a\n", started.stderr
    # The state is on disk: the command that made the instance has exited.
    assert _ps()["t-inst-a"]["state"] == "running"
    assert _ps()["t-inst-a"]["ports"] == [f"{PORT}:80"]
    # What one instance holds, another cannot take; the error names it.
    port = ukl("run", "-d", "--name", "t-inst-b", waiting_image, "-p", f"{PORT}:81")
    assert port.returncode == 2 and port.stderr == (
        f"ukl: error: -p {PORT}:81: host port {PORT} is taken by instance t-inst-a "
        "(`ukl stop t-inst-a` first)\n")
    disk = ukl("run", "-d", "--name", "t-inst-b", waiting_image, "--disk", str(data))
    assert disk.returncode == 2 and disk.stderr == (
        f"ukl: error: --disk {data}: in use by instance t-inst-a; a disk serves one guest at "
        "a time (`ukl stop t-inst-a` first)\n")
    assert "t-inst-b" not in _ps()
    again = ukl("run", "-d", "--name", "t-inst-a", waiting_image)
    assert again.returncode == 2 and "instance t-inst-a exists" in again.stderr
    busy = ukl("rm", "t-inst-a")
    assert busy.returncode == 2 and "instance t-inst-a is running" in busy.stderr
    # SIGTERM reaches the program at CPL0 through init; its status is kept.
    _wait_for_console("t-inst-a", "wait_for_term: cpl=0 waiting")
    stop = ukl("stop", "t-inst-a")
    assert stop.returncode == 0, stop.stderr
    assert stop.stderr == "ukl: instance t-inst-a stopped: exited (7)\n"
    log = ukl("logs", "t-inst-a").stdout
    assert "ukl-init: stop: SIGTERM to the program\nwait_for_term: got SIGTERM\n" \
        "ukl-init: exit status 7\n" in log, log
    assert _ps()["t-inst-a"]["state"] == "exited (7)"
    # The port and the disk are free again.
    follow = ukl("run", "-d", "--name", "t-inst-b", waiting_image, "-p", f"{PORT}:80",
                 "--disk", str(data), "--", "ignore")
    assert follow.returncode == 0, follow.stderr
    _wait_for_console("t-inst-b", "wait_for_term: cpl=0 waiting")
    # A program that ignores SIGTERM: after --time, QEMU is killed.
    stubborn = ukl("stop", "--time", "5", "t-inst-b")
    assert stubborn.stderr == ("ukl: instance t-inst-b did not stop within 5 s; killing its "
                               "QEMU\nukl: instance t-inst-b stopped: exited (125)\n")
    assert _ps()["t-inst-b"]["problem"] == "QEMU was killed by `ukl stop` or `ukl rm --force`"
    # --force, and `logs -f`, which returns once the instance has ended.
    ukl("run", "-d", "--name", "t-inst-c", waiting_image)
    _wait_for_console("t-inst-c", "waiting")
    assert ukl("stop", "--force", "t-inst-c").returncode == 0
    assert "wait_for_term: cpl=0 waiting" in ukl("logs", "-f", "t-inst-c", timeout=60).stdout
    assert _ps()["t-inst-c"]["state"] == "exited (125)"
    for name in ("t-inst-a", "t-inst-b", "t-inst-c"):
        assert ukl("rm", name).returncode == 0
        assert not (instances.root() / name).exists()
    assert data.is_file()  # an instance's disk is never removed with it


def test_a_crashed_qemu_shows_as_exited_with_its_log(waiting_image: str) -> None:
    ukl("rm", "--force", "t-inst-crash")
    assert ukl("run", "-d", "--name", "t-inst-crash", waiting_image).returncode == 0
    _wait_for_console("t-inst-crash", "waiting")
    inst = instances.load("t-inst-crash")
    os.kill(inst.qemu_pid, signal.SIGKILL)
    assert instances.wait_ended(inst, 30)
    shown = _ps()["t-inst-crash"]
    assert shown["state"] == "exited (125)"
    assert "QEMU exit status -9" in str(shown["problem"])
    text = ukl("ps").stdout
    assert f"t-inst-crash: {shown['problem']}; console: {shown['log']}" in text
    assert ukl("rm", "t-inst-crash").returncode == 0
