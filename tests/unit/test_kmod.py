"""ukl.kbuild.module refuses what cannot give a module, before running make."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.common.errors import UklError
from ukl.kbuild import flavour, module


def test_an_unbuilt_flavour_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    with pytest.raises(UklError, match="is not built; run `ukl kernel build ukl-distro`"):
        module.build_module(flavour.get("ukl-distro"), tmp_path)


def test_a_flavour_without_modules_is_refused(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    out = tmp_path / "build" / "kernel" / "ukl"
    out.mkdir(parents=True)
    (out / "vmlinux").write_bytes(b"")
    with pytest.raises(UklError, match="without CONFIG_MODULES"):
        module.build_module(flavour.get("ukl"), tmp_path)
