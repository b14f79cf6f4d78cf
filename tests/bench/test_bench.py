"""`ukl bench`: parsing and reports (fast), and a repeatability run (QEMU)."""
from __future__ import annotations

import csv
import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.conftest import GUEST, PROGRAMS, ukl
from ukl.bench import anchors, report
from ukl.common.errors import UklError
from ukl.kbuild import flavour
from ukl.results import ResultsWriter

CONSOLE = """boot noise
bench,getppid,0,10000,213,214
bench,read-file,1,10000,1224,1249
bench,read-file,4096,10000,1300,1350
bench-done,1
"""


def test_parse_takes_only_bench_lines() -> None:
    rows = report.parse(CONSOLE, "stock")
    assert [(r.op, r.size, r.min, r.median) for r in rows] == [
        ("getppid", 0, 213, 214), ("read-file", 1, 1224, 1249), ("read-file", 4096, 1300, 1350)]


def test_markdown_has_ratio_and_instruction_note(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    rows = report.parse(CONSOLE, "stock") + [
        report.Row("ukl", "getppid", 0, 10000, 100, 107)]
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))
    out = ResultsWriter("r", "ukl bench --name r")
    md = out.markdown("results.md", report.markdown(rows, ["stock", "ukl"])).read_text()
    assert md.startswith("Command: `ukl bench --name r` (run 20")
    assert "| getppid | - | 214 (213) | 107 (100) | 0.50 |" in md
    assert "instructions" in md and "swapgs" in md
    csv_path = out.csv("results.csv", report.CSV_HEADER, report.csv_rows(rows))
    assert report.read_csv(csv_path) == rows
    meta = json.loads(out.meta("meta.json", [flavour.get("stock")], groups=["floor"])
                      .read_text())
    assert meta["command"] == "ukl bench --name r" and meta["groups"] == ["floor"]
    assert meta["configs"] == {"stock": ["base.config"]}
    assert meta["kernel"].startswith("linux-source-6.1 ")


@pytest.mark.boot
def test_quick_subset_is_repeatable(tmp_path: Path, stock_kernel, ukl_kernel) -> None:
    # Under -icount the guest's rdtsc counts instructions: two runs of the
    # same subset must give the very same figures.
    env = {"UKL_RESULTS_DIR": str(tmp_path)}
    figures = []
    for name in ("first", "second"):
        res = ukl("bench", "--quick", "--name", name, "floor", "page-fault", env=env)
        assert res.returncode == 0, res.stdout + res.stderr
        figures.append(((tmp_path / name / "results.csv").read_text(),
                        (tmp_path / name / "counts.csv").read_text()))
    assert figures[0] == figures[1]
    # The plugin's counts beside them: a stock getppid crosses into the
    # kernel once and swaps GS twice; UKL's is a call.
    with (tmp_path / "first" / "counts.csv").open() as f:
        counted = {(r["config"], r["op"]): r for r in csv.DictReader(f)}
    assert counted[("stock", "getppid")]["entries_syscall"] == "1"
    assert counted[("stock", "getppid")]["swapgs"] == "2"
    assert counted[("ukl", "getppid")]["entries_syscall"] == "0"
    assert counted[("ukl", "getppid")]["swapgs"] == "0"
    assert "## What costs cycles" in (tmp_path / "first" / "results.md").read_text()
    # Native anchors from the same run, labelled as the host's.
    native = json.loads((tmp_path / "first" / "meta.json").read_text())["native_anchors"]
    assert "build host" in native["measured_on"]
    figures = native["figures"]
    assert set(figures) == {"call", "syscall", "getppid", "verw"}
    assert 0 < figures["call"]["ns"] < figures["syscall"]["ns"], figures
    rows = report.read_csv(tmp_path / "first" / "results.csv")
    getppid = {r.config: r.median for r in rows if r.op == "getppid"}
    # The brief measured about 205 instructions for stock getppid.
    assert 100 < getppid["stock"] < 400, getppid
    assert set(getppid) == {"stock", "ukl"}
    assert "instructions" in (tmp_path / "first" / "results.md").read_text()


