"""`ukl pkg NAME --iso FILE`: an image as an ISO that BIOS and EFI machines boot.

The images' kernels are ELF vmlinux files that QEMU starts through their
PVH entry; their flavours have CONFIG_EFI off (so no EFI stub) and no
bzImage is built, so no boot loader can start them as they are. The ISO
therefore holds GRUB (Debian's grub-mkrescue: BIOS and EFI in one hybrid
image, written with xorriso and mtools) and, as a Multiboot2 kernel,
mb2pvh.c followed by the kernel's loadable segments laid out flat at their
physical addresses: GRUB loads the file in place, and mb2pvh passes GRUB's
command line, initramfs module, memory map and ACPI pointer on to the
kernel's PVH entry. The initramfs is the image's own.
"""
from __future__ import annotations

import os
import re
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ukl.common import cprogram, paths
from ukl.common.errors import UklError, UsageError
from ukl.common.proc import run_quiet
from ukl.image import image
from ukl.image.oci import check_new_target, require_tool

SHIM_SOURCE = Path(__file__).with_name("mb2pvh.c")
SHIM_SCRIPT = Path(__file__).with_name("mb2pvh.ld")
# Where mb2pvh.ld links the shim; the kernel must start at SHIM_END or above.
SHIM_BASE = 0xFF0000
SHIM_END = 0x1000000
# The first bytes of the shim iso.py fills (mb2pvh.ld leaves them): the
# Multiboot2 header, then
# mb2pvh.c's struct params (pvh_entry, shim_start, shim_end, reserved).
HEADER_SIZE = 88
PARAMS_SIZE = 16
MB2_MAGIC = 0xE85250D6
MB2_ARCH_I386 = 0
MB2_TAG_ADDRESS = 2
MB2_TAG_ENTRY = 3
MB2_TAG_FRAMEBUFFER = 5
MB2_TAG_OPTIONAL = 1
# Xen's ELF note that names the PVH entry (XEN_ELFNOTE_PHYS32_ENTRY), which
# Linux emits with CONFIG_PVH.
XEN_ELFNOTE_PHYS32_ENTRY = 18
PT_LOAD = 1
PT_NOTE = 4
# Where Debian's grub-pc-bin and grub-efi-amd64-bin put GRUB's modules.
GRUB_LIB = Path("/usr/lib/grub")
# Where the ISO keeps the image's files.
ISO_DIR = "boot/ukl"
KERNEL_NAME = "vmlinux.mb2"
# Kernel command-line words go into grub.cfg unquoted: keep them plain.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_.,:=/+-]+")
SHIM_FLAGS = ["-m32", "-march=i686", "-O2", "-Wall", "-Wextra", "-Werror", "-ffreestanding",
              "-fno-pic", "-no-pie", "-nostdlib", "-static", "-fno-stack-protector",
              "-fno-asynchronous-unwind-tables", "-mgeneral-regs-only",
              # No memcpy/memset calls for loops: there is no libc to link.
              "-fno-tree-loop-distribute-patterns",
              f"-Wl,-T,{SHIM_SCRIPT}", "-Wl,--build-id=none", "-Wl,--no-warn-rwx-segments"]


@dataclass(frozen=True)
class Kernel:
    """A vmlinux's loadable image: bytes from `base` on, memory to `end`."""
    base: int
    data: bytes
    end: int
    pvh_entry: int


