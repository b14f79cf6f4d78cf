"""Small C programs the tool compiles for itself (a guest helper, a QEMU
plugin, the native anchors): built once, again only when their source or
flags change, written aside and renamed so a running copy is never
truncated."""
from __future__ import annotations

import os
from pathlib import Path

from ukl.common import stamp
from ukl.common.proc import run_quiet


def compiled(source: Path, out: Path, flags: list[str], what: str,
             inputs: tuple[bytes, ...] = ()) -> Path:
    """`gcc FLAGS -o OUT SOURCE`, unless OUT was made from the same source,
    flags and `inputs` (headers it depends on)."""
    done = out.with_name(out.name + ".stamp")
    state = stamp.digest(source.read_bytes(), " ".join(flags), *inputs)
    if out.is_file() and stamp.current(done, state):
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # Two commands may build it at once: each writes its own file.
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")
    run_quiet(["gcc", *flags, "-o", tmp, source], what=what)
    tmp.replace(out)
    stamp.record(done, state)
    return out
