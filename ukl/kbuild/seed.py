"""Start a flavour's first build from the nearest flavour already built.

Flavours differ in a handful of options, and Kbuild records which options
each object depends on (fixdep), so a copy of a built sibling's output
directory, reconfigured, recompiles only what those options touch:
`ukl-ret` seeded from `ukl` reassembles entry_64.S and relinks. (`ukl`
from `stock` gains nothing: nearly every object reads
CONFIG_UNIKERNEL_LINUX through common headers.) This is the incremental
build kernel developers run every day after changing .config; `ukl matrix`
has relied on it for its 96 combinations.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path

from ukl.common import locks
from ukl.common.errors import UklError
from ukl.kbuild import kconfig

LOCK_NAME = ".ukl-build.lock"
# Not carried over: the lock is the directory's own, and the step count of
# a full build would make an incremental one look stuck near 0%.
_NOT_COPIED = {LOCK_NAME, ".ukl-steps"}


@contextmanager
def locked(out: Path, shared: bool = False) -> Iterator[None]:
    """Hold output directory `out`'s lock: exclusive for a build there
    (the app link rewrites vmlinux), shared for a reader."""
    with locks.held(out / LOCK_NAME, shared):
        yield


def distance(wanted: dict[str, str], built: dict[str, str], named: Collection[str]) -> int:
    """How many options a build configured as `built` would have to change
    to become `wanted`: the wanted options it lacks, and the options some
    other fragment names (`named`) that it has on and `wanted` does not."""
    others = sum(1 for opt in named if opt not in wanted and built.get(opt, "n") != "n")
    return len(kconfig.mismatches(wanted, built)) + others


def nearest(wanted: dict[str, str], builds: Path, exclude: Path,
            named: Collection[str] = ()) -> Path | None:
    """The built output directory under `builds` whose .config is closest to
    `wanted` (None: nothing built yet). A directory counts as built when it
    holds both .config and vmlinux. `named`: every option the fragments
    set, so that a build with more of them on than wanted (a deployed
    flavour's mitigations, for a lab flavour) counts as farther."""
    best: tuple[int, str] | None = None
    if not builds.is_dir():
        return None
    for d in sorted(builds.iterdir()):
        if d == exclude or d.name.startswith("."):  # a seed still being copied
            continue
        if not (d / ".config").is_file() or not (d / "vmlinux").is_file():
            continue
        try:
            built = kconfig.parse((d / ".config").read_text(), str(d / ".config"))
        except (OSError, UklError):
            continue
        # Fewest options to change; ties by name.
        key = (distance(wanted, built, named), d.name)
        if best is None or key < best:
            best = key
    return builds / best[1] if best else None


def seed(out: Path, source: Path) -> None:
    """Fill `out` (which holds no .config) with a copy of `source`'s build.

    The caller holds `out`'s lock; `source`'s lock is taken shared, so a
    build running there finishes first. The copy goes to a scratch
    directory and .config is moved in last: an interrupted seed leaves no
    .config, and the next build starts the seed again instead of trusting
    half-copied objects whose fresh timestamps would look up to date.
    """
    scratch = out.parent / f".{out.name}.seeding"
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    with locked(source, shared=True):
        # cp -a keeps timestamps (Kbuild's up-to-date test) and symlinks
        # (`source` points at the kernel tree); reflinks where the file
        # system has them.
        entries = [str(e) for e in source.iterdir() if e.name not in _NOT_COPIED]
        done = subprocess.run(["cp", "-a", "--reflink=auto", *entries, str(scratch)],
                              capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise UklError(f"could not seed {out} from {source}: {done.stderr.strip()}")
    for entry in out.iterdir():
        if entry.name in _NOT_COPIED:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    _move_tool_paths(scratch / "tools", source.resolve(), out.resolve())
    dot_config = scratch / ".config"
    for entry in sorted(scratch.iterdir(), key=lambda e: e == dot_config):
        os.replace(entry, out / entry.name)
    scratch.rmdir()


def _move_tool_paths(tools: Path, old: Path, new: Path) -> None:
    """Point the host tools' recorded commands at the new directory.

    Kbuild records relative paths, but the tools/ build system (objtool)
    writes the output directory's absolute path into each object's .cmd
    file; in a copy those commands differ, objtool is rebuilt, and since
    every kernel object depends on the objtool binary, so is everything
    (measured: 1053 of 1060 objects for a seeded ukl-ret).
    """
    old_path = re.compile(re.escape(str(old)) + r"(?=[/\s'\":;]|$)", re.MULTILINE)
    for cmd in tools.rglob(".*.cmd"):
        text = cmd.read_text(errors="surrogateescape")
        moved = old_path.sub(str(new), text)
        if moved != text:
            stat = cmd.stat()
            cmd.write_text(moved, errors="surrogateescape")
            # Same timestamp: only the recorded command is meant to change.
            os.utime(cmd, ns=(stat.st_atime_ns, stat.st_mtime_ns))
