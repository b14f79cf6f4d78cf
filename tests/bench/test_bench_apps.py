"""`ukl bench-apps`: report format (fast) and a small Redis run (QEMU, icount)."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.bench import apps, apps_host

CONSOLE = """noise
appbench,redis,SET,28986
appbench,redis,GET,29412.5
appbench,bad
"""


def test_parse_and_table() -> None:
    rows = apps.parse(CONSOLE, "stock") + [apps.Result("ukl", "redis", "SET", 14493)]
    assert [(r.op, r.rps) for r in rows[:2]] == [("SET", 28986.0), ("GET", 29412.5)]
    md = apps.markdown(rows, ["stock", "ukl"], {"redis (ukl)": {
        "vmlinux_loaded_bytes": 14 * 2**20, "initramfs_bytes": 3 * 2**20}})
    assert "| redis | SET | 28986 | 14493 | 0.50 |" in md
    assert "| redis | GET | 29412 | - | - |" in md
    assert "10^9 guest instructions" in md and "| redis (ukl) | 14.0 MiB | 3.0 MiB |" in md


@pytest.mark.boot
def test_redis_throughput_stock_and_ukl(tmp_path: Path, stock_kernel, ukl_kernel) -> None:
    res = ukl("bench-apps", "redis", "--configs", "stock,ukl", "--requests", "500",
              "--name", "t", env={"UKL_RESULTS_DIR": str(tmp_path)}, timeout=2400)
    assert res.returncode == 0, res.stdout + res.stderr
    with (tmp_path / "t" / "apps.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert {(r["config"], r["op"]) for r in rows} == {
        (c, op) for c in ("stock", "ukl") for op in ("SET", "GET")}
    assert all(float(r["requests_per_second"]) > 0 for r in rows)
    assert "redis (ukl)" in (tmp_path / "t" / "apps.md").read_text()


@pytest.mark.boot
def test_server_side_counts_with_the_client_on_the_host(tmp_path: Path, stock_kernel,
                                                        ukl_kernel) -> None:
    # redis-benchmark on the host; the guest executes only the server. On
    # stock every request makes system calls into the kernel; on UKL the
    # server's system calls are calls (what is left: the window's own
    # control exchange, a handful in all).
    res = ukl("bench-apps", "redis", "--client", "host", "--configs", "stock,ukl",
              "--requests", "500", "--name", "h", env={"UKL_RESULTS_DIR": str(tmp_path)},
              timeout=2400)
    assert res.returncode == 0, res.stdout + res.stderr
    with (tmp_path / "h" / "apps-host.csv").open() as f:
        rows = {(r["config"], r["op"]): r for r in csv.DictReader(f)}
    assert set(rows) == {(c, op) for c in ("stock", "ukl") for op in ("SET", "GET")}
    for op in ("SET", "GET"):
        stock, unikernel = rows[("stock", op)], rows[("ukl", op)]
        assert float(stock["entries_syscall"]) >= 1, stock
        assert float(unikernel["entries_syscall"]) < 0.05, unikernel
        assert float(unikernel["insns_app"]) > 1000 and float(stock["insns_app"]) == 0
        assert float(stock["insns_user"]) > 1000
    assert "| redis | SET | ukl |" in (tmp_path / "h" / "apps-host.md").read_text()


def test_host_client_table() -> None:
    zero = {k: 0.0 for k, _ in apps_host.COLUMNS}
    rows = [apps_host.Served("stock-deployed", "redis", "SET", 1000,
                             {**zero, "insns": 30000.0, "entries": 2.7, "swapgs": 9.0}),
            apps_host.Served("ukl-deployed", "redis", "SET", 1000,
                             {**zero, "insns": 25000.0, "entries": 0.002})]
    md = apps_host.markdown(rows, ["stock-deployed", "ukl-deployed"])
    assert "| redis | SET | stock-deployed | 30000.0 | 0.0 | 0.0 | 0.0 | 2.700 |" in md
    assert md.rstrip().endswith("| 1.20 |")
    assert "stock-deployed insns / these" in md


def test_host_client_table_over_repetitions() -> None:
    # Three boots per config: cells are medians, the instructions cell
    # carries the lowest and highest, the ratio is of the medians.
    zero = {k: 0.0 for k, _ in apps_host.COLUMNS}
    rows = [apps_host.Served(c, "redis", "GET", 1000, {**zero, "insns": insns, "entries": e},
                             rep)
            for rep, (s, u) in enumerate(((30000.0, 26000.0), (31000.0, 25000.0),
                                          (29000.0, 24000.0)))
            for c, insns, e in (("stock-deployed", s, 2.0 + rep), ("ukl-deployed", u, 0.0))]
    md = apps_host.markdown(rows, ["stock-deployed", "ukl-deployed"], connections=1)
    assert "median of 3 boots" in md and "(1 connection)" in md
    assert ("| redis | GET | stock-deployed | 30000.0 (29000-31000) | 0.0 | 0.0 | 0.0 | 3.000 |"
            in md)
    assert "| redis | GET | ukl-deployed | 25000.0 (24000-26000) |" in md
    assert md.rstrip().endswith("| 1.20 |")


def test_reps_needs_the_host_client(tmp_path: Path) -> None:
    res = ukl("bench-apps", "redis", "--reps", "3", "--name", "r",
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.startswith("ukl: error: --reps and --connections need --client host")
