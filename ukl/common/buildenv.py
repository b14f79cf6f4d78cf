"""The environment every compiler-heavy step runs in: jobs, compilers, ccache."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from ukl.common import paths


# ccache's depend mode takes the headers a file used from the compiler's own
# -MD output instead of running the preprocessor a second time, so a miss
# costs about what the compile alone does: on 119 of glibc's objects,
# 18 s against 28 s in the default mode and 17 s without ccache. It only
# applies to compiles that write dependency files (every object rule of
# glibc, libgcc and libstdc++ does) and finds hits only in direct mode, so
# the kernel, whose flavours share objects through preprocessor-mode hits,
# does not use it.
DEPEND_MODE = {"CCACHE_DEPEND": "1"}
# For configure scripts: most of their test programs are linked, which
# ccache passes through, and caching the rest costs more than it saves
# when cold (libstdc++'s configure: 39 s without ccache, 48 s through an
# empty cache).
NO_CCACHE = {"CCACHE_DISABLE": "1"}
# What a cache may grow to before ccache evicts (unless CCACHE_MAXSIZE says).
CACHE_LIMIT = "20G"


def jobs() -> int:
    """Parallel jobs for make: the CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) or 1


def have_ccache() -> bool:
    return shutil.which("ccache") is not None


def cached(compiler: str) -> str:
    """`compiler` through ccache where ccache is installed, else as it is."""
    return f"ccache {compiler}" if have_ccache() else compiler


_OUTER_MAKE_STATE = {"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "GNUMAKEFLAGS"}


def build_env(**extra: str) -> dict[str, str]:
    """os.environ plus ccache settings that survive a clone elsewhere.

    Paths under build/ are rewritten relative (CCACHE_BASEDIR) and the
    working directory is not hashed, so a fresh clone in another directory
    still hits the cache. `extra` variables are set on top.
    """
    # A build the tool starts is a top-level one, even when the tool runs
    # under `make test`: an outer make's recursion state would change what
    # the inner makes do (PostgreSQL makes its generated headers first only
    # at MAKELEVEL 0, and a parallel build without them races) and would
    # hand them the outer job server.
    env = {k: v for k, v in os.environ.items() if k not in _OUTER_MAKE_STATE}
    env.setdefault("CCACHE_BASEDIR", str(paths.build_root()))
    env.setdefault("CCACHE_NOHASHDIR", "1")
    # The kernel flavours, the toolchain and the apps fill more than
    # ccache's default limit of 5 GB, at which it evicts the oldest
    # objects: a first build's, before the next flavour could share them.
    env.setdefault("CCACHE_MAXSIZE", CACHE_LIMIT)
    env.update(extra)
    return env


# Directories no compile includes from (gcc's testsuite alone holds 80,000
# files).
_NEVER_INCLUDED = {".git", "testsuite"}


def same_files_only(listing: Path, *dirs: Path) -> dict[str, str]:
    """ccache settings under which a cache entry matches only if `dirs`
    held the same set of file names when it was made.

    Direct and depend mode check the headers a compile read, not whether a
    new file now shadows one of them earlier in the include path; hashing
    the list of names closes that gap. The list is written to `listing`.
    """
    names = []
    for i, d in enumerate(dirs):
        # Relative names: a clone elsewhere shares the cache.
        for root, subdirs, files in os.walk(d):
            subdirs[:] = sorted(s for s in subdirs if s not in _NEVER_INCLUDED)
            names += sorted(f"{i}/{os.path.relpath(os.path.join(root, f), d)}" for f in files)
    text = "\n".join(names) + "\n"
    if not listing.is_file() or listing.read_text() != text:
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text(text)
    return {"CCACHE_EXTRAFILES": str(listing)}
