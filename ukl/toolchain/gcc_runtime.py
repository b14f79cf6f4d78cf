"""Build gcc's runtime libraries for the kernel code model, with the host gcc.

Debian's libgcc.a uses the red zone, its crtbeginT.o has 32-bit absolute
relocations and libgcc_eh.a a GOTPCREL the kernel link cannot relax, so
libgcc, libgcc_eh, the crt files and libstdc++ are rebuilt from Debian's
gcc-12-source (the same 12.2.0 as the host compiler). No compiler is built:
the gcc tree is configured, only the headers libgcc needs are generated,
and the target libraries are compiled by the host gcc/g++.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from ukl.common import paths
from ukl.common.buildenv import build_env
from ukl.common.proc import run_logged, run_quiet
from ukl.sources import debian, series
from ukl.toolchain import layout

TARGET = "x86_64-linux-gnu"
_TARGET_FLAGS = " ".join(["-O2", "-g", *layout.KERNEL_CFLAGS])
_CONFIGURE_ARGS = [
    f"--build={TARGET}", f"--host={TARGET}", f"--target={TARGET}",
    "--prefix=/usr", "--libdir=/usr/lib", "--libexecdir=/usr/lib",
    "--with-gcc-major-version-only", "--enable-languages=c,c++",
    "--disable-bootstrap", "--disable-multilib", "--disable-shared",
    "--disable-libsanitizer", "--disable-libgomp", "--disable-libquadmath",
    "--disable-libssp", "--disable-libvtv", "--disable-libitm", "--disable-libatomic",
    "--disable-lto", "--disable-plugin", "--disable-libcc1", "--without-isl",
    "--disable-nls", "--disable-werror", "--enable-checking=release",
    "--enable-threads=posix", "--enable-tls", "--enable-clocale=gnu",
    "--enable-libstdcxx-time=yes", "--with-default-libstdcxx-abi=new",
    "--enable-gnu-unique-object", "--disable-vtable-verify", "--disable-libstdcxx-pch",
]
# Point every *_FOR_TARGET tool at the host toolchain, so the target
# libraries never wait for an in-tree xgcc; FLAGS_FOR_TARGET= drops the
# cross-style -B/-isystem paths configure would add.
_HOST_TOOLS_FOR_TARGET = [
    "CC_FOR_TARGET=ccache gcc", "GCC_FOR_TARGET=gcc",
    "CXX_FOR_TARGET=ccache g++ -nostdinc++", "RAW_CXX_FOR_TARGET=ccache g++ -nostdinc++",
    "AS_FOR_TARGET=as", "LD_FOR_TARGET=ld", "NM_FOR_TARGET=nm", "AR_FOR_TARGET=ar",
    "RANLIB_FOR_TARGET=ranlib", "COMPILER_AS_FOR_TARGET=as", "COMPILER_LD_FOR_TARGET=ld",
    "COMPILER_NM_FOR_TARGET=nm", "OBJDUMP_FOR_TARGET=objdump",
    "READELF_FOR_TARGET=readelf", "STRIP_FOR_TARGET=strip",
    "OBJCOPY_FOR_TARGET=objcopy", "FLAGS_FOR_TARGET=",
]
# Never build the compiler itself, nor libgcc's default (shared) targets.
_SKIP_COMPILER = ["-o", "all-gcc", "-o", "all-target-libgcc"]
_LIBGCC_OUTPUTS = ["libgcc.a", "libgcc_eh.a", "crtbegin.o", "crtbeginT.o", "crtend.o"]
# Split-stack support: hand-written assembly with 32-bit absolute
# relocations in .eh_frame, and no use inside a kernel.
_SPLIT_STACK_OBJECTS = ["morestack.o", "generic-morestack.o", "generic-morestack-thread.o"]


def build_dir() -> Path:
    return paths.build_root() / "toolchain" / "gcc-build"


def _env() -> dict[str, str]:
    return build_env(LC_ALL="C")


def _step(label: str, cmd: list[str], cwd: Path, *, background: bool = False) -> None:
    run_logged(cmd, label=f"gcc runtime: {label}", cwd=cwd, env=_env(), progress=not background,
               log_path=paths.logs_dir() / "gcc-runtime.log.d" / f"{label.replace(' ', '-')}.log")


def _configure(tree: Path, out: Path, *, background: bool) -> None:
    env_vars = [
        "CC=ccache gcc", "CXX=ccache g++", "CFLAGS=-O2", "CXXFLAGS=-O2",
        f"CFLAGS_FOR_TARGET={_TARGET_FLAGS}", f"CXXFLAGS_FOR_TARGET={_TARGET_FLAGS}",
        "LDFLAGS_FOR_TARGET=-static",
    ]
    # libstdc++ is configured against the UKL glibc headers and libraries.
    args = [*env_vars, str(tree / "configure"), *_CONFIGURE_ARGS,
            f"--with-build-sysroot={layout.sysroot()}"]
    digest = hashlib.sha256("\0".join(args).encode()).hexdigest()
    stamp = out / ".ukl-configure-digest"
    if (out / "config.status").is_file() and stamp.is_file() and stamp.read_text() == digest:
        return
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _step("configure", ["env", *args], out, background=background)
    stamp.write_text(digest)


def _install_libstdcxx(out: Path) -> None:
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        _step("install libstdc++", ["make", "-C", str(out / TARGET / "libstdc++-v3"),
                                    "install", f"DESTDIR={tmp}"], out)
        for name in ("libstdc++.a", "libsupc++.a", "libstdc++fs.a"):
            shutil.copy2(Path(tmp) / "usr" / "lib" / name, layout.libdir() / name)
        headers = layout.include_dir() / "c++" / layout.GCC_VERSION
        if headers.exists():
            shutil.rmtree(headers)
        shutil.copytree(Path(tmp) / "usr" / "include" / "c++" / layout.GCC_VERSION, headers)


def _state(tree: Path, *inputs: object) -> str:
    """What a stage was built from: the gcc tree's commit, the configuration
    and the given inputs from the C library."""
    head = run_quiet(["git", "-C", str(tree), "rev-parse", "HEAD"], what="git rev-parse")
    return hashlib.sha256(f"{head}{_TARGET_FLAGS}{_CONFIGURE_ARGS}{inputs}".encode()).hexdigest()


def _start_stage(tree: Path, library: str, stamp: Path, state: str, *,
                 background: bool) -> bool:
    """Start building `library` for `state`, unless its stamp says the
    installed copy was built from that (then return False). Starting
    configures the gcc tree and removes the library's old build directory: the top-level make
    configures a target library only once, and it must be configured again
    against the sysroot as it is now (then compiled, from ccache where
    nothing changed)."""
    if stamp.is_file() and stamp.read_text() == state:
        return False
    _configure(tree, build_dir(), background=background)
    shutil.rmtree(build_dir() / TARGET / library, ignore_errors=True)
    return True


def build_libgcc(glibc_headers: str) -> None:
    """libgcc, libgcc_eh and the crt files into the sysroot. Needs only the C
    library's headers (glibc.configure()), so it runs while libc.a builds:
    its steps print no progress line of their own, only when they are done.
    Rebuilt when gcc or those headers change."""
    tree = series.prepare(debian.get("gcc"))
    out = build_dir()
    state = _state(tree, glibc_headers)
    stamp = layout.ukl_libdir() / ".ukl-libgcc-installed"
    # Nothing in gcc changes between most builds; skip a minute of no-op make.
    if not _start_stage(tree, "libgcc", stamp, state, background=True):
        return
    jobs = f"-j{os.cpu_count() or 1}"
    steps = [
        ("configure gcc", ["make", jobs, "configure-gcc"]),
        ("libiberty", ["make", jobs, "all-build-libiberty"]),
        # Only the generated headers libgcc's build reads; never xgcc itself.
        ("gcc headers", ["make", "-C", "gcc", jobs, "-o", "xgcc", "-o", "specs",
                         "libgcc.mvars", "tconfig.h", "tm.h", "options.h",
                         "insn-constants.h", "insn-modes.h"]),
        ("configure libgcc", ["make", *_SKIP_COMPILER, "configure-target-libgcc",
                              *_HOST_TOOLS_FOR_TARGET]),
        # enable_shared=yes keeps libgcc_eh.a separate (as Debian ships it);
        # PICFLAG= because the Linux fragment adds -fpic even to static objects.
        ("libgcc", ["make", "-C", f"{TARGET}/libgcc", jobs, "enable_shared=yes", "PICFLAG=",
                    *_LIBGCC_OUTPUTS]),
        ("strip split-stack", ["ar", "d", f"{TARGET}/libgcc/libgcc.a", *_SPLIT_STACK_OBJECTS]),
    ]
    for label, cmd in steps:
        _step(label, cmd, out, background=True)
    ukl_lib = layout.ukl_libdir()
    ukl_lib.mkdir(parents=True, exist_ok=True)
    for name in _LIBGCC_OUTPUTS:
        shutil.copy2(out / TARGET / "libgcc" / name, ukl_lib / name)
    stamp.write_text(state)


def build_libstdcxx(glibc_headers: str, glibc_symbols: str) -> None:
    """libstdc++ into the sysroot: configured against the finished C library
    (its configure links test programs), after build_libgcc(). Rebuilt when
    gcc, the C library's headers or the symbols it defines change, not for
    every change inside libc.a."""
    tree = series.prepare(debian.get("gcc"))
    out = build_dir()
    state = _state(tree, glibc_headers, glibc_symbols)
    stamp = layout.ukl_libdir() / ".ukl-libstdcxx-installed"
    if not _start_stage(tree, "libstdc++-v3", stamp, state, background=False):
        return
    jobs = f"-j{os.cpu_count() or 1}"
    _step("configure libstdc++", ["make", *_SKIP_COMPILER, "configure-target-libstdc++-v3",
                                  *_HOST_TOOLS_FOR_TARGET], out)
    _step("libstdc++", ["make", jobs, *_SKIP_COMPILER, "all-target-libstdc++-v3",
                        *_HOST_TOOLS_FOR_TARGET], out)
    _install_libstdcxx(out)
    stamp.write_text(state)
