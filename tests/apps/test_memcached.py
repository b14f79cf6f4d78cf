"""memcached (multi-threaded, on libevent), both from Debian source, as a UKL
unikernel: `ukl build --debian memcached` builds libevent first with Debian's
own rules and the same compiler, then memcached against it.

The build leaves OpenSSL and Cyrus SASL out (`--without`), which keeps
the suite short (OpenSSL alone takes longer than the rest of memcached)
and exercises what a left-out library turns off: memcached's rules force
`--enable-sasl --enable-tls` on, libevent's its OpenSSL support, and the
packages' files for them are then missing. The catalog (`ukl catalog`)
builds memcached with both."""
from __future__ import annotations

import socket
import threading

import pytest

from tests.apps import guest
from tests.conftest import ukl

pytestmark = pytest.mark.boot
HOST_PORT = 21211
CLIENTS = 4
KEYS_PER_CLIENT = 50


@pytest.fixture(scope="module")
def memcached_image(ukl_kernel) -> str:
    res = ukl("build", "--debian", "memcached", "--without", "openssl,cyrus-sasl2",
              timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    # What Debian's rules force on is turned off, and said so.
    assert "built without libsasl2-dev (turned off: --disable-sasl)" in res.stderr, res.stderr
    assert "built without libssl-dev (turned off: --disable-tls" in res.stderr, res.stderr
    return "memcached"


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
