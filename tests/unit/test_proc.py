"""ukl.common.proc: a logged command's failure, and its interruption."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.common.errors import Interrupted, UklError
from ukl.common.proc import run_logged


def test_a_failed_command_and_a_stopped_one_are_told_apart(tmp_path: Path) -> None:
    log = tmp_path / "step.log"
    with pytest.raises(UklError, match="exit status 3") as failed:
        run_logged(["sh", "-c", "echo why; exit 3"], label="step", log_path=log,
                   progress=False)
    assert not isinstance(failed.value, Interrupted)
    assert "why" in failed.value.detail
    # Killed by a signal (Ctrl-C, the OOM killer): an interruption.
    with pytest.raises(Interrupted, match="stopped by signal 9"):
        run_logged(["sh", "-c", "kill -9 $$"], label="step", log_path=log, progress=False)
