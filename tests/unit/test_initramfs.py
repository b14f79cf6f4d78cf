"""Initramfs contents and input checks."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ukl.common.elf import describe_problem
from ukl.common.errors import UklError
from ukl.image.cpio import read_names
from ukl.image.initramfs import InitramfsSpec, image_conf, parse_file_arg, write


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
