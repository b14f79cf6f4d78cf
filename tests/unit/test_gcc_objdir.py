"""libgcc's build reads a gcc build directory made from the host compiler's
own generated headers (gcc-12-plugin-dev)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.common.errors import UklError
from ukl.toolchain import gcc_runtime


def test_made_from_the_host_compiler(tmp_path: Path) -> None:
    gcc_runtime._host_gcc_objdir(tmp_path / "gcc")
    made = {p.name for p in (tmp_path / "gcc").iterdir()}
    assert made == {*gcc_runtime._GENERATED_HEADERS, "tconfig.h", "libgcc.mvars"}
    # The host compiler's configuration, not one of ours: Debian's gcc is PIE.
    assert "#define ENABLE_DEFAULT_PIE 1" in (tmp_path / "gcc" / "auto-host.h").read_text()
    assert '#include "auto-host.h"' in (tmp_path / "gcc" / "tconfig.h").read_text()


def test_missing_plugin_headers_say_how_to_get_them(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gcc_runtime, "run_quiet", lambda *a, **k: f"{tmp_path}/plugin\n")
    with pytest.raises(UklError, match="gcc-12-plugin-dev") as err:
        gcc_runtime._host_gcc_objdir(tmp_path / "gcc")
    assert "tm.h" in err.value.message and "ukl setup" in err.value.message
    assert not (tmp_path / "gcc").exists()
