"""`ukl pkg`: urunc's annotations, the ISO's Multiboot2 kernel file and
grub.cfg, and the one-line errors, without QEMU or the OCI tools
(tests/boot/test_pkg.py packages, unpacks and boots real images)."""
from __future__ import annotations

import base64
import json
import shutil
import struct
from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.common.errors import UklError
from ukl.image import image, iso, oci
from ukl.qemu import command as qemu

PVH_ENTRY = 0x1000500


def _one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("ukl: error: ")
    return lines[0]


def _fake_image(where: Path, name: str = "img") -> Path:
    where.mkdir()
    (where / image.KERNEL_FILE).write_bytes(b"K")
    (where / image.INITRAMFS_FILE).write_bytes(b"I")
    (where / image.META_FILE).write_text(json.dumps(
        {"name": name, "kernel_flavour": "ukl", "mode": "ukl", "program": "/UKL"}))
    return where


def test_urunc_annotations_use_urunc_names_and_paths_in_the_layer(tmp_path: Path) -> None:
    img = image.find(str(_fake_image(tmp_path / "img")))
    annots = oci.urunc_annotations(img)
    # The names urunc's pkg/unikontainers/config.go reads.
    assert annots["com.urunc.unikernel.unikernelType"] == "linux"
    assert annots["com.urunc.unikernel.hypervisor"] == "qemu"
    assert annots["com.urunc.unikernel.binary"] == "/unikernel/vmlinux"
    assert annots["com.urunc.unikernel.initrd"] == "/unikernel/initramfs.cpio"
    assert annots["com.urunc.unikernel.cmdline"] == "/init"
    # /urunc.json: the same, urunc's keys only, values base64.
    doc = json.loads(oci.urunc_json(annots))
    assert {k: base64.b64decode(v).decode() for k, v in doc.items()} == \
        {k: v for k, v in annots.items() if k.startswith("com.urunc.unikernel.")}


def _elf(loads: list[tuple[int, bytes, int]], notes: bytes) -> bytes:
    """A minimal 64-bit vmlinux: PT_LOAD segments (paddr, data, memsz) and a PT_NOTE."""
    phoff, phnum = 64, len(loads) + 1
    body = bytearray(64 + 56 * phnum)
    body[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", body, 0x20, phoff)
    struct.pack_into("<HH", body, 0x36, 56, phnum)
    segments = [(iso.PT_LOAD, paddr, data, memsz) for paddr, data, memsz in loads]
    segments.append((iso.PT_NOTE, 0, notes, len(notes)))
    for i, (kind, paddr, data, memsz) in enumerate(segments):
        offset = len(body)
        body += data
        struct.pack_into("<IIQQQQQQ", body, phoff + 56 * i, kind, 0, offset,
                         0xFFFFFFFF80000000 + paddr, paddr, len(data), memsz, 0x1000)
    return bytes(body)


def _pvh_note(entry: int = PVH_ENTRY) -> bytes:
    gnu = struct.pack("<III", 4, 4, 3) + b"GNU\0" + b"\1\2\3\4"
    return gnu + struct.pack("<III", 4, 8, iso.XEN_ELFNOTE_PHYS32_ENTRY) + b"Xen\0" + \
        struct.pack("<Q", entry)


def test_kernel_segments_are_laid_out_by_physical_address() -> None:
    vmlinux = _elf([(0x1000000, b"text", 0x1000), (0x1002000, b"data", 0x3000)], _pvh_note())
    kernel = iso.read_kernel(vmlinux)
    assert (kernel.base, kernel.end, kernel.pvh_entry) == (0x1000000, 0x1005000, PVH_ENTRY)
    assert kernel.data == b"text" + b"\0" * (0x2000 - 4) + b"data"


@pytest.mark.parametrize("loads, notes, message", [
    ([(0x1000000, b"t", 1)], b"", "no PVH entry note"),
    ([(0x100000, b"t", 1)], _pvh_note(), "CONFIG_PHYSICAL_START"),
    ([], _pvh_note(), "no loadable segments"),
])
def test_unbootable_kernels_are_refused(loads: list[tuple[int, bytes, int]], notes: bytes,
                                        message: str) -> None:
    with pytest.raises(UklError, match=message):
        iso.read_kernel(_elf(loads, notes))


def test_multiboot2_header_is_valid() -> None:
    header = iso.mb2_header(0xFF0050, 0x2000000, 0x3000000)
    magic, arch, length, checksum = struct.unpack_from("<IIII", header)
    assert (magic, arch, length) == (0xE85250D6, 0, 88)
    assert (magic + arch + length + checksum) & 0xFFFFFFFF == 0
    assert struct.unpack_from("<HHIIIII", header, 16) == (
        2, 0, 24, iso.SHIM_BASE, iso.SHIM_BASE, 0x2000000, 0x3000000)
    assert struct.unpack_from("<HHII", header, 40) == (3, 0, 12, 0xFF0050)
    assert struct.unpack_from("<HHIIII", header, 56) == (5, 1, 20, 0, 0, 0)
    assert struct.unpack_from("<HHI", header, 80) == (0, 0, 8)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_multiboot_kernel_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """mb2pvh compiles, fits below the kernel, and the file GRUB loads has
    the header, mb2pvh's parameters and the kernel at its offset."""
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))
    vmlinux = tmp_path / "vmlinux"
    vmlinux.write_bytes(_elf([(0x1000000, b"kernel", 0x10000)], _pvh_note()))
    data = iso.multiboot_kernel(vmlinux)
    entry = struct.unpack_from("<I", data, 48)[0]
    assert iso.SHIM_BASE + 104 <= entry < iso.SHIM_END
    assert struct.unpack_from("<HHIIIII", data, 16)[5:] == (0x1000000 + 6, 0x1010000)
    assert struct.unpack_from("<III", data, 88) == (PVH_ENTRY, iso.SHIM_BASE, iso.SHIM_END)
    assert data[0x1000000 - iso.SHIM_BASE:] == b"kernel"


