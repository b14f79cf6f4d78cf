"""The ukl tool's Python code passes flake8 and mypy --strict, both from
Debian's packages, with the configuration in pyproject.toml."""
from __future__ import annotations

import subprocess
import tomllib

from tests.conftest import REPO

PYPROJECT = REPO / "pyproject.toml"


def _flake8_args() -> list[str]:
    """[tool.flake8] as command-line options: Debian's flake8 5 does not
    read pyproject.toml itself."""
    conf = tomllib.loads(PYPROJECT.read_text())["tool"]["flake8"]
    return [f"--{key}={','.join(value) if isinstance(value, list) else value}"
            for key, value in conf.items()]


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)


def test_flake8_is_clean() -> None:
    res = _run(["/usr/bin/flake8", *_flake8_args(), "ukl", "bin/ukl", "tests"])
    assert res.returncode == 0, res.stdout + res.stderr


def test_mypy_strict_is_clean() -> None:
    conf = tomllib.loads(PYPROJECT.read_text())["tool"]["mypy"]
    assert conf["strict"] is True
    # Debian's mypy, run by Debian's python3, reads [tool.mypy].
    res = _run(["/usr/bin/mypy", "--config-file", str(PYPROJECT)])
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Success: no issues found" in res.stdout
