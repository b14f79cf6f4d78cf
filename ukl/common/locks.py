"""File locks between ukl commands that share a build/ tree.

Two `ukl` commands may run at once (a catalog run beside a test suite, a
build in one shell while another boots, the test suite's two workers):
whatever they both write (a kernel output directory, a Debian build tree,
apt's package lists) is written under a lock. The kernel lets a lock go
when its holder dies, so a killed command never leaves one behind.
"""
from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def held(lock_file: Path, shared: bool = False) -> Iterator[None]:
    """Hold `lock_file`'s lock (created if missing): exclusive to write
    what it guards, shared to read it."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield
