"""`ukl profile`'s host side: the function table, the plugin's output,
the flat profile, stacks, the flame graph and bad command lines."""
from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.common.errors import UklError, UsageError
from ukl.profile import analysis, data, flame, series, symbols
from ukl.profile import run as profiler

NM = """\
ffffffff81000000 0000000000000040 T do_work
ffffffff81000000 0000000000000040 t __do_work_alias
ffffffff81000010 t .Llocal_label
ffffffff81000020 0000000000000008 t nested_inside
ffffffff81000040 T asm_exc_page_fault
ffffffff81000060 0000000000000010 T irq_entries_start
ffffffff81000100 T __ukl_text_start
ffffffff81000100 0000000000000020 T __ukl__start
ffffffff81000120 0000000000000020 T __ukl_main
ffffffff81000140 T __ukl_text_end
ffffffff81000200 0000000000000010 T __x64_sys_getppid
ffffffff81000300 0000000000000010 D not_text
"""


def _funcs() -> list[symbols.Function]:
    syms = symbols.parse_nm(NM)
    where = {s.name: s.lo for s in syms}
    return symbols.functions(syms, app_range=(where["__ukl_text_start"],
                                              where["__ukl_text_end"]))


def test_function_table_from_nm() -> None:
    funcs = _funcs()
    got = [(f.lo & 0xfff, f.hi & 0xfff, f.name, f.kind, f.flags) for f in funcs]
    # Aliases and nested symbols are left out; a symbol without a size ends
    # at the next; the application's lose the UKL prefix and are "app".
    assert got[:3] == [(0x000, 0x040, "do_work", "kernel", "-"),
                       (0x040, 0x060, "asm_exc_page_fault", "kernel", "e"),
                       (0x060, 0x070, "irq_entries_start", "kernel", "E")]
    assert ("_start", "app", "r") in [(n, k, fl) for _, _, n, k, fl in got]
    assert ("main", "app", "-") in [(n, k, fl) for _, _, n, k, fl in got]
    assert "not_text" not in [f.name for f in funcs]
    assert all(a.hi <= b.lo for a, b in zip(funcs, funcs[1:]))


def test_symbols_file_round_trip_and_names(tmp_path: Path) -> None:
    funcs = _funcs()
    path = tmp_path / "symbols.txt"
    symbols.write(funcs, path)
    assert path.read_text().splitlines()[0] == "ffffffff81000000 ffffffff81000040 - kernel do_work"
    assert symbols.read(path) == funcs
    assert symbols.names(funcs)[-2:] == [symbols.UNKNOWN_USER, symbols.UNKNOWN_KERNEL]
    assert symbols.address(funcs, "main") == 0xffffffff81000120
    with pytest.raises(UsageError, match="no function"):
        symbols.address(funcs, "nosuch")


def test_a_program_overlapping_the_kernel_is_refused() -> None:
    kernel = [symbols.Function(0x1000, 0x2000, "k", symbols.KERNEL)]
    program = [symbols.Function(0x400000, 0x400010, "_start", symbols.APP)]
    assert [f.name for f in symbols.merge(kernel, program)] == ["k", "_start"]
    with pytest.raises(UklError, match="overlap"):
        symbols.merge(kernel, [symbols.Function(0x1800, 0x1900, "x", symbols.APP)])


# Functions 0 main, 1 loop, 2 sys, 3 rec; 4 and 5 the unknown buckets.
NAMES = ["main", "loop", "sys", "rec", symbols.UNKNOWN_USER, symbols.UNKNOWN_KERNEL]
KINDS = ["app", "app", "kernel", "kernel", "user", "kernel"]
RAW = """\
# ukl_profile 1
total\t1000\tpasses\t2\toverruns\t0
functions\t6
columns\tself\tentries\texits\tswapgs
f\t0\t100\t0\t0\t0
f\t1\t300\t5\t0\t0
f\t2\t450\t0\t5\t10
f\t3\t150\t0\t0\t0
n\t1\t0\t0\t100
n\t2\t1\t1\t300
n\t3\t2\t2\t400
n\t4\t3\t3\t100
n\t5\t4\t3\t50
n\t6\t5\t2\t50
"""


