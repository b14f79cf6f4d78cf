"""Redis from Debian's source package, unmodified, as a UKL unikernel.

`ukl build --debian redis` fetches the source with apt-get source, builds it
with its own Makefile under ukl-cc and links redis-server into the kernel;
redis-benchmark and redis-cli are built as ordinary static programs and run
beside it in the guest.
"""
from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests.apps import guest
from tests.conftest import image_dir, ukl

pytestmark = pytest.mark.boot
HOST_PORT = 16379


@pytest.fixture(scope="module")
def redis_image(ukl_kernel) -> str:
    return guest.build_debian("redis")


def _resp(*words: str) -> bytes:
    out = f"*{len(words)}\r\n".encode()
    for w in words:
        out += f"${len(w.encode())}\r\n".encode() + w.encode() + b"\r\n"
    return out


def _reply(conn: socket.socket) -> bytes:
    """One reply, raw: a status, error or integer line, or a bulk string
    read to the length it announces (`$-1`, nil, has no body)."""
    head = b""
    while not head.endswith(b"\r\n"):
        chunk = conn.recv(1)
        if not chunk:
            return head
        head += chunk
    if not head.startswith(b"$") or head.startswith(b"$-"):
        return head
    body, size = b"", int(head[1:-2]) + 2
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            break
        body += chunk
    return head + body


def _pong(conn: socket.socket) -> bool:
    conn.sendall(_resp("PING"))
    return _reply(conn) == b"+PONG\r\n"


def test_redis_image_links_redis_into_the_kernel(redis_image: str) -> None:
    image = image_dir(redis_image)
    assert '"mode": "ukl"' in (image / "image.json").read_text()
    symbols = subprocess.run(["nm", str(image / "vmlinux")], capture_output=True, text=True,
                             check=True).stdout
    # Redis's own functions are kernel text now (prefixed, see ukl-cc).
    assert " T __ukl_serverCron\n" in symbols or " t __ukl_serverCron\n" in symbols


@pytest.fixture(scope="module")
def redis_shortcut_image(ukl_ret_byp_kernel) -> str:
    # The same build (recipes/redis/ukl-shortcuts.patch applied) on a
    # kernel with UKL_SHORTCUTS: client reads/writes go through them.
    return guest.build_debian("redis", "--kernel", "ukl-ret-byp", "-o", "redis-sc")


def test_set_get_from_the_host(redis_image: str) -> None:
    _set_get_from_the_host(redis_image)


def test_set_get_through_the_tcp_shortcuts(redis_shortcut_image: str) -> None:
    _set_get_from_the_host(redis_shortcut_image)


def _set_get_from_the_host(image: str) -> None:
    with guest.booted(image, HOST_PORT, 6379) as runner:
        conn = guest.connect(HOST_PORT, _pong)
        conn.sendall(_resp("SET", "greeting", "hello from the host"))
        assert _reply(conn) == b"+OK\r\n"
        conn.sendall(_resp("GET", "greeting"))
        assert _reply(conn) == b"$19\r\nhello from the host\r\n"
        big = "x" * 100000
        conn.sendall(_resp("SET", "big", big))
        assert _reply(conn) == b"+OK\r\n"
        conn.sendall(_resp("STRLEN", "big"))
        assert _reply(conn) == b":100000\r\n"
        conn.sendall(_resp("SHUTDOWN", "NOSAVE"))
        conn.close()
        out, _ = runner.communicate(timeout=120)
    assert "Redis is starting" in out, out
    assert runner.returncode == 0, out


def test_redis_benchmark_corunning_in_the_guest(redis_image: str) -> None:  # noqa: ARG001
    # An ordinary process beside the unikernel: redis-benchmark over loopback.
    script = ("sleep 2; redis-benchmark -q -n 2000 -t set,get > /tmp/bench 2>&1; "
              "cat /tmp/bench; redis-cli shutdown nosave")
    image = guest.build_debian("redis", "-o", "redis-corun", "--helper", script)
    res = ukl("run", image, "--mem", "1G", "--timeout", "600")
    out = res.stdout + res.stderr
    assert "SET: " in out and "GET: " in out and "requests per second" in out, out
    assert res.returncode == 0, out


# Beside the server: once the test sets `check-dump`, redis-check-rdb (an
# ordinary process) checks the dump BGSAVE wrote and reports its status.
CHECK_DUMP = ("until [ \"$(redis-cli get check-dump)\" = yes ]; do sleep 1; done; "
              "redis-check-rdb /tmp/dump.rdb; redis-cli set dump-checked $?")
# Redis's default save schedule stays (an empty `--save ""` cannot pass the
# kernel command line); the test's few hundred writes never trigger it.
PERSIST_ARGS = ("--protected-mode", "no", "--appendonly", "no", "--dir", "/tmp")


@pytest.fixture(scope="module")
def redis_persist_image(ukl_kernel) -> str:
    return guest.build_debian("redis", "-o", "redis-persist", "--helper", CHECK_DUMP)


def _reply_bulk(conn: socket.socket) -> bytes | None:
    """A bulk string reply's body, None for a nil one."""
    raw = _reply(conn)
    assert raw.startswith(b"$"), raw
    return None if raw.startswith(b"$-") else raw[raw.index(b"\r\n") + 2:-2]


