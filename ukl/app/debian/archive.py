"""Binary packages in the machine's Debian archive: which source package
builds one, what files it ships, and installing build tools on the host.

Queries use the host's own apt configuration (the binary package lists);
source packages come through ukl.app.debian.source's private deb-src
configuration. Downloaded .deb files are kept in build/debian/debs, and
their file lists beside them, so a package is looked at once.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from debian.deb822 import Deb822

from ukl.common import paths
from ukl.common.errors import UklError
from ukl.common.proc import log_since, log_size, run_logged
from ukl.host import packages


@dataclass(frozen=True)
class BinaryPackage:
    name: str
    version: str
    # The source package that builds it (its own name if Source is absent).
    source: str
    # Depends and Pre-Depends: each relation's first alternative.
    depends: tuple[str, ...] = ()
    section: str = ""


def _debs_dir() -> Path:
    d = paths.build_root() / "debian" / "debs"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _apt_cache(*args: str) -> str:
    res = subprocess.run(["apt-cache", *args], capture_output=True, text=True)
    return res.stdout if res.returncode == 0 else ""


# Binary package name -> what apt knows of it (None: nothing), for this
# process: a build looks at the same packages many times.
_SHOWN: dict[str, BinaryPackage | None] = {}


def _parse(para: Deb822) -> BinaryPackage:
    source = para.get("Source", para["Package"]).split()[0]
    relations = ", ".join(para[f] for f in ("Pre-Depends", "Depends") if para.get(f))
    depends = tuple(alt.split("|")[0].split()[0].split(":")[0]
                    for alt in relations.split(",") if alt.strip())
    return BinaryPackage(para["Package"], para["Version"], source, depends,
                         para.get("Section", "").split("/")[-1])


def prefetch(names: list[str]) -> None:
    """Ask apt once about all of `names` that were not asked about yet."""
    todo = sorted({n for n in names if n not in _SHOWN})
    if not todo:
        return
    text = _apt_cache("show", "--no-all-versions", *todo)
    for chunk in text.split("\n\n"):
        if chunk.strip():
            para = Deb822(chunk)
            if "Package" in para and para["Package"] in todo:
                _SHOWN.setdefault(para["Package"], _parse(para))


def show(name: str) -> BinaryPackage | None:
    """The candidate version of binary package `name`, or of the first
    package that provides it if it is virtual; None if apt knows neither."""
    if name not in _SHOWN:
        prefetch([name])
    if name not in _SHOWN:
        providers = reverse_provides(name)
        text = _apt_cache("show", "--no-all-versions", providers[0]) if providers else ""
        _SHOWN[name] = _parse(Deb822(text.split("\n\n")[0])) if text.strip() else None
    return _SHOWN[name]


# The C library, the compiler's runtime and the kernel's headers, for
# building and at run time: the UKL toolchain provides them.
TOOLCHAIN = re.compile(r"^(libc6?-dev|libc6-dev-.+|linux-libc-dev|libgcc-\d+-dev|libgcc1?-dev"
                       r"|libstdc\+\+-\d+-dev|libstdc\+\+-dev|libc-dev-bin|libsupc\+\+-dev"
                       r"|libc6|libgcc-s1|libstdc\+\+6)$")
_LIBRARY_SECTIONS = {"libs", "libdevel", "oldlibs"}


def link_sources(name: str) -> frozenset[str]:
    """The source packages of the libraries a program linking the library
    of binary package `name` (a -dev package, or the one that ships a
    program) links too: the shared library packages it depends on, and
    theirs, through Depends, without the toolchain's own. Followed are
    Debian's library sections (libs, libdevel) and any package of `name`'s
    own source (python3.11-minimal's libpython3.11-minimal is in section
    python). A library's other build dependencies serve its other programs
    and plugins (cyrus-sasl2's SQL and LDAP plugins, pam's modules)."""
    start = show(name)
    if start is None:
        return frozenset()
    seen: set[str] = set()
    sources: set[str] = set()
    todo = [name]
    while todo:
        prefetch(todo)
        current = todo.pop()
        if current in seen or TOOLCHAIN.match(current):
            continue
        seen.add(current)
        pkg = show(current)
        if pkg is None or (pkg.section not in _LIBRARY_SECTIONS
                           and pkg.source != start.source):
            continue
        sources.add(pkg.source)
        todo += [d for d in pkg.depends if d not in seen]
    return frozenset(sources)


def reverse_provides(name: str) -> list[str]:
    """Packages that provide virtual package `name` (apt-cache showpkg)."""
    text = _apt_cache("showpkg", name)
    _, sep, tail = text.partition("Reverse Provides:")
    if not sep:
        return []
    return [line.split()[0] for line in tail.splitlines() if line.strip()]


def contents(pkg: BinaryPackage) -> list[str]:
    """The paths a binary package installs (without the leading ./)."""
    listing = _debs_dir() / f"{pkg.name}_{pkg.version.replace(':', '%3a')}.list"
    if listing.is_file():
        return listing.read_text().splitlines()
    deb = download(pkg)
    res = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True)
    if res.returncode != 0:
        raise UklError(f"dpkg-deb cannot read {deb}: {res.stderr.decode(errors='replace')}")
    tar = subprocess.run(["tar", "-t"], input=res.stdout, capture_output=True)
    files = [re.sub(r"^\./", "", f) for f in tar.stdout.decode(errors="replace").splitlines()]
    listing.write_text("\n".join(files) + "\n")
    return files


def download(pkg: BinaryPackage) -> Path:
    """The .deb of `pkg`, downloaded once into build/debian/debs."""
    d = _debs_dir()
    found = sorted(d.glob(f"{pkg.name}_*.deb"))
    if found:
        return found[-1]
    run_logged(["apt-get", "download", f"{pkg.name}={pkg.version}"],
               label=f"apt-get download {pkg.name}", cwd=d,
               log_path=paths.logs_dir() / f"apt-download-{pkg.name}.log")
    found = sorted(d.glob(f"{pkg.name}_*.deb"))
    if not found:
        raise UklError(f"apt-get download {pkg.name} left no .deb in {d}")
    return found[-1]


def install(names: list[str], why: str) -> None:
    """apt-get install `names` on the host (the tools a Debian build runs),
    as root; otherwise say what to install."""
    have = packages.installed(names)
    missing = [n for n in names if n not in have]
    if not missing:
        return
    if os.geteuid() != 0:
        raise UklError(f"{why} needs these Debian packages on this machine: "
                       f"{' '.join(missing)}; as root: apt-get install {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log = paths.logs_dir() / "apt-install.log"
    cmd = ["apt-get", *packages.WAIT_FOR_DPKG, "install", "-y", "--no-install-recommends",
           *missing]
    label = f"apt-get install ({len(missing)} packages for {why})"
    start = log_size(log)
    try:
        run_logged(cmd, label=label, env=env, log_path=log, append=True)
    except UklError:
        # An install stopped part way (a build interrupted while apt ran)
        # leaves dpkg wanting its packages configured; apt refuses
        # everything until they are. Finish them, as apt says to, once.
        if DPKG_INTERRUPTED not in log_since(log, start):
            raise
        run_logged(["dpkg", "--configure", "-a"], label="dpkg --configure -a (an interrupted "
                   "install)", env=env, log_path=log, append=True)
        run_logged(cmd, label=label, env=env, log_path=log, append=True)


# apt-get's refusal after an install stopped part way.
DPKG_INTERRUPTED = "dpkg was interrupted, you must manually run 'dpkg --configure -a'"
_PROGRAM_DIRS = ("usr/bin", "usr/sbin", "bin", "sbin", "usr/games")


def shipping(binaries: list[str], programs: list[str]) -> str | None:
    """Which of a source's binary packages ships the first of `programs`
    that one does (a name in usr/bin, usr/sbin, ...), by the archive's
    .deb contents; a package named like the program is looked at first.
    None if none does, or the archive cannot say (offline, a mirror
    without that version)."""
    prefetch(binaries)
    for program in programs:
        wanted = {f"{d}/{program}" for d in _PROGRAM_DIRS}
        for name in sorted(binaries, key=lambda b: b != program):
            pkg = show(name)
            if pkg is None or pkg.name != name:
                continue
            try:
                files = contents(pkg)
            except UklError:
                return None
            if wanted & set(files):
                return name
    return None


def same_source_depends(name: str, binaries: list[str]) -> list[str]:
    """Binary package `name` and the packages among `binaries` (its
    source's) it depends on, recursively: python3.11-minimal and
    libpython3.11-minimal, whose files are the standard library the
    interpreter needs."""
    found: list[str] = []
    todo = [name]
    while todo:
        current = todo.pop(0)
        if current in found:
            continue
        found.append(current)
        pkg = show(current)
        if pkg is not None:
            todo += [d for d in pkg.depends if d in binaries]
    return found
