"""`ukl run -- ARGS` and `-e NAME=VALUE`: the archive that carries them past
the kernel command line, and init.sh's reading of it."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, ukl
from ukl.common.errors import UklError
from ukl.image import cpio, runargs
from ukl.image.initramfs import InitramfsSpec, image_conf

INIT = REPO / "ukl" / "image" / "init.sh"


@pytest.mark.parametrize("entry, problem", [
    ("A=b", ""), ("_x1=", ""), ("K=v=w", ""), ("K=a\nb 'c\"", ""),
    ("NOEQ", "expected NAME=VALUE"), ("1A=b", "is not a variable name"),
    ("A-B=c", "is not a variable name"), ("=v", "is not a variable name"),
])
def test_env_entries(entry: str, problem: str) -> None:
    assert (runargs.env_problem(entry) == "") == (problem == "")
    assert problem in runargs.env_problem(entry)


def test_bad_env_is_one_error_line_before_anything_else() -> None:
    for entry, why in (("NOEQ", "expected NAME=VALUE"), ("1A=b", "not a variable name")):
        res = ukl("run", "no-such-image", "-e", "OK=1", "-e", entry)
        assert res.returncode == 2
        assert res.stderr.startswith(f"ukl: error: -e '{entry}': ") and why in res.stderr
        assert res.stderr.count("\n") == 1, res.stderr
    # A long bad entry is shown shortened: still one short line.
    res = ukl("run", "x", "-e", "BAD NAME=" + "v" * 70000)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and len(res.stderr) < 200


def test_archive_holds_run_conf() -> None:
    entries = {name: body for name, _, body in
               cpio.read_names(runargs.archive(["a b"], ["K=v"]))}
    assert list(entries) == [runargs.RUN_CONF]
    conf = entries[runargs.RUN_CONF].decode()
    assert "UKL_RUN_HAS_ARGS=1\n" in conf and "UKL_RUN_ENV=K=v\n" in conf


def test_initramfs_for_run_appends_and_cleans_up(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    base = tmp_path / "base.cpio"
    base.write_bytes(b"BASE")
    with runargs.initramfs_for_run(base, [], []) as same:
        assert same == base
    with runargs.initramfs_for_run(base, ["x"], ["K=v"]) as joined:
        assert joined != base
        assert joined.read_bytes() == b"BASE" + runargs.archive(["x"], ["K=v"])
    assert not joined.exists() and base.read_bytes() == b"BASE"
    with pytest.raises(UklError, match="-e 'K': expected NAME=VALUE"):
        with runargs.initramfs_for_run(base, [], ["K"]):
            pass


def _init_part(conf_dir: Path) -> str:
    """init.sh from sourcing image.conf to the end of ukl_exec_program, with
    the guest's /etc/ukl moved to `conf_dir`."""
    init = INIT.read_text()
    start = init.index(". /etc/ukl/image.conf")
    end = init.index("\n}\n", init.index("ukl_exec_program() {")) + 3
    return init[start:end].replace("/etc/ukl/", f"{conf_dir}/")


def _run_init(tmp_path: Path, spec: InitramfsSpec, args: list[str] | None, env: list[str],
              kernel_args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run that part of init.sh under busybox sh with `spec`'s image.conf and
    (unless `args` is None) this run's run.conf; the program prints its
    arguments, then the T_ variables and PATH."""
    prog = tmp_path / "prog"
    prog.write_text('#!/bin/sh\nprintf "<%s>" "$@"; echo\n'
                    'printf "[%s]" "$T_A" "$T_B" "$T_Q" "$T_NL" "$PATH"\n')
    prog.chmod(0o755)
    spec.program_link = ""
    (tmp_path / "image.conf").write_text(
        image_conf(spec).replace("UKL_PROGRAM=''", f"UKL_PROGRAM={prog}"))
    if args is not None or env:
        (tmp_path / "run.conf").write_text(runargs.run_conf(args or [], env))
    script = "PATH=/usr/bin:/bin\n" + _init_part(tmp_path) + '(ukl_exec_program "$@")\n'
    return subprocess.run(["/bin/busybox", "sh", "-c", script, "init", *kernel_args],
                          capture_output=True, text=True)


def test_init_passes_args_and_env_verbatim(tmp_path: Path) -> None:
    args = ["", "two words", 'say "hi"', "it's", "line\nbreak", "$HOME", "*", "--"] + \
        [f"a{i}" for i in range(1000)]
    env = ["T_A=1", "T_Q=it's \"quoted\" $x", "T_NL=a\nb", "PATH=/nonexistent", "IFS=x"]
    res = _run_init(tmp_path, InitramfsSpec(), args, env)
    assert res.returncode == 0, res.stderr
    printed = "".join(f"<{a}>" for a in args) + "\n"
    assert res.stdout.startswith(printed)
    # The program got PATH and IFS as given, and init still ran it.
    assert res.stdout[len(printed):] == "[1][][it's \"quoted\" $x][a\nb][/nonexistent]"


def test_run_overrides_the_image_defaults(tmp_path: Path) -> None:
    spec = InitramfsSpec(default_args=["--default"], default_env=["T_A=image", "T_B=image"])
    res = _run_init(tmp_path, spec, None, [])
    assert res.stdout == "<--default>\n[image][image][][][/usr/bin:/bin]", res.stderr
    # Arguments on the kernel command line (older callers) still replace
    # the defaults.
    res = _run_init(tmp_path, spec, None, [], kernel_args=("k",))
    assert res.stdout.startswith("<k>\n"), res.stderr
    res = _run_init(tmp_path, spec, ["x"], ["T_B=run"])
    assert res.stdout == "<x>\n[image][run][][][/usr/bin:/bin]", res.stderr


def test_no_env_execs_the_program_directly(tmp_path: Path) -> None:
    res = _run_init(tmp_path, InitramfsSpec(), None, [])
    assert res.stdout == "<>\n[][][][][/usr/bin:/bin]", res.stderr


def test_recipe_run_env(tmp_path: Path) -> None:
    from ukl.app.debian import recipe
    (tmp_path / "pkg.ini").write_text("[run]\nenv = LANG=C.UTF-8 'MSG=a b'\n")
    assert recipe.load("pkg", tmp_path).env == ["LANG=C.UTF-8", "MSG=a b"]
    (tmp_path / "bad.ini").write_text("[run]\nenv = 9X=1\n")
    with pytest.raises(UklError, match=r"bad.ini: env entry '9X=1': '9X' is not a variable"):
        recipe.load("bad", tmp_path)


def test_own_init_with_what_init_sets_up_is_one_line() -> None:
    res = ukl("run", "no-such-image", "-e", "A=b", "--append", "rdinit=/UKL")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        "ukl: error: --append rdinit=/UKL starts that program instead of the image's init, "
        "which sets up -e, --disk, -v and -d; drop one or the other"]
