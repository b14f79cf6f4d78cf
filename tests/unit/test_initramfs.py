"""Initramfs contents and input checks."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ukl.common.elf import describe_problem
from ukl.common.errors import UklError
from ukl.image.cpio import read_entries, read_names
from ukl.image.initramfs import (AppUser, InitramfsSpec, image_conf, parse_file_arg,
                                 runas_binary, write)


@pytest.fixture(scope="module")
def static_prog(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("prog")
    src = d / "p.c"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-static", "-o", d / "p", src], check=True)
    return d / "p"


def test_contents(tmp_path: Path, static_prog: Path) -> None:
    data_file = tmp_path / "data.txt"
    data_file.write_text("payload\n")
    spec = InitramfsSpec(program=static_prog, files=[(data_file, "/srv/www/data.txt")],
                         helpers=["echo 'it''s here'"])
    out = write(spec, tmp_path / "initramfs.cpio")
    entries = {name: body for name, _, body in read_names(out.read_bytes())}
    assert entries["init"].startswith(b"#!/bin/busybox sh")
    assert entries["app/p"] == static_prog.read_bytes()
    assert entries["srv/www/data.txt"] == b"payload\n"
    assert "srv" in entries and "srv/www" in entries
    assert "bin/busybox" in entries and "dev/console" in entries
    assert b"UKL_PROGRAM=/app/p" in entries["etc/ukl/image.conf"]


def test_image_conf_is_valid_shell_that_starts_helpers() -> None:
    conf = image_conf(InitramfsSpec(helpers=["echo \"a b\" 'c'", "true"]))
    script = conf + "ukl_start_helpers; wait; echo prog=[$UKL_PROGRAM]\n"
    res = subprocess.run(["/bin/busybox", "sh", "-c", script], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["a b c", "prog=[]"]


def test_default_args_apply_only_without_run_args() -> None:
    # init.sh's own lines: `ukl run` arguments win over the image's defaults.
    conf = image_conf(InitramfsSpec(default_args=["--save", "", "a b"]))
    init = (Path(__file__).parents[2] / "ukl" / "image" / "init.sh").read_text()
    start = init.index('if [ $# -eq 0 ] && [ -n "$UKL_DEFAULT_ARGS" ]')
    pick = init[start:init.index("fi\n", start) + 3]
    script = conf + pick + 'printf "<%s>" "$@"\n'
    for args, want in (([], "<--save><><a b>"), (["x"], "<x>")):
        res = subprocess.run(["/bin/busybox", "sh", "-c", script, "sh", *args],
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        assert res.stdout == want


def test_dynamic_program_rejected(tmp_path: Path) -> None:
    dyn = tmp_path / "dyn"
    src = tmp_path / "d.c"
    src.write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-o", dyn, src], check=True)
    with pytest.raises(UklError, match="dynamically linked; build it with -static"):
        write(InitramfsSpec(program=dyn), tmp_path / "x.cpio")
    assert not (tmp_path / "x.cpio").exists()


def test_missing_inputs_rejected(tmp_path: Path) -> None:
    with pytest.raises(UklError, match="does not exist"):
        write(InitramfsSpec(program=tmp_path / "nope"), tmp_path / "x.cpio")
    with pytest.raises(UklError, match="does not exist"):
        write(InitramfsSpec(files=[(tmp_path / "nope", "/nope")]), tmp_path / "x.cpio")


def test_parse_file_arg() -> None:
    assert parse_file_arg("/h/a.txt") == (Path("/h/a.txt"), "/a.txt")
    assert parse_file_arg("a.txt:/etc/a.conf") == (Path("a.txt"), "/etc/a.conf")
    with pytest.raises(UklError, match="absolute"):
        parse_file_arg("a.txt:etc/a")


def test_elf_checks(tmp_path: Path, static_prog: Path) -> None:
    assert describe_problem(static_prog) is None
    text = tmp_path / "t"
    text.write_text("hello")
    assert "not an ELF" in describe_problem(text)


def test_ukl_image_has_empty_executable_trigger(tmp_path: Path) -> None:
    # A UKL image runs the application linked into the kernel: init execs
    # the trigger path, an empty file only root may execute, instead of a
    # program.
    out = write(InitramfsSpec(ukl_exec="/UKL"), tmp_path / "initramfs.cpio")
    entries = {name: (mode, body) for name, mode, body in read_names(out.read_bytes())}
    mode, body = entries["UKL"]
    assert body == b"" and mode & 0o777 == 0o700
    assert b"UKL_PROGRAM=/UKL" in entries["etc/ukl/image.conf"][1]
    assert not any(name.startswith("app/") for name in entries)


def test_app_user_owns_trigger_and_trees_and_init_starts_through_runas(tmp_path: Path) -> None:
    # A recipe's [run] user: the program starts through ukl-runas, which
    # keeps CAP_SYS_RAWIO only for a UKL image; the trigger and the
    # prepared trees belong to that user, with their own permissions.
    tree = tmp_path / "var"
    (tree / "lib" / "db").mkdir(parents=True)
    (tree / "lib" / "db").chmod(0o700)
    (tree / "lib" / "db" / "PG_VERSION").write_text("15\n")
    (tree / "lib" / "link").symlink_to("db")
    (tree / "lib" / "tool").write_text("x")
    (tree / "lib" / "tool").chmod(0o4755)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("host file")
    (tmp_path / "etc-link").symlink_to(outside)
    user = AppUser("postgres")
    out = write(InitramfsSpec(ukl_exec="/UKL", user=user,
                              trees=[(tree, "/var"), (tmp_path / "etc-link", "/srv")]),
                tmp_path / "initramfs.cpio")
    entries = {name: (mode, owner, body) for name, mode, owner, body
               in read_entries(out.read_bytes())}
    ids = (user.uid, user.gid)
    assert entries["UKL"][:2] == (0o100700, ids)
    assert entries["var/lib/db"][:2] == (0o40700, ids)
    assert entries["var/lib/db/PG_VERSION"][1:] == (ids, b"15\n")
    assert entries["var/lib/link"][2] == b"db"
    # No set-id bits; a linked top directory stays a link, never followed.
    assert entries["var/lib/tool"][0] == 0o100755
    assert entries["srv"][0] & 0o170000 == 0o120000 and "srv/secret" not in entries
    assert entries["bin/ukl-runas"][1] == (0, 0)
    assert b"postgres:x:999:999:" in entries["etc/passwd"][2]
    conf = entries["etc/ukl/image.conf"][2].decode()
    assert "UKL_RUNAS='/bin/ukl-runas 999 999 --keep-rawio'" in conf
    # An ordinary process does not keep the capability.
    assert "UKL_RUNAS='/bin/ukl-runas 999 999'" in image_conf(InitramfsSpec(user=user))
    assert "UKL_RUNAS=''" in image_conf(InitramfsSpec())


def test_runas_drops_to_the_user(tmp_path: Path) -> None:
    # Run on the host as root: the ids change, groups are dropped, and
    # without --keep-rawio no capability survives the exec.
    if os.geteuid() != 0:
        pytest.skip("needs root to change user ids")
    runas = str(runas_binary())
    # Started with supplementary groups, which it must drop.
    res = subprocess.run(["setpriv", "--groups=4,27", "--", runas, "999", "998",
                          "/bin/busybox", "sh", "-c",
                          "id -G; grep -E '^(Uid|Gid|Cap(Prm|Eff|Amb))' /proc/self/status"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "998"
    # Real, effective, saved and filesystem ids alike.
    assert lines[1].split()[1:] == ["999"] * 4 and lines[2].split()[1:] == ["998"] * 4
    assert res.stdout.count("0000000000000000") == 3
    res = subprocess.run([runas, "999", "998", "--keep-rawio", "/bin/busybox", "sh", "-c",
                          "grep -E '^Cap(Prm|Eff|Amb)' /proc/self/status"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    # CAP_SYS_RAWIO is bit 17: permitted, effective and ambient.
    assert res.stdout.count("0000000000020000") == 3, res.stdout
    res = subprocess.run([runas, "x", "1", "/bin/true"], capture_output=True, text=True)
    assert res.returncode == 127 and "not a numeric id" in res.stderr
    res = subprocess.run([runas, "0", "0", "/bin/true"], capture_output=True, text=True)
    assert res.returncode == 127 and "refusing user or group 0" in res.stderr


def test_program_link_is_a_relative_link_init_starts(tmp_path: Path) -> None:
    # A recipe's [run] path: init starts the program by that path, a
    # relative link to the trigger (PostgreSQL resolves its own path and
    # cannot when it is in /).
    spec = InitramfsSpec(ukl_exec="/UKL", program_link="/usr/lib/postgresql/15/bin/postgres")
    out = write(spec, tmp_path / "initramfs.cpio")
    entries = {name: (mode, body) for name, mode, body in read_names(out.read_bytes())}
    assert entries["usr/lib/postgresql/15/bin/postgres"][1] == b"../../../../../UKL"
    assert "usr/lib/postgresql/15/bin" in entries
    assert b"UKL_PROGRAM=/usr/lib/postgresql/15/bin/postgres" in entries["etc/ukl/image.conf"][1]
    with pytest.raises(UklError, match="absolute path"):
        write(InitramfsSpec(ukl_exec="/UKL", program_link="postgres"), tmp_path / "x.cpio")
