"""What a Debian source package declares in debian/control and
debian/changelog: its version, its binary packages and the build
dependencies that apply to an amd64 build of its architecture-dependent
packages with the build profiles `ukl build --debian` uses.

Parsing is python-debian's (deb822 paragraphs, relation syntax); this
module only evaluates architecture and profile restrictions, as
dpkg-checkbuilddeps would.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from debian.changelog import Changelog
from debian.deb822 import Deb822, PkgRelation

from ukl.common.errors import UklError

ARCH = "amd64"
# Wildcards that match amd64 on Linux (dpkg-architecture's rules, for the
# one architecture we build).
_ARCH_MATCHES = {ARCH, "any", "linux-any", "any-amd64", "linux-amd64"}
# No test suites: they run programs that are not there at build time, and
# pull in build dependencies of their own. Documentation is built (nodoc
# breaks rules that copy a man page after dh_installman, as zstd's do).
PROFILES = frozenset({"nocheck"})
# A library built for another package's sake needs only its library: the
# package's own profiles that build less (pkg.cyrus-sasl2.nosql,
# pkg.unbound.libonly) are Debian's way to leave out what pulls in more
# dependencies, and a library dependency's build uses them all.
_LEAN_PROFILE = re.compile(r"\bpkg\.([a-z0-9][a-z0-9.+-]*)\.(no[a-z0-9-]+|libonly)\b")
# Debian's own profiles that leave out a package's bindings for other
# languages (protobuf's nopython: its Python extension, a shared object
# no UKL program loads, compiled against the host's Python headers), used
# as the package's own profiles are, when its control names them.
_BINDING_PROFILES = frozenset({"nopython", "noruby", "noperl", "nojava", "noguile",
                               "noocaml", "nocil", "nogolang", "nogir"})
# A restriction list, <!nopython !nocheck>; not a version limit (<< 2.0).
_RESTRICTION = re.compile(r"<([^<>]*)>")


@dataclass(frozen=True)
class Control:
    source: str
    version: str
    # Build-Depends and Build-Depends-Arch that apply, each a list of
    # alternatives (package names, first preferred).
    build_depends: list[list[str]]
    # The binary packages built for amd64 (Architecture: any, amd64, ...).
    binaries: list[str]
    # Every binary package, architecture-independent ones too.
    all_binaries: list[str]
    # The build profiles the build uses.
    profiles: frozenset[str] = field(default=PROFILES)


def _arch_ok(arch: list[Any] | None) -> bool:
    if not arch:
        return True
    positive = [a.arch for a in arch if a.enabled]
    negative = [a.arch for a in arch if not a.enabled]
    if positive:
        return any(a in _ARCH_MATCHES for a in positive)
    return not any(a in _ARCH_MATCHES for a in negative)


def _profiles_ok(restrictions: list[list[Any]] | None,
                 active: frozenset[str] = PROFILES) -> bool:
    """A restriction formula: alternatives (<...> <...>), each a
    conjunction of profile terms."""
    if not restrictions:
        return True
    return any(all((term.profile in active) == term.enabled for term in group)
               for group in restrictions)


def relations(text: str, active: frozenset[str] = PROFILES) -> list[list[str]]:
    """The dependencies of a relation field that apply to this build, each
    as its alternatives' package names; an alternative restricted away is
    dropped, and a relation left with none is dropped."""
    out = []
    # Empty items (a trailing comma, a field left empty) are no relation.
    text = ", ".join(item for item in text.split(",") if item.strip())
    for alternatives in PkgRelation.parse_relations(text):
        names = [a["name"] for a in alternatives
                 if _arch_ok(a.get("arch")) and _profiles_ok(a.get("restrictions"), active)]
        if names:
            out.append(names)
    return out


def _architecture_dependent(arch_field: str) -> bool:
    """A binary package's Architecture field (wildcards, no negation)
    names amd64; "all" does not."""
    return any(a in _ARCH_MATCHES for a in arch_field.split())


def lean_profiles(control_text: str, source: str) -> frozenset[str]:
    """The package's own build profiles that build less (see _LEAN_PROFILE),
    and Debian's that leave out its bindings (_BINDING_PROFILES)."""
    # Only a negated profile (<!nopython>) is one the package builds
    # less under.
    negated = {term[1:] for m in _RESTRICTION.finditer(control_text)
               for term in m.group(1).split() if term.startswith("!")}
    return frozenset({m.group(0) for m in _LEAN_PROFILE.finditer(control_text)
                      if m.group(1) == source} | (negated & _BINDING_PROFILES))


def read(tree: Path, library: bool = False, lean: bool = True) -> Control:
    """debian/control and debian/changelog of an unpacked source tree;
    `library`: built as another package's library dependency (with the
    package's lean profiles, unless not `lean`)."""
    control = tree / "debian" / "control"
    if not control.is_file():
        raise UklError(f"{tree} has no debian/control: not an unpacked Debian source package")
    with control.open(encoding="utf-8", errors="replace") as f:
        paragraphs = list(Deb822.iter_paragraphs(f))
    if not paragraphs:
        raise UklError(f"{control} is empty")
    head, packages = paragraphs[0], paragraphs[1:]
    with (tree / "debian" / "changelog").open(encoding="utf-8", errors="replace") as f:
        version = str(Changelog(f, max_blocks=1).version)
    source = head.get("Source", tree.name)
    profiles = PROFILES
    if library and lean:
        profiles |= lean_profiles(control.read_text(encoding="utf-8", errors="replace"), source)
    depends = relations(", ".join(head.get(f, "") for f in ("Build-Depends", "Build-Depends-Arch")
                                  if head.get(f)), profiles)
    return Control(
        source=source,
        version=version,
        build_depends=depends,
        binaries=[p["Package"] for p in packages
                  if "Package" in p and _architecture_dependent(p.get("Architecture", "any"))],
        all_binaries=[p["Package"] for p in packages if "Package" in p],
        profiles=profiles,
    )
