"""`ukl image ls` and `ukl image rm`: images by name only, nothing of the
user's touched, one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ukl
from tests.unit.fake_images import fake_image


def test_ls_and_rm(tmp_path: Path) -> None:
    env = {"UKL_BUILD_DIR": str(tmp_path / "build")}
    a = fake_image(tmp_path / "build" / "images", "a", "ukl", "ukl")
    fake_image(tmp_path / "build" / "images", "b", "ukl", "ukl")
    # Not an image: a directory without image.json is neither listed nor removable.
    (tmp_path / "build" / "images" / "mine").mkdir()
    res = ukl("image", "ls", "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert [r["name"] for r in json.loads(res.stdout)] == ["a", "b"]
    res = ukl("image", "rm", "a", "mine", env=env)
    assert res.returncode == 2 and "no image 'mine'" in res.stderr, res.stderr
    assert a.is_dir()    # one bad name removes nothing
    res = ukl("image", "rm", "a", env=env)
    assert res.returncode == 0, res.stderr
    assert not a.exists() and (tmp_path / "build" / "images" / "b").is_dir()
    assert (tmp_path / "build" / "images" / "mine").is_dir()


def test_rm_takes_names_not_paths(tmp_path: Path) -> None:
    env = {"UKL_BUILD_DIR": str(tmp_path / "build")}
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "image.json").write_text("{}")
    res = ukl("image", "rm", str(mine), env=env)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [
        f"ukl: error: bad image name {str(mine)!r}: give names from `ukl image ls`, not paths"]
    assert (mine / "image.json").is_file()
