"""A minimal writer for the 'newc' cpio format the kernel unpacks as initramfs.

Written here rather than calling cpio(1) so that images need no root (device
nodes are just header fields), are byte-for-byte reproducible (fixed inode
numbers, owners and mtimes) and need no extra host package.
"""
from __future__ import annotations

import stat
from typing import BinaryIO

_MAGIC = b"070701"
TRAILER = "TRAILER!!!"


def _pad4(n: int) -> bytes:
    return b"\0" * (-n % 4)


class CpioWriter:
    """Append entries to a newc archive; call close() to write the trailer."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out
        self.next_ino = 1
        self.names: set[str] = set()

    def _entry(self, name: str, mode: int, data: bytes = b"",
               rdev: tuple[int, int] = (0, 0), nlink: int = 1,
               owner: tuple[int, int] = (0, 0)) -> None:
        name = name.lstrip("/")
        if name in self.names:
            raise ValueError(f"duplicate initramfs entry: /{name}")
        self.names.add(name)
        encoded = name.encode() + b"\0"
        fields = [
            self.next_ino, mode, owner[0], owner[1], nlink, 0, len(data),
            0, 0, rdev[0], rdev[1], len(encoded), 0,
        ]
        self.next_ino += 1
        header = _MAGIC + b"".join(b"%08x" % f for f in fields)
        self.out.write(header + encoded + _pad4(len(header) + len(encoded)))
        self.out.write(data + _pad4(len(data)))

    def add_dir(self, name: str, perm: int = 0o755, owner: tuple[int, int] = (0, 0)) -> None:
        self._entry(name, stat.S_IFDIR | perm, nlink=2, owner=owner)

    def add_file(self, name: str, data: bytes, perm: int = 0o644,
                 owner: tuple[int, int] = (0, 0)) -> None:
        """A regular file; `owner` is (uid, gid)."""
        self._entry(name, stat.S_IFREG | perm, data, owner=owner)

    def add_symlink(self, name: str, target: str, owner: tuple[int, int] = (0, 0)) -> None:
        self._entry(name, stat.S_IFLNK | 0o777, target.encode(), owner=owner)

    def add_chardev(self, name: str, major: int, minor: int, perm: int = 0o600) -> None:
        self._entry(name, stat.S_IFCHR | perm, rdev=(major, minor))

    def close(self) -> None:
        # The trailer is a regular entry named TRAILER!!! with no inode.
        self.next_ino = 0
        self._entry(TRAILER, 0)


def read_names(data: bytes) -> list[tuple[str, int, bytes]]:
    """Parse a newc archive into (name, mode, data) entries; for tests and checks."""
    return [(name, mode, body) for name, mode, _, body in read_entries(data)]


def read_entries(data: bytes) -> list[tuple[str, int, tuple[int, int], bytes]]:
    """Parse a newc archive into (name, mode, (uid, gid), data) entries."""
    entries: list[tuple[str, int, tuple[int, int], bytes]] = []
    pos = 0
    while True:
        if data[pos:pos + 6] != _MAGIC:
            raise ValueError(f"bad cpio magic at offset {pos}")
        fields = [int(data[pos + 6 + 8 * i: pos + 14 + 8 * i], 16) for i in range(13)]
        mode, filesize, namesize = fields[1], fields[6], fields[11]
        name_start = pos + 110
        name = data[name_start:name_start + namesize - 1].decode()
        data_start = name_start + namesize + (-(110 + namesize) % 4)
        body = data[data_start:data_start + filesize]
        pos = data_start + filesize + (-filesize % 4)
        if name == TRAILER:
            return entries
        entries.append((name, mode, (fields[2], fields[3]), body))