def test_grub_cfg_boots_with_the_run_command_line_and_args() -> None:
    cfg = iso.grub_cfg("img", qemu.BASE_CMDLINE + ["--", "7"])
    line = next(x for x in cfg.splitlines() if "multiboot2" in x)
    assert line.split()[1:] == [f"/{iso.ISO_DIR}/{iso.KERNEL_NAME}", *qemu.BASE_CMDLINE,
                                "--", "7"]
    assert "console=ttyS0" in line
    assert f"module2 /{iso.ISO_DIR}/initramfs.cpio" in cfg
    with pytest.raises(UklError, match="cannot go into grub.cfg"):
        iso.grub_cfg("img", ["two words"])


def test_existing_oci_directory_is_never_touched(tmp_path: Path) -> None:
    img = _fake_image(tmp_path / "img")
    target = tmp_path / "layout"
    target.mkdir()
    (target / "mine").write_text("keep")
    res = ukl("pkg", str(img), "--oci", str(target))
    assert res.returncode == 2
    assert "exists and is never overwritten" in _one_line_error(res.stderr)
    assert [p.name for p in target.iterdir()] == ["mine"]
    assert (target / "mine").read_text() == "keep"


@pytest.mark.parametrize("option", ["--iso", "--oci-archive"])
def test_existing_file_is_never_touched(tmp_path: Path, option: str) -> None:
    img = _fake_image(tmp_path / "img")
    target = tmp_path / "out"
    target.write_text("keep")
    res = ukl("pkg", str(img), option, str(target))
    assert res.returncode == 2
    assert f"{option} {target}: the file exists" in _one_line_error(res.stderr)
    assert target.read_text() == "keep"


def test_unknown_image_is_one_line(tmp_path: Path) -> None:
    res = ukl("pkg", str(tmp_path / "no-such-image"), "--oci", str(tmp_path / "out"))
    assert res.returncode == 2
    assert "no image" in _one_line_error(res.stderr)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, message", [
    ([], "say what to make"),
    (["--oci", "/no/such/dir/out"], "directory /no/such/dir does not exist"),
    (["--oci", "{tmp}/out", "--", "7"], "use them with --iso"),
])
def test_bad_pkg_command_lines_are_one_line(tmp_path: Path, args: list[str],
                                            message: str) -> None:
    img = _fake_image(tmp_path / "img")
    res = ukl("pkg", str(img), *[a.format(tmp=tmp_path) for a in args])
    assert res.returncode == 2
    assert message in _one_line_error(res.stderr)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["img"]
