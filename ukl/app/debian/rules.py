"""Run a Debian source package's own build (debian/rules, through
dpkg-buildpackage) with the UKL toolchain in place of the compiler.

Debian's build applies the package's patches, flags and configure options;
only the compiler changes:

  * CC/CXX are ukl-cc/ukl-c++ (a UKL program) or the host's gcc/g++ (the
    same program as an ordinary process, for the stock kernel);
  * DEB_BUILD_OPTIONS: nocheck (test suites run programs that are not
    there at build time), nostrip (strip would drop the UKL object's
    symbols), noddebs, nopgo and nolto (a profile-guided build runs the
    package's test suite to train it, as Python's does; link-time
    optimisation would defer code generation past the UKL object's link);
    build profile nocheck (not nodoc: rules that copy a
    man page after dh_installman break, as zstd's do);
  * for UKL: the dependencies' install trees in $UKL_DEPS_SYSROOT (ukl-cc
    searches them), pkg-config sees only their .pc files, a -shared link
    makes a stand-in (ukl.toolchain.driver), and symbols files are not
    checked against the stand-ins; the compiler names rules call directly
    (x86_64-linux-gnu-gcc) run ukl-cc too; pkg-config answers as for a
    static link (--static: a library's Libs.private and Requires.private,
    which put libhogweed before the libnettle it uses, and add libgmp);
    a config.site turns static libraries on, which Debian turns off for
    some (oniguruma, jq's own libjq), and
    debian/not-installed tells dh_missing about them; it also turns off
    the features whose libraries could not be built (ukl.app.debian.features).

The build runs in build/debian/SOURCE/MODE/tree; dpkg-buildpackage puts
the .debs beside it. What dh_auto_install (or the rules' own install)
staged under debian/ is what a dependent package links.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ukl.app.debian import archive, control, features, missing_files
from ukl.app.debian.features import Off
from ukl.common.buildenv import build_env, jobs
from ukl.common.errors import Interrupted, UklError
from ukl.common.proc import log_since, log_size, run_logged, run_quiet
from ukl.toolchain import layout
from ukl.toolchain.driver import (COMPILER_SHIMS_ENV, DEPS_SYSROOT_ENV, LEFT_OUT_LIBS_ENV,
                                  LIBRARY_BUILD_ENV, SHARED_STANDIN_ENV, archive_needs_file,
                                  standin_needs)

# Part of every Debian build's state (ukl.app.debian.build): raise it when
# how Debian's build is run changes what it makes, so builds made the old
# way are redone. 7: an installed library's archive has the libraries
# its shared library's link named beside it (driver.archive_needs_file).
ENVIRONMENT_VERSION = 7
CONFIG_SITE = """\
# Written by ukl build --debian (ukl/app/debian/rules.py) for UKL builds.
# Static libraries on: a UKL program links static archives only, and
# Debian's build turns them off for some libraries (a program that links
# its package's own library, as jq does libjq, needs it too). The shared libraries
# ukl-cc links are stand-ins (it cannot make kernel-model shared objects).
enable_static=yes
"""
_CC_NAMES = ("cc", "gcc", "gcc-12", f"{layout.MULTIARCH}-gcc", f"{layout.MULTIARCH}-gcc-12")
_CXX_NAMES = ("c++", "g++", "g++-12", f"{layout.MULTIARCH}-g++", f"{layout.MULTIARCH}-g++-12")
# pkg-config by the names builds call it (dpkg's buildtools.mk sets
# PKG_CONFIG to the triplet-prefixed one).
_PKG_CONFIG_NAMES = ("pkg-config", f"{layout.MULTIARCH}-pkg-config")
NOT_INSTALLED_MARK = "# ukl build --debian: the static libraries its config.site turns on"
NOT_INSTALLED = ("usr/lib/*/*.a", "usr/lib/*.a")
# Where Debian's builds stage what they install, below the source tree.
_STAGING = ("tmp",)
_PKGCONFIG_VAR = re.compile(r"^(\w+)=(/usr\b)", re.M)


# A Debian build's PATH: the system's directories only. A user's own
# tools are not the build's (pyenv's python3 first in PATH built
# protobuf's extension against pyenv's headers, and /usr/local/bin may
# hold another PostgreSQL); a build chroot has none of them.
DEBIAN_BUILD_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def _build_options() -> str:
    return f"nocheck nostrip noddebs nopgo nolto parallel={jobs()}"


def environment(ukl: bool, cc: str, cxx: str, deps: list[Path], work: Path,
                off: Off = Off(), profiles: frozenset[str] = control.PROFILES,
                library: bool = False) -> dict[str, str]:
    """The build's environment. `library`: a build wanted for its static
    libraries and headers only, whose programs no UKL link takes."""
    env = build_env(CC=cc, CXX=cxx,
                    DEB_BUILD_OPTIONS=" ".join([_build_options(), *off.build_options]),
                    DEB_BUILD_PROFILES=",".join(sorted(profiles)),
                    DEBIAN_FRONTEND="noninteractive",
                    # The .debs are by-products (the program and libraries
                    # come from the staged tree): not compressed. A UKL
                    # program's object with its debugging information is
                    # 100 MB, and xz took minutes on Redis's four.
                    DPKG_DEB_COMPRESSOR_TYPE="none")
    if off.skip:
        # Every debhelper command skips them.
        env["DH_OPTIONS"] = off.dh_options
    # dpkg-buildpackage sets the flags from dpkg-buildflags; an outer
    # CFLAGS (from a user's shell) would replace Debian's.
    for var in ("CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS"):
        env.pop(var, None)
    env["PATH"] = DEBIAN_BUILD_PATH
    if not ukl:
        return env
    subdirs = (layout.LIBDIR + "/pkgconfig", "usr/lib/pkgconfig", "usr/share/pkgconfig")
    pkgconfig = [str(d / sub) for d in deps for sub in subdirs]
    env.update({
        DEPS_SYSROOT_ENV: ":".join(str(d) for d in deps),
        SHARED_STANDIN_ENV: "1",
        # Only the dependencies' .pc files: the host's describe host
        # libraries, which a UKL program cannot link. An empty directory
        # when there are none.
        "PKG_CONFIG_LIBDIR": ":".join(pkgconfig) or str(work / "no-pkgconfig"),
        "DPKG_GENSYMBOLS_CHECK_LEVEL": "0",
    })
    if library:
        env[LIBRARY_BUILD_ENV] = "1"
    if off.left_out_libs:
        env[LEFT_OUT_LIBS_ENV] = " ".join(off.left_out_libs)
    site = work / "config.site"
    site.write_text(CONFIG_SITE + off.site)
    env["CONFIG_SITE"] = str(site)
    shims = compiler_shims(work / "compilers", cc, cxx, off.missing_ok, off.make_args,
                           off.cmake_args)
    # CMake's find_library and find_path look in the dependencies' trees
    # first (cJSON for mosquitto); the compiler never searches the host's.
    env["CMAKE_PREFIX_PATH"] = ":".join(str(d / "usr") for d in deps)
    env.update(PATH=f"{shims}:{env['PATH']}", **{COMPILER_SHIMS_ENV: str(shims)})
    return env


# dh_missing in a build that left libraries out: what it installed but no
# package took is listed, not an error. The packages that needed a
# left-out library are skipped (DH_OPTIONS=-N), and their files, which
# the build still made (dbus's daemon), are then in no package; debhelper
# 13 makes dh_missing fail on those by default, as --fail-missing does.
DH_MISSING_LISTS = """#!/bin/sh
# Written by ukl build --debian (ukl/app/debian/rules.py).
for a; do
    shift
    [ "$a" = --fail-missing ] && a=--list-missing
    set -- "$@" "$a"
