"""Python modules UKL's own tools need beyond the standard library.

The interpreter running UKL may not be Debian's (pyenv, a venv), so these
come from PyPI, installed with that interpreter's pip: pytest runs the test
suite, matplotlib draws `ukl bench`'s figures. Everything else is stdlib.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys

from ukl.common.errors import UklError

MODULES = {
    "pytest": "runs the test suite (make test)",
    "matplotlib": "`ukl bench` draws its figures (PNG)",
}


def missing() -> list[str]:
    return [name for name in MODULES if importlib.util.find_spec(name) is None]


def ensure() -> None:
    """Install the missing modules from PyPI, saying what and why."""
    todo = missing()
    if not todo:
        return
    print(f"ukl: installing Python modules for {sys.executable} from PyPI:", file=sys.stderr)
    for name in todo:
        print(f"   {name:18} {MODULES[name]}", file=sys.stderr)
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *todo],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if res.returncode != 0:
        raise UklError(f"pip install {' '.join(todo)} failed (exit status {res.returncode}); "
                       "check that PyPI is reachable, then rerun `ukl setup`",
                       detail=(res.stderr or res.stdout)[-2000:])
    importlib.invalidate_caches()
    still = missing()
    if still:
        raise UklError(f"pip did not make {', '.join(still)} importable by {sys.executable}")
