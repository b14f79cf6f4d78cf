"""`ukl pkg`: an image packaged as an OCI image (checked, unpacked and
booted with Debian's umoci and skopeo) and as an ISO (booted by GRUB under
SeaBIOS and under OVMF's EFI), each running the program at CPL0 with its
exit status reaching the host."""
from __future__ import annotations

import base64
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, build_image, ukl
from ukl.common import paths
from ukl.image import oci

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = 300
OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")
OVMF_VARS = Path("/usr/share/OVMF/OVMF_VARS_4M.fd")
# QEMU's isa-debug-exit device ends QEMU with (status << 1) | 1.
DEBUG_EXIT = ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x01"]


@pytest.fixture(scope="module")
def pkg_image(ukl_kernel: Path) -> str:
    """exit_with.c linked into the UKL kernel."""
    return build_image("t-pkg", str(PROGRAMS / "exit_with.c"))


def _tool(*args: str) -> str:
    res = subprocess.run(list(args), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, f"{' '.join(args)}:\n{res.stdout}{res.stderr}"
    return res.stdout


def test_oci_layout_is_valid_unpacks_and_boots(pkg_image: str, tmp_path: Path) -> None:
    layout = tmp_path / "layout"
    res = ukl("pkg", pkg_image, "--oci", str(layout))
    assert res.returncode == 0, res.stderr
    ref = f"{layout}:{oci.TAG}"
    # Both OCI tools read the layout back.
    stat = json.loads(_tool("umoci", "stat", "--image", ref, "--json"))
    assert len([h for h in stat["history"] if not h.get("empty_layer")]) == 1, stat
    config = json.loads(_tool("skopeo", "inspect", f"oci:{ref}"))
    assert (config["Architecture"], config["Os"]) == ("amd64", "linux")
    manifest = json.loads(_tool("skopeo", "inspect", "--raw", f"oci:{ref}"))
    for annots in (config["Labels"], manifest["annotations"]):
        assert annots["com.urunc.unikernel.unikernelType"] == "linux"
        assert annots["com.urunc.unikernel.hypervisor"] == "qemu"
        assert annots["com.urunc.unikernel.binary"] == "/unikernel/vmlinux"
        assert annots["com.urunc.unikernel.initrd"] == "/unikernel/initramfs.cpio"
    # Unpacked without root, the files are the image's own.
    bundle = tmp_path / "bundle"
    _tool("umoci", "unpack", "--rootless", "--image", ref, str(bundle))
    rootfs = bundle / "rootfs"
    built = paths.images_dir() / pkg_image
    for name in ("vmlinux", "initramfs.cpio", "image.json"):
        assert (rootfs / "unikernel" / name).read_bytes() == (built / name).read_bytes(), name
    urunc = json.loads((rootfs / "urunc.json").read_text())
    assert base64.b64decode(urunc["com.urunc.unikernel.binary"]) == b"/unikernel/vmlinux"
    # The unpacked directory is an image `ukl run` boots.
    res = ukl("run", str(rootfs / "unikernel"), "--timeout", str(BOOT_TIMEOUT), "--", "7")
    assert res.returncode == 7, res.stdout + res.stderr
    assert "exit_with: cpl=0 " in res.stdout
    assert "exit_with: argv[1]=<7>" in res.stdout
    # Never overwritten: a second pkg into the same directory is refused.
    res = ukl("pkg", pkg_image, "--oci", str(layout))
    assert res.returncode == 2 and "never overwritten" in res.stderr
    assert json.loads(_tool("umoci", "stat", "--image", ref, "--json")) == stat


def test_oci_archive_holds_the_same_image(pkg_image: str, tmp_path: Path) -> None:
    archive = tmp_path / "t-pkg.tar"
    res = ukl("pkg", pkg_image, "--oci-archive", str(archive))
    assert res.returncode == 0, res.stderr
    config = json.loads(_tool("skopeo", "inspect", f"oci-archive:{archive}:{oci.TAG}"))
    assert config["Labels"]["com.urunc.unikernel.unikernelType"] == "linux"
    # skopeo turns it back into a layout umoci unpacks.
    layout = tmp_path / "layout"
    _tool("skopeo", "copy", "--quiet", f"oci-archive:{archive}:{oci.TAG}",
          f"oci:{layout}:{oci.TAG}")
    _tool("umoci", "unpack", "--rootless", "--image", f"{layout}:{oci.TAG}",
          str(tmp_path / "bundle"))
    assert (tmp_path / "bundle" / "rootfs" / "unikernel" / "vmlinux").read_bytes() == \
        (paths.images_dir() / pkg_image / "vmlinux").read_bytes()


def _boot_iso(iso: Path, firmware: list[str], log_name: str) -> tuple[int, str]:
    """Boot `iso` from a CD under QEMU (TCG), its console on the serial
    port; returns QEMU's exit status and the console (also in build/logs,
    where the kernel-log check of tests/conftest.py reads it)."""
    cmd = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-m", "512M",
           "-cdrom", str(iso), "-boot", "d", *firmware, "-display", "none",
           "-monitor", "none", "-serial", "stdio", "-nic", "none", "-no-reboot", *DEBUG_EXIT]
    res = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         errors="replace", timeout=BOOT_TIMEOUT)
    log = paths.logs_dir() / f"run-{log_name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(res.stdout + res.stderr)
    return res.returncode, res.stdout + res.stderr


def _check_iso_run(status: int, console: str) -> None:
    assert status == (7 << 1) | 1, console
    assert "exit_with: cpl=0 " in console
    assert "exit_with: argv[1]=<7>" in console
    assert "ukl-init: exit status 7" in console


@pytest.fixture(scope="module")
def pkg_iso(pkg_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    iso = tmp_path_factory.mktemp("iso") / "t-pkg.iso"
    res = ukl("pkg", pkg_image, "--iso", str(iso), "--", "7")
    assert res.returncode == 0, res.stderr
    # Never overwritten.
    before = iso.stat()
    res = ukl("pkg", pkg_image, "--iso", str(iso))
    assert res.returncode == 2 and "never overwritten" in res.stderr
    assert iso.stat().st_mtime_ns == before.st_mtime_ns
    return iso


def test_iso_boots_under_bios(pkg_iso: Path) -> None:
    status, console = _boot_iso(pkg_iso, [], "t-pkg-iso-bios")
    _check_iso_run(status, console)


def test_iso_boots_under_efi(pkg_iso: Path, tmp_path: Path) -> None:
    assert OVMF_CODE.is_file(), "OVMF is missing: run `ukl setup` (Debian package ovmf)"
    # OVMF writes its variables: a copy of the template for this boot.
    variables = tmp_path / "OVMF_VARS.fd"
    shutil.copyfile(OVMF_VARS, variables)
    firmware = ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
                "-drive", f"if=pflash,format=raw,unit=1,file={variables}"]
    status, console = _boot_iso(pkg_iso, firmware, "t-pkg-iso-efi")
    _check_iso_run(status, console)
