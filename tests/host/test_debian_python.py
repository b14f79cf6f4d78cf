"""`ukl setup` on a stock Debian 12, where `python3` is Debian's own: its
Python modules come from Debian packages (this may apt-get install them,
as `ukl setup` does: root)."""
from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import REPO
from ukl.host import pymodules

DEBIAN_PYTHON = Path("/usr/bin/python3")


def test_debians_own_python3_gets_its_modules_without_breaking_the_system() -> None:
    """The module step of `ukl setup`, run by Debian's interpreter as on a
    stock Debian 12: it must succeed without pip (which PEP 668 makes refuse,
    unless told --break-system-packages) and leave the modules importable."""
    assert DEBIAN_PYTHON.is_file(), "Debian's python3 is missing: run `ukl setup`"
    step = subprocess.run(
        [str(DEBIAN_PYTHON), "-c",
         "from ukl.host import pymodules; print(pymodules.ensure())"],
        cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=900)
    assert step.returncode == 0, step.stderr
    assert step.stdout.strip() in ("debian", "present"), step.stdout
    assert "pip" not in step.stderr.replace("PEP 668", ""), step.stderr
    names = ", ".join(m.name for m in pymodules.MODULES)
    check = subprocess.run([str(DEBIAN_PYTHON), "-c", f"import {names}"],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    pip = subprocess.run([str(DEBIAN_PYTHON), "-m", "pip", "install", "--dry-run", "six"],
                         capture_output=True, text=True)
    # Still Debian's own interpreter: pip there refuses, so no step above used it.
    assert pip.returncode != 0
