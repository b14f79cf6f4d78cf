"""Leave out the loadable modules (plugins) Debian's rules configure.

A UKL program is one static object linked into the kernel: it cannot load
a shared object at run time, so a module built to be loaded is of no use
to it, and its libraries would have to be built for UKL for nothing.
Some packages' own configure scripts (not autoconf's, whose switches
ukl.app.debian.features turns off) build them only when asked by name:
nginx's `--with-http_xslt_module=dynamic` and `--add-dynamic-module=DIR`,
which Debian's rules pass for its libnginx-mod-* packages (and whose
configure stops when libxslt or libgd is missing), and PHP's
`--with-imap=shared,/usr` and `--enable-ctype=shared`, which Debian's
rules (debian/rules.d/ext-*.mk) pass to a build of its own for the
php8.2-* extension packages (whose configure stops when the c-client or
Kerberos library is missing). A UKL build's copy of
debian/rules goes without those options, and debhelper skips the binary
packages that ship modules only (module_packages); the program itself is
built as Debian configures it, without the modules it would have loaded.

Perl's Configure builds its XS extensions (Cwd, POSIX, Fcntl) as shared
objects that DynaLoader loads, and its own build runs the perl it built,
which loads them. Configure links into the program the extensions it is
not told to load (`dynamic_ext`): a UKL build's copy of the system's
hints file names none. Dynamic loading itself stays: without it,
Configure builds no shared libperl, which Debian's rules install.
Debian's install lists name some extensions' shared objects
(perl-base.install: `auto/POSIX/POSIX.so`); a perl with its extensions
linked in makes none, so the UKL copy's lists go without those lines.
"""
from __future__ import annotations

import re
from pathlib import Path

from ukl.app.debian import archive
from ukl.app.debian.features import rules_files

# nginx's configure options that build a module to load (`load_module`):
# `--with-NAME=dynamic` and `--add-dynamic-module=PATH`, each a word of a
# rules file's option list.
_LOADABLE = re.compile(r"(?<![^\s'\"])--(?:with-[A-Za-z0-9_]+=dynamic|add-dynamic-module=\S+)"
                       r"(?=[\s'\"\\]|$)")
# PHP's configure options that build an extension to load (`extension=`):
# `--with-NAME=shared[,DIR...]` and `--enable-NAME=shared[,...]`.
_PHP_SHARED = re.compile(r"(?<![^\s'\"])--(?:with|enable)-[A-Za-z0-9_-]+=shared(?:,[^\s'\"\\]*)?"
                         r"(?=[\s'\"\\]|$)")
# What PHP's generated configure sets for an extension to be built to load.
_PHP_SHARED_MARK = "ext_shared=yes"


# Perl's Configure asks this (metaconfig's dynamic-loading unit): the mark
# of a Configure that builds extensions to load.
_DYNAMIC_LOADING_QUESTION = "Do you wish to use dynamic loading?"
_HINTS = Path("hints") / "linux.sh"
# The option as the report names it.
NO_DYNAMIC_LOADING = "Configure -Ddynamic_ext=none"
_NO_DYNAMIC_LOADING_HINT = """
# ukl build --debian: a UKL program cannot load a shared object; with no
# extension to load dynamically, Configure links them all into perl.
dynamic_ext=none
"""


# Configure loads config.over from the directory it runs in, after every
# answer (Debian's perl copies debian/config.over there).
_CONFIG_OVER = ("debian/config.over", "config.over")
_NO_RE_WHEN_DEBUGGING = """
# ukl build --debian: with perl's extensions linked in (dynamic_ext in
# the hints), a DEBUGGING perl's re extension defines the debugging
# functions perl defines too (Perl_re_printf), and the link refuses the
# second definition: that perl (Debian's debugperl) goes without re.
case " $ccflags " in
*" -DDEBUGGING "*)
    static_ext=`echo " $static_ext " | sed -e 's/ re / /' -e 's/^ *//' -e 's/ *$//'`
    extensions=`echo " $extensions " | sed -e 's/ re / /' -e 's/^ *//' -e 's/ *$//'`
    ;;
esac
"""
# An extension's shared object in an install list: `auto/POSIX/POSIX.so`,
# alone on its line (perl-base.install is a script whose heredoc lists
# them, and which stops at the first it cannot find).
_EXTENSION_OBJECT = re.compile(r"^[ \t]*auto/\S+\.so[ \t]*\n", re.MULTILINE)


def loads_extensions(tree: Path) -> bool:
    """Whether `tree` is configured by perl's Configure, which builds its
    extensions to load them unless told otherwise."""
    configure = tree / "Configure"
    return (tree / _HINTS).is_file() and configure.is_file() and \
        _DYNAMIC_LOADING_QUESTION in configure.read_text(errors="replace")


