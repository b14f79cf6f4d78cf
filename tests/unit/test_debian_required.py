"""Libraries a build requires although its library does not link them."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.app.debian import archive
from ukl.app.debian import build as debbuild
from ukl.app.debian import recipe
from ukl.app.debian.required import missing_headers, modules_named, required, shipped_headers
from ukl.common.errors import UklError

DBUS_CONFIGURE = """checking for EXPAT... no
configure: error: Package requirements (expat) were not met:

No package 'expat' found

Consider adjusting the PKG_CONFIG_PATH environment variable if you
"""


def test_modules_named_by_autoconf_and_meson_failures() -> None:
    assert modules_named(DBUS_CONFIGURE) == ["expat"]
    assert modules_named("configure: error: Package requirements (glib-2.0 >= 2.40, "
                         "gio-unix-2.0 >= 2.40) were not met:") == ["glib-2.0", "gio-unix-2.0"]
    assert modules_named('meson.build:12:0: ERROR: Dependency "libsystemd" not found, '
                         "tried pkgconfig") == ["libsystemd"]
    # An optional dependency's check is no failure.
    assert modules_named("Run-time dependency zlib found: NO (tried pkgconfig)") == []
    assert modules_named("undefined reference to `XML_ParserCreate'") == []


# The .pc files of a few -dev packages, as their .debs ship them.
SHIPPED = {"libexpat1-dev": {"expat"}, "libglib2.0-dev": {"glib-2.0", "gio-2.0", "gio-unix-2.0"},
           "libpcre2-dev": {"libpcre2-8", "libpcre2-posix"}, "libpcre3-dev": {"libpcre"},
           "libssl-dev": {"openssl", "libssl", "libcrypto"}}


def test_required_matches_the_library_that_ships_the_module() -> None:
    left = [("libexpat1-dev", "expat"), ("libglib2.0-dev", "glib2.0"),
            ("libpcre2-dev", "pcre2"), ("libssl-dev", "openssl")]

    def modules_of(dep: str) -> set[str]:
        return SHIPPED.get(dep, set())

    assert required(DBUS_CONFIGURE, left, modules_of) == ["expat"]
    assert required("configure: error: Package requirements (gio-2.0 >= 2.40) were not met",
                    left, modules_of) == ["glib2.0"]
    assert required("configure: error: Package requirements (libcrypto) were not met",
                    left, modules_of) == ["openssl"]
    # libpcre (PCRE 1) is not PCRE2's; nothing else left out ships it.
    assert required("configure: error: Package requirements (libpcre) were not met",
                    left, modules_of) == []


def test_a_build_requiring_an_unlinked_library_is_built_again_with_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[frozenset[str]] = []
    done = debbuild.Built("dbus", Path("t"), Path("p"), None, [])

    def once(rec: recipe.Recipe, source: Path, ukl: bool, binary: str | None,
             chain: tuple[str, ...], library: bool, linked_as: str | None,
             leave_out: frozenset[str], also: frozenset[str],
             variant: str = "", lean: bool = True) -> debbuild.Built:
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


def test_only_libraries_left_out_as_not_linked_are_built_for_the_requirement(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from ukl.app.debian import required as required_module
    monkeypatch.setattr(required_module, "shipped_modules",
                        lambda dep: SHIPPED.get(dep, set()))
    error = UklError("debian/rules dbus 1.14 (ukl) failed: configure: error: Package "
                     "requirements (expat libcrypto) were not met:; full log: x")
    left = [debbuild.LeftOut("libexpat1-dev", "expat", "not linked", unlinked=True),
            debbuild.LeftOut("libssl-dev", "openssl", "its build failed")]
    with pytest.raises(debbuild._Requires) as raised:
        debbuild._check_requires(error, left, ["libssl-dev: its build failed"])
    assert raised.value.sources == ["expat"]
    assert raised.value.error.message.endswith("(built without libssl-dev: its build failed)")
    # Nothing left out as not linked: the failure stands as it is.
    debbuild._check_requires(error, left[1:], [])


def test_a_configure_error_naming_the_library_requires_it() -> None:
    # unbound's configure requires expat, which libunbound does not link.
    failure = ("debian/rules unbound (ukl) failed: "
               "configure: error: Could not find libexpat, expat.h")
    names = {"libexpat1-dev": ("expat",), "libevent-dev": ("event", "event_core")}
    got = required(failure, [("libexpat1-dev", "expat"), ("libevent-dev", "libevent")],
                   modules_of=lambda dep: set(), link_names_of=lambda dep: names[dep])
    assert got == ["expat"]
    assert required("configure: error: no libexpatfoo", [("libexpat1-dev", "expat")],
                    modules_of=lambda dep: set(), link_names_of=lambda dep: names[dep]) == []


def test_a_header_the_failed_build_did_not_find_requires_its_library() -> None:
    # Debian's perl insists on Berkeley DB; its Configure says <db.h> NOT
    # found, and libdb5.3-dev ships db.h.
    log = ("<netdb.h> found.\n<db.h> NOT found.\n"
           "debian/config.over: Berkeley DB support not enabled, aborting!\n"
           "checking for zlib.h... no\n")
    headers = {"libdb-dev": {"db.h", "db_185.h"}, "zlib1g-dev": {"zlib.h", "zconf.h"}}
    got = required("dh_auto_build: error: make returned exit code 2",
                   [("libdb-dev", "db5.3"), ("zlib1g-dev", "zlib")],
                   modules_of=lambda dep: set(), log_text=log,
                   headers_of=lambda dep: headers[dep])
    assert got == ["db5.3"]
    assert missing_headers("x.c:3:10: fatal error: sasl/sasl.h: No such file or directory\n") \
        == {"sasl/sasl.h"}


def test_a_header_in_a_directory_of_its_own_is_known_by_its_name_too(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # sqlite3's rules build sqlite3_analyzer, which includes "tcl.h" with
    # tcl8.6's directory on its include path.
    pkg = archive.BinaryPackage("tcl8.6-dev", "8.6.13", "tcl8.6", ())
    monkeypatch.setattr(archive, "show", {"tcl8.6-dev": pkg}.get)
    monkeypatch.setattr(archive, "contents", lambda p: [
        "usr/include/tcl8.6/tcl.h", "usr/include/tcl8.6/tclDecls.h", "usr/include/tcl.h.txt",
        "usr/include/x86_64-linux-gnu/tcl8.6/tclConfig.h"])
    assert shipped_headers("tcl8.6-dev") == {
        "tcl8.6/tcl.h", "tcl.h", "tcl8.6/tclDecls.h", "tclDecls.h", "tcl8.6/tclConfig.h",
        "tclConfig.h"}
    log = "sqlite3_analyzer.c:243732:11: fatal error: tcl.h: No such file or directory\n"
    assert required("make returned exit code 2", [("tcl8.6-dev", "tcl8.6")],
                    modules_of=lambda dep: set(), log_text=log) == ["tcl8.6"]


def test_a_library_failing_with_its_lean_profiles_is_built_with_the_defaults(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # db5.3's rules break under pkg.db5.3.nosql (they still move dbsql).
    (tmp_path / "debian").mkdir()
    (tmp_path / "debian" / "control").write_text(
        "Source: db5.3\nBuild-Depends: tcl-dev <!pkg.db5.3.notcl>\n\n"
        "Package: libdb5.3-dev\nArchitecture: any\n")
    (tmp_path / "debian" / "changelog").write_text(
        "db5.3 (5.3.28-1) unstable; urgency=low\n\n  * x\n\n"
        " -- A <a@b.c>  Mon, 01 Jan 2024 00:00:00 +0000\n")
    done = debbuild.Built("db5.3", tmp_path, tmp_path, None, [])
    calls: list[bool] = []

    def once(*args: object) -> debbuild.Built:
        lean = bool(args[-1])
        calls.append(lean)
        if lean:
            raise UklError("mv: cannot stat dbsql; full log: x")
        return done
    monkeypatch.setattr(debbuild, "_debian_build_once", once)
    got = debbuild._debian_build(recipe.Recipe(package="db5.3"), tmp_path, True, None, (),
                                 True, None, frozenset())
    assert got is done and calls == [True, False]
    # Remembered: the next build goes straight to the default profiles.
    calls.clear()
    debbuild._debian_build(recipe.Recipe(package="db5.3"), tmp_path, True, None, (),
                           True, None, frozenset())
    assert calls == [False]


def test_what_a_failure_requires_is_remembered_at_once(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # perl's build needs half an hour; stopped after its first failure,
    # the next build starts with Berkeley DB.
    log = tmp_path / "build.log"
    log.write_text("<db.h> NOT found.\n")
    monkeypatch.setattr("ukl.app.debian.required.shipped_headers",
                        lambda dep: {"db.h"} if dep == "libdb5.3-dev" else set())
    left = [debbuild.LeftOut("libdb-dev", "db5.3", "not linked", True, ("db",), "libdb5.3-dev")]
    with pytest.raises(debbuild._Requires):
        debbuild._check_requires(UklError("make returned exit code 2"), left, [], log,
                                 tmp_path, frozenset({"gdbm"}))
    assert debbuild._remembered_requires(tmp_path) == {"db5.3", "gdbm"}
