"""Build the UKL C library (glibc 2.36 + libc/patches) into the UKL sysroot.

Static only, kernel code model, no red zone, no PIC: the result is linked
into vmlinux. Only libc.a, libm.a, the empty libpthread/librt/libdl archives,
the crt files and the headers are built and installed.
"""
from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from ukl.common import paths
from ukl.common.buildenv import build_env
from ukl.common.proc import StepCounter, run_logged, run_quiet
from ukl.sources import debian, series
from ukl.toolchain.layout import KERNEL_CFLAGS, LIBDIR, sysroot

CFLAGS = ["-O2", "-g", *KERNEL_CFLAGS]

_CONFIGURE_ARGS = [
    "--prefix=/usr", f"--libdir=/{LIBDIR}", "--libexecdir=/usr/lib",
    "--host=x86_64-linux-gnu", "--build=x86_64-linux-gnu",
    "--disable-shared", "--disable-default-pie",
    # Multi-arch selects string functions with IFUNCs, which need IRELATIVE
    # relocations the kernel link cannot process.
    "--disable-multi-arch",
    "--enable-stack-protector=no", "--disable-werror", "--disable-profile",
    "--disable-nscd", "--disable-build-nscd", "--disable-timezone-tools",
    "--without-selinux", "--without-gd", "--disable-mathvec", "--disable-crypt",
    # configure probes PIC-by-default with the compiler's defaults (Debian
    # builds PIE), which would switch the assembly to PIC code paths.
    "libc_cv_pic_default=no",
]
# Kbuild-like progress: compile commands in glibc's (verbose) make output.
_COMPILE = re.compile(r"^(ccache )?gcc .* -c .* -o \S*/glibc-build/(?P<what>\S+)")
_DEFAULT_STEPS = 2540


def build_dir() -> Path:
    return paths.build_root() / "toolchain" / "glibc-build"


def _env() -> dict[str, str]:
    return build_env(LC_ALL="C")


def _kernel_headers() -> Path:
    """glibc wants one directory holding linux/, asm/ and asm-generic/;
    Debian splits asm/ into the multiarch directory, so link them together."""
    d = paths.build_root() / "toolchain" / "kernel-headers"
    d.mkdir(parents=True, exist_ok=True)
    for name, target in (("linux", "/usr/include/linux"),
                         ("asm", "/usr/include/x86_64-linux-gnu/asm"),
                         ("asm-generic", "/usr/include/asm-generic")):
        link = d / name
        if not link.is_symlink():
            link.symlink_to(target)
    return d


def _configure(tree: Path, out: Path) -> None:
    cc = "ccache gcc" if shutil.which("ccache") else "gcc"
    args = [str(tree / "configure"), f"CC={cc}", f"CFLAGS={' '.join(CFLAGS)}",
            f"--with-headers={_kernel_headers()}", *_CONFIGURE_ARGS]
    digest = hashlib.sha256("\0".join(args).encode()).hexdigest()
    stamp = out / ".ukl-configure-digest"
    if (out / "config.make").is_file() and stamp.is_file() and stamp.read_text() == digest:
        return
    out.mkdir(parents=True, exist_ok=True)
    run_logged(args, label="configure glibc", cwd=out, env=_env(),
               log_path=paths.logs_dir() / "glibc-configure.log")
    stamp.write_text(digest)


def _install(tree: Path, out: Path, root: Path) -> None:
    env = _env()
    log = paths.logs_dir() / "glibc-install.log"
    inc = root / "usr" / "include"
    gnu = inc / "gnu"
    jobs = f"-j{os.cpu_count() or 1}"
    steps: list[list[str]] = [
        ["make", jobs, "install-headers", f"install_root={root}"],
        # install-headers skips these when build-shared is off.
        ["make", f"install_root={root}", str(gnu / "stubs.h"), str(gnu / "lib-names.h"),
         str(gnu / "lib-names-64.h")],
        ["make", jobs, "subdir_stubs"],
        ["make", jobs, "install-lib", f"install_root={root}"],
    ]
    for cmd in steps:
        run_logged(cmd, label="install glibc into the UKL sysroot", cwd=out, env=env,
                   log_path=log, append=True)
    # install-lib leaves libc.a out, and glibc's own rule for it does not
    # notice a rebuilt archive: copy it.
    shutil.copy2(out / "libc.a", root / LIBDIR / "libc.a")
    # stubs-64.h lists the functions that only fail with ENOSYS; glibc's
    # install makes it only for shared builds.
    stubs = sorted(line for f in out.glob("*/stubs") for line in f.read_text().splitlines())
    head = [line for line in (tree / "include" / "stubs-prologue.h").read_text().splitlines()
            if not line.startswith("@")]
    (gnu / "stubs-64.h").write_text("\n".join(head + stubs) + "\n")
    for name in ("linux", "asm", "asm-generic"):
        dest = inc / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(_kernel_headers() / name, dest, symlinks=False)


def _forget_objects_if_tree_changed(tree: Path, out: Path) -> bool:
    """glibc's dependency files miss a header that a patch adds earlier in
    the sysdeps search path (it shadows a file that did not change), so
    after any change of the source tree every object is recompiled - from
    ccache for all the files the change does not touch. Returns whether
    the tree changed."""
    head = run_quiet(["git", "-C", str(tree), "rev-parse", "HEAD"], what="git rev-parse").strip()
    stamp = out / ".ukl-tree-head"
    if stamp.is_file() and stamp.read_text() == head:
        return False
    for pattern in ("*.o", "*.a", "*.o.d"):
        for f in out.rglob(pattern):
            f.unlink()
    stamp.write_text(head)
    return True


def build() -> Path:
    """Build and install the UKL glibc; returns the sysroot."""
    tree = series.prepare(debian.get("glibc"))
    out = build_dir()
    _configure(tree, out)
    env = _env()
    if _forget_objects_if_tree_changed(tree, out):
        # ccache's direct mode has the same blind spot (it checks the headers
        # a file used, not new ones that now shadow them): hash the
        # preprocessed source instead for this rebuild.
        env["CCACHE_NODIRECT"] = "1"
    counter = StepCounter.remembered(_COMPILE, out, _DEFAULT_STEPS)
    jobs = f"-j{os.cpu_count() or 1}"
    run_logged(["make", jobs, "lib"], label="glibc libc.a", cwd=out, env=env,
               counter=counter, log_path=paths.logs_dir() / "glibc-build.log")
    run_logged(["make", jobs, "math/others", "nptl/others", "rt/others", "dlfcn/others"],
               label="glibc libm.a", cwd=out, env=env, counter=counter,
               log_path=paths.logs_dir() / "glibc-build-others.log")
    counter.save(out)
    root = sysroot()
    # Installing takes most of a minute; skip it when the libraries it would
    # install are the ones installed last time.
    built = ",".join(str((out / a).stat().st_mtime_ns) for a in ("libc.a", "math/libm.a"))
    stamp = root / ".ukl-glibc-installed"
    if not (stamp.is_file() and stamp.read_text() == built):
        _install(tree, out, root)
        stamp.write_text(built)
    return root
