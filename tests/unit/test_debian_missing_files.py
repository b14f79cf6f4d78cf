"""dh_install for a build that left libraries out
(ukl/app/debian/missing_files.py): what the build did not make is dropped
from debian/*.install, the rest stays."""
from __future__ import annotations

import os
from pathlib import Path

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
