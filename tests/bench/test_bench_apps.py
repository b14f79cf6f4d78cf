"""`ukl bench-apps`: report format (fast) and a small Redis run (QEMU, icount)."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.bench import apps

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
