"""`ukl catalog --small`: the short catalog run of make test. Each small
entry of catalog/packages.ini is built by Debian's own build (jq's
library build dependency, oniguruma, built for UKL first), booted on UKL
and on stock, and passes its test; the run is recorded."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, fixture_name, ukl
from ukl import catalog

pytestmark = pytest.mark.boot


def test_small_catalog_builds_boots_and_passes(request, tmp_path: Path) -> None:
    request.getfixturevalue(fixture_name("ukl"))
    request.getfixturevalue(fixture_name("stock"))
    small = [e.name for e in catalog.select(catalog.load(), [], small=True)]
    assert "jq" in small
    res = ukl("catalog", "--small", "--name", "catalog-small", timeout=3600,
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr[-4000:]
    table = (tmp_path / "catalog-small" / "catalog.md").read_text()
    assert table.startswith("Command: `ukl catalog --small --name catalog-small`")
    for name in small:
        row = next(line for line in table.splitlines() if line.startswith(f"| {name} |"))
        # | package | version | test | build | UKL | stock | ...
        assert [c.strip() for c in row.split("|")][4:7] == ["pass", "pass", "pass"], row
    jq = next(line for line in table.splitlines() if line.startswith("| jq |"))
    assert "libonig" not in jq, "jq was built without oniguruma: " + jq
    onig = REPO / "build/debian/libonig/ukl-lib/install/usr/lib/x86_64-linux-gnu/libonig.a"
    assert onig.is_file()


def test_catalog_unknown_entry_is_one_line() -> None:
    res = ukl("catalog", "no-such-entry")
    assert res.returncode == 2
    assert res.stderr.startswith("ukl: error: not in ") and res.stderr.count("\n") == 1


def test_not_a_c_program_is_one_line() -> None:
    # golang-github-google-uuid: a Go library, architecture-independent.
    res = ukl("build", "--debian", "golang-github-google-uuid", timeout=600)
    assert res.returncode != 0
    errors = [line for line in res.stderr.splitlines() if line.startswith("ukl: error:")]
    assert len(errors) == 1 and "cannot be built as a UKL program" in errors[0], res.stderr
    assert "Traceback" not in res.stderr


def test_an_interrupted_debian_build_resumes(request) -> None:
    # figlet: small, and nothing else here builds or links it.
    request.getfixturevalue(fixture_name("ukl"))
    work = REPO / "build" / "debian" / "figlet" / "ukl"
    subprocess.run(["rm", "-rf", str(work)], check=True)
    # Debian installs it as figlet-figlet (figlet is an alternative).
    build = ["build", "--debian", "figlet", "--binary", "figlet-figlet", "-o", "t-resume-figlet"]
    # SIGINT as a terminal has it: a test run started in the background
    # by a non-interactive shell inherits it ignored.
    proc = subprocess.Popen([str(REPO / "bin" / "ukl"), *build], cwd=REPO, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    # Stop it once Debian's build has started on its copy of the source
    # (the tool records that before it runs dpkg-buildpackage).
    deadline = time.monotonic() + 900
    while not (work / ".ukl-started").is_file() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    # As Ctrl-C in a terminal: the whole process group.
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=120)
    assert proc.returncode != 0
    res = ukl(*build, timeout=1800)
    assert res.returncode == 0, res.stdout + res.stderr[-3000:]
    assert "resuming the interrupted build" in res.stderr, res.stderr
    # -I1: its version as a number (the image has no fonts).
    run = ukl("run", "t-resume-figlet", "--timeout", "120", "--", "-I1")
    assert run.returncode == 0 and "20205" in run.stdout, run.stdout + run.stderr
