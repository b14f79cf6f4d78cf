"""Libraries a build requires although its library does not link them."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.app.debian import build as debbuild
from ukl.app.debian import recipe
from ukl.app.debian.required import modules_named, required
from ukl.common.errors import UklError

DBUS_CONFIGURE = """checking for EXPAT... no
configure: error: Package requirements (expat) were not met:

No package 'expat' found

Consider adjusting the PKG_CONFIG_PATH environment variable if you
"""


def test_modules_named_by_autoconf_and_meson() -> None:
    assert modules_named(DBUS_CONFIGURE) == ["expat"]
    assert modules_named("configure: error: Package requirements (glib-2.0 >= 2.40, "
                         "gio-unix-2.0 >= 2.40) were not met:") == ["glib-2.0", "gio-unix-2.0"]
    assert modules_named('meson.build:12:0: ERROR: Dependency "libsystemd" not found, '
                         "tried pkgconfig") == ["libsystemd"]
    assert modules_named("Run-time dependency zlib found: NO (tried pkgconfig)") == ["zlib"]
    assert modules_named("undefined reference to `XML_ParserCreate'") == []


def test_required_matches_the_left_out_library_by_its_names() -> None:
    left = [("libexpat1-dev", "expat"), ("libglib2.0-dev", "glib2.0"),
            ("zlib1g-dev", "zlib"), ("libx11-dev", "libx11")]
    assert required(DBUS_CONFIGURE, left) == ["expat"]
    assert required("Package requirements (glib-2.0 >= 2.40) were not met", left) == ["glib2.0"]
    assert required("No package 'zlib' found", left) == ["zlib"]
    # A module no left-out library goes by: nothing to build.
    assert required("No package 'libsystemd' found", left) == []


def test_a_build_requiring_an_unlinked_library_is_built_again_with_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[frozenset[str]] = []
    done = debbuild.Built("dbus", Path("t"), Path("p"), None, [])

    def once(*args: object) -> debbuild.Built:
        also = args[-1]
        assert isinstance(also, frozenset)
        calls.append(also)
        if "expat" not in also:
            raise debbuild._Requires(["expat"], UklError("no expat"))
        return done

    monkeypatch.setattr(debbuild, "_debian_build_once", once)
    rec = recipe.Recipe(package="dbus")
    got = debbuild._debian_build(rec, Path("src"), True, None, (), True, None, frozenset())
    assert got is done
    assert calls == [frozenset(), frozenset({"expat"})]
    assert "dbus: its build requires expat, which it does not link; building that too" \
        in capsys.readouterr().err


def test_a_build_failing_again_for_the_same_library_stops(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def once(*args: object) -> debbuild.Built:
        raise debbuild._Requires(["expat"], UklError("still no expat"))

    monkeypatch.setattr(debbuild, "_debian_build_once", once)
    with pytest.raises(UklError, match="still no expat"):
        debbuild._debian_build(recipe.Recipe(package="dbus"), Path("src"), True, None, (),
                               True, None, frozenset())
