"""`ukl toolchain build`: the whole UKL toolchain, then a lint of every library.

ukl-cc lints only the user's code at each link, so every library it links
in is checked here, once: a library that fails stops the build.
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ukl.common.errors import UklError
from ukl.sources import debian, series
from ukl.toolchain import app_api, cache, gcc_runtime, glibc, host_entry, layout, lint

LINTED = [
    (layout.LIBDIR, ["crt1.o", "crti.o", "crtn.o", "libc.a", "libm.a", "libstdc++.a",
                     "libsupc++.a"]),
    (layout.UKL_LIBDIR, ["crtbeginT.o", "crtend.o", "libgcc.a", "libgcc_eh.a"]),
]


def lint_libraries() -> None:
    paths = [layout.sysroot() / subdir / name for subdir, names in LINTED for name in names]
    for path in paths:
        if not path.is_file():
            raise UklError(f"{path} is missing; rerun `ukl toolchain build`")
    # Linting all of libc and libstdc++ takes a while: only redo it when a
    # library changed since it last passed.
    state = "\n".join(f"{p} {p.stat().st_mtime_ns}" for p in paths)
    stamp = layout.sysroot() / ".ukl-libraries-linted"
    if stamp.is_file() and stamp.read_text() == state:
        return
    for path in paths:
        findings = lint.lint(path)
        if findings:
            raise UklError(f"{path} fails ukl lint; it would be linked into every app",
                           detail=lint.report(path, findings, limit=20))
    stamp.write_text(state)


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
    # libgcc needs only the C library's headers: it is configured and built
    # beside libc.a, whose make keeps both cores busy while gcc's configure
    # scripts mostly run one process at a time. libstdc++'s configure links
    # test programs, so it waits for the finished C library.
    tree = glibc.configure()
    with ThreadPoolExecutor(max_workers=1) as pool:
        headers = glibc.headers_digest()
        libgcc = pool.submit(gcc_runtime.build_libgcc, headers)
        # A glibc failure is reported once the pool has waited for libgcc.
        root = glibc.build(tree)
        libgcc.result()
    gcc_runtime.build_libstdcxx(headers, glibc.symbols_digest())
    host_entry.build()
    app_api.install()
    lint_libraries()
    if key:
        cache.store(key)
    print(f"ukl: UKL toolchain built in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return root
