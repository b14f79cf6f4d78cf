"""Builds the tool starts are top-level makes, even under `make test`."""
from __future__ import annotations

import subprocess

import pytest

from ukl.common.buildenv import build_env


def test_a_build_under_an_outer_make_is_top_level(monkeypatch: pytest.MonkeyPatch) -> None:
    # What `make test` leaves in the environment of the tests it runs.
    monkeypatch.setenv("MAKELEVEL", "1")
    monkeypatch.setenv("MAKEFLAGS", "-j4 --jobserver-auth=3,4 -- V=1")
    monkeypatch.setenv("MFLAGS", "-j4")
    rules = "all:\n\t@echo level=$(MAKELEVEL) flags=[$(MAKEFLAGS)] v=[$(V)]\n"
    out = subprocess.run(["make", "-s", "-f", "-"], input=rules, text=True, env=build_env(),
                         capture_output=True, check=True).stdout
    assert out.strip() == "level=0 flags=[s] v=[]"
