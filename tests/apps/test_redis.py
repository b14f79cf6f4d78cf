"""Redis from Debian's source package, unmodified, as a UKL unikernel.

`ukl build --debian redis` fetches the source with apt-get source, builds it
with its own Makefile under ukl-cc and links redis-server into the kernel;
redis-benchmark and redis-cli are built as ordinary static programs and run
beside it in the guest.
"""
from __future__ import annotations

import socket
import subprocess

import pytest

from tests.apps import guest
from tests.conftest import REPO, ukl

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
    data = b""
    while not data.endswith(b"\r\n") or (data.startswith(b"$") and data.count(b"\r\n") < 2):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _pong(conn: socket.socket) -> bool:
    conn.sendall(_resp("PING"))
    return _reply(conn) == b"+PONG\r\n"


def test_redis_image_links_redis_into_the_kernel(redis_image: str) -> None:
    image = REPO / "build" / "images" / redis_image
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
