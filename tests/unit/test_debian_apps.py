"""ukl build --debian: deb-src entries and recipes (no network, no build)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.app.debian import source as debsrc, recipe
from ukl.common.errors import UklError

DEB822 = """Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""


def test_deb_src_entries_mirror_the_machines_debian_suites() -> None:
    assert debsrc.source_entries([DEB822]) == [
        "deb-src http://deb.debian.org/debian bookworm main",
        "deb-src http://deb.debian.org/debian bookworm-updates main",
        "deb-src http://deb.debian.org/debian-security bookworm-security main",
    ]


def test_deb_src_entries_from_one_line_format_skip_other_archives() -> None:
    text = ("deb [arch=amd64] http://deb.debian.org/debian bookworm main contrib\n"
            "deb https://packages.cloud.google.com/apt cloud-sdk main\n")
    assert debsrc.source_entries([text]) == [
        "deb-src http://deb.debian.org/debian bookworm main contrib"]


def test_bad_package_name_is_refused_before_any_download() -> None:
    with pytest.raises(UklError, match="not a Debian package name"):
        debsrc.fetch("../etc")


def test_redis_recipe() -> None:
    rec = recipe.load("redis")
    assert rec.program == "src/redis-server"
    assert "MALLOC=libc" in rec.make_args
    assert rec.tools == ["src/redis-benchmark", "src/redis-cli", "src/redis-check-rdb"]
    assert rec.args[:2] == ["--protected-mode", "no"] and '""' not in rec.args
    assert [p.name for p in rec.patches] == ["ukl-shortcuts.patch"]
    assert all(p.is_file() for p in rec.patches)


def test_recipe_patch_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.ini").write_text("[build]\npatches = x/missing.patch\n")
    with pytest.raises(UklError, match="patches entry .*x/missing.patch does not exist"):
        recipe.load("x", recipes_dir=tmp_path)


def test_package_without_recipe_gets_defaults(tmp_path: Path) -> None:
    rec = recipe.load("hello", recipes_dir=tmp_path)
    assert rec.system == "auto" and rec.program is None and rec.source is None


def test_recipe_typo_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "x.ini").write_text("[build]\nmake_arg = V=1\n")
    with pytest.raises(UklError, match="unknown \\[build\\] keys: make_arg"):
        recipe.load("x", recipes_dir=tmp_path)


def test_postgresql_recipe_runs_as_postgres_from_a_prepared_data_directory() -> None:
    rec = recipe.load("postgresql-15")
    assert rec.user == "postgres" and rec.path == "/usr/lib/postgresql/15/bin/postgres"
    assert rec.prepare is not None and rec.prepare.is_file()
    assert rec.args == ["-D", "/var/lib/postgresql/15/main"]
    # The server finds its time zone data where the image puts it.
    assert "--datadir=/usr/share/postgresql/15" in rec.configure_args


@pytest.mark.parametrize("text, error", [
    ("[run]\nusers = pg\n", "unknown \\[run\\] keys: users"),
    ("[image]\nprepare_script = p.sh\n", "unknown \\[image\\] keys: prepare_script"),
    ("[run]\nuser = Post Gres\n", "expected a user name"),
    ("[run]\npath = bin/postgres\n", "expected an absolute file path"),
    ("[image]\nprepare = x/none.sh\n", "prepare script .*x/none.sh does not exist"),
    ("[image]\nprepare = ../../etc/passwd\n", "is not in"),
    ("[run]\nuser = root\n", "a user of the program's own"),
])
def test_bad_run_and_image_settings_are_errors(tmp_path: Path, text: str, error: str) -> None:
    (tmp_path / "x.ini").write_text(text)
    with pytest.raises(UklError, match=error):
        recipe.load("x", recipes_dir=tmp_path)
