"""`ukl toolchain build`: the whole UKL toolchain, then a lint of every library.

ukl-cc lints only the user's code at each link, so every library it links
in is checked here, once: a library that fails stops the build.
"""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ukl.common import stamp
from ukl.common.errors import UklError
from ukl.sources import debian, series
from ukl.toolchain import app_api, cache, gcc_runtime, glibc, host_entry, layout, lint

# Every library ukl-cc links in, in two groups: the C libraries are linted
# while libstdc++'s configure runs (one process at a time, so a core is
# free), the C++ ones once they are built.
LINTED = {
    "c": [(layout.LIBDIR, ["crt1.o", "crti.o", "crtn.o", "libc.a", "libm.a"]),
          (layout.UKL_LIBDIR, ["crtbeginT.o", "crtend.o", "libgcc.a", "libgcc_eh.a"])],
    "c++": [(layout.LIBDIR, ["libstdc++.a", "libsupc++.a"])],
}


def lint_libraries(group: str) -> None:
    """Lint one group of LINTED; a library that fails stops the build."""
    paths = [layout.sysroot() / subdir / name for subdir, names in LINTED[group]
             for name in names]
    for path in paths:
        if not path.is_file():
            raise UklError(f"{path} is missing; rerun `ukl toolchain build`")
    # Linting all of libc and libstdc++ takes a while: only redo it when a
    # library changed since it last passed.
    state = "\n".join(f"{p} {p.stat().st_mtime_ns}" for p in paths)
    linted = layout.sysroot() / f".ukl-libraries-linted-{group}"
    if stamp.current(linted, state):
        return
    for path in paths:
        # Red zone included: these go into every application, which must
        # be able to run on every kernel (ukl.toolchain.lint).
        findings = lint.lint(path)
        if findings:
            raise UklError(f"{path} fails ukl lint; it would be linked into every app",
                           detail=lint.report(path, findings, limit=20))
    stamp.record(linted, state)


def _build_libgcc_and_lint(gcc_tree: Path, glibc_headers: str,
                           configured: threading.Event) -> None:
    gcc_runtime.build_libgcc(gcc_tree, glibc_headers, configured)
    lint_libraries("c")


def _work_in_progress() -> bool:
    """Whether a source tree has commits its patch series does not hold
    yet: the cache is keyed by the series, so such a build bypasses it."""
    names = [name for name in ("glibc", "gcc")
             if series.unexported_commits(debian.get(name))]
    if names:
        print(f"ukl: note: unexported commits in {', '.join(names)}: building without "
              "the toolchain cache", file=sys.stderr)
    return bool(names)


def build() -> Path:
    """The UKL sysroot: as built last time, from the toolchain cache, or
    built now (and cached). Reports how long it took."""
    started = time.monotonic()
    key = cache.key() if cache.enabled() and not _work_in_progress() else ""
    if key and cache.current(key):
        return layout.sysroot()
    if key and cache.restore(key):
        print(f"ukl: UKL toolchain restored from {cache.cache_root() / key} in "
              f"{time.monotonic() - started:.0f} s", file=sys.stderr)
        return layout.sysroot()
    # Until it is stored again, the sysroot is no cache entry's copy.
    (layout.sysroot() / cache.KEY_FILE).unlink(missing_ok=True)
    # Both cores are kept busy: the configure scripts, which run one process
    # at a time, each run beside other work. gcc's top level is configured
    # beside glibc's configure. libstdc++'s configure links test programs,
    # so it waits for the finished C library, and for libgcc's configure
    # (it reads libgcc's gthr-default.h); beside it, libgcc (it needs only
    # the C library's headers) is built at the lowest priority, so that
    # configure keeps its core, and the C libraries are linted. glibc's make
    # alone keeps both cores busy (building libgcc beside it, even at the
    # lowest priority, made it 23 s slower).
    gcc_tree = series.prepare(debian.get("gcc"))
    with ThreadPoolExecutor(max_workers=1) as pool:
        gcc_configured = pool.submit(gcc_runtime.configure, gcc_tree)
        tree = glibc.configure()
        headers = glibc.headers_digest()
        # A glibc failure is reported once the pool has waited for gcc.
        gcc_configured.result()
        root = glibc.build(tree)
        libgcc_configured = threading.Event()
        c_libraries = pool.submit(_build_libgcc_and_lint, gcc_tree, headers, libgcc_configured)
        gcc_runtime.build_libstdcxx(gcc_tree, headers, glibc.symbols_digest(),
                                    libgcc_configured)
        c_libraries.result()
    host_entry.build()
    app_api.install()
    lint_libraries("c++")
    if key:
        cache.store(key)
    print(f"ukl: UKL toolchain built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return root