@pytest.mark.boot
def test_stock_getppid_matches_a_plain_static_loop(tmp_path: Path, stock_kernel) -> None:
    # The yardstick is a getppid loop of the host's own gcc -static and
    # glibc, nothing of ours but the kernel: `ukl bench`'s stock figure
    # must count the same work.
    program = tmp_path / "plain-getppid"
    subprocess.run(["gcc", "-O2", "-static", "-o", program, PROGRAMS / "plain_getppid.c"],
                   check=True)
    res = ukl("image", "create", "t-plain-getppid", "--program", str(program),
              "--kernel", "stock")
    assert res.returncode == 0, res.stdout + res.stderr
    res = ukl("run", "t-plain-getppid", "--icount", "--timeout", "300")
    assert res.returncode == 0, res.stdout + res.stderr
    m = re.search(r"plain-getppid min=(\d+) median=(\d+)", res.stdout)
    assert m, res.stdout
    plain = int(m.group(2))
    res = ukl("bench", "--quick", "--name", "yardstick", "--configs", "stock", "floor",
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = report.read_csv(tmp_path / "yardstick" / "results.csv")
    bench = next(r.median for r in rows if r.op == "getppid")
    # Both put one getppid system call in an rdtsc pair; lebench makes it
    # through glibc's variadic syscall() (11 instructions more than the
    # getppid() wrapper here: 213 against 202), so allow 10%.
    assert abs(bench - plain) <= plain // 10, (bench, plain)


def test_plots_are_written(tmp_path: Path) -> None:
    # matplotlib comes with `make setup`; without it this fails, not skips.
    from ukl.bench import plots
    rows = []
    for config, scale in (("stock", 1.0), ("ukl", 0.9)):
        rows.append(report.Row(config, "getppid", 0, 10, 200, int(210 * scale)))
        for op in plots.SIZED:
            for size in (1, 256, 512):
                rows.append(report.Row(config, op, size, 10, 1000, int((1000 + size) * scale)))
        for op in plots.FAULTS:
            rows.append(report.Row(config, op, 0, 10, 5000, int(5200 * scale)))
    outs = plots.write_all(rows, ["stock", "ukl"], tmp_path)
    for out in outs:
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", out


def test_counts_pair_with_measurements_and_show_per_call() -> None:
    rows = report.parse(CONSOLE, "stock")
    zero = {c: 0 for c in report.COUNTS_CSV_COLUMNS}
    # The plugin's median rows (each counter's median over the passes);
    # its sum rows are not used.
    windows = {
        "0.0.med": {**zero, "insns_kernel": 194, "entries": 1, "entries_syscall": 1,
                    "swapgs": 2, "indirect": 2},
        "0.0": {**zero, "insns_kernel": 1_940_013},
        "0.1.med": {**zero, "insns_kernel": 1500, "entries": 1, "entries_other": 1,
                    "serialising": 1},
        "0.2.med": zero,
        "total": zero,
    }
    passes = {"0.0.med": 10000, "0.0": 10000, "0.1.med": 10000, "0.2.med": 10000,
              "total": 1}
    counted = report.counted(rows, windows, passes)
    assert counted[0].per_call["entries"] == 1 and counted[0].per_call["swapgs"] == 2
    md = report.counts_markdown(counted, ["stock"])
    assert "| getppid | - | 194 / 1 / 2 / 0 / 0 / 0 / 2 / 0 / 0 |" in md
    assert "| read-file | 1 | 1500 / 1 / 0 / 0 / 0 / 1 / 0 / 0 / 0 |" in md
    csv_rows = report.counts_csv_rows(counted)
    assert csv_rows[0][:7] == ("stock", "getppid", 0, 10000, 0, 0, 194)
    # A measurement without its plugin row, or with another number of
    # passes, is an error, not a silent shift of every row after it.
    with pytest.raises(ValueError, match="0.2.med"):
        report.counted(rows, windows, {**passes, "0.2.med": 9999})
    with pytest.raises(ValueError, match="0.2.med"):
        report.counted(rows, {k: v for k, v in windows.items() if k != "0.2.med"}, passes)


def test_native_anchor_lines_are_checked() -> None:
    found = anchors.parse("noise\nanchor,call,0.33,0.8\nanchor,syscall,64.77,168.3\n"
                          "anchor,getppid,73.61,191.3\nanchor,verw,20.33,52.8\n")
    assert [(a.name, a.ns) for a in found][1] == ("syscall", 64.77)
    assert "| null system call (`syscall(-1)`) | 64.77 | 168.3 |" in anchors.markdown(found)
    with pytest.raises(UklError, match="expected"):
        anchors.parse("anchor,call,0.33,0.8\n")


def test_lebench_runs_one_measurement_at_one_size(tmp_path: Path) -> None:
    # `--max-size 1 --only OP` narrows a run to what a profile of one
    # 1-byte operation needs; natively, as the host's own program.
    program = tmp_path / "lebench"
    subprocess.run(["gcc", "-O2", "-I", str(GUEST), "-o", program, GUEST / "lebench.c",
                    "-lpthread"], check=True)
    out = subprocess.run([program, "--quick", "--max-size", "1", "--only", "read-pipe",
                          "pipe", "file"], capture_output=True, text=True, check=True).stdout
    lines = [line for line in out.splitlines() if line.startswith("bench")]
    assert lines[0].startswith("bench,read-pipe,1,1000,"), out
    assert lines[1:] == ["bench-done,2"], out
    bad = subprocess.run([program, "--max-size", "0", "pipe"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--max-size must be 1 to 8192" in bad.stderr
