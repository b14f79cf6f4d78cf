"""Shared test helpers: run the ukl CLI as a user would."""
from __future__ import annotations

import os
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
