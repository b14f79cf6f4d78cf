"""Libraries a package's build requires although its library does not link them.

A library built as another package's dependency builds only what its -dev
packages link (ukl.app.debian.archive.link_sources): dbus's libdbus-1
links no XML parser, so expat is left out. But dbus's configure checks
for expat for the whole package (its daemon parses XML) and stops when
pkg-config does not find it. Such a failure names the pkg-config module;
if a library left out as "not linked" goes by that name, the build is run
again with that library built too.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

# pkg-config's words as autoconf's PKG_CHECK_MODULES prints them, and meson's.
_MODULE_LISTS = (
    re.compile(r"Package requirements \(([^)]*)\) were not met"),
    re.compile(r"No package '([^']+)' found"),
    re.compile(r"Dependency \"?([A-Za-z0-9_.+-]+)\"? not found"),
    re.compile(r"[Dd]ependency ([A-Za-z0-9_.+-]+) found: NO"),
)
# A version constraint after a module name, or a separator between modules.
_CONSTRAINT = re.compile(r"\s*[<>!=]=?\s*[\w.:~+-]+")


def modules_named(failure: str) -> list[str]:
    """The pkg-config modules a failed build says it could not find."""
    names: list[str] = []
    for pattern in _MODULE_LISTS:
        for found in pattern.findall(failure):
            for word in _CONSTRAINT.sub(" ", found).replace(",", " ").split():
                if word not in names:
                    names.append(word)
    return names


def _key(name: str) -> str:
    """A library's name reduced to its letters: expat, libexpat1-dev and
    expat all give "expat"; glib-2.0 and libglib2.0-dev "glib"."""
    name = name.lower().removesuffix("-dev")
    name = name.removeprefix("lib") if len(name) > 3 else name
    return re.sub(r"[^a-z]", "", re.sub(r"[-\d.]+$", "", name))


def required(failure: str, left_out: Iterable[tuple[str, str | None]]) -> list[str]:
    """Of the left-out libraries, given as (build dependency, source
    package), the sources of those the failure says the build requires."""
    wanted = {_key(m) for m in modules_named(failure)}
    out: list[str] = []
    for dep, source in left_out:
        if source is None or source in out:
            continue
        if _key(dep) in wanted or _key(source) in wanted:
            out.append(source)
    return out