done
exec /usr/bin/dh_missing "$@" --list-missing
"""


# cmake with definitions added to a configure run, not to its other
# modes (a build, a script, the generated Makefiles' -E commands and
# --check-build-system), which take no -D.
CMAKE_SHIM = """#!/bin/sh
# Written by ukl build --debian (ukl/app/debian/rules.py).
for a; do
    case "$a" in
    -E|--build|--install|-P|--check-build-system|--find-package|--version|--help*|--open)
        exec {cmake} "$@" ;;
    esac
done
exec {cmake} "$@" {args}
"""


# chrpath, for rules that delete a program's run path (sqlite3's `chrpath
# -d usr/bin/sqlite3`): a UKL program is static, with no dynamic section
# and so no run path, which chrpath reports as an error. Nothing to delete
# is success; any other failure stays one.
CHRPATH_SHIM = """#!/bin/sh
# Written by ukl build --debian (ukl/app/debian/rules.py).
out=$({chrpath} "$@" 2>&1)
rc=$?
[ -n "$out" ] && printf '%s\\n' "$out"
others=$(printf '%s\\n' "$out" | grep -v -x -e 'No dynamic section found.' \\
    -e 'found no dynamic section: Success' -e '.*: no rpath or runpath tag found.')
if [ $rc -ne 0 ] && [ -z "$others" ]; then
    exit 0
