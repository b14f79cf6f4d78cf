"""Build gcc's runtime libraries for the kernel code model, with the host gcc.

Debian's libgcc.a uses the red zone, its crtbeginT.o has 32-bit absolute
relocations and libgcc_eh.a a GOTPCREL the kernel link cannot relax, so
libgcc, libgcc_eh, the crt files and libstdc++ are rebuilt from Debian's
gcc-12-source (the same 12.2.0 as the host compiler). No compiler is built
or configured: the headers libgcc needs from a gcc build directory are the
host compiler's own, and the target libraries are compiled by the host
gcc/g++.
"""
from __future__ import annotations

import shutil
import threading
import tempfile
from pathlib import Path

from ukl.common import paths, stamp
from ukl.common.buildenv import DEPEND_MODE, NO_CCACHE, build_env, cached, jobs
from ukl.common.buildenv import same_files_only
from ukl.common.errors import UklError
from ukl.common.proc import run_logged, run_quiet
from ukl.toolchain import layout

TARGET = "x86_64-linux-gnu"
_TARGET_FLAGS = " ".join(["-O2", "-g", *layout.KERNEL_CFLAGS])
# libstdc++ keeps line tables and function names (-g1: backtraces and
# breakpoints in it work) but not the full type and variable information,
# whose templates make up a third of its compile time (measured: 33 of its
# files, 26.6 s with -g, 18.8 s with -g1). -MMD: its rules write no
# dependency files, and ccache's depend mode needs one (DEPEND_MODE).
_CXX_TARGET_FLAGS = " ".join(["-O2", "-g1", *layout.KERNEL_CFLAGS, "-MMD"])
# The kernel's speculation thunks, as the application and the C library
# have them, given at make time only: libgcc's and libstdc++'s configure
# link test programs, and nothing would define a thunk for them. A
# command-line CXXFLAGS_FOR_TARGET replaces what the top-level Makefile
# adds to it (config/mt-gnu: -D_GNU_SOURCE), so it is repeated here.
_SPECULATION = " ".join(layout.SPECULATION_CFLAGS)
_MAKE_CFLAGS = f"{_TARGET_FLAGS} {_SPECULATION}"
_MAKE_CXXFLAGS = f"{_CXX_TARGET_FLAGS} -D_GNU_SOURCE {_SPECULATION}"
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


def _host_tools_for_target() -> list[str]:
    """Point every *_FOR_TARGET tool at the host toolchain, so the target
    libraries never wait for an in-tree xgcc; FLAGS_FOR_TARGET= drops the
    cross-style -B/-isystem paths configure would add."""
    return [f"CC_FOR_TARGET={cached('gcc')}", "GCC_FOR_TARGET=gcc",
            f"CXX_FOR_TARGET={cached('g++')} -nostdinc++",
            f"RAW_CXX_FOR_TARGET={cached('g++')} -nostdinc++", *_BINUTILS_FOR_TARGET]


