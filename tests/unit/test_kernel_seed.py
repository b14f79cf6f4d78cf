"""A flavour's first build starts from the nearest built flavour's objects."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ukl.common.errors import UklError
from ukl.kbuild import seed


def _built(builds: Path, name: str, config_text: str, *, vmlinux: bool = True) -> Path:
    d = builds / name
    (d / "kernel").mkdir(parents=True)
    (d / ".config").write_text(config_text)
    (d / "kernel" / "fork.o").write_text(f"object of {name}")
    os.utime(d / "kernel" / "fork.o", (1_000_000, 1_000_000))
    (d / "source").symlink_to("/nonexistent/linux")
    (d / seed.LOCK_NAME).write_text("")
    (d / ".ukl-steps").write_text("1560")
    if vmlinux:
        (d / "vmlinux").write_text("elf")
    return d


def test_nearest_picks_the_fewest_differing_options(tmp_path: Path) -> None:
    _built(tmp_path, "stock", "# CONFIG_UKL is not set\n# CONFIG_BYP is not set\n")
    _built(tmp_path, "ukl", "CONFIG_UKL=y\n# CONFIG_BYP is not set\n")
    # Closest of all, but never finished (no vmlinux): not a seed.
    _built(tmp_path, "broken", "CONFIG_UKL=y\nCONFIG_BYP=y\n", vmlinux=False)
    out = tmp_path / "ukl-byp"
    wanted = {"CONFIG_UKL": "y", "CONFIG_BYP": "y"}
    assert seed.nearest(wanted, tmp_path, exclude=out) == tmp_path / "ukl"
    assert seed.nearest({"CONFIG_UKL": "n"}, tmp_path, exclude=out) == tmp_path / "stock"


def test_nearest_counts_options_on_that_the_flavour_does_not_want(tmp_path: Path) -> None:
    # A deployed build has every option a lab ukl-byp wants, and the
    # mitigations too: ukl, one option away, is the nearer seed.
    _built(tmp_path, "ukl", "CONFIG_UKL=y\n# CONFIG_BYP is not set\n# CONFIG_RETPOLINE is not set\n"
           "# CONFIG_PTI is not set\n")
    _built(tmp_path, "ukl-byp-deployed", "CONFIG_UKL=y\nCONFIG_BYP=y\nCONFIG_RETPOLINE=y\n"
           "CONFIG_PTI=y\n")
    wanted = {"CONFIG_UKL": "y", "CONFIG_BYP": "y"}
    named = ["CONFIG_UKL", "CONFIG_BYP", "CONFIG_RETPOLINE", "CONFIG_PTI"]
    out = tmp_path / "ukl-byp"
    assert seed.nearest(wanted, tmp_path, exclude=out, named=named) == tmp_path / "ukl"
    assert seed.distance(wanted, {"CONFIG_UKL": "y", "CONFIG_BYP": "y", "CONFIG_PTI": "y"},
                         named) == 1
    # The deployed flavour itself starts from the deployed build.
    deployed = {**wanted, "CONFIG_RETPOLINE": "y", "CONFIG_PTI": "y"}
    assert seed.nearest(deployed, tmp_path, exclude=tmp_path / "x", named=named) == \
        tmp_path / "ukl-byp-deployed"


def test_nearest_without_any_build_is_none(tmp_path: Path) -> None:
    assert seed.nearest({"CONFIG_A": "y"}, tmp_path / "missing", exclude=tmp_path) is None
    _built(tmp_path, "only", "CONFIG_A=y\n")
    assert seed.nearest({"CONFIG_A": "y"}, tmp_path, exclude=tmp_path / "only") is None


def test_seed_copies_objects_with_timestamps_but_not_the_lock(tmp_path: Path) -> None:
    source = _built(tmp_path, "stock", "CONFIG_A=y\n")
    out = tmp_path / "ukl"
    out.mkdir()
    (out / seed.LOCK_NAME).write_text("mine")
    (out / "leftover.o").write_text("from an interrupted seed")
    seed.seed(out, source)
    copied = out / "kernel" / "fork.o"
    assert copied.read_text() == "object of stock"
    assert copied.stat().st_mtime == 1_000_000  # Kbuild's up-to-date test
    assert os.readlink(out / "source") == "/nonexistent/linux"
    assert (out / ".config").read_text() == "CONFIG_A=y\n"
    assert (out / seed.LOCK_NAME).read_text() == "mine"
    assert not (out / ".ukl-steps").exists()
    assert not (out / "leftover.o").exists()
    assert not (tmp_path / ".ukl.seeding").exists()
    # The source is untouched.
    assert (source / ".ukl-steps").read_text() == "1560"


def test_failed_copy_leaves_no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _built(tmp_path, "stock", "CONFIG_A=y\n")
    out = tmp_path / "ukl"
    out.mkdir()

    def disk_full(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(cmd, 1, "", "cp: error writing: No space left")

    monkeypatch.setattr(seed.subprocess, "run", disk_full)
    with pytest.raises(UklError, match="could not seed .* No space left"):
        seed.seed(out, source)
    assert not (out / ".config").exists()
    assert not (tmp_path / ".ukl.seeding").exists()


def test_seed_points_host_tool_commands_at_the_copy(tmp_path: Path) -> None:
    # objtool's .cmd files hold the output directory's absolute path; left
    # as they are, objtool is rebuilt in the copy and every object after it.
    source = _built(tmp_path, "ukl", "CONFIG_A=y\n")
    (tmp_path / "ukl-byp").mkdir()
    cmd = source / "tools" / "objtool" / ".check.o.cmd"
    cmd.parent.mkdir(parents=True)
    cmd.write_text(f"cmd_{source}/tools/objtool/check.o := gcc -o {source}/tools/objtool/check.o\n"
                   f"deps := {tmp_path}/ukl-byp/other.h\n")
    os.utime(cmd, (2_000_000, 2_000_000))
    out = tmp_path / "ukl-nss"
    out.mkdir()
    seed.seed(out, source)
    moved = out / "tools" / "objtool" / ".check.o.cmd"
    assert moved.read_text() == (
        f"cmd_{out}/tools/objtool/check.o := gcc -o {out}/tools/objtool/check.o\n"
        f"deps := {tmp_path}/ukl-byp/other.h\n")  # a sibling's path is not the source's
    assert moved.stat().st_mtime == 2_000_000
    assert str(source) in cmd.read_text()  # the source is untouched
