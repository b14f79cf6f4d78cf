"""Sort a source package's build dependencies into what a UKL build must
do with each.

A UKL program is one static, kernel-model object: every library it links
must be built from source with ukl-cc, never taken from the host. So for
each Build-Depends entry (its first alternative the archive has):

  toolchain  the C library, the compiler's runtime, kernel headers: the
             UKL toolchain provides them (libc6-dev, libstdc++-12-dev, ...)
  library    its binary package ships a static archive (usr/lib/**/*.a),
             or it is a -dev package with shared libraries only (Debian
             turned the static one off, as for libonig-dev): its source
             package is built for UKL first, recursively, with static
             libraries forced on (ukl.app.debian.rules)
  tool       anything else (debhelper, pkg-config, bison, ...): installed
             on the host, where Debian's build runs it
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ukl.app.debian import archive, control

_STATIC = re.compile(r"^usr/lib/(?:[a-z0-9_]+-linux-gnu/)?[^/]+\.a$")
_SHARED = re.compile(r"^usr/lib/(?:[a-z0-9_]+-linux-gnu/)?[^/]+\.so$")
# headers: a package of headers and no library (systemtap-sdt-dev's
# <sys/sdt.h>, valgrind's <valgrind/valgrind.h>, both of which Python's
# build includes), whose headers a UKL build needs in its sysroot: the
# host's /usr/include is not searched.
KINDS = ("toolchain", "library", "headers", "tool")
_HEADER = re.compile(r"^usr/include/.+[^/]$")
_LINK_NAME = re.compile(r"^usr/lib/(?:[a-z0-9_]+-linux-gnu/)?lib([^/]+?)\.(?:a|so)$")
# Source packages whose libraries a UKL build does not try: the reason,
# reported as what the package was built without.
NOT_FOR_UKL = {
    "systemd": "libsystemd is built only with the whole of systemd, as a shared library",
    "glibc": "the UKL toolchain's own C library is used",
}


@dataclass(frozen=True)
class Dependency:
    # What debian/control names (the alternative chosen).
    name: str
    kind: str
    # The binary package that satisfies it, and its source package (None
    # when the archive has neither, e.g. a virtual package apt resolves).
    package: archive.BinaryPackage | None
    # For a library: the static archives Debian's package ships (none if
    # it ships shared libraries only).
    archives: tuple[str, ...] = ()
    # For a library: the names a link gives its libraries (lzf for
    # liblzf.a or liblzf.so): -lNAME.
    link_names: tuple[str, ...] = ()
    # For a library: whether its package ships a shared library. One that
    # ships a static archive only (uthash-dev's libut.a) leaves no trace in
    # the Depends of what links it (ukl.app.debian.archive.link_sources).
    shared: bool = False

    @property
    def source(self) -> str | None:
        return self.package.source if self.package else None


def _choose(alternatives: list[str]) -> tuple[str, archive.BinaryPackage | None]:
    """The first alternative the archive knows (dpkg-checkbuilddeps prefers
    the first too); the first name if none is known."""
    for name in alternatives:
        pkg = archive.show(name)
        if pkg is not None:
            return name, pkg
    return alternatives[0], None


# A development package's name: libdb5.3-dev, libmariadb-dev-compat.
_DEV = re.compile(r"-dev(?:-[a-z0-9]+)?$")


def _real(pkg: archive.BinaryPackage) -> archive.BinaryPackage:
    """The -dev package a "-defaults" source's package stands for
    (libdb-dev -> libdb5.3-dev): its source is the one to build."""
    if pkg.source.endswith("-defaults"):
        for dep in pkg.depends:
            real = archive.show(dep) if _DEV.search(dep) else None
            if real is not None:
                return real
    return pkg


def _is_library(pkg: archive.BinaryPackage, files: list[str]) -> bool:
    return any(_STATIC.match(f) for f in files) or (
        pkg.name.endswith("-dev") and any(_SHARED.match(f) for f in files))


def _only_docs(files: list[str]) -> bool:
    """A package of directories and usr/share files only (a metapackage's
    documentation)."""
    return all(not f or f.endswith("/") or f.startswith("usr/share/") for f in files)


def _transitional(pkg: archive.BinaryPackage) -> archive.BinaryPackage:
    """The package a transitional or meta package stands for, followed a
    few steps: a -dev package that ships no library stands for the -dev
    package it depends on (libldap2-dev -> libldap-dev), a package of
    documentation only for the first package it depends on
    (valgrind-if-available -> valgrind); the package itself if it is
    neither."""
    for _ in range(3):
        files = archive.contents(pkg)
        dev = pkg.name.endswith("-dev") and not _is_library(pkg, files)
        if not dev and not _only_docs(files):
            return pkg
        real = next((r for d in pkg.depends if (_DEV.search(d) or not dev)
                     and (r := archive.show(d)) is not None), None)
        if real is None:
            return pkg
        pkg = real
    return pkg


def _has_shared(pkg: archive.BinaryPackage, files: list[str]) -> bool:
    """Whether a library's -dev package goes with a shared library: one it
    ships, or a library package of its own source it depends on (tk8.6-dev,
    whose libtkstub8.6.a is a stub for extensions, and libtk8.6)."""
    if any(_SHARED.match(f) for f in files):
        return True
    return any((dep := archive.show(d)) is not None and dep.source == pkg.source
               and dep.section in ("libs", "oldlibs") for d in pkg.depends)


def classify(alternatives: list[str]) -> Dependency:
    name, pkg = _choose(alternatives)
    pkg = _transitional(_real(pkg)) if pkg is not None else None
    if archive.TOOLCHAIN.match(name) or (pkg and archive.TOOLCHAIN.match(pkg.name)):
        return Dependency(name, "toolchain", pkg)
    if pkg is None:
        return Dependency(name, "tool", None)
    files = archive.contents(pkg)
    if _is_library(pkg, files):
        names = sorted({m.group(1) for f in files if (m := _LINK_NAME.match(f))})
        return Dependency(name, "library", pkg, tuple(f for f in files if _STATIC.match(f)),
                          tuple(names), _has_shared(pkg, files))
    if any(_HEADER.match(f) for f in files):
        return Dependency(name, "headers", pkg)
    return Dependency(name, "tool", pkg)


def classify_all(build_depends: list[list[str]]) -> list[Dependency]:
    return [classify(alts) for alts in build_depends]


# Every Debian build has libc6-dev (build-essential), and through it the
# libraries Debian's glibc no longer carries: libcrypt-dev (libxcrypt's
# crypt(), which perl and nginx link) and libnsl-dev. Packages rely on them
# without naming them in Build-Depends; the UKL toolchain's C library does
# not carry them either.
_C_LIBRARY_DEV = "libc6-dev"


def implied() -> list[Dependency]:
    """The library build dependencies every package has without naming
    them: what libc6-dev depends on that is a library."""
    libc = archive.show(_C_LIBRARY_DEV)
    if libc is None:
        return []
    found = [classify([d]) for d in libc.depends if not archive.TOOLCHAIN.match(d)]
    return [d for d in found if d.kind == "library"]


# Build dependencies that say a package is not a C or C++ program ukl-cc
# can build, and why, in the tool's words.
_NOT_C = (
    (("golang-go", "golang-any", "dh-golang", "dh-sequence-golang"),
     "a Go program: Go's toolchain links its own runtime, and ukl-cc compiles C and C++ only"),
    (("cargo", "rustc", "dh-cargo", "dh-sequence-cargo"),
     "a Rust program: ukl-cc compiles C and C++ only"),
    (("default-jdk", "default-jdk-headless", "javahelper", "maven-debian-helper"),
     "Java: bytecode for a virtual machine with a JIT, not a program ukl-cc compiles"),
    (("ghc",), "a Haskell program: ukl-cc compiles C and C++ only"),
)


def unsuitable(ctl: control.Control, library: bool = False) -> str | None:
    """Why `ctl`'s package cannot become a UKL program (or, `library`, a
    UKL program's library dependency), or None. A library's build
    dependencies may name a JDK or Python for its bindings (db5.3's Java
    ones): its C library is built all the same."""
    if not ctl.binaries:
        return ("it builds only architecture-independent packages (Architecture: all): "
                "there is no C or C++ program to compile")
    if library:
        return None
    names = {alt for alts in ctl.build_depends for alt in alts[:1]}
    for deps, why in _NOT_C:
        if names & set(deps):
            return why
    if all(b.startswith("python3-") for b in ctl.binaries) and (
            names & {"dh-python", "dh-sequence-python3"}):
        return ("Python extension modules: shared objects the interpreter loads with dlopen, "
                "which a UKL program (one static object) cannot")
    return None
