"""`ukl run --disk FILE[:SIZE[:GUEST_PATH]]`: a persistent ext4 disk.

The host side of a virtio-blk disk: the file is an ext4 file system that
`mkfs.ext4` (e2fsprogs, no root needed) makes when FILE does not exist;
an existing file is used as it is and never reformatted, resized or
written by the host. A file that is not ext2/3/4, or that another `ukl
run` or QEMU has open, is refused before anything boots. The guest needs
virtio-blk and ext4 in its kernel (kernel_problem); the images mount the
disk at GUEST_PATH (default /data).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ukl.common.errors import UklError, UsageError

DEFAULT_GUEST_PATH = "/data"
DEFAULT_SIZE = 256 << 20
_MIN_SIZE = 8 << 20
# Top-level directories of every image (initramfs._BASE_DIRS) that a mount
# must not cover.
_SYSTEM_DIRS = ("bin", "sbin", "usr", "dev", "proc", "sys", "etc", "app")
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
# Built in (=y), not modules: the images carry no kernel modules.
KERNEL_NEEDS = ("CONFIG_VIRTIO_PCI", "CONFIG_VIRTIO_BLK", "CONFIG_EXT4_FS")
# The ext2/3/4 superblock starts 1024 bytes in; its magic is at offset 56.
_SUPERBLOCK = 1024
_MAGIC_OFFSET = _SUPERBLOCK + 56
_EXT_MAGIC = 0xEF53
# QEMU's image locking (file-posix.c): an open with write permission holds
# a read lock on byte 100 + the WRITE permission's bit (1).
_QEMU_WRITE_LOCK_BYTE = 101


@dataclass(frozen=True)
class DiskSpec:
    file: Path
    # Used only when the file is made.
    size: int
    guest_path: str


def parse(spec: str) -> DiskSpec:
    """FILE[:SIZE[:GUEST_PATH]] (SIZE such as 512M or 2G)."""
    parts = spec.split(":")
    if len(parts) > 3 or not parts[0]:
        raise UsageError(f"--disk {spec}: use FILE[:SIZE[:GUEST_PATH]], e.g. "
                         "--disk data.ext4:1G:/data (FILE cannot contain ':')")
    size = DEFAULT_SIZE
    if len(parts) > 1 and parts[1]:
        m = re.fullmatch(r"([1-9][0-9]*)([KMG]?)", parts[1])
        if not m or int(m.group(1)) * _UNITS[m.group(2)] < _MIN_SIZE:
            raise UsageError(f"--disk {spec}: SIZE {parts[1]!r}: use a size of at least 8M, "
                             "such as 256M or 2G")
        size = int(m.group(1)) * _UNITS[m.group(2)]
    guest = parts[2] if len(parts) > 2 and parts[2] else DEFAULT_GUEST_PATH
    problem = guest_path_problem(guest)
    if problem:
        raise UsageError(f"--disk {spec}: GUEST_PATH {problem}")
    return DiskSpec(Path(parts[0]), size, guest)


def guest_path_problem(guest: str) -> str:
    """Why `guest` cannot be where init.sh mounts a disk or shared folder
    ('' when it can). Plain names only, and neither "/" nor a system
    directory, which the mount would hide the image's own files under."""
    if not re.fullmatch(r"(/[A-Za-z0-9_][A-Za-z0-9._-]*)+", guest) or \
            guest.split("/")[1] in _SYSTEM_DIRS:
        return f"{guest!r}: use an absolute path of plain names outside the image's " \
            "system directories, e.g. /data"
    return ""


def kernel_problem(config: dict[str, str] | None, flavour: str, where: Path,
                   needs: tuple[str, ...] = KERNEL_NEEDS,
                   purpose: str = "mount an ext4 disk") -> str:
    """Why a kernel with .config `config` (None: not found) cannot
    `purpose` for want of the options `needs` ('' when it can)."""
    if config is None:
        return f"the kernel of flavour {flavour} has no .config at {where} to check " \
            f"for {', '.join(needs)}"
    missing = [o for o in needs if config.get(o) != "y"]
    if not missing:
        return ""
    return f"the kernel of flavour {flavour} lacks {', '.join(missing)} (not =y in " \
        f"{where}), so its guest cannot {purpose}; the kernel configuration " \
        "(kernel/configs/base.config) must set them to y first"


def fs_problem(path: Path) -> str:
    """Why `path` is not an ext2/3/4 file system image ('' when it is)."""
    try:
        with path.open("rb") as f:
            f.seek(_MAGIC_OFFSET)
            magic = f.read(2)
    except OSError as e:
        return f"cannot read it: {e.strerror}"
    if len(magic) < 2 or struct.unpack("<H", magic)[0] != _EXT_MAGIC:
        return "it is not an ext4 file system (no ext2/3/4 superblock); give a new " \
            "file name to have one made"
    return ""


def create(spec: DiskSpec) -> None:
    """Make spec.file: a sparse file of spec.size with an empty ext4 file
    system. O_EXCL: a file that appeared meanwhile is never formatted."""
    mkfs = shutil.which("mkfs.ext4") or shutil.which("mkfs.ext4", path="/usr/sbin:/sbin")
    if mkfs is None:
        raise UklError("mkfs.ext4 not found; as root, `apt-get install e2fsprogs`")
    if not spec.file.parent.is_dir():
        raise UsageError(f"--disk {spec.file}: directory {spec.file.parent} does not exist")
    fd = os.open(spec.file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.ftruncate(fd, spec.size)
    finally:
        os.close(fd)
    # -F: mke2fs would ask before formatting a regular file; this one is
    # ours, just made. -E root_owner: root's directory, whoever runs this.
    res = subprocess.run([mkfs, "-q", "-F", "-t", "ext4", "-L", "ukl-data",
                          "-E", "root_owner=0:0", str(spec.file)],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if res.returncode != 0:
        spec.file.unlink(missing_ok=True)
        raise UklError(f"--disk {spec.file}: mkfs.ext4 failed: "
                       f"{(res.stderr or res.stdout).strip().splitlines()[-1:]}")


@contextlib.contextmanager
def attached(spec: DiskSpec) -> Iterator[Path]:
    """The disk's file, made if missing, checked, and locked against other
    `ukl run`s for the `with` block (QEMU then takes its own locks)."""
    if not spec.file.exists():
        create(spec)
    problem = fs_problem(spec.file)
    if problem:
        raise UsageError(f"--disk {spec.file}: {problem}")
    with spec.file.open("r+b") as f:
        try:
            # flock() and QEMU's fcntl() locks do not see each other: this
            # one is between `ukl run`s.
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"--disk {spec.file}: in use by another `ukl run`; a disk "
                             "serves one guest at a time") from None
        if qemu_holds(f.fileno()):
            raise UsageError(f"--disk {spec.file}: in use by a running QEMU; a disk serves "
                             "one guest at a time")
        yield spec.file.resolve()


def qemu_holds(fd: int) -> bool:
    """Whether a QEMU has the file open for writing: its lock on
    _QEMU_WRITE_LOCK_BYTE keeps a write lock from being taken."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _QEMU_WRITE_LOCK_BYTE)
    except OSError:
        return True
    fcntl.lockf(fd, fcntl.LOCK_UN, 1, _QEMU_WRITE_LOCK_BYTE)
    return False
