"""`ukl profile` is exact: tests/programs/profile_loop.c runs known work
(f: 2 * K + 2 instructions of its own; getppid_loop: getppid() calls)
inside counting windows, on the UKL kernel (application and kernel in one
vmlinux) and as an ordinary process on stock, under -icount; its series
(--every, --track) splits f's known calls and instructions exactly into
intervals; and its call stacks follow context switches: in
tests/programs/profile_pingpong.c two threads of a UKL application take
turns blocking in pipe reads, and each one's kernel frames stay under its
own thread function."""
from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, build_image, ukl
from ukl.bench import counts
from ukl.profile import data, symbols

pytestmark = pytest.mark.boot
PROGRAM = PROGRAMS / "profile_loop.c"
K = 100000
CALLS = 1000


def _profile(image: str, out: Path, *args: str,
             heaviest: str | None = "f") -> dict[str, dict[str, str]]:
    """Profile `image`; the flat profile, by function. Checks what every
    profile must hold: it adds up, the program ran to its end, and the
    stacks followed the kernel's context switches."""
    res = ukl("profile", image, "-o", str(out), "--quiet-console", "--timeout", "600", *args,
              timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "warning" not in res.stderr and "note" not in res.stderr, res.stderr
    with (out / "flat.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    # By name: a whole run has static functions that share one, but not the
    # ones the tests look up.
    flat = {row["function"]: row for row in rows}
    raw = data.read(out / "raw.tsv")
    # Every instruction of the window is in exactly one function, and in
    # exactly one stack.
    assert sum(int(r["self"]) for r in rows) == raw.total
    folded = (out / "stacks.folded").read_text().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded) == raw.total
    assert raw.overruns == 0
    assert raw.switches, "no context switch followed"
    # The table printed at the end names the heaviest function.
    if heaviest is not None:
        assert f" {heaviest}\n" in res.stdout, res.stdout
    return flat


def _check(flat: dict[str, dict[str, str]], out: Path, entry: str) -> None:
    """f's own instructions exactly; the loop and the kernel's getppid in
    one call chain, through `entry`; both in the flame graph."""
    assert int(flat["f"]["self"]) == 2 * K + 2
    assert flat["f"]["kind"] == "app" and flat["__x64_sys_getppid"]["kind"] == "kernel"
    assert flat["getppid_loop"]["kind"] == "app"
    assert int(flat["__x64_sys_getppid"]["inclusive"]) >= int(flat["__x64_sys_getppid"]["self"])
    chains = [line for line in (out / "stacks.folded").read_text().splitlines()
              if "__x64_sys_getppid" in line]
    assert any(f"main;getppid_loop;__getppid;{entry};" in c for c in chains), chains
    svg = ET.parse(out / "flame.svg").getroot()
    titles = " ".join(t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}title"))
    assert "getppid_loop (" in titles and "__x64_sys_getppid (" in titles


def _counts_total(image: str, tmp_path: Path) -> int:
    """The ukl_counts plugin's instructions in windows 0 and 1."""
    out = tmp_path / "counts.csv"
    res = ukl("run", image, "--icount", "--count", str(out), "--append", "norandmaps",
              "--quiet-console", "--timeout", "600")
    assert res.returncode == 0, res.stdout + res.stderr
    w = counts.read(out)
    return w["0"].counts["insns"] + w["1"].counts["insns"]


def test_profile_on_ukl(ukl_kernel: Path, tmp_path: Path) -> None:
    image = build_image("t-profile-ukl", str(PROGRAM))
    flat = _profile(image, tmp_path / "p", "--window")
    _check(flat, tmp_path / "p", "ukl_entry_SYSCALL_64")
    # A system call is a function call: no privilege transition.
    assert all(r["transitions"] == "0" for r in flat.values())
    # The same windows, counted by the other plugin.
    total = data.read(tmp_path / "p" / "raw.tsv").total
    assert total == _counts_total(image, tmp_path)


def test_profile_of_a_process_on_stock(stock_kernel: Path, tmp_path: Path) -> None:
    image = build_image("t-profile-stock", str(PROGRAM), "--kernel", "stock")
    flat = _profile(image, tmp_path / "p", "--window")
    _check(flat, tmp_path / "p", "entry_SYSCALL_64")
    # Each getppid() enters the kernel by SYSCALL in glibc's __getppid and
    # leaves by SYSRET from entry_SYSCALL_64.
    assert int(flat["__getppid"]["entries"]) == int(flat["__getppid"]["syscall"]) == CALLS
    assert int(flat["entry_SYSCALL_64"]["sysret"]) == CALLS
    # Between two functions: from f's first instruction to getppid_loop's.
    between = _profile(image, tmp_path / "b", "--between", "f", "getppid_loop")
    assert int(between["f"]["self"]) == 2 * K + 2
    assert data.read(tmp_path / "b" / "raw.tsv").passes == 1


SERIES_K = 1000
SERIES_CALLS = 3000


def _series(out: Path) -> list[dict[str, int]]:
    with (out / "series.csv").open(newline="") as f:
        return [{k: int(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _check_series(rows: list[dict[str, int]], flat: dict[str, dict[str, str]],
                  every: int) -> None:
    """Every interval but the last ends at a multiple of `every`; each
    tracked function's intervals add up to its profile; f is entered
    exactly SERIES_CALLS times, across more than one interval."""
    assert [r["interval"] for r in rows] == list(range(len(rows)))
    assert [r["insns_end"] for r in rows[:-1]] == [every * (k + 1) for k in range(len(rows) - 1)]
    assert every * (len(rows) - 1) < rows[-1]["insns_end"] <= every * len(rows)
    assert sum(r["f_calls"] for r in rows) == SERIES_CALLS
    assert sum(r["f_self"] for r in rows) == int(flat["f"]["self"]) \
        == SERIES_CALLS * (2 * SERIES_K + 2)
    assert len([r for r in rows if r["f_calls"]]) > 1
    assert sum(r["__x64_sys_getppid_self"] for r in rows) == int(flat["__x64_sys_getppid"]["self"])
    assert sum(r["__x64_sys_getppid_calls"] for r in rows) >= CALLS


def test_series_on_ukl(ukl_kernel: Path, tmp_path: Path) -> None:
    image = build_image("t-profile-ukl", str(PROGRAM))
    track = ("--track", "f,__x64_sys_getppid")
    # The whole run, in intervals of a million instructions.
    flat = _profile(image, tmp_path / "w", "--every", "1", *track, "--", "series")
    _check_series(_series(tmp_path / "w"), flat, 1_000_000)
    assert (tmp_path / "w" / "series.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Only the windows, in intervals of 0.25 million: the windows open and
    # close inside intervals, the sums still match the (window's) profile.
    flat = _profile(image, tmp_path / "m", "--window", "--every", "0.25", *track, "--", "series")
    rows = _series(tmp_path / "m")
    _check_series(rows, flat, 250_000)
    assert sum(r["__x64_sys_getppid_calls"] for r in rows) == CALLS


PINGPONG = PROGRAMS / "profile_pingpong.c"
ROUNDS = 200
THREADS = ("ping_thread", "pong_thread")


def test_stacks_follow_context_switches_on_ukl(ukl_kernel: Path, tmp_path: Path) -> None:
    """Two threads ping-pong over pipes ROUNDS times in window 0: the CPU
    switches between their kernel stacks every round, and a UKL
    application never returns to user mode, where a per-CPU shadow stack
    would be reset. Every stack through pipe_read or pipe_write must be
    one thread's own: from the program's code down to its thread function,
    never under the other thread's frames or an interrupt's entry. Then
    console output brings serial interrupts (an IRQ stub, then the common
    entry): each must leave no frame behind, so no stack has the
    program's code above an interrupt entry."""
    image = build_image("t-profile-pingpong", str(PINGPONG))
    out = tmp_path / "p"
    _profile(image, out, "--window", "--every", "1", "--track", "pipe_read,pipe_write",
             heaviest=None)
    # The known work: each thread reads and writes once a round.
    rows = _series(out)
    assert sum(r["pipe_read_calls"] for r in rows) == 2 * ROUNDS
    assert sum(r["pipe_write_calls"] for r in rows) == 2 * ROUNDS
    funcs = symbols.read(out / "symbols.txt")
    # The program's function names; `only` those the kernel has not too
    # (as start_thread), which in a stack can only be the program's.
    program = {f.name for f in funcs if f.kind == symbols.APP}
    only = program - {f.name for f in funcs if f.kind != symbols.APP}
    entries = {f.name for f in funcs if f.flags in ("e", "E")}
    per_thread = dict.fromkeys(THREADS, 0)
    app_rooted = total = interrupted = 0
    for line in (out / "stacks.folded").read_text().splitlines():
        stack, count = line.rsplit(" ", 1)
        frames = stack.split(";")
        total += int(count)
        app_rooted += int(count) if frames[0] in program else 0
        entry = next((i for i, name in enumerate(frames) if name in entries), None)
        if entry is not None:
            interrupted += int(count)
            assert not only & set(frames[entry:]), line
        pipe = [i for i, name in enumerate(frames) if name in ("pipe_read", "pipe_write")]
        if not pipe:
            continue
        # Starts in the program; one thread function, among the program's
        # frames before the first kernel frame; no event entry among the
        # pipe function's callers.
        assert frames[0] in program, line
        own = frames[:next(i for i, name in enumerate(frames) if name not in program)]
        mine = [t for t in THREADS if t in frames]
        assert len(mine) == 1 and mine[0] in own, line
        assert not entries & set(frames[:pipe[0]]), line
        per_thread[mine[0]] += int(count)
    assert all(per_thread.values()), per_thread
    assert interrupted, "no interrupt in the window"
    # Nearly all of the window is under the program's own stacks (the rest:
    # the new threads' first kernel code, from ret_from_fork).
    assert app_rooted >= 0.98 * total, (app_rooted, total)
