"""`ukl build --debian` on a package with no recipe (GNU hello: autotools,
gettext): the defaults must be enough, on the UKL kernel and on stock."""
from __future__ import annotations

import pytest

from tests.conftest import REPO, fixture_name, image_dir, ukl

pytestmark = pytest.mark.boot


@pytest.mark.parametrize("kernel,mode", [("ukl", "ukl"), ("stock", "process")])
def test_package_without_recipe_builds_and_runs(kernel: str, mode: str, request) -> None:
    request.getfixturevalue(fixture_name(kernel))
    assert not (REPO / "recipes" / "hello.ini").exists()
    name = f"t-deb-hello-{kernel}"
    res = ukl("build", "--debian", "hello", "-o", name, "--kernel", kernel, timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f'"mode": "{mode}"' in (image_dir(name) / "image.json").read_text()
    run = ukl("run", name, "--timeout", "120", "--", "--greeting=hello from the kernel")
    assert "hello from the kernel" in run.stdout, run.stdout + run.stderr
    assert run.returncode == 0, run.stdout + run.stderr


def test_unknown_package_is_a_clear_error() -> None:
    res = ukl("build", "--debian", "no-such-package-ukl")
    assert res.returncode != 0
    assert "Debian has no source package 'no-such-package-ukl'" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
