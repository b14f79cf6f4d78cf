"""Build the UKL C library (glibc 2.36 + libc/patches) into the UKL sysroot.

Static only, kernel code model, no red zone, no PIC: the result is linked
into vmlinux. Only libc.a, libm.a, the empty libpthread/librt/libdl archives,
the crt files and the headers are built and installed. Its C code is
compiled with the kernel's speculation thunks (layout.SPECULATION_CFLAGS),
as the application is; its hand-written assembly goes through them by a
patch of ours (libc/patches, 0006).
"""
from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

from ukl.common import paths, stamp
from ukl.common.buildenv import DEPEND_MODE, NO_CCACHE, build_env, cached, jobs
from ukl.common.buildenv import same_files_only
from ukl.common.errors import UklError
from ukl.common.proc import StepCounter, run_logged, run_quiet
from ukl.sources import debian, series
from ukl.toolchain.layout import KERNEL_CFLAGS, LIBDIR, SPECULATION_CFLAGS, sysroot

CFLAGS = ["-O2", "-g", *KERNEL_CFLAGS]
# Given at make time only. Every make in the build directory reads its
# configparms (Makeconfig includes it after config.make and before it
# takes +cflags from CFLAGS), install-lib's compiles included; configure
# never does, so no configure result can depend on the thunks, which a
# test program could not link. No make target we run builds programs.
CONFIGPARMS = f"CFLAGS += {' '.join(SPECULATION_CFLAGS)}\nbuild-programs = no\n"

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
# What install-lib installs that the build may change.
_INSTALLED_OBJECTS = ["libc.a", "math/libm.a", "csu/crt1.o", "csu/crti.o", "csu/crtn.o",
                      "csu/gcrt1.o", "csu/Mcrt1.o"]
# The archives whose objects may be ENOSYS stubs.
_STUB_ARCHIVES = ["libc.a", "math/libm.a", "resolv/libresolv.a"]


def build_dir() -> Path:
    return paths.build_root() / "toolchain" / "glibc-build"


def _env() -> dict[str, str]:
    return build_env(LC_ALL="C", **DEPEND_MODE)


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
    args = [str(tree / "configure"), f"CC={cached('gcc')}", f"CFLAGS={' '.join(CFLAGS)}",
            f"--with-headers={_kernel_headers()}", *_CONFIGURE_ARGS]
    state = stamp.digest(*args)
    configured = out / ".ukl-configure-digest"
    if (out / "config.make").is_file() and stamp.current(configured, state):
        return
    out.mkdir(parents=True, exist_ok=True)
    run_logged(args, label="configure glibc", cwd=out, env=_env() | NO_CCACHE,
               log_path=paths.logs_dir() / "glibc-configure.log")
    stamp.record(configured, state)


def _make_install(out: Path, cmds: list[list[str]], log: str) -> None:
    for cmd in cmds:
        run_logged(cmd, label="install glibc into the UKL sysroot", cwd=out, env=_env(),
                   log_path=paths.logs_dir() / log, append=True)


# A function glibc implements only as an ENOSYS stub marks its object with
# a section of this name (Makerules' `stubs` rule looks for the same).
_STUB_SECTION = re.compile(r"\s\.gnu\.glibc-stub\.(\w+)\s")


def _write_stubs_h(tree: Path, archives: list[Path], root: Path) -> None:
    """gnu/stubs-64.h: the functions that only fail with ENOSYS (glibc's
    install makes it only for shared builds, from per-directory lists whose
    make target also compiles the test-support library). Read from the
    built archives instead; before the build there are none yet."""
    found = run_quiet(["objdump", "-h", *archives], what="objdump -h") if archives else ""
    stubs = sorted({f"#define __stub_{m.group(1)}" for m in _STUB_SECTION.finditer(found)})
    head = [line for line in (tree / "include" / "stubs-prologue.h").read_text().splitlines()
            if not line.startswith("@")]
    (root / "usr" / "include" / "gnu" / "stubs-64.h").write_text("\n".join(head + stubs) + "\n")


def _install_headers(tree: Path, out: Path, root: Path) -> None:
    """Every header of the sysroot, from the configured tree alone, so that
    the compiler runtime can be configured and libgcc built while libc.a
    is compiled (the standard way cross toolchains are bootstrapped)."""
    inc = root / "usr" / "include"
    gnu = inc / "gnu"
    _make_install(out, [
        ["make", f"-j{jobs()}", "install-headers", f"install_root={root}"],
        # install-headers skips these when build-shared is off.
        ["make", f"install_root={root}", str(gnu / "stubs.h"), str(gnu / "lib-names.h"),
         str(gnu / "lib-names-64.h")],
    ], "glibc-install-headers.log")
    # <features.h> includes it; _install writes the real list after the build.
    if not (gnu / "stubs-64.h").is_file():
        _write_stubs_h(tree, [], root)
    for name in ("linux", "asm", "asm-generic"):
        dest = inc / name
        if dest.exists():
            shutil.rmtree(dest)
        shutil.copytree(_kernel_headers() / name, dest, symlinks=False)


def _install(tree: Path, out: Path, root: Path) -> None:
    """The libraries and crt files, once built (headers are already there)."""
    _make_install(out, [["make", f"-j{jobs()}", "install-lib",
                         f"install_root={root}"]], "glibc-install.log")
    # install-lib leaves libc.a out, and glibc's own rule for it does not
    # notice a rebuilt archive: copy it.
    shutil.copy2(out / "libc.a", root / LIBDIR / "libc.a")
    _write_stubs_h(tree, [out / a for a in _STUB_ARCHIVES], root)


