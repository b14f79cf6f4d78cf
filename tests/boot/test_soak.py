"""`ukl soak` (guest/soak.c): the CI version, two minutes on 2 CPUs on the
flavour that can switch bypass and run-to-completion, with the same
program as an ordinary process beside it. The 30-minute run is `ukl soak
--seconds 1800 --name soak` (results/soak/)."""
from __future__ import annotations

from tests.conftest import ukl


def test_soak_two_minutes(ukl_ret_byp_kernel, tmp_path) -> None:
    res = ukl("soak", "--kernel", "ukl-ret-byp", "--seconds", "120", "--name", "soak-test",
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    assert "[soak] ukl-ret-byp: pass: every activity advanced in every window" in res.stderr
    report = (tmp_path / "soak-test" / "soak.md").read_text()
    # Both sides got to the end: the application and the process beside it.
    assert "last progress, app: `soak app: t=120 " in report, report
    assert "last progress, peer: `soak peer: t=120 " in report, report


def test_soak_refuses_a_partial_window() -> None:
    res = ukl("soak", "--seconds", "25")
    assert res.returncode == 2
    assert res.stderr.startswith("ukl: error: --seconds must be a multiple of 10"), res.stderr
