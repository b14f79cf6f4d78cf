"""Assemble sysroot/host-entry.S, the host stand-in for the kernel entry point."""
from __future__ import annotations

from ukl.common import paths
from ukl.common.proc import run_quiet
from ukl.toolchain import layout

SOURCE = paths.REPO_ROOT / "sysroot" / "host-entry.S"


def build() -> None:
    out = layout.ukl_libdir() / "host-entry.o"
    out.parent.mkdir(parents=True, exist_ok=True)
    run_quiet(["gcc", "-c", str(SOURCE), "-o", str(out)], what="assembling host-entry.S")
