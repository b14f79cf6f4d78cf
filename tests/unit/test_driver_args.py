"""ukl-cc argument handling and remembered progress estimates."""
from __future__ import annotations

import re
from pathlib import Path

from ukl.common.proc import StepCounter
from ukl.toolchain.driver import is_link, split_output


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
