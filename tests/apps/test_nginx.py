"""nginx from Debian source as a UKL unikernel, serving a static page to the
host in its default process model on 2 CPUs: a master that forks two
workers, each with its own copy of nginx's static data
(recipes/nginx/nginx.conf)."""
from __future__ import annotations

import re
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.apps import guest
from tests.conftest import REPO

pytestmark = pytest.mark.boot
HOST_PORT = 18080
PAGE = (REPO / "recipes" / "nginx" / "index.html").read_bytes()


# Beside nginx, once the access log shows a request for /kill-worker: kill
# one worker with SIGKILL, wait for the master to start a new one, and
# publish the pids (ps shows nginx's process titles, which it writes over
# its argv in the user half).
KILL_WORKER = (
    "workers() { ps -o pid,args | grep '[n]ginx: worker process' | "
    "while read pid rest; do echo $pid; done; }; "
    "until grep -q kill-worker /tmp/access.log 2>/dev/null; do sleep 1; done; "
    "old=$(workers | head -n 1); before=$(workers | tr '\\n' ' '); kill -9 $old; "
    "while workers | grep -qx $old || [ $(workers | wc -l) -ne 2 ]; do sleep 1; done; "
    "echo \"killed $old of $before; now $(workers | tr '\\n' ' ')\" > /var/www/killed.txt")


@pytest.fixture(scope="module")
def nginx_image(ukl_kernel) -> str:
    return guest.build_debian("nginx", "--helper", KILL_WORKER)


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
    with guest.booted(nginx_image, HOST_PORT, 80, smp=2) as runner:
        guest.connect(HOST_PORT, _http_up).close()
        assert _get("/") == (200, PAGE)
        assert _get("/missing")[0] == 404
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: _get("/index.html"), range(32)))
        assert results == [(200, PAGE)] * 32
        assert runner.poll() is None, "nginx exited while serving"


def test_master_restarts_a_killed_worker(nginx_image: str) -> None:
    with guest.booted(nginx_image, HOST_PORT, 80, smp=2) as runner:
        guest.connect(HOST_PORT, _http_up).close()
        assert _get("/kill-worker")[0] == 404
        deadline = time.monotonic() + 120
        while (killed := _get("/killed.txt"))[0] != 200:
            assert time.monotonic() < deadline, "no worker was killed and replaced"
            time.sleep(1)
        m = re.match(rb"killed (\d+) of (\d+) (\d+) ; now (\d+) (\d+) ", killed[1])
        assert m, killed
        old, before, now = m.group(1), set(m.group(2, 3)), set(m.group(4, 5))
        assert old in before and old not in now and len(before | now) == 3, killed
        with ThreadPoolExecutor(max_workers=8) as pool:
            results = list(pool.map(lambda _: _get("/index.html"), range(32)))
        assert results == [(200, PAGE)] * 32
        assert runner.poll() is None, "nginx exited while serving"
