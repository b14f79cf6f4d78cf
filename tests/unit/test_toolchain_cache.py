"""The toolchain cache: content-keyed store and restore of the sysroot."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.toolchain import cache, layout


@pytest.fixture()
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    return tmp_path


def test_store_then_restore_into_a_clean_tree(dirs: Path) -> None:
    lib = layout.libdir()
    lib.mkdir(parents=True)
    (lib / "libc.a").write_bytes(b"!<arch>\n")
    (layout.sysroot() / "link").symlink_to("usr")
    cache.store("k1")
    assert cache.current("k1") and not cache.current("k2")
    import shutil
    shutil.rmtree(dirs / "build")
    assert not cache.restore("k2")
    assert cache.restore("k1")
    assert (lib / "libc.a").read_bytes() == b"!<arch>\n"
    assert (layout.sysroot() / "link").is_symlink()
    assert cache.current("k1")


def test_only_the_newest_entries_are_kept(dirs: Path) -> None:
    layout.sysroot().mkdir(parents=True)
    for i in range(cache.KEEP + 2):
        cache.store(f"k{i}")
    kept = sorted(d.name for d in cache.cache_root().iterdir())
    assert len(kept) == cache.KEEP


def test_key_is_stable_and_covers_the_patches() -> None:
    k = cache.key()
    assert k == cache.key() and len(k) == 32


def test_no_cache_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_NO_CACHE", "1")
    assert not cache.enabled()
