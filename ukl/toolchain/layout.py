"""Where the UKL toolchain puts things inside the sysroot (build/toolchain/sysroot).

    usr/include/                 glibc + Linux UAPI headers
    usr/include/c++/12/          libstdc++ headers
    usr/lib/x86_64-linux-gnu/    libc.a libm.a ... crt1.o crti.o crtn.o,
                                 libstdc++.a libsupc++.a
    usr/lib/ukl/                 libgcc.a libgcc_eh.a crtbeginT.o crtend.o,
                                 host-entry.o (the host stand-in entry point)
"""
from __future__ import annotations

from pathlib import Path

from ukl.common import paths

GCC_VERSION = "12"
MULTIARCH = "x86_64-linux-gnu"
LIBDIR = f"usr/lib/{MULTIARCH}"
UKL_LIBDIR = "usr/lib/ukl"
# Code generation for everything linked into the kernel. Stack clash
# protection probes every page of a large frame, so a frame cannot step
# over the one guard page below a UKL_NSS_PS pinned stack (kernel memory)
# into what lies below it.
KERNEL_CFLAGS = ["-mcmodel=kernel", "-mno-red-zone", "-fno-pic", "-fno-pie",
                 "-fstack-clash-protection"]
# Application code is compiled as a kernel with the CPU mitigations
# compiles itself: indirect branches and returns through the kernel's
# thunks, an INT3 after each (straight-line speculation). The kernel link
# makes each site what that kernel makes of its own (ukl.kbuild.thunks).
# As arch/x86/Makefile's, but for -fno-jump-tables, which the kernel takes
# for speed only: a jump table's dispatch goes through a thunk too.
SPECULATION_CFLAGS = ["-mindirect-branch=thunk-extern", "-mindirect-branch-register",
                      "-mindirect-branch-cs-prefix", "-mfunction-return=thunk-extern",
                      "-mharden-sls=all", "-fcf-protection=none"]


def sysroot() -> Path:
    return paths.build_root() / "toolchain" / "sysroot"


def libdir() -> Path:
    return sysroot() / LIBDIR


def ukl_libdir() -> Path:
    return sysroot() / UKL_LIBDIR


def include_dir() -> Path:
    return sysroot() / "usr" / "include"


def cxx_include_dirs() -> list[Path]:
    base = include_dir() / "c++" / GCC_VERSION
    return [base, base / "x86_64-linux-gnu", base / "backward"]