_BINUTILS_FOR_TARGET = [
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
# relocations in .eh_frame, and no use inside a kernel. And the ms-ABI
# register save and restore stubs (-mcall-ms2sysv-xlogues only): assembly
# that returns without the kernel's return thunk; a program that wants
# them fails to link instead.
_REMOVED_OBJECTS = ["morestack.o", "generic-morestack.o", "generic-morestack-thread.o",
                    *(f"{isa}_{stub}.o" for isa in ("sse", "avx")
                      for stub in ("savms64", "resms64", "resms64x", "savms64f", "resms64f",
                                   "resms64fx"))]


def build_dir() -> Path:
    return paths.build_root() / "toolchain" / "gcc-build"


def _configure_env() -> dict[str, str]:
    return build_env(LC_ALL="C", **NO_CCACHE)


def _compile_env(tree: Path, library: str) -> dict[str, str]:
    """For compiling `library`: ccache in depend mode, matching only entries
    made with the same files in the gcc tree and the sysroot's headers. Each
    library has its own list: ccache reads it at every compile, and libgcc
    may still be compiling when libstdc++'s is written."""
    listing = same_files_only(build_dir() / f".ukl-files-{library}", tree,
                              layout.include_dir())
    return build_env(LC_ALL="C", **DEPEND_MODE, **listing)


def _step(label: str, cmd: list[str], cwd: Path, env: dict[str, str], *,
          background: bool = False) -> None:
    """Run one step; a `background` step runs at the lowest priority, so it
    takes only the CPU the step in the foreground leaves idle."""
    if background:
        cmd = ["nice", "-n", "19", *cmd]
    run_logged(cmd, label=f"gcc runtime: {label}", cwd=cwd, env=env, progress=not background,
               log_path=paths.logs_dir() / "gcc-runtime.log.d" / f"{label.replace(' ', '-')}.log")


def _configure(tree: Path, out: Path) -> None:
    env_vars = [
        f"CC={cached('gcc')}", f"CXX={cached('g++')}", "CFLAGS=-O2", "CXXFLAGS=-O2",
        f"CFLAGS_FOR_TARGET={_TARGET_FLAGS}", f"CXXFLAGS_FOR_TARGET={_CXX_TARGET_FLAGS}",
        "LDFLAGS_FOR_TARGET=-static",
    ]
    # libstdc++ is configured against the UKL glibc headers and libraries.
    args = [*env_vars, str(tree / "configure"), *_CONFIGURE_ARGS,
            f"--with-build-sysroot={layout.sysroot()}"]
    state = stamp.digest(*args)
    configured = out / ".ukl-configure-digest"
    if (out / "config.status").is_file() and stamp.current(configured, state):
        return
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _step("configure", ["env", *args], out, _configure_env(), background=True)
    stamp.record(configured, state)


def configure(tree: Path) -> None:
    """Configure the gcc tree's top level (if its configuration changed),
    which every target library's build starts from. Prints only when done:
    it runs beside glibc's configure."""
    _configure(tree, build_dir())


def _install_libstdcxx(out: Path, env: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory(dir=out) as tmp:
        _step("install libstdc++", ["make", "-C", str(out / TARGET / "libstdc++-v3"),
                                    "install", f"DESTDIR={tmp}", f"CFLAGS={_MAKE_CFLAGS}",
                                    f"CXXFLAGS={_MAKE_CXXFLAGS}"], out, env)
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
    recipe = (f"{_TARGET_FLAGS}{_CXX_TARGET_FLAGS}{_MAKE_CFLAGS}{_MAKE_CXXFLAGS}"
              f"{_CONFIGURE_ARGS}{_LIBGCC_MVARS}{_TCONFIG_H}{_REMOVED_OBJECTS}")
    return stamp.digest(head, recipe, repr(inputs))


def _start_stage(library: str, installed: Path, state: str) -> bool:
    """Start building `library` for `state`, unless its stamp says the
    installed copy was built from that (then return False). Starting
    removes the library's old build directory: the top-level make
    configures a target library only once, and it must be configured again
    against the sysroot as it is now (then compiled, from ccache where
    nothing changed). The top level must be configured (configure())."""
    if stamp.current(installed, state):
        return False
    shutil.rmtree(build_dir() / TARGET / library, ignore_errors=True)
    return True


# What gcc's Makefile would write into libgcc.mvars for the host compiler:
# libgcc's own warning flags, nothing inhibited (the C library's headers are
# installed), no target sysroot, and -fno-PIE because Debian's gcc builds
# PIE by default.
_LIBGCC_MVARS = """\
GCC_CFLAGS = -DIN_GCC -W -Wall -Wno-narrowing -Wwrite-strings -Wcast-qual \
-Wstrict-prototypes -Wmissing-prototypes -Wold-style-definition -isystem ./include
INHIBIT_LIBC_CFLAGS =
TARGET_SYSTEM_ROOT =
NO_PIE_CFLAGS = -fno-PIE
"""
# tconfig.h as gcc's configure writes it: the target's view of auto-host.h.
_TCONFIG_H = """\
#ifndef GCC_TCONFIG_H
#define GCC_TCONFIG_H
#ifndef USED_FOR_TARGET
# define USED_FOR_TARGET
#endif
#include "auto-host.h"
#ifdef IN_GCC
# include "ansidecl.h"
#endif
#endif /* GCC_TCONFIG_H */
"""
# The generated headers libgcc includes from the compiler's build directory.
_GENERATED_HEADERS = ["auto-host.h", "tm.h", "options.h", "insn-constants.h", "insn-modes.h"]


def _host_gcc_objdir(objdir: Path) -> None:
    """The part of a gcc build directory that libgcc's build reads, taken
    from the host compiler itself: Debian installs the headers gcc's build
    generated (gcc-12-plugin-dev), for the very compiler that compiles
    libgcc here. This replaces configuring gcc, building libiberty and the
    generator programs: 90 s of CPU in a cold build."""
    plugin = Path(run_quiet(["gcc", "-print-file-name=plugin"], what="gcc").strip())
    missing = [h for h in _GENERATED_HEADERS if not (plugin / "include" / h).is_file()]
    if missing:
        raise UklError(f"the host gcc's build headers ({', '.join(missing)}) are not in "
                       f"{plugin / 'include'}; run `ukl setup` (it installs "
                       "gcc-12-plugin-dev)")
    objdir.mkdir(parents=True, exist_ok=True)
    for name in _GENERATED_HEADERS:
        shutil.copy2(plugin / "include" / name, objdir / name)
    (objdir / "tconfig.h").write_text(_TCONFIG_H)
    (objdir / "libgcc.mvars").write_text(_LIBGCC_MVARS)


def build_libgcc(tree: Path, glibc_headers: str, configured: threading.Event) -> None:
    """libgcc, libgcc_eh and the crt files into the sysroot (after
    configure()). Needs only the C library's headers, and runs in the
    background beside libstdc++'s configure: its steps print no progress
    line of their own, only when they are done. Sets `configured` once
    libgcc's build directory is configured (or needs no rebuild):
    libstdc++'s configure reads gthr-default.h from it, and without it
    decides there are no threads.
    Rebuilt when gcc or those headers change."""
    try:
        _build_libgcc(tree, glibc_headers, configured)
    finally:
        configured.set()  # a failure is reported by the caller; never hang


def _build_libgcc(tree: Path, glibc_headers: str, configured: threading.Event) -> None:
    out = build_dir()
    state = _state(tree, glibc_headers)
    installed = layout.ukl_libdir() / ".ukl-libgcc-installed"
    # Nothing in gcc changes between most builds; skip a minute of no-op make.
    if not _start_stage("libgcc", installed, state):
        return
    make_jobs = f"-j{jobs()}"
    _host_gcc_objdir(out / "gcc")
    configure_env, compile_env = _configure_env(), _compile_env(tree, "libgcc")
    _step("configure libgcc", ["make", *_SKIP_COMPILER, "configure-target-libgcc",
                               *_host_tools_for_target()], out, configure_env,
          background=True)
    configured.set()
    # enable_shared=yes keeps libgcc_eh.a separate (as Debian ships it);
    # PICFLAG= because the Linux fragment adds -fpic even to static objects.
    _step("libgcc", ["make", "-C", f"{TARGET}/libgcc", make_jobs, "enable_shared=yes",
                     "PICFLAG=", f"CFLAGS={_MAKE_CFLAGS}", *_LIBGCC_OUTPUTS], out,
          compile_env, background=True)
    _step("strip unused objects", ["ar", "d", f"{TARGET}/libgcc/libgcc.a", *_REMOVED_OBJECTS],
          out, compile_env, background=True)
    ukl_lib = layout.ukl_libdir()
    ukl_lib.mkdir(parents=True, exist_ok=True)
    for name in _LIBGCC_OUTPUTS:
        shutil.copy2(out / TARGET / "libgcc" / name, ukl_lib / name)
    stamp.record(installed, state)


def build_libstdcxx(tree: Path, glibc_headers: str, glibc_symbols: str,
                    libgcc_configured: threading.Event) -> None:
    """libstdc++ into the sysroot (after configure()): configured against the
    finished C library (its configure links test programs, with the host
    compiler's own libgcc, so not ours). Rebuilt when
    gcc, the C library's headers or the symbols it defines change, not for
    every change inside libc.a."""
    out = build_dir()
    state = _state(tree, glibc_headers, glibc_symbols)
    installed = layout.ukl_libdir() / ".ukl-libstdcxx-installed"
    if not _start_stage("libstdc++-v3", installed, state):
        return
    libgcc_configured.wait()
    _step("configure libstdc++", ["make", *_SKIP_COMPILER, "configure-target-libstdc++-v3",
                                  *_host_tools_for_target()], out, _configure_env())
    compile_env = _compile_env(tree, "libstdc++")
    _step("libstdc++", ["make", f"-j{jobs()}", *_SKIP_COMPILER, "all-target-libstdc++-v3",
                        *_host_tools_for_target(), f"CFLAGS_FOR_TARGET={_MAKE_CFLAGS}",
                        f"CXXFLAGS_FOR_TARGET={_MAKE_CXXFLAGS}"], out, compile_env)
    _install_libstdcxx(out, compile_env)
    # stamp.record() creates the directory: libgcc, beside this at the
    # lowest priority, usually does so first, but not on a loaded machine
    # (seen with a kernel build beside the toolchain: libgcc took 167 s,
    # libstdc++ 79 s).
    stamp.record(installed, state)
