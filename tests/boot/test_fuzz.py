"""`ukl fuzz` (guest/fuzz.c): the system call fuzzer as the application,
judged from outside. The 10-minute runs per flavour are `ukl fuzz
--kernels ... --seconds 600 --name fuzz-10min` (results/fuzz-10min*/, and
what they found in results/hardening/); here a short
run on the base model (1 and 2 CPUs), on stock, and on the
distribution-like UKL kernel under the AMD model (SRSO Safe-RET on)."""
from __future__ import annotations

import re

import pytest

from tests.conftest import fixture_name, ukl

SECONDS = "45"


RUNS = [("ukl", 1, "max"), ("ukl", 2, "max"), ("stock", 2, "max"), ("ukl-distro", 2, "EPYC")]


@pytest.mark.parametrize("kernel,cpus,model", RUNS)
def test_fuzzer_finds_nothing(request: pytest.FixtureRequest, kernel: str, cpus: int,
                              model: str, tmp_path) -> None:
    request.getfixturevalue(fixture_name(kernel))
    res = ukl("fuzz", "--kernels", kernel, "--seconds", SECONDS, "--seed", "3",
              "--cpus", str(cpus), "--cpu", model, "--name", "fuzz-test",
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    err = res.stderr
    assert res.returncode == 0, err
    assert f"[fuzz] {kernel}: pass" in err, err
    m = re.search(rf"\[fuzz\] {kernel}: pass \((\d+) calls", err)
    # Far more calls than numbers: the workers kept going the whole time.
    assert m and int(m.group(1)) > 20000, err
    table = (tmp_path / "fuzz-test" / "fuzz.md").read_text()
    assert f"| `{kernel}` | {model} | 3 | {SECONDS} | {cpus} | 2 |" in table, table


def test_fuzz_refuses_bad_arguments() -> None:
    res = ukl("fuzz", "--threads", "9")
    assert res.returncode == 2
    assert res.stderr.startswith("ukl: error: --threads must be 1-8"), res.stderr
