"""The patch series as a maintainer reads them: `ukl series check` runs the
kernel's checkpatch.pl --strict on every patch and fails on any finding
(for glibc's GNU-style code, the kernel's code-layout rules are ignored).
Needs the prepared Linux tree (`make sources`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.sources import checkpatch, debian, series


@pytest.mark.parametrize("component", ["linux", "glibc"])
def test_series_is_checkpatch_clean(component: str) -> None:
    res = ukl("series", "check", component, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    patches = series.read_series(debian.get(component).series_dir)
    assert f"{len(patches)} of {len(patches)} patches clean" in res.stdout


def test_each_series_has_a_cover_letter() -> None:
    for component in ("linux", "glibc"):
        comp = debian.get(component)
        cover = comp.series_dir / series.COVER_PATCH
        assert cover.is_file(), f"{cover}: run `ukl series export {component}`"
        count = len(series.read_series(comp.series_dir))
        assert f"Subject: [PATCH 0/{count}] " in cover.read_text()


def test_a_bad_patch_is_reported(tmp_path: Path) -> None:
    """The check can fail: a patch with trailing whitespace and no
    Signed-off-by."""
    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "0001-bad.patch").write_text(
        "From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
        "From: Dev <dev@example.org>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n"
        "Subject: [PATCH] x86: Add a bad line\n\nA body.\n---\n"
        " arch/x86/kernel/ukl_bad.c | 1 +\n 1 file changed, 1 insertion(+)\n\n"
        "diff --git a/arch/x86/kernel/ukl_bad.c b/arch/x86/kernel/ukl_bad.c\n"
        "--- a/arch/x86/kernel/ukl_bad.c\n+++ b/arch/x86/kernel/ukl_bad.c\n"
        "@@ -0,0 +1 @@\n+int x = 1; \n")
    (patches / "series").write_text("0001-bad.patch\n")
    linux = debian.get("linux")
    comp = debian.Component("bad", linux.package, linux.recorded_version, linux.tarball,
                            linux.topdir, patches, tmp_path / "tree", linux.ini)
    report = checkpatch.check(comp)
    assert not report.clean
    text = report.text()
    assert "MISSING_SIGN_OFF" in text and "TRAILING_WHITESPACE" in text
    assert "0 of 1 patches clean" in text
