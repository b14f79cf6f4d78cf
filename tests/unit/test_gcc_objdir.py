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


def test_libstdcxx_configure_waits_for_libgcc_configure(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """libstdc++'s configure reads libgcc's gthr-default.h, which libgcc's
    configure writes; on a loaded machine libgcc (at the lowest priority,
    beside it) once came second, and libstdc++ was built without threads."""
    import threading
    import time
    events: list[str] = []

    def step(label: str, *args: object, **kwargs: object) -> None:
        if label == "configure libgcc":
            time.sleep(0.3)  # the slow side of the race
        events.append(label)

    for name, value in {"_step": step, "_start_stage": lambda *a: True,
                        "_state": lambda *a: "state", "_host_gcc_objdir": lambda *a: None,
                        "_compile_env": lambda *a: {}, "_configure_env": lambda: {},
                        "_install_libstdcxx": lambda *a: None}.items():
        monkeypatch.setattr(gcc_runtime, name, value)
    monkeypatch.setattr(gcc_runtime.shutil, "copy2", lambda *a: None)
    monkeypatch.setattr(gcc_runtime.stamp, "record", lambda *a: None)
    configured = threading.Event()
    libgcc = threading.Thread(target=gcc_runtime.build_libgcc,
                              args=(tmp_path, "headers", configured))
    libgcc.start()
    gcc_runtime.build_libstdcxx(tmp_path, "headers", "symbols", configured)
    libgcc.join()
    assert events.index("configure libgcc") < events.index("configure libstdc++")


def test_a_failing_libgcc_never_leaves_libstdcxx_waiting(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    def fail(*args: object) -> None:
        raise UklError("libgcc failed")

    monkeypatch.setattr(gcc_runtime, "_build_libgcc", fail)
    configured = threading.Event()
    with pytest.raises(UklError):
        gcc_runtime.build_libgcc(tmp_path, "headers", configured)
    assert configured.is_set()


def test_the_thunks_reach_make_and_never_configure(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """libgcc's and libstdc++'s configure link test programs, which could not
    resolve a thunk; their compiles get the kernel's speculation flags."""
    import threading
    steps: dict[str, list[str]] = {}

    def step(label: str, cmd: list[str], *args: object, **kwargs: object) -> None:
        steps[label] = cmd

    for name, value in {"_step": step, "_start_stage": lambda *a: True,
                        "_state": lambda *a: "state", "_host_gcc_objdir": lambda *a: None,
                        "_compile_env": lambda *a: {}, "_configure_env": lambda: {}}.items():
        monkeypatch.setattr(gcc_runtime, name, value)
    monkeypatch.setattr(gcc_runtime.shutil, "copy2", lambda *a: None)
    monkeypatch.setattr(gcc_runtime.shutil, "copytree", lambda *a: None)
    monkeypatch.setattr(gcc_runtime.stamp, "record", lambda *a: None)
    monkeypatch.setattr(gcc_runtime.layout, "sysroot", lambda: tmp_path / "sysroot")
    # The build directory too: a fresh clone has none under build/.
    (tmp_path / "gcc-build").mkdir()
    monkeypatch.setattr(gcc_runtime, "build_dir", lambda: tmp_path / "gcc-build")
    configured = threading.Event()
    gcc_runtime.build_libgcc(tmp_path, "headers", configured)
    gcc_runtime.build_libstdcxx(tmp_path, "headers", "symbols", configured)
    thunks = "-mfunction-return=thunk-extern"
    for label, cmd in steps.items():
        joined = " ".join(cmd)
        if label.startswith("configure"):
            assert thunks not in joined, label
        elif label != "strip unused objects":
            assert thunks in joined, label
    # A command-line CXXFLAGS_FOR_TARGET replaces the top level's own
    # -D_GNU_SOURCE, without which libstdc++ does not compile.
    cxx = next(a for a in steps["libstdc++"] if a.startswith("CXXFLAGS_FOR_TARGET="))
    assert "-D_GNU_SOURCE" in cxx.split()
    assert {"libgcc", "libstdc++", "install libstdc++"} <= steps.keys()
