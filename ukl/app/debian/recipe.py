"""How to build a Debian source package as a UKL application: the recipe.

recipes/PACKAGE.ini, when it exists, says what the package needs beyond
the defaults (build flags, which program, tools, default arguments); a
package without one is built with its own build system and defaults, so an
unknown package can still be tried. Format:

    [build]
    system = auto | debian | configure | make
                                           (auto: Debian's own build, debian/rules;
                                            configure/make: upstream's build run
                                            directly, with the keys below)
    configure_args = ...                   (shell words; {cflags} and {ldflags}
    make_args = ...                         expand to the dependencies' -I / -L)
    make_first = ...                       (arguments of a make run before the
                                            main one: generated files that a
                                            parallel make would race on)
    program = path/in/tree                 (default: an executable named PACKAGE)
    tools = path ...                       (ordinary programs for /usr/bin)
    depends = package ...                  (libraries: built first, same compiler)
    library = yes                          (a dependency: install, no program)
    patches = relpath ...                  (ours, from recipes/, applied with
                                            patch -p1 after Debian's own)
    [run]
    args = ...                             (default program arguments)
    env = NAME=VALUE ...                   (the program's environment, shell
                                            words; `ukl run -e` overrides)
    user = NAME                            (run the program as this user, not
                                            root; see ukl/image/runas.c)
    path = /guest/path                     (start the program by this path, a
                                            symbolic link to it)
    [image]
    files = relpath:/guest/path ...        (files from recipes/ into the image)
    prepare = relpath                      (a shell script from recipes/, run on
                                            the host to make more of the image's
                                            files; see ukl/app/debian/prepare.py)
"""
from __future__ import annotations

import configparser
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ukl.common import paths
from ukl.common.errors import UklError
from ukl.image.runargs import env_problem

RECIPES_DIR = paths.REPO_ROOT / "recipes"
SYSTEMS = ("auto", "debian", "make", "configure")
_KEYS = {
    "build": {"system", "configure_args", "make_args", "make_first", "program", "tools", "depends",
              "library", "patches"},
    "run": {"args", "env", "user", "path"},
    "image": {"files", "prepare"},
}
_USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")


@dataclass(frozen=True)
class Recipe:
    package: str
    system: str = "auto"
    configure_args: list[str] = field(default_factory=list)
    make_args: list[str] = field(default_factory=list)
    make_first: list[str] = field(default_factory=list)
    program: str | None = None
    tools: list[str] = field(default_factory=list)
    depends: list[str] = field(default_factory=list)
    library: bool = False
    patches: list[Path] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    # NAME=VALUE entries in the program's environment.
    env: list[str] = field(default_factory=list)
    # (host path, guest path) of extra image files.
    files: list[tuple[Path, str]] = field(default_factory=list)
    user: str | None = None
    path: str = ""
    prepare: Path | None = None
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
    for section, known in _KEYS.items():
        unknown = set(parser[section]) - known if parser.has_section(section) else set()
        if unknown:
            raise UklError(f"{path}: unknown [{section}] keys: {', '.join(sorted(unknown))}")
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
    user, start = _run_settings(run, path)
    env = shlex.split(run.get("env", ""))
    for entry in env:
        if env_problem(entry):
            raise UklError(f"{path}: env entry {entry!r}: {env_problem(entry)}")
    prepare = _prepare_script(image, recipes_dir, path)
    patches = [recipes_dir / rel for rel in shlex.split(build.get("patches", ""))]
    for patch in patches:
        if not patch.is_file():
            raise UklError(f"{path}: patches entry {patch} does not exist")
    return Recipe(
        package=package,
        system=system,
        configure_args=shlex.split(build.get("configure_args", "")),
        make_args=shlex.split(build.get("make_args", "")),
        make_first=shlex.split(build.get("make_first", "")),
        program=build.get("program") or None,
        tools=shlex.split(build.get("tools", "")),
        depends=shlex.split(build.get("depends", "")),
        library=build.get("library", "no").lower() in ("yes", "true", "1"),
        patches=patches,
        args=shlex.split(run.get("args", "")),
        env=env,
        files=files,
        user=user,
        path=start,
        prepare=prepare,
        source=path,
    )


def build_settings(rec: Recipe) -> list[str]:
    """The [build] keys a recipe sets: what the package needs beyond
    Debian's own build (a recipe that only says how to run the program
    has none)."""
    settings = [f"system = {rec.system}"] if rec.system != "auto" else []
    for key in ("configure_args", "make_args", "make_first", "tools", "depends", "patches"):
        if getattr(rec, key):
            settings.append(key)
    if rec.program:
        settings.append("program")
    return settings


def _run_settings(run: Mapping[str, str], path: Path) -> tuple[str | None, str]:
    """[run] user and path, checked."""
    user = run.get("user") or None
    if user is not None and not _USER_NAME.match(user):
        raise UklError(f"{path}: user = {user}: expected a user name ([a-z_][a-z0-9_-]*)")
    if user in ("root", "nobody"):
        raise UklError(f"{path}: user = {user}: name a user of the program's own (the "
                       "image makes it); without `user` the program runs as root")
    start = run.get("path", "")
    if start and (not start.startswith("/") or start.endswith("/")):
        raise UklError(f"{path}: path = {start}: expected an absolute file path")
    return user, start


def _prepare_script(image: Mapping[str, str], recipes_dir: Path, path: Path) -> Path | None:
    """[image] prepare: a script inside recipes_dir."""
    if not image.get("prepare"):
        return None
    prepare = recipes_dir / image["prepare"]
    if not prepare.resolve().is_relative_to(recipes_dir.resolve()):
        raise UklError(f"{path}: prepare script {prepare} is not in {recipes_dir}")
    if not prepare.is_file():
        raise UklError(f"{path}: prepare script {prepare} does not exist")
    return prepare