def test_flat_profile_inclusive_and_stacks() -> None:
    prof = analysis.analyse(data.parse(RAW), NAMES, KINDS)
    assert [r.name for r in prof.rows] == ["sys", "loop", "rec", "main"]
    rows = {r.name: r for r in prof.rows}
    assert rows["main"].inclusive == 1000
    assert rows["loop"].inclusive == 900
    # sys and rec recurse into themselves: counted once, at the outermost.
    assert rows["sys"].inclusive == 600 and rows["rec"].inclusive == 200
    assert rows["loop"].transitions == 5 and rows["sys"].events["swapgs"] == 10
    assert prof.folded["main;loop;sys;rec;rec;sys"] == 50
    assert sum(prof.folded.values()) == prof.total == prof.attributed
    assert analysis.problems(prof) == []
    text = analysis.table(prof, top=2)
    assert "1000 instructions in 2 pass(es)" in text and "sys" in text and "rec" not in text
    assert analysis.flat_csv(prof).splitlines()[1].startswith("sys,kernel,450,0.450000,600,")
    assert "main;loop;sys 400\n" in analysis.folded_text(prof)
    assert "  sys (60.0%)" in prof.tree


def test_context_switch_functions_flagged_and_a_profile_without_switches_noted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kernel = [symbols.Function(0x1000 * i, 0x1000 * i + 0x10, name, symbols.KERNEL)
              for i, name in enumerate(["__switch_to_asm", "ret_from_fork", "do_task_dead"], 1)]
    assert [f.flags for f in kernel] == ["s", "f", "x"]
    # Only the kernel's: an application's function of that name is not.
    assert symbols.Function(0, 1, "ret_from_fork", symbols.APP).flags == "-"
    followed = data.parse(RAW.replace("overruns\t0", "overruns\t0\tswitches\t7"))
    none = data.parse(RAW.replace("overruns\t0", "overruns\t0\tswitches\t0"))
    assert followed.switches == 7 and data.parse(RAW).switches is None
    assert profiler.stacks_note(followed, kernel) is None
    assert "save and load were not found" in (profiler.stacks_note(none, kernel) or "")
    assert "no such function" in (profiler.stacks_note(none, kernel[1:]) or "")
    # Printed once, and at the head of profile.txt.
    note = profiler.stacks_note(none, kernel)
    profiler.write(analysis.analyse(none, NAMES, KINDS), profiler.Request(image="x", out=tmp_path),
                   dict(zip(NAMES, KINDS)), "img", note)
    assert capsys.readouterr().err == f"ukl: note: {note}\n"
    assert (tmp_path / "profile.txt").read_text().splitlines()[1] == f"note: {note}"


def test_a_profile_that_does_not_add_up_says_so() -> None:
    raw = data.parse(RAW.replace("total\t1000", "total\t1001"))
    found = analysis.problems(analysis.analyse(raw, NAMES, KINDS))
    assert len(found) == 2 and "1001" in found[0]


@pytest.mark.parametrize("text, message", [
    ("nope\n", "no header"),
    ("# ukl_profile 1\ntotal\t1\tpasses\t1\toverruns\t0\nfunctions\t2\ncolumns\tself\n"
     "f\t7\t1\n", "out of range"),
    ("# ukl_profile 1\ntotal\t1\tpasses\t1\toverruns\t0\nfunctions\t2\ncolumns\tself\n"
     "n\t2\t1\t0\t1\n", "before its parent"),
])
def test_bad_plugin_output(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        data.parse(text)


def test_missing_plugin_output_is_a_ukl_error(tmp_path: Path) -> None:
    with pytest.raises(UklError, match="wrote no"):
        data.read(tmp_path / "raw.tsv")


def test_flame_graph_is_valid_svg_with_every_frame() -> None:
    folded = {"main;loop;sys": 600, "main;loop": 300, "main;<odd & name>": 100}
    svg = flame.render(folded, {"main": "app", "sys": "kernel"}, "a <title>")
    root = ET.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    ns = {"s": "http://www.w3.org/2000/svg"}
    titles = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}title")]
    for name in ("all", "main", "loop", "sys", "<odd & name>"):
        assert any(t.startswith(f"{name} (") for t in titles), name
    # Widths are proportional to inclusive counts: main is the whole width.
    rects = {g.find("s:title", ns).text.split(" (")[0]: float(g.find("s:rect", ns).get("width"))
             for g in root.iter("{http://www.w3.org/2000/svg}g")}
    assert rects["main"] == pytest.approx(rects["all"])
    assert rects["sys"] == pytest.approx(0.6 * rects["all"])


