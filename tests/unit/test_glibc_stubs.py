"""gnu/stubs-64.h is read from the built archives' stub-marker sections."""
from __future__ import annotations

import subprocess
from pathlib import Path

from ukl.toolchain import glibc

# What glibc's stub_warning() leaves in an ENOSYS-only function's object.
_STUB_SOURCE = """
int revoke(void) { return -1; }
static const char marker[] __attribute__((section(".gnu.glibc-stub.revoke"), used)) = "";
int chflags(void) { return -1; }
static const char marker2[] __attribute__((section(".gnu.glibc-stub.chflags"), used)) = "";
"""


def _archive(tmp: Path, name: str, source: str) -> Path:
    (tmp / f"{name}.c").write_text(source)
    subprocess.run(["gcc", "-c", "-o", tmp / f"{name}.o", tmp / f"{name}.c"], check=True)
    subprocess.run(["ar", "rc", tmp / f"lib{name}.a", tmp / f"{name}.o"], check=True)
    return tmp / f"lib{name}.a"


def _tree(tmp: Path) -> Path:
    tree = tmp / "glibc"
    (tree / "include").mkdir(parents=True)
    (tree / "include" / "stubs-prologue.h").write_text(
        "@ a line for glibc's own sed\n/* prologue */\n#ifdef _LIBC\n# error\n#endif\n")
    return tree


def test_stub_markers_become_defines(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "usr" / "include" / "gnu").mkdir(parents=True)
    archives = [_archive(tmp_path, "stubs", _STUB_SOURCE),
                _archive(tmp_path, "real", "int getpid2(void) { return 1; }\n")]
    glibc._write_stubs_h(_tree(tmp_path), archives, root)
    text = (root / "usr" / "include" / "gnu" / "stubs-64.h").read_text()
    assert text.splitlines() == ["/* prologue */", "#ifdef _LIBC", "# error", "#endif",
                                 "#define __stub_chflags", "#define __stub_revoke"]


def test_before_the_build_only_the_prologue(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "usr" / "include" / "gnu").mkdir(parents=True)
    glibc._write_stubs_h(_tree(tmp_path), [], root)
    text = (root / "usr" / "include" / "gnu" / "stubs-64.h").read_text()
    assert "__stub_" not in text and "/* prologue */" in text
