"""Libraries a package's build requires although its library does not link them.

A library built as another package's dependency builds only what its -dev
packages link (ukl.app.debian.archive.link_sources): dbus's libdbus-1
links no XML parser, so expat is left out. But dbus's configure checks
for expat for the whole package (its daemon parses XML) and stops when
pkg-config does not find it. Such a failure names the pkg-config module;
if a library left out as "not linked" ships that module's .pc file, the
build is run again with that library built too. A configure error that
names the library itself does the same (unbound's "Could not find libexpat,
expat.h", for a library linked as -lexpat), and so does a failed build
whose log says a header such a library ships was not found (perl's
Configure finds no <db.h>, and Debian's perl insists on Berkeley DB).
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath

from ukl.app.debian import archive, features

# The pkg-config modules a failed build's line says it could not find.
modules_named = features.modules_named


def shipped_modules(package: str) -> set[str]:
    """The pkg-config modules (.pc files) Debian's binary package ships."""
    pkg = archive.show(package)
    if pkg is None:
        return set()
    return {PurePosixPath(f).stem for f in archive.contents(pkg)
            if f.endswith(".pc") and "/pkgconfig/" in f}


# A header a build looked for and did not find: perl's Configure
# ("<db.h> NOT found."), a compiler's fatal error. Not autoconf's
# "checking for db.h... no", which optional features print by the dozen.
_MISSING_HEADERS = (
    re.compile(r"^<([\w/.+-]+\.h)> NOT found\.", re.M),
    re.compile(r"fatal error: ([\w/.+-]+\.h): No such file or directory"),
)


# A header's path in a package, and the name a build includes it by.
_INCLUDED_HEADER = re.compile(r"^usr/include/(?:[a-z0-9_]+-linux-gnu/)?(.+\.h)$")


def missing_headers(log_text: str) -> set[str]:
    """The headers (db.h, sasl/sasl.h) a build's log says it did not find."""
    return {h for pattern in _MISSING_HEADERS for h in pattern.findall(log_text)}


def shipped_headers(package: str) -> set[str]:
    """The headers Debian's binary package ships, below usr/include (and
    its multiarch directory): db.h, sasl/sasl.h; one in a directory of
    its own also by its name alone, as a build that adds the directory to
    its include path includes it (tcl8.6/tcl.h: sqlite3's `#include
    "tcl.h"`)."""
    pkg = archive.show(package)
    if pkg is None:
        return set()
    found = {m.group(1) for f in archive.contents(pkg) if (m := _INCLUDED_HEADER.match(f))}
    return found | {PurePosixPath(h).name for h in found}


def names_library(failure: str, link_names: Iterable[str]) -> bool:
    """Whether a configure error names a library by one of its link names:
    libexpat, -lexpat, expat.h."""
    m = features.CONFIGURE_ERROR.search(failure)
    if not m:
        return False
    return any(re.search(rf"\blib{re.escape(n)}\b|-l{re.escape(n)}\b|\b{re.escape(n)}\.h\b",
                         m.group(1)) for n in link_names if len(n) > 2)


def required(failure: str, left_out: Iterable[tuple[str, str | None]],
             modules_of: Callable[[str], set[str]] | None = None,
             link_names_of: Callable[[str], Iterable[str]] | None = None,
             log_text: str = "",
             headers_of: Callable[[str], set[str]] | None = None) -> list[str]:
    """Of the left-out libraries, given as (build dependency, source
    package), the sources of those whose modules the failure says the
    build requires, that its configure error names (`link_names_of`: a
    build dependency's link names), or whose headers the failed build's
    log (`log_text`) says were not found. `modules_of`: a package's
    modules (shipped_modules); `headers_of`: its headers
    (shipped_headers)."""
    wanted = set(modules_named(failure))
    headers = missing_headers(log_text) if log_text else set()
    out: list[str] = []
    modules_of = modules_of or shipped_modules
    headers_of = headers_of or shipped_headers
    for dep, source in left_out:
        if source is None or source in out:
            continue
        if (wanted and wanted & modules_of(dep)) or (
                link_names_of is not None and names_library(failure, link_names_of(dep))) or (
                headers and headers & headers_of(dep)):
            out.append(source)
    return out
