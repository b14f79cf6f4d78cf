"""Boot an application image with a port forward and talk to it from the host."""
from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

from tests.conftest import REPO, stop_run, ukl


def build_debian(package: str, *args: str) -> str:
    """`ukl build --debian PACKAGE [args]` on the UKL kernel; the image name."""
    res = ukl("build", "--debian", package, *args, timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    return args[args.index("-o") + 1] if "-o" in args else package


@contextlib.contextmanager
def booted(image: str, host_port: int, guest_port: int, *args: str,
           timeout: int = 300, smp: int = 1,
           options: tuple[str, ...] = ()) -> Iterator[subprocess.Popen[str]]:
    """`ukl run IMAGE -p HOST:GUEST [OPTIONS] [-- ARGS]` in the background
    (ARGS replace the image's default arguments) on `smp` CPUs; killed on
    the way out if the test did not end it."""
    runner = subprocess.Popen(
        [sys.executable, str(REPO / "bin" / "ukl"), "run", image, "--mem", "1G",
         "--smp", str(smp),
         "-p", f"{host_port}:{guest_port}", "--timeout", str(timeout), *options,
         *(["--", *args] if args else [])],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, cwd=REPO, start_new_session=True)
    try:
        yield runner
    finally:
        stop_run(runner)


def connect(port: int, ready: Callable[[socket.socket], bool],
            within: float = 180) -> socket.socket:
    """A connection to the forwarded port once the server answers `ready`
    (QEMU accepts on the host side before the guest listens)."""
    deadline = time.monotonic() + within
    while True:
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=30)
            if ready(conn):
                return conn
            conn.close()
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing answered on forwarded port {port}")
        time.sleep(1)


def read_until(conn: socket.socket, end: bytes) -> bytes:
    data = b""
    while not data.endswith(end):
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    return data
