"""A failed Debian build is remembered by its inputs and by the tool."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.app.debian import failures
from ukl.common.errors import Interrupted, UklError


def test_a_failure_is_remembered_for_the_same_inputs_and_tool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(failures, "tool_identity", lambda: "tool-1")
    assert failures.remembered(tmp_path, "state-a") is None
    error = UklError("debian/rules krb5 (ukl) failed: configure: error: no com_err",
                     detail="the log's tail")
    failures.remember(tmp_path, "state-a", error)
    again = failures.remembered(tmp_path, "state-a")
    assert again is not None
    assert (again.message, again.detail) == (error.message, error.detail)
    with pytest.raises(UklError, match="no com_err"):
        failures.fail_as_before(tmp_path, "state-a", "krb5 1.20.1 (ukl)")
    failures.fail_as_before(tmp_path, "state-b", "krb5 1.20.1 (ukl)")
    # Other inputs, or another version of the tool: built again.
    assert failures.remembered(tmp_path, "state-b") is None
    monkeypatch.setattr(failures, "tool_identity", lambda: "tool-2")
    assert failures.remembered(tmp_path, "state-a") is None
    # A build stopped by a signal did not fail: not remembered.
    failures.forget(tmp_path)
    failures.remember(tmp_path, "state-a", Interrupted("debian/rules krb5 was stopped by signal 2"))
    assert failures.remembered(tmp_path, "state-a") is None
    # A build that succeeds forgets; a damaged record is no failure.
    failures.forget(tmp_path)
    assert not failures.record_path(tmp_path).exists()
    failures.record_path(tmp_path).write_text("{not json")
    assert failures.remembered(tmp_path, "state-a") is None


def test_the_tool_identity_covers_the_tools_code() -> None:
    # One digest per process; it reads this tool's own files.
    assert failures.tool_identity() == failures.tool_identity()
    assert len(failures.tool_identity()) == 64