def test_plugin_argument(tmp_path: Path) -> None:
    funcs = _funcs()
    req = profiler.Request(image="x", out=tmp_path, window="markers")
    arg = profiler.plugin_argument(Path("/p/ukl_profile.so"), Path("/o/raw.tsv"),
                                   Path("/o/s.txt"), req, funcs)
    assert arg == "/p/ukl_profile.so,out=/o/raw.tsv,syms=/o/s.txt,window=markers"
    req = profiler.Request(image="x", out=tmp_path, between=("main", "__x64_sys_getppid"))
    assert profiler.plugin_argument(Path("/p.so"), Path("/r"), Path("/s"), req, funcs) == \
        "/p.so,out=/r,syms=/s,from=ffffffff81000120,to=ffffffff81000200"
    with pytest.raises(UklError, match="without commas"):
        profiler.plugin_argument(Path("/p.so"), Path("/a,b"), Path("/s"), req, funcs)


def test_plugin_argument_with_a_series(tmp_path: Path) -> None:
    funcs = _funcs()
    req = profiler.Request(image="x", out=tmp_path, every=250000,
                           track=["main", "__x64_sys_getppid"])
    arg = profiler.plugin_argument(Path("/p.so"), Path("/r"), Path("/s"), req, funcs)
    # Function indices are lines of the syms= file; ':' because QEMU splits
    # a plugin's arguments at commas.
    index = [f.name for f in funcs].index
    assert arg == ("/p.so,out=/r,syms=/s,every=250000,"
                   f"track={index('main')}:{index('__x64_sys_getppid')}")
    with pytest.raises(UsageError, match="--track nosuch: no function 'nosuch'"):
        series.indices(funcs, ["main", "nosuch"])


@pytest.mark.parametrize("text, insns", [("1", 1_000_000), ("0.25", 250_000), ("2.5", 2_500_000),
                                         ("0.001", 1000), ("10.0000000", 10_000_000)])
def test_every_is_exact_millions(text: str, insns: int) -> None:
    assert series.every_instructions(text) == insns


