"""ukl-cc argument handling and remembered progress estimates."""
from __future__ import annotations

import re

import pytest
from pathlib import Path

from ukl.common.proc import StepCounter
from ukl.toolchain import driver
from ukl.toolchain.driver import (DriverError, host_inputs, is_link, split_output, standin_soname,
                                  static_inputs)


def test_split_output_forms() -> None:
    assert split_output(["-O2", "-o", "app", "a.c", "-lm"]) == ("app", ["-O2", "a.c", "-lm"])
    assert split_output(["-oapp", "a.c"]) == ("app", ["a.c"])
    assert split_output(["a.c"]) == ("a.out", ["a.c"])


def test_is_link() -> None:
    assert is_link(["-o", "x", "a.c"])
    assert not is_link(["-c", "a.c"])
    assert not is_link(["-E", "-dM", "-x", "c", "/dev/null"])
    assert not is_link(["--version"])
    assert not is_link([])


def test_step_counter_remembers_largest_run(tmp_path: Path) -> None:
    pattern = re.compile(r"^  CC +(?P<what>\S+)")
    counter = StepCounter.remembered(pattern, tmp_path, default=3)
    assert counter.expected == 3
    for i in range(4):
        counter.feed(f"  CC      f{i}.o")
    assert (counter.seen, counter.last, counter.percent()) == (4, "f3.o", 99)
    counter.save(tmp_path)  # a full build larger than the default is recorded
    assert StepCounter.remembered(pattern, tmp_path, default=3).expected == 4
    small = StepCounter.remembered(pattern, tmp_path, default=3)
    small.feed("  CC      only.o")
    small.save(tmp_path)  # an incremental run does not shrink the estimate
    assert StepCounter.remembered(pattern, tmp_path, default=3).expected == 4
    assert StepCounter.remembered(pattern, tmp_path / "x", default=3).expected == 3
    noop = StepCounter.remembered(pattern, tmp_path, default=3)
    noop.save(tmp_path)
    assert (tmp_path / ".ukl-steps").read_text() == "4"


def test_static_inputs_take_the_archive_beside_a_shared_library(tmp_path: Path) -> None:
    libs = tmp_path / ".libs"
    libs.mkdir()
    (libs / "liblzma.so.5.4.1").write_text("")
    (libs / "liblzma.a").write_text("")
    (libs / "libonly.so").write_text("")
    shared = str(libs / "liblzma.so.5.4.1")
    assert static_inputs(["-O2", shared, "-lm"]) == ["-O2", str(libs / "liblzma.a"), "-lm"]
    with pytest.raises(DriverError, match="no libonly.a beside it"):
        static_inputs([str(libs / "libonly.so")])


def test_host_libraries_in_a_link_trace_are_found(tmp_path: Path) -> None:
    trace = "\n".join([
        f"{tmp_path}/user.o",
        "/usr/lib/x86_64-linux-gnu/libreadline.a(readline.o)",
        "/lib/x86_64-linux-gnu/libtinfo.so",
        f"{tmp_path}/sysroot/usr/lib/x86_64-linux-gnu/libc.a(printf.o)",
    ])
    assert host_inputs(trace) == ["/lib/x86_64-linux-gnu/libtinfo.so",
                                  "/usr/lib/x86_64-linux-gnu/libreadline.a"]


def test_standin_soname_forms() -> None:
    assert standin_soname(["-Wl,-soname,libz.so.1", "a.o"]) == "libz.so.1"
    assert standin_soname(["-Wl,-soname=libz.so.1"]) == "libz.so.1"
    assert standin_soname(["-Wl,-soname", "-Wl,liblzma.so.5"]) == "liblzma.so.5"
    assert standin_soname(["a.o"]) is None


def test_final_link_options_are_left_out_of_the_partial_link() -> None:
    assert driver.partial_link_args(["-Wl,-z,relro", "-Wl,--gc-sections", "-O2", "x.o",
                                     "-Wl,-z,now,--gc-sections,-O1"]) == [
        "-Wl,-z,relro", "-O2", "x.o", "-Wl,-z,now,-O1"]
