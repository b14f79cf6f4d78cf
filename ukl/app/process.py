"""Build a program as an ordinary static Linux executable with the host compiler.

This is the 'process' mode: the program runs as a normal user process on the
kernel. It is the reference every UKL result is compared against.
"""
from __future__ import annotations

from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UsageError
from ukl.common.proc import run_quiet

C_SUFFIXES = {".c"}
CXX_SUFFIXES = {".cc", ".cpp", ".cxx", ".C"}


def check_sources(sources: list[Path]) -> None:
    if not sources:
        raise UsageError("no source files given")
    for src in sources:
        if not src.is_file():
            raise UsageError(f"source file {src} does not exist")
        if src.suffix not in C_SUFFIXES | CXX_SUFFIXES:
            raise UsageError(f"{src}: unsupported source type (use .c, .cc, .cpp or .cxx)")


def compile_static(sources: list[Path], name: str, extra_flags: list[str] | None = None) -> Path:
    check_sources(sources)
    cxx = any(s.suffix in CXX_SUFFIXES for s in sources)
    out = paths.build_root() / "apps" / name / name
    out.parent.mkdir(parents=True, exist_ok=True)
    compiler = "g++" if cxx else "gcc"
    run_quiet([compiler, "-static", "-O2", "-g", "-pthread", *(extra_flags or []),
               "-o", out, *sources], what=f"compiling {name}")
    return out
