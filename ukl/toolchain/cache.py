"""A content-addressed cache of finished UKL sysroots, outside the repository.

ccache makes a rebuild cheap per compile, but a toolchain build from a clean
tree still spends minutes in configure scripts. The sysroot is a pure
function of its inputs, so a finished one is kept under
$XDG_CACHE_HOME/ukl/toolchain/KEY (default ~/.cache), KEY hashing every
input: the installed Debian source packages (glibc-source, gcc-12-source)
and their tarballs, our patch series, the recipe code and support files in
this repository, and the host compiler and binutils. Any change makes a new
key, and the toolchain is built (with ccache) and stored again. UKL_NO_CACHE=1
turns the cache off (to measure a real build).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from ukl.common import paths
from ukl.sources import debian, series
from ukl.toolchain import layout

KEY_FILE = ".ukl-toolchain-key"
KEEP = 3
# Repository files whose content decides what the sysroot holds.
_RECIPE_FILES = ["ukl/toolchain/glibc.py", "ukl/toolchain/gcc_runtime.py",
                 "ukl/toolchain/layout.py", "ukl/toolchain/host_entry.py",
                 "ukl/toolchain/app_api.py", "ukl/toolchain/build.py",
                 "sysroot/host-entry.S", "sysroot/include/ukl.h"]


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "ukl" / "toolchain"


def enabled() -> bool:
    return os.environ.get("UKL_NO_CACHE", "") in ("", "0")


def _tool_version(cmd: list[str]) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True)
    return res.stdout.splitlines()[0] if res.stdout else "?"


def key() -> str:
    h = hashlib.sha256()
    for name in ("glibc", "gcc"):
        comp = debian.get(name)
        h.update(f"{name} {debian.installed_version(comp.package)} ".encode())
        st = comp.tarball.stat()
        h.update(f"{comp.tarball} {st.st_size} {st.st_mtime_ns}\n".encode())
        # The patches the series applies, not the cover letter beside them.
        for patch in [comp.series_dir / series.SERIES_FILE, *series.read_series(comp.series_dir)]:
            h.update(patch.name.encode() + b"\0" + patch.read_bytes())
    for rel in _RECIPE_FILES:
        h.update(rel.encode() + b"\0" + (paths.REPO_ROOT / rel).read_bytes())
    for cmd in (["gcc", "--version"], ["g++", "--version"], ["ld", "--version"]):
        h.update(_tool_version(cmd).encode())
    return h.hexdigest()[:32]


def current(k: str) -> bool:
    """Whether the sysroot in build/ is the one built from key `k`."""
    f = layout.sysroot() / KEY_FILE
    return f.is_file() and f.read_text() == k


def restore(k: str) -> bool:
    entry = cache_root() / k
    if not (entry / KEY_FILE).is_file():
        return False
    root = layout.sysroot()
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(entry, root, symlinks=True)
    return True


def store(k: str) -> None:
    (layout.sysroot() / KEY_FILE).write_text(k)
    top = cache_root()
    top.mkdir(parents=True, exist_ok=True)
    tmp = top / f".{k}.tmp"
    if tmp.exists():
        shutil.rmtree(tmp)
    shutil.copytree(layout.sysroot(), tmp, symlinks=True)
    final = top / k
    if final.exists():
        shutil.rmtree(final)
    tmp.rename(final)
    entries = sorted((d for d in top.iterdir() if d.is_dir() and not d.name.startswith(".")),
                     key=lambda d: d.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
