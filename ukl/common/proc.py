"""Run long external steps with a log file, a progress line and a clear failure.

Long steps (kernel build, source extraction) write everything to a log under
build/logs/. The terminal shows one progress line; on failure the user gets
the tail of the log and its path, never a wall of compiler output.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from ukl.common.errors import Interrupted, UklError

TAIL_LINES = 25
# Where a build directory remembers how many steps its full build took.
STEPS_FILE = ".ukl-steps"


@dataclass
class StepCounter:
    """Counts progress by matching output lines (e.g. Kbuild's '  CC  foo.o').

    `expected` is how many matching lines a full run produced last time; the
    percentage is capped below 100 until the command actually finishes.
    """

    pattern: re.Pattern[str]
    expected: int
    seen: int = 0
    # What the last step was about: the pattern's 'what' group, if it has
    # one, else the whole line.
    last: str = ""

    def feed(self, line: str) -> bool:
        m = self.pattern.match(line)
        if not m:
            return False
        self.seen += 1
        self.last = (m.groupdict().get("what") or line).strip()
        return True

    @classmethod
    def remembered(cls, pattern: re.Pattern[str], build_dir: Path,
                   default: int) -> "StepCounter":
        """A counter expecting as many steps as the largest run in build_dir
        (recorded by save()), or `default` before the first run."""
        steps = build_dir / STEPS_FILE
        return cls(pattern, int(steps.read_text()) if steps.is_file() else default)

    def save(self, build_dir: Path) -> None:
        """Record the step count if this run was larger than expected (a full
        build bigger than the default); incremental and no-op runs leave the
        estimate alone."""
        if self.seen > self.expected:
            (build_dir / STEPS_FILE).write_text(str(self.seen))

    def percent(self) -> int:
        if self.expected <= 0:
            return 0
        return min(99, self.seen * 100 // self.expected)


class ProgressLine:
    """A single status line: redrawn in place on a terminal, sparse otherwise."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0
        self.last_percent = -1

    def update(self, percent: int, what: str) -> None:
        now = time.monotonic()
        if self.tty:
            if now - self.last_print < 0.1:
                return
            text = f"   [{self.label}] {percent:3d}% {what}"[:100]
            sys.stderr.write("\r\033[K" + text)
            sys.stderr.flush()
            self.last_print = now
            return
        # Non-interactive (CI logs): a line every 10% or every 30 seconds.
        if percent // 10 != self.last_percent // 10 or now - self.last_print > 30:
            sys.stderr.write(f"   [{self.label}] {percent:3d}% {what}\n")
            sys.stderr.flush()
            self.last_print = now
            self.last_percent = percent

    def finish(self) -> None:
        if self.tty:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def log_tail(path: Path, lines: int = TAIL_LINES) -> str:
    try:
        with path.open(errors="replace") as f:
            return "".join(deque(f, maxlen=lines))
    except OSError:
        return ""


def log_size(path: Path) -> int:
    """Where the next appended step will start in `path` (0 if none yet)."""
    return path.stat().st_size if path.is_file() else 0


def log_since(path: Path, start: int) -> str:
    """What was appended to log `path` from byte `start` on (a step's own
    output, in a log several steps append to)."""
    try:
        return path.read_bytes()[start:].decode(errors="replace")
    except OSError:
        return ""


def run_logged(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    label: str,
    log_path: Path,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    counter: StepCounter | None = None,
    append: bool = False,
    progress: bool = True,
) -> None:
    """Run `cmd`, sending its output to `log_path`, showing progress.

    With append=True the log keeps what earlier steps wrote to it. With
    progress=False (a step running beside another that shows its own) only
    the closing "done" line is printed.

    Raises UklError with the log tail if the command fails.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    line_shown = ProgressLine(label) if progress else None
    started = time.monotonic()
    try:
        proc = subprocess.Popen(
            [str(c) for c in cmd],
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except FileNotFoundError as e:
        raise UklError(f"{label}: cannot run {cmd[0]!s}: {e.strerror}") from e
    assert proc.stdout is not None
    with log_path.open("a" if append else "w") as log:
        log.write("$ " + " ".join(str(c) for c in cmd) + "\n")
        for line in proc.stdout:
            log.write(line)
            if counter is not None and counter.feed(line) and line_shown:
                line_shown.update(counter.percent(), counter.last)
            elif counter is None and line_shown:
                line_shown.update(0, f"{time.monotonic() - started:.0f}s {line.strip()}")
    rc = proc.wait()
    if line_shown:
        line_shown.finish()
    if rc < 0:
        raise Interrupted(f"{label} was stopped by signal {-rc}; full log: {log_path}",
                          detail=log_tail(log_path))
    if rc != 0:
        raise UklError(
            f"{label} failed (exit status {rc}); full log: {log_path}",
            detail=log_tail(log_path),
        )
    took = time.monotonic() - started
    if took >= 10:
        # A step without a line of its own may finish while another's
        # progress line is drawn: clear that first (it is redrawn next).
        clear = "\r\033[K" if not progress and sys.stderr.isatty() else ""
        print(f"{clear}   [{label}] done in {took:.0f} s", file=sys.stderr)


def run_quiet(cmd: Sequence[str | os.PathLike[str]], *, what: str,
              cwd: Path | None = None, env: Mapping[str, str] | None = None) -> str:
    """Run a short command, return its stdout; on failure raise with its stderr."""
    try:
        res = subprocess.run(
            [str(c) for c in cmd], cwd=cwd, env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL, capture_output=True, text=True, errors="replace",
        )
    except FileNotFoundError as e:
        raise UklError(f"{what}: cannot run {cmd[0]!s}: {e.strerror}") from e
    if res.returncode != 0:
        raise UklError(
            f"{what} failed (exit status {res.returncode}): {' '.join(str(c) for c in cmd)}",
            detail=(res.stderr or res.stdout)[-3000:],
        )
    return res.stdout
