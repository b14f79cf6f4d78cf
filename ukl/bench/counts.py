"""Exact counts of what costs cycles, from the ukl_counts QEMU plugin
(qemu/plugins/ukl_counts.c): instructions by privilege and by owner,
privilege transitions and their causes, SWAPGS, CR3 writes, VERW, fences,
serialising instructions, indirect branches, returns.

The plugin is built here against `qemu-plugin.h` from Debian's `qemu`
source package (the QEMU that boots the images is Debian's
`qemu-system-x86`, 7.2) and glib's headers from `libglib2.0-dev`. A guest
program marks what it measures with guest/ukl_marks.h; the plugin writes
one CSV row per window and one for the whole run.
"""
from __future__ import annotations

import csv
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ukl.app.debian import source as debsrc
from ukl.common import paths, stamp
from ukl.common.errors import UklError
from ukl.common.proc import run_quiet

SOURCE = paths.REPO_ROOT / "qemu" / "plugins" / "ukl_counts.c"
TOTAL = "total"
_CFLAGS = ["-shared", "-fPIC", "-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror"]


def _glib_cflags() -> list[str]:
    try:
        out = subprocess.run(["pkg-config", "--cflags", "glib-2.0"], capture_output=True,
                             text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise UklError("glib's headers are missing (pkg-config glib-2.0); run `make setup` "
                       "or, as root, `apt-get install libglib2.0-dev`") from e
    return out.split()


def build() -> Path:
    """The plugin (build/qemu/ukl_counts.so), rebuilt when its source or
    QEMU's plugin header changes."""
    header_dir = debsrc.fetch("qemu") / "include" / "qemu"
    header = header_dir / "qemu-plugin.h"
    if not header.is_file():
        raise UklError(f"{header} is missing from Debian's qemu source package")
    out = paths.build_root() / "qemu" / "ukl_counts.so"
    flags = [*_CFLAGS, *_glib_cflags(), f"-I{header_dir}"]
    state = stamp.digest(SOURCE.read_bytes(), header.read_bytes(), " ".join(flags))
    done = out.with_suffix(".stamp")
    if out.is_file() and stamp.current(done, state):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    run_quiet(["gcc", *flags, "-o", out, SOURCE], what="building the ukl_counts QEMU plugin")
    stamp.record(done, state)
    return out


def app_text(vmlinux: Path) -> tuple[int, int] | None:
    """[start, end) of the UKL application's code in `vmlinux`, or None
    for a kernel without one."""
    symbols = run_quiet(["nm", vmlinux], what=f"reading the symbols of {vmlinux}")
    found: dict[str, int] = {}
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in ("__ukl_text_start", "__ukl_text_end"):
            found[parts[2]] = int(parts[0], 16)
    if len(found) != 2:
        return None
    return found["__ukl_text_start"], found["__ukl_text_end"]


def plugin_argument(plugin: Path, out: Path, app: tuple[int, int] | None) -> str:
    """QEMU's -plugin argument: write the counts to `out`."""
    if "," in str(plugin) or "," in str(out):
        raise UklError(f"the plugin and its output need paths without commas: {plugin}, {out}")
    arg = f"{plugin},out={out}"
    if app is not None:
        arg += f",app={app[0]:x}-{app[1]:x}"
    return arg


@dataclass(frozen=True)
class Window:
    """What ran inside one counting window, summed over its passes."""

    passes: int
    counts: dict[str, int]

    def per_pass(self, name: str) -> float:
        return self.counts[name] / self.passes if self.passes else 0.0


def read(path: Path) -> dict[str, Window]:
    """The plugin's CSV: window number (as text) or "total" -> Window."""
    if not path.is_file():
        raise UklError(f"the ukl_counts plugin wrote no {path} (did QEMU start?)")
    windows = {}
    with path.open(newline="") as f:
        for row in csv.DictReader(f):
            name = row.pop("window")
            passes = int(row.pop("passes"))
            windows[name] = Window(passes, {k: int(v) for k, v in row.items()})
    if TOTAL not in windows:
        raise UklError(f"{path} has no total row; the plugin did not finish")
    return windows
