"""`ukl run --disk FILE[:SIZE[:GUEST_PATH]]`: the host side (parsing, the
ext4 file system, locks, the kernel check) and the QEMU command line."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ukl
from tests.unit.fake_images import fake_image
from ukl.common.errors import UklError
from ukl.image import disk, runargs
from ukl.qemu import command as qemu


def test_parse_defaults_and_parts() -> None:
    assert disk.parse("d.ext4") == disk.DiskSpec(Path("d.ext4"), 256 << 20, "/data")
    assert disk.parse("d.ext4:1G") == disk.DiskSpec(Path("d.ext4"), 1 << 30, "/data")
    assert disk.parse("d.ext4:64M:/srv/db") == disk.DiskSpec(Path("d.ext4"), 64 << 20, "/srv/db")
    assert disk.parse("d.ext4::/x") == disk.DiskSpec(Path("d.ext4"), 256 << 20, "/x")


@pytest.mark.parametrize("spec, what", [
    ("", "use FILE"), ("a:1G:/x:y", "use FILE"), ("d:1T", "SIZE"), ("d:1M", "SIZE"),
    ("d:lots", "SIZE"), ("d:1G:rel", "GUEST_PATH"), ("d:1G:/", "GUEST_PATH"),
    ("d:1G:/etc", "GUEST_PATH"), ("d:1G:/a b", "GUEST_PATH"), ("d:1G:/x/../bin", "GUEST_PATH"),
])
def test_parse_refuses(spec: str, what: str) -> None:
    with pytest.raises(UklError, match=what):
        disk.parse(spec)


def test_disk_is_made_once_and_never_overwritten(tmp_path: Path) -> None:
    spec = disk.parse(f"{tmp_path / 'd.ext4'}:16M")
    with disk.attached(spec) as path:
        assert path == spec.file.resolve()
    assert spec.file.stat().st_size == 16 << 20 and disk.fs_problem(spec.file) == ""
    out = subprocess.run(["/usr/sbin/dumpe2fs", "-h", str(spec.file)], capture_output=True,
                         text=True).stdout
    assert "extent" in out and "Filesystem volume name:   ukl-data" in out
    # Data the guest wrote stays: the next run does not format it again.
    subprocess.run(["/usr/sbin/debugfs", "-w", "-R", "mkdir kept", str(spec.file)],
                   check=True, capture_output=True)
    with disk.attached(disk.parse(f"{spec.file}:64M")):
        pass
    listing = subprocess.run(["/usr/sbin/debugfs", "-R", "ls", str(spec.file)],
                             capture_output=True, text=True).stdout
    assert "kept" in listing and spec.file.stat().st_size == 16 << 20


def test_a_file_that_is_not_ext4_is_refused_untouched(tmp_path: Path) -> None:
    f = tmp_path / "notes.txt"
    f.write_bytes(b"precious" * 1000)
    with pytest.raises(UklError, match="is not an ext4 file system"):
        with disk.attached(disk.parse(str(f))):
            pass
    assert f.read_bytes() == b"precious" * 1000


def test_a_disk_in_use_is_refused(tmp_path: Path) -> None:
    spec = disk.parse(f"{tmp_path / 'd.ext4'}:16M")
    with disk.attached(spec):
        with pytest.raises(UklError, match="in use by another `ukl run`"):
            with disk.attached(spec):
                pass
    # A QEMU of its own, holding the file open for writing.
    qemu_proc = subprocess.Popen(
        [qemu.QEMU, "-accel", "tcg", "-display", "none", "-monitor", "none", "-S",
         "-nic", "none", "-drive", f"file={spec.file},if=virtio,format=raw"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            with spec.file.open("r+b") as f:
                if disk.qemu_holds(f.fileno()):
                    break
            assert qemu_proc.poll() is None, qemu_proc.stdout.read()  # type: ignore
            subprocess.run(["sleep", "0.1"])
        with pytest.raises(UklError, match="in use by a running QEMU"):
            with disk.attached(spec):
                pass
    finally:
        qemu_proc.kill()
        qemu_proc.wait()
    with disk.attached(spec):
        pass


def test_kernel_needs_virtio_blk_and_ext4() -> None:
    full = {o: "y" for o in disk.KERNEL_NEEDS}
    assert disk.kernel_problem(full, "f", Path("/c")) == ""
    problem = disk.kernel_problem({**full, "CONFIG_EXT4_FS": "m"}, "f", Path("/c"))
    assert "lacks CONFIG_EXT4_FS" in problem
    assert "no .config" in disk.kernel_problem(None, "f", Path("/c"))


def test_drive_and_mount_lines() -> None:
    cmd = qemu.command(qemu.RunOptions(kernel=Path("k"), initramfs=Path("i"),
                                       disks=[Path("/d/a.ext4"), Path("/d/b,c")]))
    drives = [cmd[i + 1] for i, w in enumerate(cmd) if w == "-drive"]
    assert drives == ["file=/d/a.ext4,if=virtio,format=raw",
                      "file=/d/b,,c,if=virtio,format=raw"]
    conf = runargs.run_conf([], [], [("/dev/vda", "/data"), ("/dev/vdb", "/srv/x")])
    assert "UKL_RUN_MOUNTS='/dev/vda /data /dev/vdb /srv/x'\n" in conf


def test_disk_on_a_kernel_without_ext4_is_one_error_line(tmp_path: Path) -> None:
    # A flavour's .config with virtio-blk and no ext4.
    image = fake_image(tmp_path, "img", build=tmp_path / "build", kernel_config=(
        "CONFIG_VIRTIO_PCI=y\nCONFIG_VIRTIO_BLK=y\n# CONFIG_EXT4_FS is not set\n"))
    res = ukl("run", str(image), "--disk", str(tmp_path / "d.ext4"),
              env={"UKL_BUILD_DIR": str(tmp_path / "build")})
    assert res.returncode == 1
    assert res.stderr.startswith("ukl: error: --disk: the kernel of flavour plain lacks "
                                 "CONFIG_EXT4_FS") and res.stderr.count("\n") == 1, res.stderr
    assert not (tmp_path / "d.ext4").exists()  # nothing made before the refusal
