"""`ukl toolchain build`: the whole UKL toolchain, then a lint of every library.

ukl-cc lints only the user's code at each link, so every library it links
in is checked here, once: a library that fails stops the build.
"""
from __future__ import annotations

from pathlib import Path

from ukl.common.errors import UklError
from ukl.toolchain import gcc_runtime, glibc, host_entry, layout, lint

LINTED = [
    (layout.LIBDIR, ["crt1.o", "crti.o", "crtn.o", "libc.a", "libm.a", "libstdc++.a",
                     "libsupc++.a"]),
    (layout.UKL_LIBDIR, ["crtbeginT.o", "crtend.o", "libgcc.a", "libgcc_eh.a"]),
]


def lint_libraries() -> None:
    for subdir, names in LINTED:
        for name in names:
            path: Path = layout.sysroot() / subdir / name
            findings = lint.lint(path)
            if findings:
                raise UklError(f"{path} fails ukl lint; it would be linked into every app",
                               detail=lint.report(path, findings, limit=20))


def build() -> Path:
    root = glibc.build()
    gcc_runtime.build()
    host_entry.build()
    lint_libraries()
    return root