# Changes to these alone are seen by make through the objects' dependency
# files: only what includes them is rebuilt.
_TRACKED_SOURCES = (".c", ".h", ".S")


def _only_sources_modified(tree: Path, old: str, new: str) -> bool:
    """Whether old..new only modifies existing C, header and assembly files."""
    try:
        changes = run_quiet(["git", "-C", str(tree), "diff", "--name-status", old, new],
                            what="git diff")
    except UklError:
        return False  # the old commit is gone: assume the worst
    for line in changes.splitlines():
        status, name = line.split("\t", 1)
        if status != "M" or not name.endswith(_TRACKED_SOURCES):
            return False
    return True


def _forget_objects_if_tree_changed(tree: Path, out: Path) -> bool:
    """glibc's dependency files miss a header that a patch adds earlier in
    the sysdeps search path (it shadows a file that did not change), and
    object rules do not depend on Makefiles, syscall lists or Versions
    files, so after any other change of the source tree than edits of
    existing C, header and assembly files every object is recompiled -
    from ccache for all the files the change does not touch. So it is after
    a new configuration or configparms (other CFLAGS): no rule depends on
    them. Returns whether there were objects to forget (not so in a first
    build)."""
    head = run_quiet(["git", "-C", str(tree), "rev-parse", "HEAD"], what="git rev-parse").strip()
    configured = out / ".ukl-configure-digest"
    state = (f"{head} {configured.read_text() if configured.is_file() else ''}"
             f" {stamp.digest(CONFIGPARMS)}")
    built_from = out / ".ukl-tree-head"
    old = built_from.read_text() if built_from.is_file() else ""
    if old == state:
        return False
    old_head, _, old_configured = old.partition(" ")
    if old_configured == state.partition(" ")[2] and old_head and \
            _only_sources_modified(tree, old_head, head):
        stamp.record(built_from, state)
        return False
    forgotten = False
    for pattern in ("*.o", "*.a", "*.o.d"):
        for f in out.rglob(pattern):
            f.unlink()
            forgotten = True
    stamp.record(built_from, state)
    return forgotten


# Written twice, before and after the build: see symbols_digest().
_STUBS_H = Path("gnu/stubs-64.h")


def headers_digest() -> str:
    """A digest of the C library's headers in the sysroot (not libstdc++'s,
    nor the list of stubs): all that libgcc's build reads of it."""
    h = hashlib.sha256()
    inc = sysroot() / "usr" / "include"
    for f in sorted(p for p in inc.rglob("*") if p.is_file()
                    and p.relative_to(inc).parts[0] != "c++"
                    and p.relative_to(inc) != _STUBS_H):
        h.update(str(f.relative_to(inc)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def symbols_digest() -> str:
    """A digest of the symbols libc.a and libm.a define and of those that
    are only ENOSYS stubs: what libstdc++'s configure finds by linking test
    programs against them."""
    found = run_quiet(["nm", "-g", "--defined-only", "--format=just-symbols",
                       sysroot() / LIBDIR / "libc.a", sysroot() / LIBDIR / "libm.a"],
                      what="nm")
    names = sorted({line for line in found.splitlines() if line and not line.endswith(":")})
    stubs = (sysroot() / "usr" / "include" / _STUBS_H).read_text()
    return stamp.digest(*names, stubs)


def configure() -> Path:
    """Configure glibc and install its headers into the sysroot; returns the
    patched source tree. After this the compiler runtime may start."""
    tree = series.prepare(debian.get("glibc"))
    out = build_dir()
    _configure(tree, out)
    _write_configparms(out)
    _install_headers(tree, out, sysroot())
    return tree


def _write_configparms(out: Path) -> None:
    """Write CONFIGPARMS into the build directory. No make rule depends on
    it: _forget_objects_if_tree_changed() does the rebuild a change needs."""
    (out / "configparms").write_text(CONFIGPARMS)


def build(tree: Path) -> Path:
    """Build and install libc.a, libm.a and the crt files (after configure());
    returns the sysroot."""
    out = build_dir()
    env = _env()
    if _forget_objects_if_tree_changed(tree, out):
        # ccache's direct mode has the same blind spot (it checks the headers
        # a file used, not new ones that now shadow them): hash the
        # preprocessed source instead for this rebuild, which finds the
        # objects of every file the change does not touch.
        env["CCACHE_NODIRECT"] = "1"
    else:
        # Direct (depend) mode, made safe across trees: a cache entry made
        # with another set of files in the tree never matches.
        env |= same_files_only(out / ".ukl-tree-files", tree)
    counter = StepCounter.remembered(_COMPILE, out, _DEFAULT_STEPS)
    make_jobs = f"-j{jobs()}"
    run_logged(["make", make_jobs, "lib"], label="glibc libc.a", cwd=out, env=env,
               counter=counter, log_path=paths.logs_dir() / "glibc-build.log")
    run_logged(["make", make_jobs, "math/others", "nptl/others", "rt/others", "dlfcn/others"],
               label="glibc libm.a", cwd=out, env=env, counter=counter,
               log_path=paths.logs_dir() / "glibc-build-others.log")
    counter.save(out)
    root = sysroot()
    # Installing takes a while; skip it when the libraries and crt files it
    # would install are the ones installed last time (an edit of start.S
    # rebuilds crt1.o alone).
    built = ",".join(str((out / a).stat().st_mtime_ns) for a in _INSTALLED_OBJECTS)
    installed = root / ".ukl-glibc-installed"
    if not stamp.current(installed, built):
        _install(tree, out, root)
        stamp.record(installed, built)
    return root
