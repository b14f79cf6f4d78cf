"""Lint a link's inputs one by one, each file once, instead of the whole
combined object at every link.

A UKL program's user code is gathered by a partial link (`ld -r`), whose
result `ukl lint` must pass. Linting that result means disassembling
every archive member the program pulls in, at every link: OpenSSL's
build links some 200 test programs, each with most of libcrypto.a in it.
A partial link copies its inputs' code, relocations, sections and
symbols unchanged, so the combined object's findings are the findings of
the inputs it took; each input file is linted once, its findings kept
under the hash of its content, and a link takes the findings of the
objects it names and of the archive members it used (`ld -t -t` names
both).

The cache lives in build/lint-cache; an entry's name holds the input's
content hash and the hash of lint.py, so a change to the checks makes
new entries.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError
from ukl.toolchain import lint

# `ld -t -t` prints an input file by its path and an archive member it
# takes as "(ARCHIVE)MEMBER".
_MEMBER = re.compile(r"^\((.+)\)([^()]+)$")
_LINT_CODE = Path(lint.__file__)


def cache_dir() -> Path:
    return paths.build_root() / "lint-cache"


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_ARCHIVE_MAGIC = (b"!<arch>\n", b"!<thin>\n")
_ELF_MAGIC = b"\x7fELF"


def _kind(path: Path) -> str:
    """"archive", "elf" or "other", by content: a name says nothing."""
    try:
        with path.open("rb") as f:
            head = f.read(8)
    except OSError:
        return "other"
    if head in _ARCHIVE_MAGIC:
        return "archive"
    return "elf" if head.startswith(_ELF_MAGIC) else "other"


def _tool_version(tool: str) -> str:
    res = subprocess.run([tool, "--version"], capture_output=True, text=True)
    return res.stdout.split("\n", 1)[0]


@functools.cache
def _checks_version() -> str:
    """The checks (lint.py), how findings are grouped here, and the
    binutils that disassemble: a change to any makes new entries."""
    h = hashlib.sha256(_LINT_CODE.read_bytes() + Path(__file__).read_bytes())
    for tool in ("objdump", "readelf"):
        h.update(_tool_version(tool).encode())
    return h.hexdigest()[:16]


# Linker options that move code between sections or place it (a linker
# script can put a data section's bytes into .text): with any of them the
# inputs' own findings do not say what the combined object holds.
_LAYOUT_OPTIONS = ("-T", "--script", "--section-start", "-Ttext", "-Tdata", "-Tbss")


def changes_layout(linker_args: list[str]) -> bool:
    """Whether a link's arguments (gcc's, -Wl, and -Xlinker included) give
    the linker a script or a section placement."""
    words: list[str] = []
    take = False
    for a in linker_args:
        if take:
            words.append(a)
            take = False
        elif a == "-Xlinker":
            take = True
        elif a.startswith("-Wl,"):
            words += a[4:].split(",")
        else:
            words.append(a)
    return any(w.startswith(_LAYOUT_OPTIONS) for w in words)


class _Linted:
    """One input file's findings, by the object they are in: an archive's
    by member name, a plain object's all under ""."""

    def __init__(self, members: list[str], findings: dict[str, list[lint.Finding]]) -> None:
        self.members = set(members)
        self.findings = findings


def _members(path: Path) -> list[str]:
    if _kind(path) != "archive":
        return [""]
    res = subprocess.run(["ar", "t", str(path)], capture_output=True, text=True)
    return res.stdout.splitlines() if res.returncode == 0 else []


def _store(entry: Path, content: object) -> None:
    """Write a cache entry whole and move it in (builds running side by
    side share the cache); one that cannot be written costs time, not the
    link."""
    tmp: Path | None = None
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        tmp = Path(name)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(content))
        os.replace(tmp, entry)
    except OSError:
        if tmp is not None:
            tmp.unlink(missing_ok=True)


def linted(path: Path) -> _Linted:
    """`path`'s findings, from the cache or from linting it now."""
    entry = cache_dir() / f"{_digest(path)}-{_checks_version()}.json"
    try:
        stored = json.loads(entry.read_text())
        return _Linted(stored["members"],
                       {m: [lint.Finding(**f) for f in fs]
                        for m, fs in stored["findings"].items()})
    except (OSError, ValueError, TypeError, KeyError):
        pass
    grouped: dict[str, list[lint.Finding]] = {}
    for f in lint.lint(path):
        grouped.setdefault(f.obj, []).append(f)
    members = _members(path)
    if _kind(path) != "archive":
        # A plain object's findings name it by whatever path it was linted
        # under; the same content linked from elsewhere is the same object.
        grouped = {"": [f for fs in grouped.values() for f in fs]}
    elif not set(grouped) <= set(members):
        # Findings filed under a name `ar` does not list: they cannot be
        # told apart by member, so the archive is not used member by member.
        raise UklError(f"{path}: findings of unknown members")
    _store(entry, {"members": members,
                   "findings": {m: [asdict(f) for f in fs] for m, fs in grouped.items()}})
    return _Linted(members, grouped)


def used_inputs(trace: str) -> tuple[list[Path], dict[Path, set[str]]] | None:
    """The plain objects and the archive members (by archive) that an
    `ld -t -t` trace says a link took. None: a line names an input that is
    not a file here (nothing else can be said without the combined
    object)."""
    objects: list[Path] = []
    members: dict[Path, set[str]] = {}
    for line in trace.splitlines():
        line = line.strip()
        if not line or line.startswith(("ld:", "/usr/bin/ld:")):
            continue
        if m := _MEMBER.match(line):
            members.setdefault(Path(m.group(1)), set()).add(m.group(2))
            continue
        path = Path(line)
        if not path.is_file():
            return None
        kind = _kind(path)
        if kind == "other":
            # A linker script or a raw binary input: what it makes of
            # the other inputs shows only in the combined object.
            return None
        if kind == "elf":
            objects.append(path)
    return objects, members


def lint_link(trace: str, combined: Path, linker_args: list[str]) -> list[lint.Finding]:
    """The findings of the link whose `ld -t -t` trace is `trace`, whose
    arguments were `linker_args` and whose partial-link output is
    `combined`: its inputs' own, from the cache; `combined` linted whole
    when the trace cannot say which inputs it took, or the arguments
    change where their code goes."""
    used = None if changes_layout(linker_args) else used_inputs(trace)
    if used is None:
        return lint.lint(combined)
    objects, members = used
    findings: list[lint.Finding] = []
    try:
        for obj in objects:
            findings += linted(obj).findings.get("", [])
        for archive, names in members.items():
            done = linted(archive)
            if not names <= done.members:
                # The trace names a member as `ar` does not: the archive
                # cannot be matched to its members, so lint what was linked.
                return lint.lint(combined)
            for name in sorted(names):
                findings += done.findings.get(name, [])
    except UklError:
        # An input objdump cannot read on its own (an archive with a
        # member that is not an object): the combined object says.
        return lint.lint(combined)
    return findings
