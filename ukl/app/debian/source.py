"""Fetch and unpack a Debian source package with apt-get source.

The deb-src entries mirror the machine's own Debian `deb` entries (same
archives, same suites), in a private apt configuration under build/apt, so
the host's apt setup is never changed. Unpacking (dpkg-source -x, done by
apt-get source) applies the package's Debian patches.
"""
from __future__ import annotations

import re
import shutil
import sys
import time
from pathlib import Path

from ukl.common import locks, paths
from ukl.common.errors import UklError, UsageError
from ukl.common.proc import log_since, log_size, run_logged

SYSTEM_SOURCES = [Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list")]
# Refresh the deb-src lists once a day at most.
LISTS_MAX_AGE = 24 * 3600
_PACKAGE_NAME = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")


def _apt_dir() -> Path:
    return paths.build_root() / "apt"


def source_entries(texts: list[str]) -> list[str]:
    """deb-src one-line entries for the Debian archives and suites that the
    given apt sources (deb822 or one-line format) use for binary packages."""
    entries: list[str] = []
    for text in texts:
        for stanza in re.split(r"\n\s*\n", text):
            fields = dict(re.findall(r"^([A-Za-z-]+):\s*(.*)$", stanza, re.M))
            if "deb" in fields.get("Types", "").split() and "URIs" in fields:
                comps = fields.get("Components", "main")
                for uri in fields["URIs"].split():
                    for suite in fields.get("Suites", "").split():
                        entries.append(f"deb-src {uri} {suite} {comps}")
        for line in text.splitlines():
            m = re.match(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)\s+(.+)$", line.strip())
            if m:
                entries.append(f"deb-src {m.group(1)} {m.group(2)} {m.group(3)}")
    return [e for e in dict.fromkeys(entries) if "debian" in e]


def _apt_options() -> list[str]:
    d = _apt_dir()
    return ["-o", f"Dir::Etc::SourceList={d / 'sources.list'}", "-o", "Dir::Etc::SourceParts=-",
            "-o", f"Dir::State::Lists={d / 'lists'}"]


def _update_lists() -> None:
    d = _apt_dir()
    texts = [p.read_text() for p in SYSTEM_SOURCES if p.is_file()]
    entries = source_entries(texts)
    if not entries:
        raise UklError("no Debian archive found in " + ", ".join(map(str, SYSTEM_SOURCES)) +
                       "; ukl build --debian needs the machine's Debian apt sources")
    (d / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    wanted = "\n".join(entries) + "\n"
    src_list = d / "sources.list"
    stamp = d / "lists" / ".ukl-updated"
    fresh = (stamp.is_file() and time.time() - stamp.stat().st_mtime < LISTS_MAX_AGE
             and src_list.is_file() and src_list.read_text() == wanted)
    if fresh:
        return
    src_list.write_text(wanted)
    run_logged(["apt-get", *_apt_options(), "update"], label="apt-get update (deb-src)",
               log_path=paths.logs_dir() / "apt-src-update.log")
    stamp.touch()


_FETCH_FAILED = re.compile(r"^E: Failed to fetch (\w+://\S+)\s+(.*?)\s*(?:\[IP:.*)?$", re.M)


def fetch_failures(apt_output: str) -> list[str]:
    """apt-get's failed downloads, as "FILE: 404 Not Found" (a mirror that
    lists a source package it cannot serve)."""
    return [f"{url.rsplit('/', 1)[-1]}: {' '.join(why.split())}"
            for url, why in _FETCH_FAILED.findall(apt_output)]


class SourceUnavailable(UklError):
    """The archive cannot serve a source package's files (a mirror
    without them)."""


def fetch(package: str) -> Path:
    """The unpacked source tree of Debian source package `package`
    (build/debian/PACKAGE/src), fetched once."""
    if not _PACKAGE_NAME.match(package):
        raise UsageError(f"'{package}' is not a Debian package name")
    if not shutil.which("dpkg-source"):
        raise UklError("dpkg-source is missing; run `make setup` or, as root, "
                       "`apt-get install dpkg-dev`")
    top = paths.build_root() / "debian" / package
    tree = top / "src"
    if (tree / "debian" / "changelog").is_file():
        return tree
    # Two commands fetching at once: the second finds the first's tree.
    with locks.held(top / ".ukl-fetch-lock"):
        if (tree / "debian" / "changelog").is_file():
            return tree
        # apt's lists, read by apt-get source, are rewritten by an update.
        with locks.held(_apt_dir() / ".ukl-lock"):
            _update_lists()
            return _download(package, top, tree)


def _download(package: str, top: Path, tree: Path) -> Path:
    """apt-get source into top/download, unpacked as `tree`."""
    download = top / "download"
    log = paths.logs_dir() / f"apt-source-{package}.log"
    # The newest version first; if the archive cannot serve its files (a
    # mirror without that security update, say), each suite's own version.
    suites = [e.split()[2] for e in (_apt_dir() / "sources.list").read_text().splitlines()]
    attempts = [package] + [f"{package}/{suite}" for suite in dict.fromkeys(suites)]
    log.unlink(missing_ok=True)
    reasons: list[str] = []
    for attempt in attempts:
        if download.exists():
            shutil.rmtree(download)
        download.mkdir(parents=True)
        start = log_size(log)
        try:
            run_logged(["apt-get", *_apt_options(), "source", attempt],
                       label=f"apt-get source {attempt}", cwd=download, log_path=log,
                       append=True)
            break
        except UklError as e:
            text = log_since(log, start)
            if "Unable to find a source package" in text and attempt == package:
                raise UsageError(f"Debian has no source package '{package}' in the suites "
                                 f"of this machine (see {log})") from e
            reasons += [r for r in fetch_failures(text) if r not in reasons]
            if attempt == attempts[-1]:
                why = f": {reasons[0]}" if reasons else ""
                raise SourceUnavailable(f"apt-get source {package} failed in every "
                                        f"suite{why}; full log: {log}") from e
            print(f"ukl: apt-get source {attempt} failed (see {log}); trying the next suite",
                  file=sys.stderr)
    unpacked = [d for d in download.iterdir() if d.is_dir()]
    if len(unpacked) != 1:
        raise UklError(f"apt-get source {package} unpacked {len(unpacked)} trees; "
                       f"see {log}")
    if tree.exists():
        shutil.rmtree(tree)
    unpacked[0].rename(tree)
    return tree