@pytest.mark.parametrize("text, message", [
    ("0", "at least"), ("0.0005", "at least"), ("-1", "positive number"), ("1e6", "positive"),
    ("abc", "positive"), ("0.0000001", "whole number of instructions"),
])
def test_bad_every(text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        series.every_instructions(text)


def test_track_names() -> None:
    assert series.track_names("call, tcp_sendmsg") == ["call", "tcp_sendmsg"]
    with pytest.raises(UsageError, match="separated by commas"):
        series.track_names("a,,b")
    with pytest.raises(UsageError, match="named twice"):
        series.track_names("a,a")


SERIES = RAW + """\
series\t1000\t1\t2
s\t0\t1000\t3\t200\t0\t0
s\t1\t2000\t2\t100\t5\t450
s\t2\t2400\t0\t0\t0\t0
"""


def test_series_parsed_and_written_as_csv() -> None:
    raw = data.parse(SERIES)
    assert raw.every == 1000 and raw.tracked == [1, 2]
    assert raw.series[1] == data.Interval(2000, [2, 5], [100, 450])
    assert series.to_csv(raw, NAMES).splitlines() == [
        "interval,insns_end,loop_calls,loop_self,sys_calls,sys_self",
        "0,1000,3,200,0,0", "1,2000,2,100,5,450", "2,2400,0,0,0,0"]
    # Without a series: nothing.
    assert data.parse(RAW).series == [] and data.parse(RAW).every == 0


@pytest.mark.parametrize("bad, message", [
    ("s\t0\t1000\t3\t200\t0\n", "fields"),
    ("s\t1\t1000\t3\t200\t0\t0\n", "out of order"),
])
def test_bad_series(bad: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        data.parse(RAW + "series\t1000\t1\t2\n" + bad)


def test_series_plot_is_a_png(tmp_path: Path) -> None:
    raw = data.parse(SERIES)
    out = tmp_path / "series.png"
    series.plot(raw, NAMES, "a title", out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_series_written_and_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    req = profiler.Request(image="x", out=tmp_path, every=1000, track=["loop", "sys"])
    profiler.write_series(data.parse(SERIES), NAMES, req, "img")
    assert (tmp_path / "series.csv").is_file() and (tmp_path / "series.png").is_file()
    # The intervals add up to the profile (loop 300, sys 450): no warning.
    assert capsys.readouterr().err == ""
    shifted = SERIES.replace("s\t1\t2000\t2\t100", "s\t1\t2001\t2\t99")
    profiler.write_series(data.parse(shifted), NAMES, req, "img")
    err = capsys.readouterr().err
    assert "multiples of 1000" in err and "loop's intervals sum to 299" in err


@pytest.mark.parametrize("args, message", [
    (["--smp", "2"], "--smp 2: a profile runs on 1 CPU"),
    (["--every", "1"], "give --every and --track together"),
    (["--track", "f"], "give --every and --track together"),
    (["--every", "x", "--track", "f"], "--every x: give a positive number of millions"),
    (["--every", "1", "--track", "f,f"], "--track f,f: a function is named twice"),
    (["--load", "true"], "--load needs a port forward"),
    (["-p", "1:99999"], "-p 1:99999: use HOST:GUEST"),
    (["--window", "300"], "--window 300: give a window number from 0 to 255"),
    (["--window", "--between", "a", "b"], "give --window or --between, not both"),
    (["--top", "0"], "--top must be at least 1"),
])
def test_bad_command_lines_are_one_line(args: list[str], message: str) -> None:
    res = ukl("profile", "no-such-image", *args)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert lines == [f"ukl: error: {message}"] or (len(lines) == 1 and message in lines[0])


def test_missing_image_is_one_line(tmp_path: Path) -> None:
    res = ukl("profile", str(tmp_path / "no-such-image"), "-o", str(tmp_path / "out"))
    assert res.returncode == 2
    assert res.stderr.startswith("ukl: error: no image")


def test_a_folder_of_other_files_is_not_written_into(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "flat.csv").write_text("a user's own file\n")
    res = ukl("profile", "no-such-image", "-o", str(folder))
    assert res.returncode == 2
    assert res.stderr.startswith("ukl: error: -o ") and "no earlier profile" in res.stderr
    assert (folder / "flat.csv").read_text() == "a user's own file\n"


def test_unknown_tracked_function_is_one_line(tmp_path: Path) -> None:
    # An image whose "kernel" is any ELF with symbols: the name is checked
    # against them before the plugin is built or anything boots.
    img = tmp_path / "img"
    img.mkdir()
    (img / "image.json").write_text('{"name": "img", "kernel_flavour": "ukl", "mode": "ukl", '
                                    '"program": "/UKL"}')
    elf = tmp_path / "k.c"
    elf.write_text("int main(void) { return 0; }\n")
    subprocess.run(["cc", "-o", str(img / "vmlinux"), str(elf)], check=True)
    (img / "initramfs.cpio").write_bytes(b"")
    res = ukl("profile", str(img), "-o", str(tmp_path / "out"), "--every", "1", "--track",
              "main,no_such_function")
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines() == [
        "ukl: error: --track no_such_function: no function 'no_such_function' in the "
        "image's symbols"]
