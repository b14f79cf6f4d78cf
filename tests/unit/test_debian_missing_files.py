"""dh_install for a build that left libraries out
(ukl/app/debian/missing_files.py): what the build did not make is dropped
from debian/*.install, the rest stays."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ukl.app.debian import missing_files


def test_only_patterns_matching_nothing_are_dropped(tmp_path: Path) -> None:
    tmp = tmp_path / "debian" / "tmp"
    (tmp / "usr/lib/perl/auto/POSIX").mkdir(parents=True)
    (tmp / "usr/lib/perl/auto/POSIX/POSIX.so").write_text("")
    (tmp / "usr/bin").mkdir()
    (tmp / "usr/bin/perl").write_text("")
    install = tmp_path / "debian" / "libperl5.36.install"
    install.write_text("# a comment\nusr/lib/perl/auto/POSIX/*.so\n"
                       "usr/lib/perl/auto/DB_File/*.so\n"
                       "usr/bin/perl usr/lib/perl/auto/GDBM_File/*.so usr/share/perl\n\n")
    dropped = missing_files.prune(install, [tmp_path, tmp])
    assert dropped == ["usr/lib/perl/auto/DB_File/*.so", "usr/lib/perl/auto/GDBM_File/*.so"]
    lines = install.read_text().splitlines()
    assert "usr/lib/perl/auto/POSIX/*.so" in lines
    assert "usr/bin/perl usr/share/perl" in lines
    assert f"{missing_files.MARK} usr/lib/perl/auto/DB_File/*.so" in lines
    assert not any(line.startswith("usr/lib/perl/auto/DB_File") for line in lines)
    # Nothing missing any more: a second run changes nothing.
    before = install.read_text()
    assert missing_files.prune(install, [tmp_path, tmp]) == []
    assert install.read_text() == before


def test_debhelper_variables_are_expanded_before_matching(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # ncurses's libncurses-dev.install: usr/lib/${DEB_HOST_MULTIARCH}/*.a
    # was dropped as matching nothing, and its rules' strip then failed.
    monkeypatch.setenv("DEB_HOST_MULTIARCH", "x86_64-linux-gnu")
    monkeypatch.setenv("UKL_DEMO", "share")
    tmp = tmp_path / "debian" / "tmp"
    (tmp / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (tmp / "usr/lib/x86_64-linux-gnu/libncurses++w.a").write_text("")
    (tmp / "usr/share").mkdir()
    install = tmp_path / "debian" / "libncurses-dev.install"
    text = "usr/lib/${DEB_HOST_MULTIARCH}/*.a\nusr/${env:UKL_DEMO}\n"
    install.write_text(text)
    assert missing_files.prune(install, [tmp_path, tmp]) == []
    assert install.read_text() == text
    assert missing_files.expand("a${Space}b${Dollar}${UNKNOWN}") == "a b$${UNKNOWN}"


def test_dh_exec_files_and_sourcedir(tmp_path: Path) -> None:
    script = tmp_path / "x.install"
    script.write_text("#!/usr/bin/dh-exec\nusr/lib/${DEB_HOST_MULTIARCH}/*.so\n")
    script.chmod(0o755)
    assert missing_files.prune(script, [tmp_path]) == []
    assert os.access(script, os.X_OK)
    assert missing_files._source_dirs(["-plighttpd", "--sourcedir=debian/inst"]) == [
        Path("debian/inst")]
    assert missing_files._source_dirs(["--sourcedir", "b"]) == [Path("b")]
    assert missing_files._source_dirs([]) == [Path("."), Path("debian/tmp")]


def _demo_package(top: Path) -> Path:
    """A debhelper package whose plugin package lists a file its build
    (a feature turned off) does not make."""
    src = top / "demo-1.0"
    (src / "debian").mkdir(parents=True)
    (src / "debian" / "control").write_text(
        "Source: demo\nSection: misc\nPriority: optional\nMaintainer: A <a@example.org>\n"
        "Build-Depends: debhelper-compat (= 13)\nStandards-Version: 4.6.1\n"
        "Rules-Requires-Root: no\n\n"
        "Package: demo\nArchitecture: any\nDescription: x\n x\n\n"
        "Package: demo-plugin\nArchitecture: any\nDescription: y\n y\n")
    (src / "debian" / "changelog").write_text(
        "demo (1.0-1) unstable; urgency=medium\n\n  * x\n\n"
        " -- A <a@example.org>  Mon, 01 Jan 2024 00:00:00 +0000\n")
    rules = src / "debian" / "rules"
    rules.write_text("#!/usr/bin/make -f\n%:\n\tdh $@\noverride_dh_auto_install:\n"
                     "\tmkdir -p debian/tmp/usr/bin && echo hi > debian/tmp/usr/bin/demo\n")
    rules.chmod(0o755)
    (src / "debian" / "demo.install").write_text("usr/bin/demo\n")
    (src / "debian" / "demo-plugin.install").write_text("usr/lib/demo/plugin.so\n")
    return src


def test_debians_own_dh_install_goes_on_without_what_was_not_built(tmp_path: Path) -> None:
    """With the shim first in PATH (rules.compiler_shims), the real
    dpkg-buildpackage finishes and the program's package is made; without
    it, dh_install stops at the missing plugin (the test can fail)."""
    from ukl.app.debian import rules
    src = _demo_package(tmp_path)
    cmd = ["dpkg-buildpackage", "--build=any", "--no-sign", "-d"]
    plain = subprocess.run(cmd, cwd=src, capture_output=True, text=True)
    assert plain.returncode != 0 and "missing files" in plain.stdout + plain.stderr
    shims = rules.compiler_shims(tmp_path / "shims", "/usr/bin/gcc", "/usr/bin/g++",
                                 missing_ok=True)
    env = {**os.environ, "PATH": f"{shims}:{os.environ['PATH']}"}
    built = subprocess.run(cmd, cwd=src, env=env, capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    assert "usr/lib/demo/plugin.so was not built" in built.stderr
    assert list(tmp_path.glob("demo_1.0-1_*.deb"))
    # Without anything left out, no shim: a missing file stays an error.
    rules.compiler_shims(tmp_path / "shims", "/usr/bin/gcc", "/usr/bin/g++")
    assert not (shims / "dh_install").exists()


def test_dh_missing_lists_instead_of_failing_when_libraries_were_left_out(
        tmp_path: Path) -> None:
    """debhelper 13's dh_missing fails on installed files no package
    takes, as --fail-missing does; with packages skipped for a left-out
    library (dbus's daemon), those are expected: the shim lists them."""
    from ukl.app.debian import rules
    shims = rules.compiler_shims(tmp_path / "shims", "cc", "c++", missing_ok=True)
    script = (shims / "dh_missing").read_text()
    assert script == rules.DH_MISSING_LISTS
    echo = tmp_path / "echo-dh-missing"
    echo.write_text(script.replace("exec /usr/bin/dh_missing", "echo"))
    for args, expected in ((["--fail-missing", "-pdbus"], "--list-missing -pdbus --list-missing"),
                           ([], "--list-missing")):
        out = subprocess.run(["sh", str(echo), *args], capture_output=True, text=True,
                             check=True).stdout.strip()
        assert out == expected
    rules.compiler_shims(tmp_path / "shims", "cc", "c++", missing_ok=False)
    assert not (shims / "dh_missing").exists()
