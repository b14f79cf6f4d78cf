"""The CLI's pure parts and its one-line errors for bad input."""
from __future__ import annotations

import re
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


def _one_line_error(res) -> str:
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("ukl: error: ")
    return lines[0]


def test_missing_image_is_one_line(tmp_path) -> None:
    res = ukl("run", str(tmp_path / "no-such-image"))
    assert res.returncode == 2
    assert "no image" in _one_line_error(res)


def test_unknown_option_is_one_line() -> None:
    res = ukl("run", "hello", "--frobnicate")
    assert res.returncode == 2
    line = _one_line_error(res)
    assert "unrecognized arguments: --frobnicate" in line
    assert "`ukl run --help`" in line


def test_missing_qemu_is_one_line(tmp_path) -> None:
    image = tmp_path / "img"
    image.mkdir()
    (image / "vmlinux").write_bytes(b"")
    (image / "initramfs.cpio").write_bytes(b"")
    (image / "image.json").write_text(
        '{"name": "img", "kernel_flavour": "stock", "mode": "process", "program": ""}')
    res = subprocess.run([sys.executable, str(REPO / "bin" / "ukl"), "run", str(image)],
                         env={"PATH": str(tmp_path)}, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True)
    # Not a usage error: the command line is fine, the host lacks QEMU.
    assert res.returncode == 1
    assert "qemu-system-x86_64 not found" in _one_line_error(res)


def test_bad_smp_is_one_line() -> None:
    res = ukl("run", "x", "--smp", "many")
    assert res.returncode == 2
    assert "invalid int value" in _one_line_error(res)


def test_missing_source_file_is_one_line(tmp_path) -> None:
    res = ukl("build", str(tmp_path / "nope.c"), "-o", "x")
    assert res.returncode == 2
    assert "does not exist" in _one_line_error(res)


def test_directory_without_makefile_is_one_line(tmp_path) -> None:
    res = ukl("build", str(tmp_path), "-o", "x")
    assert res.returncode == 2
    assert "has no Makefile" in _one_line_error(res)


def test_binary_needs_a_directory(tmp_path) -> None:
    src = tmp_path / "a.c"
    src.write_text("int main(void) { return 0; }\n")
    res = ukl("build", str(src), "-o", "x", "--binary", "a")
    assert res.returncode == 2
    assert "--binary applies to a Makefile directory" in _one_line_error(res)


def test_non_ukl_app_on_stock_flavour_is_refused() -> None:
    from ukl.kbuild import build, flavour
    with pytest.raises(UklError, match="CONFIG_UNIKERNEL_LINUX off"):
        build.build(flavour.get("stock"), ukl_app=Path("/nonexistent.o"))


def test_unknown_flavour_is_a_usage_error() -> None:
    res = ukl("kernel", "build", "ukl+nosuch")
    assert res.returncode == 2
    assert "no UKL option 'nosuch'" in _one_line_error(res)


def test_every_command_has_its_own_module_and_help() -> None:
    listed = [name for _, group in cli.COMMANDS for name, _ in group]
    assert len(listed) == len(set(listed)) == len(cli.COMMAND_MODULES)
    for name in listed:
        module = cli.load(name)
        assert module.__name__.startswith("ukl.cli.") and module.SUMMARY, name
    text = cli.build_parser().format_help()
    for title, group in cli.COMMANDS:
        assert f"{title}:" in text
        assert all(f"  {name} " in text for name, _ in group)


def test_results_record_the_command_line_as_typed(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from ukl.cli import matrix as matrix_cmd
    seen: list[str] = []
    monkeypatch.setattr(matrix_cmd.matrix, "run_matrix",
                        lambda name, only, resume, command, base, cpu:
                        seen.append(command) or tmp_path)
    assert cli.main(["matrix", "--only", "ukl+byp", "--name", "a b"]) == 0
    assert seen == ["ukl matrix --only ukl+byp --name 'a b'"]


@pytest.mark.parametrize("args, message", [
    (["series", "status", "nosuch"], "unknown source component 'nosuch'"),
    (["bench", "--configs", "ukl-ret,ukl+ret"], "ukl\\+ret is the same kernel as ukl-ret"),
    (["bench", "--configs", ","], "no kernel flavour given"),
    (["bench-apps", "--configs", "stock,nosuch"], "unknown kernel flavour 'nosuch'"),
])
def test_bad_names_are_usage_errors(args: list[str], message: str) -> None:
    res = ukl(*args)
    assert res.returncode == 2, res.stderr
    assert re.search(message, _one_line_error(res)), res.stderr


def test_a_composed_name_of_a_named_kernel_is_that_kernel() -> None:
    from ukl.kbuild import flavour
    assert flavour.get("ukl+ret") is flavour.get("ukl-ret")
    assert flavour.get("ukl+rtc").name == "ukl+rtc"


def test_setup_imports_nothing_that_setup_installs() -> None:
    """On a new machine `ukl setup` runs before the Python modules it
    installs exist: neither it nor the command line may import them."""
    from ukl.host import pymodules
    probe = ("import sys; from ukl import cli; cli.build_parser('setup'); cli.load('setup'); "
             "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))")
    res = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                         text=True, check=True)
    assert not {m.name for m in pymodules.MODULES} & set(res.stdout.split())


def test_help_works_and_commands_say_what_to_do_before_setup() -> None:
    """Without python3-debian (a new machine before `ukl setup`), `ukl
    --help` still lists every command, and one that needs the module says
    to run setup, in one line."""
    probe = ("import sys; sys.modules['debian'] = None; from ukl import cli; "
             "text = cli.build_parser().format_help(); "
             "assert '  build ' in text and 'ukl setup' in text, text; "
             "sys.exit(cli.main(['build', 'x.c']))")
    res = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True)
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip().splitlines() == [
        f"ukl: error: Python module 'debian' is missing for {sys.executable}: "
        "run `bin/ukl setup` (as root) first"]
