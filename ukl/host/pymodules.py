"""Python modules UKL's own tools need beyond the standard library.

Where they come from depends on the interpreter running UKL:

* Debian's own `/usr/bin/python3` is "externally managed" (PEP 668: its
  standard library directory holds an EXTERNALLY-MANAGED file), and its
  pip refuses to install anything (`externally-managed-environment`). The
  modules then come from Debian's packages (python3-pytest, ...), installed
  with apt-get like every other package `ukl setup` needs.
* Any other interpreter (pyenv, a virtual environment, a self-built Python)
  gets them from PyPI through its own pip.

`ukl setup` says which, and why.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from ukl.common.errors import UklError
from ukl.host import packages


@dataclass(frozen=True)
class Module:
    name: str     # what `import` takes
    debian: str   # the Debian package that provides it for Debian's python3
    pypi: str     # the PyPI distribution that provides it elsewhere
    why: str


MODULES = (
    Module("pytest", "python3-pytest", "pytest", "runs the test suite (make test)"),
    Module("xdist", "python3-pytest-xdist", "pytest-xdist",
           "make test runs its tests two at a time"),
    Module("matplotlib", "python3-matplotlib", "matplotlib",
           "`ukl bench` draws its figures (PNG)"),
    Module("psycopg2", "python3-psycopg2", "psycopg2-binary",
           "the PostgreSQL tests are clients from the host"),
    Module("debian", "python3-debian", "python-debian",
           "`ukl build --debian` reads source packages' debian/control and changelog"),
    Module("elftools", "python3-pyelftools", "pyelftools",
           "finds the application's speculation thunk sites for the kernel link"),
)


def externally_managed(prefix: str | None = None, base_prefix: str | None = None,
                       stdlib: Path | None = None) -> bool:
    """Whether pip refuses to install into the running interpreter (PEP 668).

    A virtual environment is never externally managed, even when the
    interpreter it was made from is."""
    if (prefix or sys.prefix) != (base_prefix or sys.base_prefix):
        return False
    stdlib = stdlib or Path(sysconfig.get_path("stdlib"))
    return (stdlib / "EXTERNALLY-MANAGED").is_file()


def missing(modules: tuple[Module, ...] = MODULES) -> list[Module]:
    return [m for m in modules if importlib.util.find_spec(m.name) is None]


def ensure(modules: tuple[Module, ...] = MODULES) -> str:
    """Make the modules importable by this interpreter; return where they
    came from ("debian", "pypi" or "present")."""
    todo = missing(modules)
    if not todo:
        return "present"
    if externally_managed():
        print(f"ukl: {sys.executable} is Debian's interpreter (externally managed, "
              "PEP 668): its Python modules come from Debian packages", file=sys.stderr)
        packages.ensure([packages.Package(m.debian, m.why) for m in todo])
        source = "debian"
    else:
        _pip_install(todo)
        source = "pypi"
    importlib.invalidate_caches()
    still = missing(modules)
    if still:
        raise UklError(f"{', '.join(m.name for m in still)} still cannot be imported by "
                       f"{sys.executable} after installing them from {source}")
    return source


def _pip_install(todo: list[Module]) -> None:
    print(f"ukl: installing Python modules for {sys.executable} from PyPI "
          "(not Debian's interpreter, so not from Debian packages):", file=sys.stderr)
    for m in todo:
        print(f"   {m.pypi:18} {m.why}", file=sys.stderr)
    names = [m.pypi for m in todo]
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", *names],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if res.returncode != 0:
        raise UklError(f"pip install {' '.join(names)} failed (exit status "
                       f"{res.returncode}); check that PyPI is reachable, then rerun "
                       "`ukl setup`", detail=(res.stderr or res.stdout)[-2000:])
