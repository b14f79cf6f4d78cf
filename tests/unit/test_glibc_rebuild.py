"""When an incremental glibc build must recompile every object: no make rule
depends on the configuration or on new files in the tree."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ukl.toolchain import glibc, layout


def _git(tree: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(tree), *args], check=True, capture_output=True)


def _commit(tree: Path, message: str) -> None:
    _git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", message)


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    tree, out = tmp_path / "tree", tmp_path / "out"
    tree.mkdir()
    out.mkdir()
    _git(tree, "init", "-q")
    (tree / "a.c").write_text("int a;\n")
    _git(tree, "add", "a.c")
    _commit(tree, "one")
    (out / ".ukl-configure-digest").write_text("cflags-1")
    return tree, out


def _built(tree: Path, out: Path) -> Path:
    """A first build's record, and one object in it."""
    glibc._forget_objects_if_tree_changed(tree, out)
    obj = out / "csu" / "a.o"
    obj.parent.mkdir(exist_ok=True)
    obj.write_bytes(b"\x7fELF")
    return obj


def test_same_tree_and_configuration_keep_the_objects(tmp_path: Path) -> None:
    tree, out = _setup(tmp_path)
    obj = _built(tree, out)
    assert not glibc._forget_objects_if_tree_changed(tree, out)
    assert obj.exists()


def test_edited_sources_keep_the_objects(tmp_path: Path) -> None:
    tree, out = _setup(tmp_path)
    obj = _built(tree, out)
    (tree / "a.c").write_text("int a = 1;\n")
    _commit(tree, "two")
    assert not glibc._forget_objects_if_tree_changed(tree, out)
    assert obj.exists()


def test_new_configuration_forgets_the_objects(tmp_path: Path) -> None:
    # Other CFLAGS (a new configure digest) with the same tree: every object
    # must be compiled again, or the libraries keep the old flags.
    tree, out = _setup(tmp_path)
    obj = _built(tree, out)
    (out / ".ukl-configure-digest").write_text("cflags-2")
    assert glibc._forget_objects_if_tree_changed(tree, out)
    assert not obj.exists()


def test_new_configparms_forgets_the_objects(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The speculation flags are given in configparms, which no rule
    # depends on either: a change there must compile everything again.
    tree, out = _setup(tmp_path)
    obj = _built(tree, out)
    monkeypatch.setattr(glibc, "CONFIGPARMS", glibc.CONFIGPARMS + "CFLAGS += -O3\n")
    assert glibc._forget_objects_if_tree_changed(tree, out)
    assert not obj.exists()


def test_configparms_gives_the_thunks_to_make_only(tmp_path: Path) -> None:
    glibc._write_configparms(tmp_path)
    parms = (tmp_path / "configparms").read_text()
    assert f"CFLAGS += {' '.join(layout.SPECULATION_CFLAGS)}\n" in parms
    assert "build-programs = no\n" in parms
    # configure is given the kernel code model, never the thunks, which a
    # test program it links could not resolve.
    assert not any(f in glibc.CFLAGS for f in layout.SPECULATION_CFLAGS)
