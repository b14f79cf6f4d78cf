"""Turn off the optional features whose libraries could not be built for
UKL, with the package's own configure switches.

A library build dependency that fails to build for UKL is left out
(ukl.app.debian.build). Often the package's configure would then turn the
feature off by itself; but Debian's rules force many features on
(`--enable-sasl --enable-tls` for memcached), and configure then stops.
For a package built with GNU autoconf, the switch is turned off through
the config.site UKL's build already gives it (ukl.app.debian.rules):
configure reads the site file after its command line, so `enable_sasl=no`
there overrides the `--enable-sasl` Debian's rules pass, just as the
site file's `enable_static=yes` overrides `--disable-static`.

Some packages' rules take Debian's own switches instead, words in
DEB_BUILD_OPTIONS (dnsmasq's rules add -DHAVE_DBUS unless `nodbus`): those
the rules test for are turned on the same way.

The files a turned-off feature would have made (perl's DB_File module,
lighttpd's Kerberos module) are missing, which stops dh_install: such a
build's dh_install drops the debian/*.install entries that match nothing
(ukl.app.debian.missing_files).

Packages built by their own makefiles take make variables instead
(redis's rules run `make USE_SYSTEMD=yes`, and export BUILD_TLS=yes):
an assignment of yes, 1, true or on in debian/rules to a variable
USE_X, WITH_X, BUILD_X or ENABLE_X that names the library is turned off by
the make that Debian's build runs (ukl.app.debian.rules puts a `make` first
in PATH that adds `USE_X=no` after the rules' own arguments; the last
assignment on make's command line wins, and sub-makes inherit it).
CMake builds the same way: a `-DWITH_X=...` (USE_, ENABLE_, BUILD_) that
debian/rules gives cmake is followed by `-DWITH_X=OFF` (mosquitto's
-DWITH_SYSTEMD=ON), from a `cmake` first in PATH that adds it to a
configure run.

Which switch belongs to which library is read from the names: the
package's own options (AC_ARG_ENABLE and AC_ARG_WITH in configure.ac and
its m4 files, or the generated configure's list; `no` words its rules
look for in DEB_BUILD_OPTIONS) that name the library, its -dev package or
its source package, and for OpenSSL its usual feature names (tls, ssl).
Nothing is turned off for other build systems' options; the build then
fails or builds without the feature, as its configure decides, and the
report says what was left out either way.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ukl.app.debian import archive


# Feature names that mean a library whose name does not say so.
_ALIASES = {
    "openssl": ("ssl", "tls", "openssl"),
    "ssl": ("ssl", "tls", "openssl"),
    "z": ("zlib",),
    "bz2": ("bzip2", "bz2"),
    "lzma": ("lzma", "xz"),
    "ncursesw": ("ncurses", "ncursesw", "curses"),
    "ncurses": ("ncurses", "ncursesw", "curses"),
    # nftables sets (dnsmasq's nonftset).
    "nftables": ("nftables", "nftset", "nft"),
    # MariaDB's client library, by MySQL's name (lighttpd's --with-mysql).
    "mysqlclient": ("mysql", "mysqlclient"),
    "mariadb": ("mariadb", "mysql"),
    # OpenTracing (haproxy's USE_OT).
    "opentracing": ("opentracing", "ot"),
    # MIT Kerberos (PHP's --with-kerberos, which its OpenSSL extension
    # checks too).
    "krb5": ("krb5", "kerberos", "gssapi"),
    # Berkeley DB (libdb-dev, db5.3) by its major versions: PHP's
    # --with-db4, which its DBA handlers check even with DBA not built.
    "db": ("db", "db1", "db2", "db3", "db4", "db5", "bdb"),
}
_ARG_MACRO = re.compile(r"\bAC_ARG_(ENABLE|WITH)\(\s*\[?\s*([A-Za-z0-9_+.-]+)")
_USER_OPTS = re.compile(r"^ac_user_opts='([^']*)'", re.M)
# Options that name no library, which a loose match must never touch.
_NEVER = {"enable_option_checking", "enable_static", "enable_shared",
          "enable_silent_rules", "enable_dependency_tracking"}


# DEB_BUILD_OPTIONS words every build has its own say on.
_GENERIC_BUILD_OPTIONS = {"nocheck", "nodoc", "noopt", "nostrip", "noudeb", "nobiarch",
                          "noautodbgsym", "noddebs", "nolto", "noinsttest"}
_RULES_OPTION = re.compile(r"\b(no[a-z0-9]+)\b")


# A make variable debian/rules turns a feature on with: USE_SYSTEMD=yes.
_MAKE_SWITCH = re.compile(r"\b((?:USE|WITH|BUILD|ENABLE)_[A-Z0-9_]+)\s*[:?]?=\s*"
                          r"(yes|1|true|on)\b", re.I)
_MAKE_PREFIXES = ("USE", "WITH", "BUILD", "ENABLE")
# A cmake definition debian/rules gives a feature: -DWITH_SYSTEMD=ON (or a
# make variable's value, -DWITH_SYSTEMD=${SYSTEMD}).
_CMAKE_SWITCH = re.compile(r"(?<!\S)-D((?:USE|WITH|BUILD|ENABLE)_[A-Z0-9_]+)(?::BOOL)?=")
# What turns off each way of saying on. 1 is turned off by the empty
# value: makefiles test `ifneq ($(USE_LUA),)` (haproxy's) as often as
# `ifeq ($(USE_LUA),1)`, and 0 would pass the first.
_MAKE_OFF = {"yes": "no", "1": "", "true": "false", "on": "off"}


@dataclass(frozen=True)
class Switch:
    """A switch turned off: a configure option's variable (enable_sasl:
    what the site file sets; `option` is what a user would type,
    --disable-sasl), a DEB_BUILD_OPTIONS word (nodbus), or a make
    assignment (USE_SYSTEMD=no)."""
    variable: str

    @property
    def build_option(self) -> bool:
        return self.variable.startswith("no") and "=" not in self.variable

    @property
    def make_assignment(self) -> bool:
        return "=" in self.variable and not self.cmake_definition

    @property
    def cmake_definition(self) -> bool:
        return self.variable.startswith("-D")

    @property
    def configure_variable(self) -> bool:
        """enable_sasl: what the site file sets."""
        return not self.build_option and "=" not in self.variable

    @property
    def option(self) -> str:
        if self.make_assignment:
            return f"make {self.variable}"
        if self.cmake_definition:
            return f"cmake {self.variable}"
        if self.build_option:
            return f"DEB_BUILD_OPTIONS={self.variable}"
        kind, _, name = self.variable.partition("_")
        name = name.replace("_", "-")
        return f"--disable-{name}" if kind == "enable" else f"--without-{name}"

    @property
    def site_line(self) -> str:
        return f"{self.variable}=no"


def _variable(kind: str, name: str) -> str:
    # configure turns --enable-foo-bar into $enable_foo_bar.
    return f"{kind.lower()}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


def configure_options(tree: Path) -> set[str]:
    """The variables of the package's autoconf options (enable_sasl,
    with_readline), or an empty set for another build system."""
    found: set[str] = set()
    configure = tree / "configure"
    if configure.is_file():
        m = _USER_OPTS.search(configure.read_text(errors="replace"))
        if m:
            found |= set(m.group(1).split())
    sources = [tree / "configure.ac", tree / "configure.in"]
    if any(s.is_file() for s in sources):
        sources += [tree / "acinclude.m4", *sorted((tree / "m4").glob("*.m4"))]
    for src in sources:
        if src.is_file():
            for kind, name in _ARG_MACRO.findall(src.read_text(errors="replace")):
                found.add(_variable(kind, name))
    return found - _NEVER


def rules_files(tree: Path) -> list[Path]:
    """The files of a package's rules: debian/rules and the makefiles it
    includes from debian/ and its subdirectories (php8.2's
    debian/rules.d/ext-imap.mk)."""
    debian = tree / "debian"
    return [f for f in [debian / "rules", *sorted(debian.glob("*.mk")),
                        *sorted(debian.glob("*/*.mk"))] if f.is_file()]


def rules_options(tree: Path) -> set[str]:
    """The `no` words debian/rules (and makefiles it includes from
    debian/) looks for in DEB_BUILD_OPTIONS, but those every build has."""
    found: set[str] = set()
    for rules in rules_files(tree):
        for line in rules.read_text(errors="replace").splitlines():
            if "DEB_BUILD_OPTIONS" in line:
                found |= set(_RULES_OPTION.findall(line))
    return found - _GENERIC_BUILD_OPTIONS


def make_options(tree: Path) -> set[str]:
    """The make assignments that turn off what debian/rules (and makefiles
    it includes from debian/) turns on with a make variable: USE_SYSTEMD=no
    for its USE_SYSTEMD=yes."""
    found: set[str] = set()
    for rules in rules_files(tree):
        for name, value in _MAKE_SWITCH.findall(rules.read_text(errors="replace")):
            if name.isupper():
                found.add(f"{name}={_MAKE_OFF[value.lower()]}")
    return found


def cmake_options(tree: Path) -> set[str]:
    """The cmake definitions that turn off what debian/rules gives cmake
    for a feature: -DWITH_SYSTEMD=OFF for its -DWITH_SYSTEMD=ON."""
    found: set[str] = set()
    for rules in rules_files(tree):
        found |= {f"-D{name}=OFF"
                  for name in _CMAKE_SWITCH.findall(rules.read_text(errors="replace"))}
    return found


# Words of a hyphenated source name that name no feature.
_GENERIC_WORDS = {"dev", "compat", "modules", "module", "linux", "util", "utils", "common",
                  "tools", "bin", "data", "mit", "heimdal", "multidev", "extra", "plugins",
                  "defaults", "default", "runtime", "core", "base", "lib", "libs"}


def _bare(word: str) -> set[str]:
    """A word as a feature may name it: sasl2 -> sasl2, sasl; libfoo -> foo."""
    bare = word[3:] if word.startswith("lib") and len(word) > 3 else word
    # libwrap0: mosquitto's switch is USE_LIBWRAP.
    return {word, bare, re.sub(r"[\d.]+$", "", bare), re.sub(r"[\d.]+$", "", word)}


def _stems(dep: str, source: str | None) -> set[str]:
    """The feature names a library may go by: its -dev package's first
    word (libsasl2-dev -> sasl2, sasl, libsasl2; libcurl4-openssl-dev ->
    curl4, curl: not openssl, which is the flavour of curl it is), and its
    source package's words (cyrus-sasl2 -> cyrus-sasl2, sasl2, sasl;
    libnetfilter-conntrack -> conntrack), but generic ones."""
    # default-libmysqlclient-dev: the library is the word after "default".
    name = re.sub(r"^default-", "", re.sub(r"-dev$", "", dep.lower()))
    stems = _bare(name.split("-")[0])
    if source:
        source = source.lower()
        stems |= _bare(source)
        for word in source.split("-"):
            if word not in _GENERIC_WORDS:
                stems |= _bare(word)
    for stem in list(stems):
        stems |= set(_ALIASES.get(stem, ()))
    return {s for s in stems if len(s) > 1 and s not in _GENERIC_WORDS}


def _switch_names(stems: set[str]) -> set[str]:
    """The switches that name any of `stems`: configure's variables
    (enable_sasl, with_sasl), DEB_BUILD_OPTIONS words (nosasl) and make
    assignments (USE_SASL=no)."""
    make_names = {f"{p}_{re.sub(r'[^A-Z0-9]', '_', s.upper())}"
                  for s in stems for p in _MAKE_PREFIXES}
    return ({_variable(k, s) for s in stems for k in ("enable", "with")}
            | {f"no{s}" for s in stems}
            | {f"{n}={v}" for n in make_names for v in _MAKE_OFF.values()}
            | {f"-D{n}=OFF" for n in make_names})


def switches_off(options: set[str], left_out: list[tuple[str, str | None]],
                 kept: Sequence[tuple[str, str | None]] = ()) -> dict[str, list[Switch]]:
    """For each left-out library, given as (build dependency, source
    package), the package's options that name it, by dependency; never
    one that also names a library the build keeps (`kept`: OpenSSL's tls
    stays on when only curl, which names openssl too, is left out)."""
    keep = {n for dep, src in kept for n in _switch_names(_stems(dep, src))}
    out: dict[str, list[Switch]] = {}
    for dep, source in left_out:
        hits = sorted((options & _switch_names(_stems(dep, source))) - keep)
        if hits:
            out[dep] = [Switch(v) for v in hits]
    return out


def site_text(switches: dict[str, list[Switch]]) -> str:
    """config.site lines that turn the switches off ("" for none)."""
    lines = []
    for dep, sws in sorted(switches.items()):
        configure = [s.site_line for s in sws if s.configure_variable]
        if configure:
            why = ("configure's errors named these, which need what was left out"
                   if dep == ASKED else f"{dep} could not be built for UKL")
            lines += [f"# {why}", *configure]
    return "\n".join(lines) + "\n" if lines else ""


def build_options(switches: dict[str, list[Switch]]) -> list[str]:
    """The DEB_BUILD_OPTIONS words that turn the switches off."""
    return sorted({s.variable for sws in switches.values() for s in sws if s.build_option})


def make_assignments(switches: dict[str, list[Switch]]) -> list[str]:
    """The make assignments that turn the switches off."""
    return sorted({s.variable for sws in switches.values() for s in sws if s.make_assignment})


def cmake_definitions(switches: dict[str, list[Switch]]) -> list[str]:
    """The cmake definitions that turn the switches off."""
    return sorted({s.variable for sws in switches.values() for s in sws if s.cmake_definition})


@dataclass(frozen=True)
class Off:
    """What a build turns off: config.site lines, DEB_BUILD_OPTIONS words;
    `missing_ok`: something was left out, so files the build does not make
    are not installed; and the switches, by dependency (for the report)."""
    site: str = ""
    build_options: tuple[str, ...] = ()
    missing_ok: bool = False
    switches: dict[str, list[Switch]] = field(default_factory=dict, compare=False)
    # Binary packages debhelper skips (DH_OPTIONS=-N...): a second try,
    # after a build that failed making them (dnsmasq-base-lua without Lua).
    skip: tuple[str, ...] = ()
    # Assignments every make of the build takes last (USE_SYSTEMD=no).
    # Not in repr (a build's state): builds with none keep their state.
    make_args: tuple[str, ...] = field(default=(), repr=False)
    # Definitions a cmake configure run takes last (-DWITH_SYSTEMD=OFF).
    cmake_args: tuple[str, ...] = field(default=(), repr=False)
    # The link names of the libraries left out (lzf), which ukl-cc drops
    # from links (ukl.toolchain.driver.without_left_out).
    left_out_libs: tuple[str, ...] = field(default=(), repr=False)
    # The rules' options that build loadable modules, dropped from a UKL
    # build's copy (ukl.app.debian.plugins).
    loadable: tuple[str, ...] = field(default=(), repr=False)

    def extra_state(self) -> list[str]:
        """What of this, beyond its repr, is part of a build's state: only
        what is set, so that builds without any keep their state."""
        return [repr(v) for v in (self.make_args, self.cmake_args, self.left_out_libs,
                                  self.loadable) if v]

    @property
    def dh_options(self) -> str:
        return " ".join(f"-N{p}" for p in self.skip)


# A package's own profile that builds it without one of its flavours:
# pkg.curl.no-nss (curl's rules configure a libcurl for each TLS library
# and package it as libcurl3-nss, unless told so).
_FLAVOUR_PROFILE = re.compile(r"\bpkg\.([a-z0-9][a-z0-9.+-]*?)\.no-([a-z0-9]+)\b")


def flavour_profiles(tree: Path, source: str, skipped: tuple[str, ...]) -> frozenset[str]:
    """The package's profiles (in its rules or control) for going without
    a flavour that a skipped binary package ships: pkg.curl.no-nss for
    libcurl3-nss, a package named after its flavour. Debhelper skips the
    package (Off.skip); the profile keeps the rules from configuring and
    building its flavour, which needs the library left out."""
    words = {w for name in skipped for w in name.split("-")}
    texts = [f.read_text(errors="replace") for f in (*rules_files(tree), tree / "debian/control")
             if f.is_file()]
    return frozenset(m.group(0) for text in texts for m in _FLAVOUR_PROFILE.finditer(text)
                     if m.group(1) == source and m.group(2) in words)


def packages_needing(binaries: list[str], sources: set[str], keep: list[str]) -> list[str]:
    """The binary packages among `binaries` (one source's) that depend
    directly on a library of `sources` (left out), but those in `keep` (the
    program's own and the packages of its source it depends on) and those
    a kept package depends on; none if that would leave nothing to build."""
    archive.prefetch(binaries)
    kept_needs = {d for k in keep if (pkg := archive.show(k)) is not None for d in pkg.depends}
    needing = []
    for b in binaries:
        pkg = archive.show(b)
        if pkg is None or pkg.name != b or b in keep or b in kept_needs:
            continue
        archive.prefetch(list(pkg.depends))
        if any((d := archive.show(dep)) is not None and d.source in sources
               and dep not in binaries for dep in pkg.depends):
            needing.append(b)
    return needing if len(needing) < len(binaries) else []


# configure's error line, and the switches it names: "build without
# --with-webdav-props", "--with-webdav-props requires sqlite".
CONFIGURE_ERROR = re.compile(r"configure: error: (.*)")
_NAMED_SWITCH = re.compile(r"--(with|enable)-([A-Za-z0-9][A-Za-z0-9_-]*)")
# The site file's key for switches a configure error asked to go off.
ASKED = "its configure requires what was left out"


# The failure lines (ukl.app.debian.rules.failure_reason) that say a
# required pkg-config module is missing: autoconf's PKG_CHECK_MODULES
# and meson's. Optional dependencies print neither.
_MODULE_LISTS = (
    re.compile(r"configure: error: Package requirements \(([^)]*)\) were not met"),
    re.compile(r"ERROR: Dependency \"([A-Za-z0-9_.+-]+)\" not found"),
)
# A version constraint after a module name.
_CONSTRAINT = re.compile(r"\s*[<>!=]=?\s*[\w.:~+-]+")


def modules_named(failure: str) -> list[str]:
    """The pkg-config modules a failed build's line says it could not find."""
    names: list[str] = []
    for pattern in _MODULE_LISTS:
        for found in pattern.findall(failure):
            for word in _CONSTRAINT.sub(" ", found).replace(",", " ").split():
                if word not in names:
                    names.append(word)
    return names


# A library a configure error names by its lib word ("libapparmor
# required but not found").
_LIBRARY_WORD = re.compile(r"\blib[a-z][a-z0-9+_-]*")


def _missing_library_stems(error: str) -> set[str]:
    """The feature names of the libraries a configure error says it lacks,
    by pkg-config module (modules_named) or lib word: libsystemd ->
    systemd, libsystemd; krb5-gssapi -> krb5-gssapi, krb5, kerberos."""
    names = set(_LIBRARY_WORD.findall(error)) | set(modules_named(error))
    return {s for name in names for s in _stems(name, None) | _bare(name.lower())
            if len(s) > 1 and s not in _GENERIC_WORDS}


def asked_off(message: str, options: set[str], off: Off) -> list[Switch]:
    """The package's own switches that a configure error names and that
    are still on: turning off one library's switch can leave a feature
    needing it on (lighttpd: --without-sqlite, then "--with-webdav-props
    requires sqlite"), and its configure says which. When it names a
    library it lacks instead, the switches of a feature named after that
    library: `--with-fpm-systemd` for PHP's "Package requirements
    (libsystemd >= 209) were not met" (a switch whose name only ends with
    the library's, which only a build that failed on it turns off)."""
    m = CONFIGURE_ERROR.search(message.split("; full log:")[0])
    if not m:
        return []
    done = {sw.variable for sws in off.switches.values() for sw in sws}
    found: list[Switch] = []
    for kind, name in _NAMED_SWITCH.findall(m.group(1)):
        var = _variable(kind, name.rstrip("-_"))
        if var in options and var not in done and Switch(var) not in found:
            found.append(Switch(var))
    if found:
        return found
    suffixes = tuple("_" + re.sub(r"[^A-Za-z0-9_]", "_", stem)
                     for stem in _missing_library_stems(m.group(0)))
    for var in sorted(options):
        kind = var.split("_", 1)[0]
        if kind in ("with", "enable") and var.endswith(suffixes) and var not in done \
                and var not in _NEVER:
            found.append(Switch(var))
    return found


def with_asked_off(off: Off, switches: list[Switch]) -> Off:
    """`off` with `switches` (asked_off's) turned off too."""
    merged = dict(off.switches)
    merged[ASKED] = [*merged.get(ASKED, []), *switches]
    return dataclasses.replace(off, site=site_text(merged), switches=merged)


def turn_off(tree: Path, left_out: list[tuple[str, str | None]],
             kept: list[tuple[str, str | None]]) -> Off:
    """Everything turned off for the libraries left out of a build;
    `kept`: the libraries it builds with."""
    if not left_out:
        return Off()
    options = (configure_options(tree) | rules_options(tree) | make_options(tree)
               | cmake_options(tree))
    switches = switches_off(options, left_out, kept)
    return Off(site_text(switches), tuple(build_options(switches)), True, switches,
               make_args=tuple(make_assignments(switches)),
               cmake_args=tuple(cmake_definitions(switches)))
