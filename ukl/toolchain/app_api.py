"""Install <ukl.h>, the interface a UKL application has to its kernel, into
the sysroot (sysroot/include/ukl.h; its functions are kernel functions)."""
from __future__ import annotations

import shutil

from ukl.common import paths
from ukl.toolchain import layout

HEADER = paths.REPO_ROOT / "sysroot" / "include" / "ukl.h"


def install() -> None:
    dest = layout.include_dir() / "ukl.h"
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(HEADER, dest)
