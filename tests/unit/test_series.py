"""Patch series <-> git tree round trip, on a small fake Debian source."""
from __future__ import annotations

import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from ukl.common.errors import UklError
from ukl.sources import debian, series


def _git(tree: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.org",
           "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.org",
           "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(tree), *args], check=True, env=env,
                          capture_output=True, text=True).stdout


def _make_tarball(root: Path, content: dict[str, str]) -> Path:
    src = root / "pristine" / "proj-1.0"
    shutil.rmtree(src.parent, ignore_errors=True)
    src.mkdir(parents=True)
    for name, text in content.items():
        (src / name).write_text(text)
    tarball = root / "proj-1.0.tar.xz"
    with tarfile.open(tarball, "w:xz") as tar:
        tar.add(src, arcname="proj-1.0")
    return tarball


@pytest.fixture
def comp(tmp_path: Path) -> debian.Component:
    tarball = _make_tarball(tmp_path, {"main.c": "int main(void)\n{\n\treturn 0;\n}\n",
                                       "README": "pristine\n"})
    (tmp_path / "patches").mkdir()
    (tmp_path / "patches" / "series").write_text("# empty\n")
    ini = tmp_path / "sources.ini"
    ini.write_text(f"# comment kept\n[proj]\npackage = proj-source\nversion = 1.0-1\n"
                   f"tarball = {tarball}\ntopdir = proj-1.0\nseries = patches\n")
    return debian.load(ini, trees=tmp_path / "trees", root=tmp_path)["proj"]


def _commit_change(tree: Path, name: str, text: str, subject: str) -> None:
    (tree / name).write_text(text)
    _git(tree, "add", name)
    _git(tree, "commit", "-q", "-m", f"{subject}\n\nWhy this change is needed.")


def test_round_trip(comp: debian.Component) -> None:
    tree = series.prepare(comp, "1.0-1")
    assert _git(tree, "log", "--format=%s").splitlines() == [
        "proj-source 1.0-1 (pristine Debian source)"]
    _commit_change(tree, "main.c", "int main(void)\n{\n\treturn 1;\n}\n", "proj: return 1")
    _commit_change(tree, "README", "patched\n", "docs: say patched")

    names = series.export(comp)
    assert names == ["0001-proj-return-1.patch", "0002-docs-say-patched.patch"]
    assert series.read_series(comp.series_dir) == [comp.series_dir / n for n in names]
    first = (comp.series_dir / names[0]).read_text()
    assert "From 0000000000000000000000000000000000000000" in first  # stable export
    assert "Why this change is needed." in first

    # A fresh materialisation reproduces the same tree and history.
    shutil.rmtree(comp.tree)
    tree = series.prepare(comp, "1.0-1")
    assert (tree / "main.c").read_text().endswith("return 1;\n}\n")
    assert (tree / "README").read_text() == "patched\n"
    assert _git(tree, "log", "--format=%s").splitlines() == [
        "docs: say patched", "proj: return 1", "proj-source 1.0-1 (pristine Debian source)"]
    # Re-exporting an unchanged tree gives byte-identical patches.
    before = {p.name: p.read_bytes() for p in comp.series_dir.iterdir()}
    series.export(comp)
    assert {p.name: p.read_bytes() for p in comp.series_dir.iterdir()} == before


def test_export_records_debian_version_keeping_comments(comp: debian.Component) -> None:
    tree = series.prepare(comp, "1.0-2")
    _commit_change(tree, "README", "x\n", "docs: x")
    series.export(comp)
    text = comp.ini.read_text()
    assert "version = 1.0-2\n" in text and text.startswith("# comment kept\n")


def test_failing_patch_is_named(comp: debian.Component, tmp_path: Path) -> None:
    tree = series.prepare(comp, "1.0-1")
    _commit_change(tree, "README", "patched\n", "docs: say patched")
    series.export(comp)
    # A new Debian version whose README changed: the patch cannot apply.
    _make_tarball(tmp_path, {"main.c": "int main(void)\n{\n\treturn 0;\n}\n",
                             "README": "upstream rewrote this\n"})
    with pytest.raises(UklError, match=r"patch 0001-docs-say-patched.patch does not apply "
                                       r"to proj-source 1.0-9 \(series last exported "
                                       r"against 1.0-1\)"):
        series.prepare(comp, "1.0-9")


def test_changed_series_never_discards_local_work(comp: debian.Component) -> None:
    tree = series.prepare(comp, "1.0-1")
    _commit_change(tree, "README", "mine\n", "docs: mine")
    # Someone else changes the series (e.g. a git pull of the project).
    (comp.series_dir / "series").write_text("0001-other.patch\n")
    (comp.series_dir / "0001-other.patch").write_text(_other_patch())
    with pytest.raises(UklError, match="commit\\(s\\) not in .* run `ukl series export proj`"):
        series.prepare(comp, "1.0-1")
    assert (tree / "README").read_text() == "mine\n"
    # Explicit reset drops local work and applies the new series.
    series.reset(comp, "1.0-1")
    assert (tree / "main.c").read_text().endswith("return 2;\n}\n")
    assert (tree / "README").read_text() == "pristine\n"


def test_uncommitted_changes_block_export(comp: debian.Component) -> None:
    tree = series.prepare(comp, "1.0-1")
    (tree / "README").write_text("dirty\n")
    with pytest.raises(UklError, match="uncommitted changes"):
        series.export(comp)


def test_new_file_hidden_by_gitignore_blocks_export(comp: debian.Component) -> None:
    # Debian's kernel .gitignore ignores every new top-level path, so a new
    # source file committed with `git add -A` would silently miss the patch.
    tree = series.prepare(comp, "1.0-1")
    _commit_change(tree, ".gitignore", "/*\n!/.gitignore\n", "ignore everything new")
    (tree / "new.c").write_text("int x;\n")
    with pytest.raises(UklError, match="new.c.*git add -f"):
        series.export(comp)


def _other_patch() -> str:
    return """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Other <other@example.org>
Date: Mon, 1 Jan 2024 00:00:00 +0000
Subject: [PATCH] proj: return 2

---
 main.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/main.c b/main.c
--- a/main.c
+++ b/main.c
@@ -1,4 +1,4 @@
 int main(void)
 {
-\treturn 0;
+\treturn 2;
 }
--
"""


def test_export_writes_the_cover_letter_and_prepare_ignores_it(comp: debian.Component) -> None:
    tree = series.prepare(comp, "1.0-1")
    _commit_change(tree, "main.c", "int main(void)\n{\n\treturn 1;\n}\n", "proj: return 1")
    _commit_change(tree, "README", "patched\n", "docs: say patched")
    (comp.series_dir / series.COVER_TEXT).write_text(
        "proj: two small changes\n\nWhat the series does, and why.\n")
    names = series.export(comp)
    assert series.COVER_PATCH not in names
    cover = (comp.series_dir / series.COVER_PATCH).read_text()
    assert "Subject: [PATCH 0/2] proj: two small changes\n" in cover
    assert "What the series does, and why." in cover
    assert "proj: return 1" in cover and "docs: say patched" in cover  # the shortlog
    assert "2 files changed" in cover                                  # the diffstat
    # A re-export without changes writes the same file (author and date
    # are the last commit's).
    series.export(comp)
    assert (comp.series_dir / series.COVER_PATCH).read_text() == cover
    assert [p.name for p in series.read_series(comp.series_dir)] == names
    shutil.rmtree(tree)
    series.prepare(comp, "1.0-1")
    assert _git(tree, "log", "--format=%s").splitlines()[:2] == [
        "docs: say patched", "proj: return 1"]