def builds_php_extensions(tree: Path) -> bool:
    """Whether `tree` is configured by PHP's configure, whose `=shared`
    options build extensions to load."""
    configure = tree / "configure"
    return configure.is_file() and _PHP_SHARED_MARK in configure.read_text(errors="replace")


def _loadable_patterns(tree: Path) -> list[re.Pattern[str]]:
    return [_LOADABLE, *([_PHP_SHARED] if builds_php_extensions(tree) else [])]


def loadable_options(tree: Path) -> list[str]:
    """The options in the package's rules that build loadable modules, and
    NO_DYNAMIC_LOADING for perl's Configure (loads_extensions)."""
    found: list[str] = []
    patterns = _loadable_patterns(tree)
    for rules in rules_files(tree):
        text = rules.read_text(errors="replace")
        for pattern in patterns:
            for m in pattern.finditer(text):
                if m.group(0) not in found:
                    found.append(m.group(0))
    if loads_extensions(tree):
        found.append(NO_DYNAMIC_LOADING)
    return found


def drop_loadable_options(tree: Path) -> list[str]:
    """Remove them from the rules files of `tree` (a build's own copy), and
    have perl's extensions linked in (its hints); returns what changed."""
    dropped = loadable_options(tree)
    files = rules_files(tree)
    for pattern in _loadable_patterns(tree):
        _remove_matches(files, pattern)
    if NO_DYNAMIC_LOADING in dropped:
        _append_once(tree / _HINTS, _NO_DYNAMIC_LOADING_HINT)
        _append_once(next((tree / o for o in _CONFIG_OVER if (tree / o).is_file()),
                          tree / _CONFIG_OVER[-1]), _NO_RE_WHEN_DEBUGGING)
        # The extensions' shared objects, from the install lists.
        _remove_matches(sorted((tree / "debian").glob("*.install")), _EXTENSION_OBJECT)
    return dropped


def _remove_matches(files: list[Path], pattern: re.Pattern[str]) -> None:
    """Remove what `pattern` matches from each of `files` (a build's own
    copies), rewriting only those it changes."""
    for f in files:
        text = f.read_text(errors="replace")
        new = pattern.sub("", text)
        if new != text:
            f.write_text(new)


def _append_once(script: Path, lines: str) -> None:
    """`lines` at the end of shell script `script` (made if missing),
    unless it has them already."""
    text = script.read_text(errors="replace") if script.is_file() else "#!/bin/sh\n"
    if lines not in text:
        script.write_text(text + lines)


_REPORTED_MODULES = 6


def report_line(options: list[str]) -> str:
    """The build report's line for the modules left out, or linked in."""
    modules = [o for o in options if o != NO_DYNAMIC_LOADING]
    parts = []
    if modules:
        # PHP's rules name some fifty: the first few say which kind.
        named = " ".join(modules[:_REPORTED_MODULES])
        if len(modules) > _REPORTED_MODULES:
            named += f" and {len(modules) - _REPORTED_MODULES} more"
        parts.append(f"loadable modules ({named}): a UKL program cannot load a "
                     "shared object, so they are not built")
    if NO_DYNAMIC_LOADING in options:
        parts.append(f"extensions to load ({NO_DYNAMIC_LOADING}): a UKL program cannot load "
                     "a shared object, so perl's extensions are linked into it")
    return "; ".join(parts)


_PROGRAM_DIRS = ("usr/bin/", "usr/sbin/", "bin/", "sbin/", "usr/games/")
# A shared library's file, as opposed to a module's: libfoo.so, libfoo.so.1.
_LIBRARY_FILE = re.compile(r"(?:^|/)lib[^/]*\.so(?:\.[0-9.]+)?$")


def is_module_package(files: list[str]) -> bool:
    """A binary package of loadable modules only: shared objects that are
    not libraries (usr/lib/nginx/modules/ngx_mail_module.so), no program,
    no library."""
    modules = [f for f in files if f.endswith(".so") and not _LIBRARY_FILE.search(f)]
    others = [f for f in files if (f.startswith(_PROGRAM_DIRS) and not f.endswith("/"))
              or _LIBRARY_FILE.search(f)]
    return bool(modules) and not others


def module_packages(binaries: list[str], keep: str | None) -> list[str]:
    """The binary packages among `binaries` that ship loadable modules
    only (by the archive's .deb contents), but `keep` (the program's)."""
    archive.prefetch(binaries)
    found = []
    for b in binaries:
        pkg = archive.show(b)
        if b != keep and pkg is not None and pkg.name == b and is_module_package(
                archive.contents(pkg)):
            found.append(b)
    return found
