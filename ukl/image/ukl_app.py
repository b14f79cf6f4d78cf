"""Build a program as a UKL application: the object the kernel link takes.

`ukl-cc`/`ukl-c++` compile and link the program against the UKL C library;
the link output carries the relocatable UKL object in its `.ukl.object`
section. Here that object is extracted and every allocated section renamed
to `.ukl<name>` (`.text` -> `.ukl.text`, `__libc_atexit` ->
`.ukl__libc_atexit`), which is what the kernel's linker script places: no
kernel pattern such as `*(.text)` can then take application sections.
"""
from __future__ import annotations

from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError
from ukl.common.proc import run_quiet
from ukl.toolchain import driver, layout
from ukl.toolchain.host_cc import CXX_SUFFIXES, check_sources

# Prefix for allocated sections; matches arch/x86/kernel/vmlinux.lds.S.
SECTION_PREFIX = ".ukl"


def app_dir(name: str) -> Path:
    return paths.build_root() / "apps" / name


def kernel_object(linked: Path, out: Path) -> Path:
    """The kernel-link object of a program linked with ukl-cc/ukl-c++."""
    raw = out.with_suffix(".raw.o")
    driver.extract_ukl_object(linked, raw)
    run_quiet(["objcopy", f"--prefix-alloc-sections={SECTION_PREFIX}", raw, out],
              what=f"preparing {out.name} for the kernel link")
    raw.unlink()
    return out


def ensure_toolchain() -> None:
    """Build the UKL toolchain first if this checkout has none yet."""
    if not (layout.libdir() / "libc.a").is_file() or \
            not (layout.ukl_libdir() / "libgcc.a").is_file():
        from ukl.toolchain import build as toolchain
        toolchain.build()


def compile_app(sources: list[Path], name: str) -> Path:
    """Compile and link sources with the UKL toolchain; return the object
    for the kernel link (build/apps/NAME/NAME.ukl.o)."""
    check_sources(sources)
    ensure_toolchain()
    cxx = any(s.suffix in CXX_SUFFIXES for s in sources)
    compiler = paths.REPO_ROOT / "bin" / ("ukl-c++" if cxx else "ukl-cc")
    out_dir = app_dir(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    linked = out_dir / f"{name}.ukl-linked"
    run_quiet([compiler, "-O2", "-g", "-pthread", "-o", linked, *sources],
              what=f"compiling {name} with {compiler.name}")
    if not linked.is_file():
        raise UklError(f"{compiler.name} produced no {linked}")
    return kernel_object(linked, out_dir / f"{name}.ukl.o")
