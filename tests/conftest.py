"""Shared test helpers: run the ukl CLI as a user would."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = REPO / "tests" / "programs"
sys.path.insert(0, str(REPO))


def ukl(*args: str, timeout: float = 900,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run bin/ukl with stdin closed; capture output. `env` adds variables."""
    return subprocess.run([sys.executable, str(REPO / "bin" / "ukl"), *args],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO,
                          env={**os.environ, **env} if env else None)


@pytest.fixture(scope="session")
def stock_kernel() -> Path:
    """The stock vmlinux, built (incrementally) if needed."""
    from ukl.kernel import build
    return build.build("stock")


@pytest.fixture(scope="session")
def ukl_kernel() -> Path:
    """The UKL-flavour vmlinux without an application (each image links its
    own), built (incrementally) if needed."""
    from ukl.kernel import build
    return build.build("ukl")


@pytest.fixture(scope="session")
def byp_kernel() -> Path:
    """The UKL_BYP flavour (base model + system call bypass)."""
    from ukl.kernel import build
    return build.build("ukl-byp")


@pytest.fixture(scope="session")
def ret_kernel() -> Path:
    """The UKL_RET flavour (base model + popf/ret return from faults)."""
    from ukl.kernel import build
    return build.build("ukl-ret")


@pytest.fixture(scope="session")
def sc_kernel() -> Path:
    """UKL_RET + UKL_BYP + UKL_SHORTCUTS + UKL_RTC (flavour ukl-ret-byp)."""
    from ukl.kernel import build
    return build.build("ukl-ret-byp")


@pytest.fixture(scope="session")
def pfdf_kernel() -> Path:
    """UKL_PF_DF instead of the default UKL_PF_SS (flavour ukl-pf-df)."""
    from ukl.kernel import build
    return build.build("ukl-pf-df")


@pytest.fixture(scope="session")
def nss_kernel() -> Path:
    """UKL_NSS: system calls on the app's own stack (flavour ukl-nss)."""
    from ukl.kernel import build
    return build.build("ukl-nss")


@pytest.fixture(scope="session")
def nss_ps_kernel() -> Path:
    """UKL_NSS_PS: app threads on pinned kernel-half stacks (flavour ukl-nss-ps)."""
    from ukl.kernel import build
    return build.build("ukl-nss-ps")


def stop_run(runner: subprocess.Popen[str]) -> None:
    """Kill a `ukl run` started with start_new_session=True, QEMU included:
    killing `ukl run` alone would leave QEMU running (and its ports held)."""
    if runner.poll() is None:
        os.killpg(runner.pid, signal.SIGKILL)
        runner.communicate()


def gdb_break_session(image: str, breakpoint: str, *program_args: str
                      ) -> tuple[subprocess.CompletedProcess[str], int, str]:
    """Boot `image` with --gdb, attach gdb with the image's vmlinux, stop at
    `breakpoint`, print its source line, then let it run to the end.
    Returns gdb's result and the run's exit status and output."""
    import time
    runner = subprocess.Popen(
        [sys.executable, str(REPO / "bin" / "ukl"), "run", image, "--gdb", "--",
         *program_args],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        # The hint line printed by ukl is the command to use.
        hint = runner.stderr.readline() + runner.stderr.readline()
        assert "target remote localhost:1234" in hint, hint
        vmlinux = hint.split()[-1]
        for _ in range(40):  # QEMU opens the gdbstub port shortly after starting
            gdb = subprocess.run(
                ["gdb", "-batch", "-nx", "-ex", "target remote localhost:1234",
                 "-ex", f"break {breakpoint}", "-ex", "continue", "-ex", "info line *$pc",
                 "-ex", "delete", "-ex", "continue", vmlinux],
                stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180)
            if "Connection refused" not in gdb.stderr:
                break
            time.sleep(0.5)
        out, _ = runner.communicate(timeout=120)
        return gdb, runner.returncode, out
    finally:
        stop_run(runner)
