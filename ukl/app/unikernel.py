"""Build a program as a UKL application: the object the kernel link takes.

`ukl-cc`/`ukl-c++` compile and link the program against the UKL C library;
the link output carries the relocatable UKL object in its `.ukl.object`
section. Here that object is extracted and every allocated section renamed
to `.ukl<name>` (`.text` -> `.ukl.text`, `__libc_atexit` ->
`.ukl__libc_atexit`), which is what the kernel's linker script places: no
kernel pattern such as `*(.text)` can then take application sections.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from ukl.app.process import CXX_SUFFIXES, check_sources
from ukl.common import paths
from ukl.common.buildenv import build_env, jobs
from ukl.common.errors import UklError, UsageError
from ukl.common.proc import run_logged, run_quiet
from ukl.toolchain import build as toolchain
from ukl.toolchain import driver, layout

# Prefix for allocated sections; matches arch/x86/kernel/vmlinux.lds.S.
SECTION_PREFIX = ".ukl"


def app_dir(name: str) -> Path:
    return paths.build_root() / "apps" / name


def kernel_object(linked: Path, out: Path) -> Path:
    """The kernel-link object of a program linked with ukl-cc/ukl-c++."""
    raw = out.with_suffix(".raw.o")
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        driver.extract_ukl_object(linked, raw)
    except driver.DriverError as e:
        raise UklError(str(e)) from e
    run_quiet(["objcopy", f"--prefix-alloc-sections={SECTION_PREFIX}", raw, out],
              what=f"preparing {out.name} for the kernel link")
    raw.unlink()
    return out


def ensure_toolchain() -> None:
    """Build the UKL toolchain first if this checkout has none yet."""
    if not (layout.libdir() / "libc.a").is_file() or \
            not (layout.ukl_libdir() / "libgcc.a").is_file():
        toolchain.build()


def compile_app(sources: list[Path], name: str) -> Path:
    """Compile and link sources with the UKL toolchain; return the object
    for the kernel link (build/apps/NAME/NAME.ukl.o)."""
    check_sources(sources)
    ensure_toolchain()
    compiler = compiler_path(any(s.suffix in CXX_SUFFIXES for s in sources))
    out_dir = app_dir(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    linked = out_dir / f"{name}.ukl-linked"
    run_quiet([compiler, "-O2", "-g", "-pthread", "-o", linked, *sources],
              what=f"compiling {name} with {compiler.name}")
    if not linked.is_file():
        raise UklError(f"{compiler.name} produced no {linked}")
    return kernel_object(linked, out_dir / f"{name}.ukl.o")


def compiler_path(cxx: bool) -> Path:
    return paths.REPO_ROOT / "bin" / ("ukl-c++" if cxx else "ukl-cc")


def build_project(project: Path, name: str, binary: str | None, ukl: bool) -> Path:
    """Build a Makefile project unchanged, with `make CC=ukl-cc CXX=ukl-c++`
    (or static host compilers for an ordinary process), in a copy under
    build/apps/NAME so the user's tree and the two modes never mix objects.
    Returns the program the project built (BINARY, default NAME)."""
    if not (project / "Makefile").is_file() and not (project / "makefile").is_file():
        raise UsageError(f"{project} has no Makefile; give source files instead, or "
                         "a directory whose Makefile builds the program")
    if ukl:
        ensure_toolchain()
        cc, cxx = str(compiler_path(False)), str(compiler_path(True))
    else:
        cc, cxx = "gcc -static -pthread", "g++ -static -pthread"
    work = app_dir(name) / ("project-ukl" if ukl else "project-process")
    shutil.copytree(project, work, dirs_exist_ok=True)
    run_logged(["make", "-C", str(work), f"-j{jobs()}",
                f"CC={cc}", f"CXX={cxx}"],
               label=f"make {name}", log_path=paths.logs_dir() / f"app-{name}.log",
               env=build_env())
    program = work / (binary or name)
    if not program.is_file():
        raise UklError(f"the project built no {binary or name}; name the program it "
                       f"builds with --binary (relative to {project})")
    return program
