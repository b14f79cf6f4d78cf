"""PostgreSQL from Debian's source package as a UKL unikernel, driven from the
host with psycopg2.

`ukl build --debian postgresql-15` links the server into the kernel and puts
a data directory made by initdb (recipes/postgresql/prepare.sh) into the
image; init starts the server as user postgres, which keeps CAP_SYS_RAWIO to
start it (ukl/image/runas.c). The postmaster forks a backend for every
connection and its helper processes: each of them runs the server's code at
CPL0 with its own copy of the server's static data.
"""
from __future__ import annotations

import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg2  # `ukl setup` installs it (ukl/host/pymodules.py)
import pytest

from tests.apps import guest
from tests.conftest import image_dir

pytestmark = pytest.mark.boot
HOST_PORT = 15432
CLIENTS = 4
ROWS = 200


@pytest.fixture(scope="module")
def postgres_image(ukl_kernel) -> str:
    return guest.build_debian("postgresql-15", "-o", "postgresql")


def _connect(within: float = 240) -> Any:
    """A connection as the superuser once the server accepts one (QEMU
    accepts on the host side before the guest listens)."""
    deadline = time.monotonic() + within
    while True:
        try:
            conn = psycopg2.connect(host="127.0.0.1", port=HOST_PORT, user="postgres",
                                    dbname="postgres", connect_timeout=30)
            conn.autocommit = True
            return conn
        except psycopg2.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(2)


def _scalar(conn: Any, sql: str, *args: object) -> Any:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchone()[0]


def test_server_is_linked_into_the_kernel(postgres_image: str) -> None:
    image = image_dir(postgres_image)
    assert '"mode": "ukl"' in (image / "image.json").read_text()
    symbols = subprocess.run(["nm", str(image / "vmlinux")], capture_output=True, text=True,
                             check=True).stdout
    assert " T __ukl_PostmasterMain\n" in symbols


def test_concurrent_clients_each_get_a_forked_backend(postgres_image: str) -> None:
    with guest.booted(postgres_image, HOST_PORT, 5432, smp=2) as runner:
        admin = _connect()
        assert _scalar(admin, "SHOW server_version").startswith("15.")
        assert _scalar(admin, "SELECT current_user") == "postgres"
        with admin.cursor() as cur:
            cur.execute("CREATE TABLE shared (client int, n int, PRIMARY KEY (client, n))")

        # Every client stays connected until all are: their backends then
        # run side by side, each a fork of the postmaster.
        together = threading.Barrier(CLIENTS, timeout=300)

        def client(k: int) -> tuple[int, int, int, int]:
            conn = _connect(within=60)
            try:
                pid = _scalar(conn, "SELECT pg_backend_pid()")
                together.wait()
                with conn.cursor() as cur:
                    cur.execute(f"CREATE TABLE own_{k} (n int PRIMARY KEY, square bigint)")
                    for n in range(ROWS):
                        cur.execute(f"INSERT INTO own_{k} VALUES (%s, %s)", (n, n * n))
                        cur.execute("INSERT INTO shared VALUES (%s, %s)", (k, n))
                    cur.execute(f"SELECT count(*), sum(square) FROM own_{k}")
                    count, total = cur.fetchone()
                    cur.execute("SELECT count(*) FROM shared WHERE client = %s", (k,))
                    mine = cur.fetchone()[0]
                together.wait()
                return pid, count, int(total), mine
            finally:
                conn.close()

        with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
            results = list(pool.map(client, range(CLIENTS)))

        squares = sum(n * n for n in range(ROWS))
        assert [r[1:] for r in results] == [(ROWS, squares, ROWS)] * CLIENTS
        pids = {r[0] for r in results} | {_scalar(admin, "SELECT pg_backend_pid()")}
        assert len(pids) == CLIENTS + 1, f"backends did not each get a process: {results}"
        assert _scalar(admin, "SELECT count(*) FROM shared") == CLIENTS * ROWS
        # The postmaster's own children run too (forked at start-up).
        with admin.cursor() as cur:
            cur.execute("SELECT DISTINCT backend_type FROM pg_stat_activity")
            kinds = {row[0] for row in cur.fetchall()}
        assert {"checkpointer", "background writer", "walwriter",
                "autovacuum launcher"} <= kinds, kinds

        # A backend that is killed goes away alone: the others and the
        # postmaster keep serving.
        victim = _connect(within=60)
        victim_pid = _scalar(victim, "SELECT pg_backend_pid()")
        assert _scalar(admin, "SELECT pg_terminate_backend(%s)", victim_pid) is True
        with pytest.raises(psycopg2.OperationalError):
            _scalar(victim, "SELECT 1")
        again = _connect(within=60)
        assert _scalar(again, "SELECT count(*) FROM own_0") == ROWS
        again.close()
        admin.close()
        assert runner.poll() is None, "the server exited while serving"


def _capability_sets(status: str) -> dict[str, int]:
    """CapInh .. CapAmb of a /proc/PID/status text, as numbers."""
    sets = {}
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key.startswith("Cap"):
            sets[key] = int(value.strip(), 16)
    return sets


def test_programs_the_server_runs_get_no_capabilities(postgres_image: str) -> None:
    # The server was started as postgres keeping CAP_SYS_RAWIO ambient, as
    # starting the application needs; the kernel clears the inheritable and
    # ambient sets at that start, so a program the server runs (COPY ... TO
    # PROGRAM, which the superuser may use) is an ordinary process of user
    # postgres.
    with guest.booted(postgres_image, HOST_PORT, 5432) as runner:
        admin = _connect()
        with admin.cursor() as cur:
            cur.execute("COPY (SELECT 1) TO PROGRAM "
                        "'grep -e ^Cap -e ^Uid /proc/self/status > /tmp/status'")
        status = _scalar(admin, "SELECT pg_read_file('/tmp/status')")
        admin.close()
        assert runner.poll() is None, "the server exited"
    assert "\nUid:\t999\t999\t999\t999" in "\n" + status, status
    sets = _capability_sets(status)
    assert all(sets[k] == 0 for k in ("CapInh", "CapPrm", "CapEff", "CapAmb")), status