def _info(conn: socket.socket, field: str) -> str:
    conn.sendall(_resp("INFO", "persistence"))
    m = re.search(rf"^{field}:(\S+)", (_reply_bulk(conn) or b"").decode(), re.M)
    assert m, field
    return m.group(1)


def _wait_done(conn: socket.socket, in_progress: str, status: str) -> None:
    deadline = time.monotonic() + 120
    while _info(conn, in_progress) != "0":
        assert time.monotonic() < deadline, f"{in_progress} still 1"
        time.sleep(0.5)
    assert _info(conn, status) == "ok", status


def _value(i: int) -> str:
    """What the persistence test stores under key:I (sizes vary)."""
    return f"value {i} " + "v" * (i % 100)


def _all_keys_intact(conn: socket.socket, keys: int) -> None:
    for i in range(keys):
        conn.sendall(_resp("GET", f"key:{i}"))
        assert _reply_bulk(conn) == _value(i).encode(), i


def test_bgsave_and_bgrewriteaof_keep_every_key(redis_persist_image: str) -> None:
    # Both fork a child that writes the dataset while the parent serves:
    # with the application's data shared between them, the child's malloc
    # corrupted the parent's and every key was lost.
    keys = 500
    with guest.booted(redis_persist_image, HOST_PORT, 6379, *PERSIST_ARGS,
                      timeout=600) as runner:
        conn = guest.connect(HOST_PORT, _pong)
        for i in range(keys):
            conn.sendall(_resp("SET", f"key:{i}", _value(i)))
            assert _reply(conn) == b"+OK\r\n"
        conn.sendall(_resp("BGSAVE"))
        assert _reply(conn) == b"+Background saving started\r\n"
        # The parent answers while its child saves.
        assert _pong(conn)
        _wait_done(conn, "rdb_bgsave_in_progress", "rdb_last_bgsave_status")
        _all_keys_intact(conn, keys)
        conn.sendall(_resp("BGREWRITEAOF"))
        assert _reply(conn).startswith(b"+Background append only file rewriting")
        _wait_done(conn, "aof_rewrite_in_progress", "aof_last_bgrewrite_status")
        _all_keys_intact(conn, keys)
        # An ordinary process checks the dump.
        conn.sendall(_resp("SET", "check-dump", "yes"))
        assert _reply(conn) == b"+OK\r\n"
        deadline = time.monotonic() + 120
        while True:
            conn.sendall(_resp("GET", "dump-checked"))
            checked = _reply_bulk(conn)
            if checked is not None or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert checked == b"0", checked
        conn.sendall(_resp("DBSIZE"))
        assert _reply(conn) == f":{keys + 2}\r\n".encode()
        conn.sendall(_resp("SHUTDOWN", "NOSAVE"))
        conn.close()
        out, _ = runner.communicate(timeout=120)
    assert "Background saving terminated with success" in out, out
    assert "RDB looks OK" in out, out
    assert runner.returncode == 0, out


def test_keys_saved_on_a_disk_are_loaded_by_the_next_guest(
        redis_image: str, tmp_path: Path) -> None:
    """The persistence issue 24 asks for: Redis's `dir` on a `--disk`,
    BGSAVE, the guest stopped, and a new guest with the same disk loads
    every key back from the dump."""
    keys = 300
    data = tmp_path / "redis.ext4"
    args = ("--protected-mode", "no", "--appendonly", "no", "--save", "", "--dir", "/data")
    disk_option = ("--disk", f"{data}:64M")
    with guest.booted(redis_image, HOST_PORT, 6379, *args, timeout=600,
                      options=disk_option) as runner:
        conn = guest.connect(HOST_PORT, _pong)
        for i in range(keys):
            conn.sendall(_resp("SET", f"key:{i}", _value(i)))
            assert _reply(conn) == b"+OK\r\n"
        conn.sendall(_resp("BGSAVE"))
        assert _reply(conn) == b"+Background saving started\r\n"
        _wait_done(conn, "rdb_bgsave_in_progress", "rdb_last_bgsave_status")
        conn.sendall(_resp("SHUTDOWN", "NOSAVE"))
        conn.close()
        out, _ = runner.communicate(timeout=120)
    assert runner.returncode == 0, out
    # The dump is in the disk's file system, seen from the host.
    listing = subprocess.run(["/usr/sbin/debugfs", "-R", "ls -l /", str(data)],
                             capture_output=True, text=True).stdout
    assert " dump.rdb" in listing, listing
    with guest.booted(redis_image, HOST_PORT, 6379, *args, timeout=600,
                      options=disk_option) as runner:
        conn = guest.connect(HOST_PORT, _pong)
        conn.sendall(_resp("DBSIZE"))
        assert _reply(conn) == f":{keys}\r\n".encode()
        _all_keys_intact(conn, keys)
        conn.sendall(_resp("SHUTDOWN", "NOSAVE"))
        conn.close()
        out, _ = runner.communicate(timeout=120)
    assert "DB loaded from disk" in out, out
    assert runner.returncode == 0, out