fi
exit $rc
"""


def _shim(path: Path, script: str | None) -> None:
    """An executable script at `path`, or none there (None)."""
    if script is None:
        path.unlink(missing_ok=True)
        return
    path.write_text(script)
    path.chmod(0o755)


def compiler_shims(d: Path, cc: str, cxx: str, missing_ok: bool = False,
                   make_args: tuple[str, ...] = (), cmake_args: tuple[str, ...] = ()) -> Path:
    """A directory of the compiler names Debian's rules call directly
    (zlib's and zstd's use x86_64-linux-gnu-gcc, not $CC), each running
    ukl-cc or ukl-c++, and of pkg-config's, running it with --static; it
    goes first in PATH. ukl-cc takes it out of PATH for the compilers it
    runs itself. `missing_ok`: dh_install there too,
    which does not install what the build did not make
    (ukl.app.debian.missing_files), and dh_missing, which lists what no
    package took instead of failing (DH_MISSING_LISTS). `make_args`: make
    there too, which adds them after its arguments, so that they win over
    the rules' own (USE_SYSTEMD=no over `make USE_SYSTEMD=yes`; see
    ukl.app.debian.features). `cmake_args`: cmake there too, which adds
    them to a configure run (CMAKE_SHIM)."""
    d.mkdir(parents=True, exist_ok=True)
    _shim(d / "dh_install", f'#!/bin/sh\nexec {sys.executable} {missing_files.__file__} "$@"\n'
          if missing_ok else None)
    _shim(d / "dh_missing", DH_MISSING_LISTS if missing_ok else None)
    path = DEBIAN_BUILD_PATH
    real_make = shutil.which("make", path=path)
    _shim(d / "make", f'#!/bin/sh\nexec {real_make} "$@" {shlex.join(make_args)}\n'
          if make_args and real_make else None)
    real_chrpath = shutil.which("chrpath", path=path)
    _shim(d / "chrpath", CHRPATH_SHIM.format(chrpath=real_chrpath) if real_chrpath else None)
    real_cmake = shutil.which("cmake", path=path)
    _shim(d / "cmake", CMAKE_SHIM.format(cmake=real_cmake, args=shlex.join(cmake_args))
          if cmake_args and real_cmake else None)
    # A UKL program links only static archives: a library's pkg-config
    # flags are the ones for a static link. (A module whose
    # Requires.private is missing then fails --libs too, as it already
    # failed --cflags and --exists.)
    pkg_config = shutil.which("pkg-config", path=path)
    targets: list[tuple[tuple[str, ...], str | None]] = [
        (_CC_NAMES, cc), (_CXX_NAMES, cxx),
        (_PKG_CONFIG_NAMES, f"{pkg_config} --static" if pkg_config else None)]
    for names, target in targets:
        for name in names:
            _shim(d / name, f'#!/bin/sh\nexec {target} "$@"\n' if target else None)
    return d


def allow_static_archives(tree: Path) -> None:
    """The static libraries forced on are files no binary package of
    Debian's lists, and dh_missing stops a build for those: list them in
    debian/not-installed (the copy's; wildcards, as debhelper 13 reads)."""
    listing = tree / "debian" / "not-installed"
    old = listing.read_text() if listing.is_file() else ""
    if NOT_INSTALLED_MARK not in old:
        listing.write_text(old + ("" if not old or old.endswith("\n") else "\n")
                           + NOT_INSTALLED_MARK + "\n" + "\n".join(NOT_INSTALLED) + "\n")


def environment_summary(ukl: bool, profiles: frozenset[str] = control.PROFILES) -> str:
    """What of the build environment is fixed by this module (for the
    build's state)."""
    return repr((_build_options(), sorted(profiles), NOT_INSTALLED, ukl))


def install_build_depends(tree: Path, why: str,
                          profiles: frozenset[str] = control.PROFILES) -> None:
    """Install on the host what dpkg-checkbuilddeps finds missing (tools,
    and the libraries an ordinary build links)."""
    unmet = unmet_build_depends(tree, profiles)
    if unmet:
        archive.install([alts[0] for alts in control.relations(checkbuilddeps_list(unmet))], why)


def checkbuilddeps_list(text: str) -> str:
    """dpkg-checkbuilddeps' space-separated list ("a (>= 1) b | c d:native")
    as a relation field ("a (>= 1), b | c, d:native")."""
    text = re.sub(r"\s*\|\s*", "|", re.sub(r"\s*\(\s*", "(", re.sub(r"\s*\)", ")", text)))
    text = re.sub(r"\(([^)]*)\)", lambda m: "(" + m.group(1).replace(" ", "") + ")", text)
    return ", ".join(text.split())


def unmet_build_depends(tree: Path, profiles: frozenset[str] = control.PROFILES) -> str:
    """The unmet build dependencies dpkg-checkbuilddeps reports ("" if none)."""
    out = subprocess.run(["dpkg-checkbuilddeps", "-B", "-P", ",".join(sorted(profiles))],
                         cwd=tree, capture_output=True, text=True)
    m = re.search(r"Unmet build dependencies: (.*)", out.stderr)
    return m.group(1).strip() if m else ""


def build(tree: Path, ukl: bool, cc: str, cxx: str, deps: list[Path], log: Path,
          what: str, resume: bool, off: Off = Off(),
          profiles: frozenset[str] = control.PROFILES, library: bool = False) -> None:
    """dpkg-buildpackage for the architecture-dependent packages. `resume`:
    the tree holds an interrupted build of the same state; go on without
    cleaning (dh's stamps skip the steps already done)."""
    work = tree.parent
    for old in work.glob("*.deb"):
        old.unlink()
    if off.skip:
        profiles |= features.flavour_profiles(tree, control.read(tree).source, off.skip)
    env = environment(ukl, cc, cxx, deps, work, off, profiles, library)
    if ukl:
        allow_static_archives(tree)
    cmd = ["dpkg-buildpackage", "--build=any", "--no-sign", "-d",
           "-P" + ",".join(sorted(profiles))]
    if resume:
        cmd.append("-nc")
    start = log_size(log)
    try:
        run_logged(cmd, label=f"debian/rules {what}", cwd=tree, env=env, log_path=log,
                   append=True)
    except UklError as e:
        why = failure_reason(log_since(log, start))
        if why is None or isinstance(e, Interrupted):
            raise
        raise UklError(f"debian/rules {what} failed: {why}; full log: {log}",
                       detail=e.detail) from e


# What a failed build's log says first about why, most telling first at
# the same place: what is UKL's own (ukl lint, a host library), then the
# compiler's, the linker's and configure's errors.
_REASONS = (
    ("ukl lint: ", re.compile(r"^ukl lint: \S+: \d+ problem\(s\)\n\s+\S+: (?P<why>.+)$", re.M)),
    ("", re.compile(r"^ukl-cc: error: (?P<why>(?!exit status).+)$", re.M)),
    # Not configure's own test programs (conftest.c), whose errors are its
    # answers, printed when dh_auto_configure shows config.log.
    ("", re.compile(r"^(?P<why>(?!conftest\.)\S+:\d+:(?:\d+:)? (?:fatal )?error: .+)$", re.M)),
    ("", re.compile(r"(?P<why>undefined reference to `[^']+')")),
    # After "checking for X... " when the check itself stops configure.
    ("", re.compile(r"^(?:checking .*\.\.\. )?(?P<why>configure: error: (?!in `).+)$", re.M)),
    ("", re.compile(r"^(?P<why>CMake Error at .+)$", re.M)),
    ("", re.compile(r"^(?P<why>meson\.build:\d+:\d+: ERROR: .+)$", re.M)),
    ("", re.compile(r"^(?P<why>dh_\w+: error: .+)$", re.M)),
    ("", re.compile(r"^(?P<why>(?:cp|install|strip|mv|ln|chmod): .*No such file.*)$", re.M)),
)


def failure_reason(log_text: str) -> str | None:
    """The first line of a failed build's log that says why (the earliest
    of _REASONS' matches, with its label; the first pattern wins a tie),
    or None."""
    found = [(m.start(), i, label + m.group("why").strip())
             for i, (label, r) in enumerate(_REASONS) if (m := r.search(log_text))]
    if not found:
        return None
    why = min(found)[2]
    return why if len(why) <= 240 else why[:237] + "..."


def staging_dirs(tree: Path, binaries: list[str]) -> list[Path]:
    """Where the build staged its files: debian/tmp, then each binary
    package's directory."""
    dirs = [tree / "debian" / d for d in _STAGING] + [tree / "debian" / b for b in binaries]
    return [d for d in dirs if d.is_dir()]


def install_library(tree: Path, binaries: list[str], dest: Path) -> list[str]:
    """Copy headers, static archives and pkg-config files from the
    staging directories into `dest` (a dependency sysroot); .pc files are
    rewritten to point there. A shared library staged without its static
    archive (Debian's rules delete some, as oniguruma's do) gets the one
    the build made, from the build tree. Returns the archives installed."""
    if dest.exists():
        shutil.rmtree(dest)
    archives = []
    # Each shared library's name: its staged files (the stand-ins ukl-cc
    # made, which name what the library needs) and their directories
    # below the staging directory.
    shared: dict[str, list[tuple[Path, Path]]] = {}
    for staged in staging_dirs(tree, binaries):
        for path in sorted(staged.rglob("*")):
            rel = path.relative_to(staged)
            parts = rel.parts
            in_lib = len(parts) >= 3 and parts[:2] == ("usr", "lib")
            if in_lib and ".so" in path.name and path.name.startswith("lib"):
                shared.setdefault(path.name.split(".so")[0], []).append((path, rel.parent))
            keep = (parts[:2] == ("usr", "include")
                    or (in_lib and (path.suffix == ".a" or "pkgconfig" in parts))
                    or parts[:3] == ("usr", "share", "pkgconfig"))
            # Not a link to nothing (python3.11's include/python3.11d,
            # a link into the debug package a build may skip).
            if not keep or path.is_dir() or not path.exists():
                continue
            _install_file(path, dest / rel, dest)
            if path.suffix == ".a":
                archives.append(str(rel))
    for name, files in shared.items():
        _, libdir = files[0]
        rel = libdir / f"{name}.a"
        if str(rel) in archives:
            continue
        built = _built_archive(tree, f"{name}.a")
        if built is not None:
            _install_file(built, dest / rel, dest)
            archives.append(str(rel))
    for rel_archive in sorted(set(archives)):
        _write_archive_needs(dest / rel_archive,
                             [f for f, _ in shared.get(Path(rel_archive).stem, [])])
    return sorted(set(archives))


def _write_archive_needs(archive: Path, shared_files: list[Path]) -> None:
    """Beside an installed archive, the libraries its shared library's
    link named (ukl-cc's stand-in records them; see
    driver.with_archive_needs), if any."""
    for f in shared_files:
        if f.is_file() and not f.is_symlink():
            needs = standin_needs(f)
            if needs:
                archive_needs_file(archive).write_text("\n".join(needs) + "\n")
                return


def _install_file(path: Path, target: Path, dest: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".pc":
        text = path.read_text(errors="replace")
        target.write_text(_PKGCONFIG_VAR.sub(lambda m: f"{m.group(1)}={dest}/usr", text))
    elif not target.exists():
        shutil.copy2(path, target, follow_symlinks=True)


def _built_archive(tree: Path, name: str) -> Path | None:
    """The static archive `name` the build left in its tree (libtool's
    .libs/ first), outside debian/."""
    found = [p for p in tree.rglob(name)
             if p.is_file() and "debian" not in p.relative_to(tree).parts[:1]]
    found.sort(key=lambda p: (".libs" not in p.parts, len(p.parts)))
    return found[0] if found else None


# What a program does not read at run time: documentation, and (usr/lib's
# multiarch directory) shared libraries, which a UKL program cannot load and
# an ordinary process gets from the host (runtime_files).
_NOT_DATA = {"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/lintian",
             "usr/share/bug", "usr/share/doc-base", "usr/lib/debug",
             f"usr/lib/{layout.MULTIARCH}", "usr/bin", "usr/sbin", "bin", "sbin"}


def data_trees(tree: Path, binaries: list[str]) -> list[tuple[Path, str]]:
    """The files Debian's build staged for `binaries` that a program reads
    at run time (Python's standard library), as (host directory, guest
    directory) trees: etc/, var/, and the directories of usr/lib and
    usr/share but documentation and shared libraries (_NOT_DATA); of
    usr/lib's multiarch directory, whose files are shared libraries, its
    directories (perl-base's modules: usr/lib/x86_64-linux-gnu/perl-base)."""
    trees = []
    for b in binaries:
        staged = tree / "debian" / b
        if not staged.is_dir():
            continue
        tops = [staged / "etc", staged / "var"]
        for parent in ("usr/lib", "usr/share", f"usr/lib/{layout.MULTIARCH}"):
            if (staged / parent).is_dir():
                tops += sorted((staged / parent).iterdir())
        for top in tops:
            rel = top.relative_to(staged).as_posix()
            if top.is_dir() and not top.is_symlink() and rel not in _NOT_DATA:
                trees.append((top, f"/{rel}"))
    return trees


def find_program(tree: Path, binaries: list[str], wanted: list[str],
                 shipped_in: str | None = None) -> Path | None:
    """The first of `wanted` (a path relative to the staging directory, or
    a program name looked up in usr/bin, usr/sbin, bin, sbin, usr/games)
    that the build staged as a file: in the package that ships the program
    first, as Debian ships it. (debian/tmp's perl is what `make install`
    put there, the shared-library flavour; perl-base ships the static
    one, whose @INC has perl-base's own modules.)"""
    first = [tree / "debian" / shipped_in] if shipped_in else []
    for staged in [d for d in first if d.is_dir()] + [
            d for d in staging_dirs(tree, binaries) if d not in first]:
        for name in wanted:
            candidates = ([staged / name] if "/" in name else
                          [staged / d / name for d in ("usr/bin", "usr/sbin", "bin", "sbin",
                                                       "usr/games")])
            for c in candidates:
                if c.is_file() and not c.is_symlink() and os.access(c, os.X_OK):
                    return c
                if c.is_symlink():
                    target = _link_target(tree, binaries, staged, c)
                    if target is not None:
                        return _as_named(tree, target, c.name)
    return None


def _link_target(tree: Path, binaries: list[str], staged: Path, link: Path) -> Path | None:
    """The file a staged symbolic link names: in its own package, or, as
    the installed packages would have it, in another of the source's
    (redis-server's usr/bin/redis-server -> redis-check-rdb, which
    redis-tools ships)."""
    if link.resolve().is_file():
        return link.resolve()
    target = os.readlink(link)
    if target.startswith("/"):
        rel = Path(os.path.normpath(target)).relative_to("/")
    else:
        rel = Path(os.path.normpath(link.parent.relative_to(staged) / target))
    for other in staging_dirs(tree, binaries):
        found = other / rel
        if found.is_file() and not found.is_symlink():
            return found
    return None


def _as_named(tree: Path, program: Path, name: str) -> Path:
    """`program` under `name` (a hard link in the tree's debian/.ukl-programs)
    when a link gave it another name: programs pick their mode from their
    own name (redis-check-rdb is redis-server's file, and checks a dump file
    when run by that name)."""
    if program.name == name:
        return program
    named = tree / "debian" / ".ukl-programs" / name
    named.parent.mkdir(parents=True, exist_ok=True)
    named.unlink(missing_ok=True)
    try:
        os.link(program, named)
    except OSError:
        shutil.copy2(program, named)
    return named


def runtime_files(program: Path) -> list[tuple[Path, str]]:
    """For a dynamically linked program: its shared libraries and the
    dynamic loader, each at the path ldd finds it on this machine (the
    image puts it at the same path)."""
    out = run_quiet(["ldd", str(program)], what=f"ldd {program.name}")
    if "not a dynamic executable" in out or "statically linked" in out:
        return []
    files = []
    for line in out.splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            path = Path(m.group(1))
            files.append((path.resolve(), str(path)))
    missing = [g for h, g in files if not h.is_file()]
    if missing:
        raise UklError(f"{program.name} needs {', '.join(missing)}, not found on this machine")
    return files
