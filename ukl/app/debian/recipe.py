"""How to build a Debian source package as a UKL application: the recipe.

recipes/PACKAGE.ini, when it exists, says what the package needs beyond
the defaults (build flags, which program, tools, default arguments); a
package without one is built with its own build system and defaults, so an
unknown package can still be tried. Format:

    [build]
    system = auto | make | configure      (auto: ./configure if present)
    configure_args = ...                   (shell words; {cflags} and {ldflags}
    make_args = ...                         expand to the dependencies' -I / -L)
    program = path/in/tree                 (default: an executable named PACKAGE)
    tools = path ...                       (ordinary programs for /usr/bin)
    depends = package ...                  (libraries: built first, same compiler)
    library = yes                          (a dependency: install, no program)
    patches = relpath ...                  (ours, from recipes/, applied with
                                            patch -p1 after Debian's own)
    [run]
    args = ...                             (default program arguments)
    [image]
    files = relpath:/guest/path ...        (files from recipes/ into the image)
"""
from __future__ import annotations

import configparser
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ukl.common import paths
from ukl.common.errors import UklError

RECIPES_DIR = paths.REPO_ROOT / "recipes"
SYSTEMS = ("auto", "make", "configure")


@dataclass(frozen=True)
class Recipe:
    package: str
    system: str = "auto"
    configure_args: list[str] = field(default_factory=list)
    make_args: list[str] = field(default_factory=list)
    program: str | None = None
    tools: list[str] = field(default_factory=list)
    depends: list[str] = field(default_factory=list)
    library: bool = False
    patches: list[Path] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    # (host path, guest path) of extra image files.
    files: list[tuple[Path, str]] = field(default_factory=list)
    # The file it came from, or None for the defaults.
    source: Path | None = None


def load(package: str, recipes_dir: Path = RECIPES_DIR) -> Recipe:
    path = recipes_dir / f"{package}.ini"
    if not path.is_file():
        return Recipe(package)
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path)
    except configparser.Error as e:
        raise UklError(f"{path}: {e}") from e
    none: dict[str, str] = {}
    build: Mapping[str, str] = parser["build"] if parser.has_section("build") else none
    run: Mapping[str, str] = parser["run"] if parser.has_section("run") else none
    unknown = set(build) - {"system", "configure_args", "make_args", "program", "tools",
                            "depends", "library", "patches"}
    if unknown:
        raise UklError(f"{path}: unknown [build] keys: {', '.join(sorted(unknown))}")
    system = build.get("system", "auto")
    if system not in SYSTEMS:
        raise UklError(f"{path}: system = {system}; expected one of {', '.join(SYSTEMS)}")
    image: Mapping[str, str] = parser["image"] if parser.has_section("image") else none
    files = []
    for item in shlex.split(image.get("files", "")):
        host, sep, guest = item.partition(":")
        if not sep or not guest.startswith("/"):
            raise UklError(f"{path}: files entry '{item}': expected relpath:/guest/path")
        if not (recipes_dir / host).is_file():
            raise UklError(f"{path}: files entry '{item}': {recipes_dir / host} does not exist")
        files.append((recipes_dir / host, guest))
    patches = [recipes_dir / rel for rel in shlex.split(build.get("patches", ""))]
    for patch in patches:
        if not patch.is_file():
            raise UklError(f"{path}: patches entry {patch} does not exist")
    return Recipe(
        package=package,
        system=system,
        configure_args=shlex.split(build.get("configure_args", "")),
        make_args=shlex.split(build.get("make_args", "")),
        program=build.get("program") or None,
        tools=shlex.split(build.get("tools", "")),
        depends=shlex.split(build.get("depends", "")),
        library=build.get("library", "no").lower() in ("yes", "true", "1"),
        patches=patches,
        args=shlex.split(run.get("args", "")),
        files=files,
        source=path,
    )
