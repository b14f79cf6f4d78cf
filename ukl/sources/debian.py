"""Source components: a Debian source package plus our patch series."""
from __future__ import annotations

import configparser
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError, UsageError

SOURCES_INI = paths.REPO_ROOT / "sources.ini"


@dataclass(frozen=True)
class Component:
    """One source tree we build: pristine Debian source + a patch series."""

    name: str
    package: str
    recorded_version: str
    tarball: Path
    topdir: str
    series_dir: Path
    tree: Path
    # The sources.ini this came from; `ukl series export` records versions there.
    ini: Path


def load(ini: Path = SOURCES_INI, trees: Path | None = None,
         root: Path = paths.REPO_ROOT) -> dict[str, Component]:
    parser = configparser.ConfigParser()
    if not parser.read(ini):
        raise UklError(f"cannot read {ini}")
    trees = trees or paths.source_trees_dir()
    out = {}
    for name in parser.sections():
        sec = parser[name]
        out[name] = Component(
            name=name,
            package=sec["package"],
            recorded_version=sec["version"],
            tarball=Path(sec["tarball"]),
            topdir=sec["topdir"],
            series_dir=root / sec["series"],
            tree=trees / name,
            ini=ini,
        )
    return out


def get(name: str) -> Component:
    components = load()
    if name not in components:
        raise UsageError(
            f"unknown source component '{name}'; known: {', '.join(sorted(components))}")
    return components[name]


def installed_version(package: str) -> str | None:
    res = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                         capture_output=True, text=True)
    return res.stdout.strip() or None if res.returncode == 0 else None


def require_tarball(comp: Component) -> str:
    """Check the Debian package is installed; return its version."""
    version = installed_version(comp.package)
    if version is None or not comp.tarball.is_file():
        raise UklError(
            f"Debian package {comp.package} is not installed (need {comp.tarball}); "
            f"run `make setup` or, as root, `apt-get install {comp.package}`")
    return version


def record_version(comp: Component, version: str) -> None:
    """Rewrite the `version =` line of the component's section, keeping comments."""
    lines = comp.ini.read_text().splitlines(keepends=True)
    section = None
    for i, line in enumerate(lines):
        header = re.match(r"\s*\[([^]]+)\]", line)
        if header:
            section = header.group(1)
        elif section == comp.name and re.match(r"\s*version\s*=", line):
            lines[i] = f"version = {version}\n"
    comp.ini.write_text("".join(lines))
