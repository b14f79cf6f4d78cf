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
from ukl.common import cprogram, paths
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
    return build_plugin(SOURCE)


def build_plugin(source: Path) -> Path:
    """A plugin of qemu/plugins/ (build/qemu/NAME.so), built against
    Debian's QEMU plugin header; rebuilt when its source or the header
    changes."""
    header_dir = debsrc.fetch("qemu") / "include" / "qemu"
    header = header_dir / "qemu-plugin.h"
    if not header.is_file():
        raise UklError(f"{header} is missing from Debian's qemu source package")
    # Written aside and renamed (cprogram): a QEMU running the old one keeps it.
    return cprogram.compiled(source, paths.build_root() / "qemu" / f"{source.stem}.so",
                             [*_CFLAGS, *_glib_cflags(), f"-I{header_dir}"],
                             f"building the {source.stem} QEMU plugin", (header.read_bytes(),))


# The kernel's indirect-branch thunks (retpolines, ITS thunks).
ITHUNK_SYMBOLS = ("__x86_indirect_thunk_array", "__x86_indirect_its_thunk_array",
                  "__x86_indirect_call_thunk_array", "__x86_indirect_jump_thunk_array")
# Return thunks and the untraining sequences called on entry.
RTHUNK_SYMBOLS = ("__x86_return_thunk", "its_return_thunk", "retbleed_return_thunk",
                  "srso_return_thunk", "srso_alias_return_thunk", "srso_safe_ret",
                  "srso_alias_safe_ret", "retbleed_untrain_ret", "entry_untrain_ret",
                  "srso_untrain_ret", "srso_alias_untrain_ret", "zen_untrain_ret")

Range = tuple[int, int]


@dataclass(frozen=True)
class KernelLayout:
    """What the plugin needs to know of a vmlinux."""

    app: Range | None
    ithunks: list[Range]
    rthunks: list[Range]
    page_fault: int | None


def layout(vmlinux: Path) -> KernelLayout:
    """The UKL application's text, the thunks and the page-fault entry of
    `vmlinux`, from its symbols (`nm -S`)."""
    symbols = run_quiet(["nm", "-S", vmlinux], what=f"reading the symbols of {vmlinux}")
    where: dict[str, tuple[int, int]] = {}
    for line in symbols.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "Tt":
            where[parts[3]] = (int(parts[0], 16), int(parts[1], 16))
        elif len(parts) == 3 and parts[1] in "Tt":
            where.setdefault(parts[2], (int(parts[0], 16), 0))

    def ranges(names: tuple[str, ...]) -> list[Range]:
        return [(where[n][0], where[n][0] + where[n][1]) for n in names
                if n in where and where[n][1] > 0]

    app = None
    if "__ukl_text_start" in where and "__ukl_text_end" in where:
        app = (where["__ukl_text_start"][0], where["__ukl_text_end"][0])
    pf = where.get("asm_exc_page_fault")
    return KernelLayout(app, ranges(ITHUNK_SYMBOLS), ranges(RTHUNK_SYMBOLS),
                        pf[0] if pf else None)


def plugin_argument(plugin: Path, out: Path, kernel: KernelLayout) -> str:
    """QEMU's -plugin argument: write the counts to `out`."""
    if "," in str(plugin) or "," in str(out):
        raise UklError(f"the plugin and its output need paths without commas: {plugin}, {out}")

    def joined(rs: list[Range]) -> str:
        return ":".join(f"{lo:x}-{hi:x}" for lo, hi in rs)

    arg = f"{plugin},out={out}"
    if kernel.app is not None:
        arg += f",app={joined([kernel.app])}"
    if kernel.ithunks:
        arg += f",ithunks={joined(kernel.ithunks)}"
    if kernel.rthunks:
        arg += f",rthunks={joined(kernel.rthunks)}"
    if kernel.page_fault is not None:
        arg += f",pf={kernel.page_fault:x}"
    return arg


@dataclass(frozen=True)
class Window:
    """What ran inside one counting window, summed over its passes."""

    passes: int
    counts: dict[str, int]

    def per_pass(self, name: str) -> float:
        """A sum row's count per pass (a median row is per pass already)."""
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
