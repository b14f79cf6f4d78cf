"""nginx from Debian source as a UKL unikernel, serving a static page to the
host. It runs as one process (recipes/nginx/nginx.conf says why)."""
from __future__ import annotations

import socket
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.apps import guest
from tests.conftest import REPO

pytestmark = pytest.mark.boot
HOST_PORT = 18080
PAGE = (REPO / "recipes" / "nginx" / "index.html").read_bytes()


@pytest.fixture(scope="module")
def nginx_image(ukl_kernel) -> str:
    return guest.build_debian("nginx")


def _http_up(conn: socket.socket) -> bool:
    conn.sendall(b"HEAD / HTTP/1.0\r\n\r\n")
    return guest.read_until(conn, b"\r\n\r\n").startswith(b"HTTP/1.1 200")


def _get(path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{HOST_PORT}{path}", timeout=60) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, b""


def test_serves_static_page_to_host(nginx_image: str) -> None:
    with guest.booted(nginx_image, HOST_PORT, 80) as runner:
        guest.connect(HOST_PORT, _http_up).close()
        assert _get("/") == (200, PAGE)
        assert _get("/missing")[0] == 404
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: _get("/index.html"), range(32)))
        assert results == [(200, PAGE)] * 32
        assert runner.poll() is None, "nginx exited while serving"
