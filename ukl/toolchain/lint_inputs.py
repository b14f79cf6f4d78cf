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

import hashlib
import json
import os
import re
import subprocess
from dataclasses import asdict
from pathlib import Path

from ukl.common import paths
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


def _checks_version() -> str:
    return hashlib.sha256(_LINT_CODE.read_bytes()).hexdigest()[:16]


class _Linted:
    """One input file's findings, by the object they are in: an archive's
    by member name, a plain object's all under ""."""

    def __init__(self, members: list[str], findings: dict[str, list[lint.Finding]]) -> None:
        self.members = set(members)
        self.findings = findings


def _members(path: Path) -> list[str]:
    if path.suffix != ".a":
        return [""]
    res = subprocess.run(["ar", "t", str(path)], capture_output=True, text=True)
    return res.stdout.splitlines() if res.returncode == 0 else []


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
    if path.suffix != ".a":
        # A plain object's findings name it by whatever path it was linted
        # under; the same content linked from elsewhere is the same object.
        grouped = {"": [f for fs in grouped.values() for f in fs]}
    members = _members(path)
    entry.parent.mkdir(parents=True, exist_ok=True)
    # Written whole and moved in: builds running side by side share it.
    tmp = entry.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"members": members,
                               "findings": {m: [asdict(f) for f in fs]
                                            for m, fs in grouped.items()}}))
    tmp.replace(entry)
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
        if path.suffix != ".a":
            objects.append(path)
    return objects, members


def lint_link(trace: str, combined: Path) -> list[lint.Finding]:
    """The findings of the link whose `ld -t -t` trace is `trace` and whose
    partial-link output is `combined`: its inputs' own, from the cache;
    `combined` linted whole when the trace cannot say which inputs it
    took."""
    used = used_inputs(trace)
    if used is None:
        return lint.lint(combined)
    objects, members = used
    findings: list[lint.Finding] = []
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
    return findings
