"""ccache in depend mode stays correct when a new header shadows an old one."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from ukl.common.buildenv import DEPEND_MODE, build_env, same_files_only


def _value_compiled(tmp: Path, env: dict[str, str]) -> int:
    """Compile `int v = V;` (V from <v.h>, searched in a/ then b/) through
    ccache and read v back from the object."""
    src = tmp / "v.c"
    src.write_text("#include <v.h>\nint v = V;\n")
    obj = tmp / "v.o"
    subprocess.run(["ccache", "gcc", "-c", "-I", tmp / "a", "-I", tmp / "b", "-MD", "-MF",
                    tmp / "v.d", "-o", obj, src], env=env, check=True)
    data = tmp / "v.data"
    subprocess.run(["objcopy", "-O", "binary", "-j", ".data", obj, data], check=True)
    return int.from_bytes(data.read_bytes()[:4], "little")


def _headers(tmp: Path) -> None:
    for d in ("a", "b"):
        (tmp / d).mkdir()
    (tmp / "b" / "v.h").write_text("#define V 1\n")


def _env(tmp: Path, *, listing: bool) -> dict[str, str]:
    extra = same_files_only(tmp / "listing", tmp / "a", tmp / "b") if listing else {}
    return build_env(**DEPEND_MODE, **extra) | {"CCACHE_DIR": str(tmp / "cache")}


def test_plain_depend_mode_misses_a_shadowing_header(tmp_path: Path) -> None:
    # The blind spot same_files_only() closes: without it, the stale object.
    _headers(tmp_path)
    assert _value_compiled(tmp_path, _env(tmp_path, listing=False)) == 1
    (tmp_path / "a" / "v.h").write_text("#define V 2\n")
    assert _value_compiled(tmp_path, _env(tmp_path, listing=False)) == 1


def test_a_new_shadowing_header_is_compiled(tmp_path: Path) -> None:
    _headers(tmp_path)
    assert _value_compiled(tmp_path, _env(tmp_path, listing=True)) == 1
    (tmp_path / "a" / "v.h").write_text("#define V 2\n")
    assert _value_compiled(tmp_path, _env(tmp_path, listing=True)) == 2


def test_the_listing_is_relative_and_rewritten_only_on_change(tmp_path: Path) -> None:
    _headers(tmp_path)
    (tmp_path / "b" / ".git").mkdir()
    (tmp_path / "b" / ".git" / "HEAD").write_text("ref\n")
    env = same_files_only(tmp_path / "listing", tmp_path / "a", tmp_path / "b")
    listing = Path(env["CCACHE_EXTRAFILES"])
    # Names relative to each directory: a clone elsewhere shares the cache.
    assert listing.read_text() == "1/v.h\n"
    before = listing.stat().st_mtime_ns
    os.utime(listing, ns=(before - 10**9, before - 10**9))
    same_files_only(tmp_path / "listing", tmp_path / "a", tmp_path / "b")
    assert listing.stat().st_mtime_ns == before - 10**9
