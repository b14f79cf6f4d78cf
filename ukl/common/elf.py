"""Just enough ELF reading to vet files before they go into an image."""
from __future__ import annotations

import struct
from pathlib import Path

PT_INTERP = 3


def describe_problem(path: Path, loaders: frozenset[str] = frozenset()) -> str | None:
    """None if `path` is an x86-64 ELF executable that can run in the
    image, else why it cannot.

    The guest's initramfs has no dynamic loader or shared libraries of its
    own, so a program must be static, or dynamically linked with a loader
    (PT_INTERP) among `loaders`, the guest paths the image also gets (with
    the libraries: ukl.app.debian.rules.runtime_files).
    """
    try:
        data = path.read_bytes()
    except OSError as e:
        return f"cannot read {path}: {e.strerror}"
    if data[:4] != b"\x7fELF":
        return f"{path} is not an ELF file"
    if data[4] != 2 or data[5] != 1:
        return f"{path} is not a 64-bit little-endian ELF file"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != 62:
        return f"{path} is not an x86-64 program"
    if e_type not in (2, 3):
        return f"{path} is not an executable"
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    for i in range(phnum):
        p_type, = struct.unpack_from("<I", data, phoff + i * phentsize)
        if p_type == PT_INTERP:
            offset, = struct.unpack_from("<Q", data, phoff + i * phentsize + 8)
            size, = struct.unpack_from("<Q", data, phoff + i * phentsize + 32)
            loader = data[offset:offset + size].rstrip(b"\0").decode(errors="replace")
            if loader not in loaders:
                return f"{path} is dynamically linked; build it with -static"
    return None
