"""Digest stamps: "redo this step only if what it was made from changed".

A step writes a stamp file holding the state it was made from (a digest of
its inputs, a tree's commit, ...) once it has succeeded; before running
again it compares. A step that fails leaves the old stamp, or none, so it is
redone next time.
"""
from __future__ import annotations

import hashlib
from pathlib import Path


def digest(*parts: str | bytes) -> str:
    """sha256 over the parts, each delimited so that ("ab", "c") and
    ("a", "bc") differ."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def current(stamp: Path, state: str) -> bool:
    """Whether the step recorded in `stamp` was made from `state`."""
    return stamp.is_file() and stamp.read_text() == state


def record(stamp: Path, state: str) -> None:
    """Record that the step succeeded from `state` (after its work is done)."""
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(state)
