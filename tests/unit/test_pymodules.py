"""`ukl setup`'s PyPI modules: what is missing, and a failing pip explained."""
from __future__ import annotations

import subprocess

import pytest

from ukl.common.errors import UklError
from ukl.host import pymodules


def test_missing_names_only_modules_that_cannot_be_imported(monkeypatch) -> None:
    monkeypatch.setattr(pymodules, "MODULES", {"json": "stdlib", "no_such_module_ukl": "x"})
    assert pymodules.missing() == ["no_such_module_ukl"]


def test_failing_pip_gives_an_actionable_error(monkeypatch) -> None:
    monkeypatch.setattr(pymodules, "MODULES", {"no_such_module_ukl": "a test module"})
    calls: list[list[str]] = []

    def fake_run(cmd, **kwargs):  # noqa: ANN001, ANN202 - subprocess.run's shape
        calls.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, "", "ERROR: No matching distribution")

    monkeypatch.setattr(pymodules.subprocess, "run", fake_run)
    with pytest.raises(UklError, match="pip install no_such_module_ukl failed.*PyPI"):
        pymodules.ensure()
    assert calls and calls[0][1:4] == ["-m", "pip", "install"]


def test_nothing_to_do_runs_no_pip(monkeypatch) -> None:
    monkeypatch.setattr(pymodules, "MODULES", {"json": "stdlib"})
    monkeypatch.setattr(pymodules.subprocess, "run", lambda *a, **k: pytest.fail("pip ran"))
    pymodules.ensure()