def read_kernel(vmlinux: bytes, where: str = "vmlinux") -> Kernel:
    """The PT_LOAD segments of a 64-bit x86 vmlinux laid out flat by
    physical address (the zeros between them included), and its PVH entry."""
    if vmlinux[:4] != b"\x7fELF" or vmlinux[4] != 2 or vmlinux[5] != 1:
        raise UklError(f"{where} is not a 64-bit little-endian ELF file")
    phoff, = struct.unpack_from("<Q", vmlinux, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", vmlinux, 0x36)
    loads: list[tuple[int, bytes, int]] = []
    entry = 0
    for i in range(phnum):
        p_type, _, offset, _, paddr, filesz, memsz, _ = struct.unpack_from(
            "<IIQQQQQQ", vmlinux, phoff + i * phentsize)
        if p_type == PT_LOAD and memsz:
            loads.append((paddr, vmlinux[offset:offset + filesz], memsz))
        elif p_type == PT_NOTE:
            entry = entry or _pvh_note(vmlinux[offset:offset + filesz])
    if not loads:
        raise UklError(f"{where} has no loadable segments")
    if not entry:
        raise UklError(f"{where} has no PVH entry note; its kernel needs CONFIG_PVH=y")
    base = min(p for p, _, _ in loads)
    end = max(p + m for p, _, m in loads)
    if base < SHIM_END or end >= 1 << 32:
        raise UklError(f"{where} loads at {base:#x}-{end:#x}; booting it from the ISO needs "
                       f"it between {SHIM_END:#x} and 4 GiB (CONFIG_PHYSICAL_START)")
    flat = bytearray(max(p + len(d) for p, d, _ in loads) - base)
    for paddr, data, _ in loads:
        flat[paddr - base:paddr - base + len(data)] = data
    return Kernel(base, bytes(flat), end, entry)


def _pvh_note(notes: bytes) -> int:
    pos = 0
    while pos + 12 <= len(notes):
        namesz, descsz, kind = struct.unpack_from("<III", notes, pos)
        name_at = pos + 12
        desc_at = name_at + (namesz + 3) // 4 * 4
        name = notes[name_at:name_at + namesz].rstrip(b"\0")
        if name == b"Xen" and kind == XEN_ELFNOTE_PHYS32_ENTRY and descsz in (4, 8):
            value: int = struct.unpack_from("<I", notes, desc_at)[0]
            return value
        pos = desc_at + (descsz + 3) // 4 * 4
    return 0


def mb2_header(entry: int, load_end: int, bss_end: int) -> bytes:
    """A Multiboot2 header for a file loaded whole at SHIM_BASE: its
    address tag places the file, its entry tag names where to start."""
    tags = struct.pack("<HHIIIII", MB2_TAG_ADDRESS, 0, 24, SHIM_BASE, SHIM_BASE, load_end,
                       bss_end)
    tags += struct.pack("<HHII", MB2_TAG_ENTRY, 0, 12, entry) + b"\0" * 4
    # Any screen mode will do (the console is serial). Without this tag,
    # GRUB on EFI, which has no text mode to offer, warns that "no console
    # will be available to OS".
    tags += struct.pack("<HHIIII", MB2_TAG_FRAMEBUFFER, MB2_TAG_OPTIONAL, 20, 0, 0, 0) + \
        b"\0" * 4
    tags += struct.pack("<HHI", 0, 0, 8)
    checksum = -(MB2_MAGIC + MB2_ARCH_I386 + HEADER_SIZE) & 0xFFFFFFFF
    header = struct.pack("<IIII", MB2_MAGIC, MB2_ARCH_I386, HEADER_SIZE, checksum) + tags
    assert len(header) == HEADER_SIZE
    return header


def _shim() -> tuple[bytes, int]:
    """mb2pvh compiled (once per source change): its flat bytes and its
    entry address."""
    elf = cprogram.compiled(SHIM_SOURCE, paths.build_root() / "image" / "mb2pvh.elf",
                            SHIM_FLAGS, "compiling mb2pvh (ukl/image/mb2pvh.c)",
                            inputs=(SHIM_SCRIPT.read_bytes(),))
    symbols = {}
    for line in run_quiet(["nm", elf], what="nm mb2pvh").splitlines():
        parts = line.split()
        if len(parts) == 3:
            symbols[parts[2]] = int(parts[0], 16)
    with tempfile.TemporaryDirectory(prefix="ukl-mb2pvh-") as tmp:
        flat = Path(tmp) / "mb2pvh.bin"
        run_quiet(["objcopy", "-O", "binary", elf, flat], what="objcopy mb2pvh")
        data = flat.read_bytes()
    return data, symbols["mb2pvh_start"]


def multiboot_kernel(vmlinux: Path) -> bytes:
    """The file GRUB loads: mb2pvh at SHIM_BASE, the kernel at its own
    physical address, with the Multiboot2 header and mb2pvh's parameters
    in front."""
    kernel = read_kernel(vmlinux.read_bytes(), str(vmlinux))
    shim, entry = _shim()
    head = HEADER_SIZE + PARAMS_SIZE
    if len(shim) > kernel.base - SHIM_BASE or any(shim[:head]):
        raise UklError("mb2pvh does not fit below the kernel (ukl/image/mb2pvh.ld)")
    load_end = kernel.base + len(kernel.data)
    params = struct.pack("<IIII", kernel.pvh_entry, SHIM_BASE, SHIM_END, 0)
    return (mb2_header(entry, load_end, kernel.end) + params + shim[head:] +
            b"\0" * (kernel.base - SHIM_BASE - len(shim)) + kernel.data)


def grub_cfg(name: str, cmdline: list[str]) -> str:
    bad = [w for w in cmdline if not _PLAIN_WORD.fullmatch(w)]
    if bad:
        raise UsageError(f"kernel command-line word {bad[0]!r} cannot go into grub.cfg as it "
                         "is: use letters, digits and _.,:=/+-")
    return "\n".join([
        f"# Generated by `ukl pkg {name} --iso`: boots image {name}.",
        "# GRUB and the kernel's console are the first serial port (and the screen).",
        "serial --unit=0 --speed=115200",
        "terminal_input console serial",
        "terminal_output console serial",
        "set timeout=0",
        # The video drivers, for the screen mode the kernel file asks for
        # (mb2_header); without them GRUB on EFI finds no mode.
        "insmod all_video",
        f'menuentry "ukl image {name}" {{',
        # mb2pvh.c takes the first module as the initramfs.
        f"\tmultiboot2 /{ISO_DIR}/{KERNEL_NAME} {' '.join(cmdline)}",
        f"\tmodule2 /{ISO_DIR}/{image.INITRAMFS_FILE} initramfs",
        "}", ""])


def write(img: image.Image, target: Path, cmdline: list[str]) -> Path:
    """Image `img` as a bootable ISO in the new file `target`; the kernel
    gets `cmdline` (its console must be ttyS0 for the program's output)."""
    check_new_target(target, "--iso")
    mkrescue = require_tool("grub-mkrescue", "grub-common")
    # grub-mkrescue's own helpers, and GRUB for both kinds of firmware.
    require_tool("xorriso")
    require_tool("mformat", "mtools")
    for platform, package in (("i386-pc", "grub-pc-bin"), ("x86_64-efi", "grub-efi-amd64-bin")):
        if not (GRUB_LIB / platform / "multiboot2.mod").is_file():
            raise UklError(f"GRUB for {platform} is not installed; run `ukl setup` as root "
                           f"(or `apt-get install {package}`)")
    cfg = grub_cfg(img.meta.name, cmdline)
    with tempfile.TemporaryDirectory(prefix=".ukl-iso-", dir=target.parent) as tmp:
        tree = Path(tmp) / "tree"
        where = tree / ISO_DIR
        where.mkdir(parents=True)
        (tree / "boot" / "grub").mkdir()
        (tree / "boot" / "grub" / "grub.cfg").write_text(cfg)
        (where / KERNEL_NAME).write_bytes(multiboot_kernel(img.kernel))
        (where / image.INITRAMFS_FILE).write_bytes(img.initramfs.read_bytes())
        (where / image.META_FILE).write_bytes((img.path / image.META_FILE).read_bytes())
        out = Path(tmp) / "image.iso"
        run_quiet([mkrescue, "-o", out, tree], what="grub-mkrescue")
        try:
            # link(2) never replaces what is there.
            os.link(out, target)
        except FileExistsError:
            raise UsageError(f"--iso {target}: appeared while the ISO was being made; it was "
                             "left alone (give a new path)") from None
    return target
