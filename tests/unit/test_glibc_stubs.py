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


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                                          "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t",
                                          "PATH": "/usr/bin:/bin"}).stdout.strip()


def _commit(repo: Path, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "change")
    return _git(repo, "rev-parse", "HEAD")


def test_only_edits_of_sources_keep_the_objects(tmp_path: Path) -> None:
    # Which tree changes make's dependency files see (edits of existing C,
    # header and assembly files) and which force a rebuild of every object.
    repo = tmp_path / "glibc"
    repo.mkdir()
    _git(repo, "init", "-q")
    base = _commit(repo, {"a.c": "1", "sysdeps/x.h": "1", "Makefile": "1", "s.S": "1"})
    edited = _commit(repo, {"a.c": "2", "sysdeps/x.h": "2", "s.S": "2"})
    assert glibc._only_sources_modified(repo, base, edited)
    added = _commit(repo, {"sysdeps/y/x.h": "shadows sysdeps/x.h"})
    assert not glibc._only_sources_modified(repo, edited, added)
    makefile = _commit(repo, {"Makefile": "2"})
    assert not glibc._only_sources_modified(repo, added, makefile)
    assert not glibc._only_sources_modified(repo, "0" * 40, makefile)
