"""memcached (multi-threaded, on libevent), both from Debian source, as a UKL
unikernel: `ukl build --debian memcached` builds libevent first with the
same compiler, then memcached against it."""
from __future__ import annotations

import socket
import threading

import pytest

from tests.apps import guest

pytestmark = pytest.mark.boot
HOST_PORT = 21211
CLIENTS = 4
KEYS_PER_CLIENT = 50


@pytest.fixture(scope="module")
def memcached_image(ukl_kernel) -> str:
    return guest.build_debian("memcached")


def _version(conn: socket.socket) -> bool:
    conn.sendall(b"version\r\n")
    return guest.read_until(conn, b"\r\n").startswith(b"VERSION ")


def _client(n: int, errors: list[str]) -> None:
    try:
        conn = guest.connect(HOST_PORT, _version, within=30)
        for i in range(KEYS_PER_CLIENT):
            value = f"client{n}-value{i}".encode()
            conn.sendall(b"set k%d-%d 0 0 %d\r\n%s\r\n" % (n, i, len(value), value))
            if guest.read_until(conn, b"\r\n") != b"STORED\r\n":
                errors.append(f"client {n}: set {i} not stored")
                return
        for i in range(KEYS_PER_CLIENT):
            conn.sendall(b"get k%d-%d\r\n" % (n, i))
            want = f"client{n}-value{i}".encode()
            got = guest.read_until(conn, b"END\r\n")
            if got != b"VALUE k%d-%d 0 %d\r\n%s\r\nEND\r\n" % (n, i, len(want), want):
                errors.append(f"client {n}: get {i} returned {got!r}")
                return
        conn.close()
    except (OSError, AssertionError) as e:
        errors.append(f"client {n}: {e}")


def test_set_get_from_host_with_concurrent_clients(memcached_image: str) -> None:
    with guest.booted(memcached_image, HOST_PORT, 11211) as runner:
        conn = guest.connect(HOST_PORT, _version)
        errors: list[str] = []
        threads = [threading.Thread(target=_client, args=(n, errors)) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
        conn.sendall(b"stats\r\n")
        stats = guest.read_until(conn, b"END\r\n").decode()
        assert "STAT threads 2\r\n" in stats, stats
        assert f"STAT curr_items {CLIENTS * KEYS_PER_CLIENT}\r\n" in stats, stats
        conn.sendall(b"shutdown\r\n")
        out, _ = runner.communicate(timeout=120)
    assert runner.returncode == 0, out
