"""The environment every compiler-heavy step runs in."""
from __future__ import annotations

import os

from ukl.common import paths


def build_env(**extra: str) -> dict[str, str]:
    """os.environ plus ccache settings that survive a clone elsewhere.

    Paths under build/ are rewritten relative (CCACHE_BASEDIR) and the
    working directory is not hashed, so a fresh clone in another directory
    still hits the cache. `extra` variables are set on top.
    """
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", str(paths.build_root()))
    env.setdefault("CCACHE_NOHASHDIR", "1")
    env.update(extra)
    return env
