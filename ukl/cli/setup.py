"""`ukl setup`: the Debian packages and Python modules UKL needs."""
from __future__ import annotations

import argparse
import sys

from ukl.cli.args import Invocation
from ukl.host import packages, pymodules

SUMMARY = "install the Debian packages (as root) and Python modules UKL needs"

_SOURCES = {"debian": "from Debian packages", "pypi": "from PyPI", "present": "already there"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace, inv: Invocation) -> int:
    packages.ensure()
    source = _SOURCES[pymodules.ensure()]
    print("ukl: all required Debian packages are installed; Python modules for "
          f"{sys.executable}: {source}", file=sys.stderr)
    return 0
