"""The newc writer: our reader and busybox's cpio both accept what it writes."""
from __future__ import annotations

import io
import stat
import subprocess

import pytest

from ukl.image.cpio import CpioWriter, read_names


def _archive() -> bytes:
    buf = io.BytesIO()
    w = CpioWriter(buf)
    w.add_dir("bin")
    w.add_file("bin/hello", b"#!/bin/sh\necho hi\n", 0o755)
    w.add_file("odd", b"x" * 5)  # unaligned size exercises padding
    w.add_symlink("bin/sh", "busybox")
    w.add_chardev("dev/console", 5, 1)
    w.close()
    return buf.getvalue()


def test_round_trip() -> None:
    data = _archive()
    assert len(data) % 4 == 0
    entries = {name: (mode, body) for name, mode, body in read_names(data)}
    assert stat.S_ISDIR(entries["bin"][0])
    assert entries["bin/hello"] == (stat.S_IFREG | 0o755, b"#!/bin/sh\necho hi\n")
    assert entries["odd"][1] == b"xxxxx"
    assert stat.S_ISLNK(entries["bin/sh"][0]) and entries["bin/sh"][1] == b"busybox"
    assert stat.S_ISCHR(entries["dev/console"][0])


def test_reproducible() -> None:
    assert _archive() == _archive()


def test_duplicate_rejected() -> None:
    w = CpioWriter(io.BytesIO())
    w.add_dir("etc")
    with pytest.raises(ValueError, match="duplicate"):
        w.add_dir("/etc")


def test_busybox_cpio_lists_it() -> None:
    res = subprocess.run(["/bin/busybox", "cpio", "-t"], input=_archive(),
                         capture_output=True, check=True)
    assert res.stdout.decode().split() == ["bin", "bin/hello", "odd", "bin/sh", "dev/console"]
