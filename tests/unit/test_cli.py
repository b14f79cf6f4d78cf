"""The CLI's pure parts and its one-line errors for bad input."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, ukl
from ukl import cli
from ukl.common.errors import UklError


def test_split_program_args_at_first_double_dash() -> None:
    assert cli.split_program_args(["run", "img", "--smp", "2", "--", "a", "--", "b"]) == (
        ["run", "img", "--smp", "2"], ["a", "--", "b"])
    assert cli.split_program_args(["run", "img"]) == (["run", "img"], [])


def test_run_options_parse() -> None:
    args = cli.build_parser().parse_args(
        ["run", "img", "--smp", "2", "--mem", "1G", "--timeout", "30", "--icount",
         "--append", "loglevel=7", "--append", "nokaslr"])
    assert (args.image, args.smp, args.mem, args.timeout) == ("img", 2, "1G", 30.0)
    assert args.icount and not args.gdb
    assert args.append == ["loglevel=7", "nokaslr"]


def test_bad_option_value_is_a_ukl_error() -> None:
    with pytest.raises(UklError, match="invalid int value"):
        cli.build_parser().parse_args(["run", "img", "--smp", "two"])


def test_program_args_only_for_run() -> None:
    assert cli.main(["setup", "--", "x"]) == cli.EXIT_USAGE


def _one_line_error(res) -> str:  # noqa: ANN001 - CompletedProcess
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("ukl: error: ")
    return lines[0]


def test_missing_image_is_one_line(tmp_path) -> None:  # noqa: ANN001
    res = ukl("run", str(tmp_path / "no-such-image"))
    assert res.returncode == 2
    assert "no image" in _one_line_error(res)


def test_unknown_option_is_one_line() -> None:
    res = ukl("run", "hello", "--frobnicate")
    assert res.returncode == 2
    line = _one_line_error(res)
    assert "unrecognized arguments: --frobnicate" in line
    assert "`ukl run --help`" in line


def test_missing_qemu_is_one_line(tmp_path) -> None:  # noqa: ANN001
    image = tmp_path / "img"
    image.mkdir()
    (image / "vmlinux").write_bytes(b"")
    (image / "initramfs.cpio").write_bytes(b"")
    (image / "image.json").write_text(
        '{"name": "img", "kernel_flavour": "stock", "mode": "process", "program": ""}')
    res = subprocess.run([sys.executable, str(REPO / "bin" / "ukl"), "run", str(image)],
                         env={"PATH": str(tmp_path)}, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True)
    assert res.returncode == 2
    assert "qemu-system-x86_64 not found" in _one_line_error(res)


def test_bad_smp_is_one_line() -> None:
    res = ukl("run", "x", "--smp", "many")
    assert res.returncode == 2
    assert "invalid int value" in _one_line_error(res)


def test_missing_source_file_is_one_line(tmp_path) -> None:  # noqa: ANN001
    res = ukl("build", str(tmp_path / "nope.c"), "-o", "x")
    assert res.returncode == 2
    assert "does not exist" in _one_line_error(res)


def test_directory_without_makefile_is_one_line(tmp_path) -> None:  # noqa: ANN001
    res = ukl("build", str(tmp_path), "-o", "x")
    assert res.returncode == 2
    assert "has no Makefile" in _one_line_error(res)


def test_binary_needs_a_directory(tmp_path) -> None:  # noqa: ANN001
    src = tmp_path / "a.c"
    src.write_text("int main(void) { return 0; }\n")
    res = ukl("build", str(src), "-o", "x", "--binary", "a")
    assert res.returncode == 2
    assert "--binary applies to a Makefile directory" in _one_line_error(res)


def test_non_ukl_app_on_stock_flavour_is_refused() -> None:
    from ukl.kernel import build
    with pytest.raises(UklError, match="CONFIG_UNIKERNEL_LINUX off"):
        build.build("stock", ukl_app=Path("/nonexistent.o"))
