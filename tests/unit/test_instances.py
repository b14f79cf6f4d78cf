"""Background instances' state (ukl/qemu/instances.py) without booting: names,
running or exited, holders of ports and disks, removal, and the CLI's
answers about them."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import ukl
from ukl.common.errors import UklError
from ukl.qemu import command as qemu
from ukl.qemu import instances


@pytest.fixture
def build_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    return tmp_path / "build"


def _make(name: str, **fields: object) -> instances.Instance:
    where = instances.claim(name, "img")
    inst = instances.Instance(name=where.name, image="img", created=time.time(),
                              **fields)  # type: ignore[arg-type]
    instances.save(inst)
    return inst


@pytest.fixture
def monitor() -> Iterator[list[subprocess.Popen[bytes]]]:
    """Fake monitors: processes holding an instance's monitor.lock."""
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for p in procs:
        p.kill()
        p.wait()


def _hold_lock(inst: instances.Instance, procs: list[subprocess.Popen[bytes]]) -> None:
    script = ("import fcntl, sys, time\nf = open(sys.argv[1], 'a')\n"
              "fcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(600)\n")
    p = subprocess.Popen([sys.executable, "-c", script, str(inst.dir / instances.LOCK)],
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"held\n"
    procs.append(p)


def test_names_are_claimed_once(build_dir: Path) -> None:
    assert instances.claim(None, "img").name == "img-1"
    assert instances.claim(None, "img").name == "img-2"
    assert instances.claim("mine", "img").name == "mine"
    (build_dir / "instances" / "mine" / "keep").write_text("x")
    with pytest.raises(UklError, match="instance mine exists"):
        instances.claim("mine", "img")
    assert (build_dir / "instances" / "mine" / "keep").read_text() == "x"
    for bad in ("", "-x", "a/b", "..", "x" * 65):
        with pytest.raises(UklError, match="instance name"):
            instances.claim(bad, "img")


def test_state_follows_the_monitor_lock(build_dir: Path, monitor: list) -> None:
    inst = _make("a", ports=[(8080, 80)], disks=["/d/x.ext4"])
    assert instances.state(inst) == "exited (unknown)"  # no monitor ever, no result
    _hold_lock(inst, monitor)
    assert instances.is_running(inst) and instances.state(inst) == "running"
    assert instances.holder_of_port(8080) == "a" and instances.holder_of_port(8081) == ""
    assert instances.holder_of_disk(Path("/d/x.ext4")) == "a"
    with pytest.raises(UklError, match="instance a is running; `ukl stop a` first"):
        instances.remove(inst)
    instances.save_result(inst, instances.Result(125, "QEMU crashed", time.time()))
    monitor.pop().kill()
    assert instances.wait_ended(inst, 10)
    assert instances.state(inst) == "exited (125)"
    assert instances.holder_of_port(8080) == "" and instances.holder_of_disk(
        Path("/d/x.ext4")) == ""
    shown = instances.describe(inst)
    assert shown["problem"] == "QEMU crashed" and shown["ports"] == ["8080:80"]
    assert shown["log"] == str(inst.console)
    instances.remove(inst)
    assert not inst.dir.exists()


def test_loading_and_listing(build_dir: Path) -> None:
    assert instances.all_instances() == []
    _make("b", ports=[(1, 2)])
    # A directory being set up (no instance.json yet) is not listed.
    instances.claim("half", "img")
    assert [i.name for i in instances.all_instances()] == ["b"]
    assert instances.load("b").ports == [(1, 2)]
    with pytest.raises(UklError, match="no instance c"):
        instances.load("c")


def test_stop_without_a_reader(build_dir: Path) -> None:
    inst = _make("s")
    assert instances.send_stop(inst) is False  # no FIFO yet
    instances.make_control(inst)
    assert instances.send_stop(inst) is False  # a FIFO nobody reads: QEMU is gone
    reader = os.open(inst.dir / f"{instances.CONTROL}.in", os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert instances.send_stop(inst) is True
        assert os.read(reader, 100) == b"stop\n"
    finally:
        os.close(reader)
    # A pid that is not this instance's QEMU is never signalled.
    inst.qemu_pid = os.getpid()
    instances.kill_qemu(inst, grace=0.1)


def test_control_channel_on_the_command_line() -> None:
    cmd = qemu.command(qemu.RunOptions(kernel=Path("k"), initramfs=Path("i"),
                                       control=Path("/b/i/x/control")))
    serials = [cmd[i + 1] for i, w in enumerate(cmd) if w == "-serial"]
    assert serials == ["stdio", "pipe:/b/i/x/control"]


def test_cli_answers(build_dir: Path, monitor: list) -> None:
    env = {"UKL_BUILD_DIR": str(build_dir)}
    assert ukl("ps", env=env).stdout == "NAME  STATE  IMAGE  PORTS  CREATED\n"
    inst = _make("web", ports=[(18080, 80)])
    instances.save_result(inst, instances.Result(3, "", time.time()))
    out = ukl("ps", env=env).stdout
    assert "web   exited (3)  img    18080:80" in out, out
    assert json.loads(ukl("ps", "--json", env=env).stdout)[0]["exit_code"] == 3
    inst.console.write_text("line one\n")
    assert ukl("logs", "web", env=env).stdout == "line one\n"
    assert ukl("logs", "-f", "web", env=env, timeout=10).stdout == "line one\n"
    res = ukl("stop", "web", env=env)
    assert res.returncode == 2 and res.stderr == "ukl: error: instance web is not running " \
        "(exited (3)); `ukl logs web` shows how it ended, `ukl rm web` removes it\n"
    missing = ukl("logs", "nope", env=env)
    assert missing.returncode == 2 and missing.stderr == \
        "ukl: error: no instance nope (`ukl ps` lists them)\n"
    _hold_lock(inst, monitor)
    res = ukl("rm", "web", env=env)
    assert res.returncode == 2 and "instance web is running" in res.stderr
    assert inst.dir.is_dir()


def test_a_port_another_program_listens_on_is_refused(build_dir: Path,
                                                      tmp_path: Path) -> None:
    from ukl.cli import run
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(UklError, match=f"host port {port} is in use by another program"):
            run._check_ports([(port, 80)])
    _make("holder", ports=[(port, 80)])
    run._check_ports([(port, 80)])  # an exited instance holds nothing
