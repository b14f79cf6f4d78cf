"""`ukl setup`'s Python modules: Debian packages for Debian's interpreter,
PyPI for any other, and a failing pip explained."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from ukl.common.errors import UklError
from ukl.host import packages, pymodules

MISSING = (pymodules.Module("no_such_module_ukl", "python3-no-such-module-ukl",
                            "no-such-module-ukl", "a test module"),)


def test_missing_names_only_modules_that_cannot_be_imported() -> None:
    present = pymodules.Module("json", "-", "-", "stdlib")
    assert pymodules.missing((present, *MISSING)) == list(MISSING)


def test_pep668_marker_decides_and_a_venv_is_never_managed(tmp_path: Path) -> None:
    assert not pymodules.externally_managed("/usr", "/usr", tmp_path)
    (tmp_path / "EXTERNALLY-MANAGED").write_text("[externally-managed]\n")
    assert pymodules.externally_managed("/usr", "/usr", tmp_path)
    assert not pymodules.externally_managed("/srv/venv", "/usr", tmp_path)


def test_managed_interpreter_gets_debian_packages_and_no_pip(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pymodules, "externally_managed", lambda: True)
    monkeypatch.setattr(pymodules.subprocess, "run",
                        lambda *a, **k: pytest.fail("pip ran for Debian's interpreter"))
    asked: list[list[str]] = []
    monkeypatch.setattr(packages, "ensure",
                        lambda pkgs: asked.append([p.name for p in pkgs]))
    with pytest.raises(UklError, match="still cannot be imported.*from debian"):
        pymodules.ensure(MISSING)
    assert asked == [["python3-no-such-module-ukl"]]


def test_failing_pip_gives_an_actionable_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pymodules, "externally_managed", lambda: False)
    calls: list[list[str]] = []

    def fake_run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(pymodules.subprocess, "run", fake_run)
    with pytest.raises(UklError, match="pip install no-such-module-ukl failed.*PyPI"):
        pymodules.ensure(MISSING)
    assert calls and calls[0][1:4] == ["-m", "pip", "install"]


def test_nothing_to_do_installs_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pymodules.subprocess, "run", lambda *a, **k: pytest.fail("pip ran"))
    monkeypatch.setattr(packages, "ensure", lambda *a: pytest.fail("apt ran"))
    assert pymodules.ensure((pymodules.Module("json", "-", "-", "stdlib"),)) == "present"
