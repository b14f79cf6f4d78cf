"""`ukl run -v HOST_DIR:GUEST_DIR[:ro]`: parsing, the QEMU command line and
what init.sh is told."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ukl
from tests.unit.fake_images import fake_image
from ukl.common.errors import UklError
from ukl.image import runargs, shares
from ukl.qemu import command as qemu


def test_parse(tmp_path: Path) -> None:
    assert shares.parse(f"{tmp_path}:/srv") == shares.ShareSpec(tmp_path, "/srv", False)
    assert shares.parse(f"{tmp_path}:/srv/x:ro") == shares.ShareSpec(tmp_path, "/srv/x", True)
    assert shares.parse(f"{tmp_path}:/srv:rw").read_only is False


@pytest.mark.parametrize("spec, what", [
    ("{d}", "use HOST_DIR:GUEST_DIR"), ("{d}:/a:rx", "use HOST_DIR:GUEST_DIR"),
    (":/a", "use HOST_DIR:GUEST_DIR"), ("{d}:/a:ro:x", "use HOST_DIR:GUEST_DIR"),
    ("{d}:rel", "GUEST_DIR"), ("{d}:/", "GUEST_DIR"), ("{d}:/bin", "GUEST_DIR"),
    ("{d}/none:/a", "does not exist"), ("{d}/file:/a", "is not a directory"),
])
def test_parse_refuses(tmp_path: Path, spec: str, what: str) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(UklError, match=what):
        shares.parse(spec.format(d=tmp_path))


def test_qemu_exports_and_init_mounts(tmp_path: Path) -> None:
    cmd = qemu.command(qemu.RunOptions(kernel=Path("k"), initramfs=Path("i"),
                                       shares=[(Path("/h/a"), False), (Path("/h/b,c"), True)]))
    pairs = [(w, cmd[i + 1]) for i, w in enumerate(cmd) if w in ("-fsdev", "-device")]
    assert pairs[1:] == [
        ("-fsdev", "local,id=ukl9p0,path=/h/a,security_model=none"),
        ("-device", "virtio-9p-pci,fsdev=ukl9p0,mount_tag=ukl9p0"),
        ("-fsdev", "local,id=ukl9p1,path=/h/b,,c,security_model=none,readonly=on"),
        ("-device", "virtio-9p-pci,fsdev=ukl9p1,mount_tag=ukl9p1")]
    conf = runargs.run_conf([], [], attach=runargs.Attachments(
        shares=[("ukl9p0", "/srv", False), ("ukl9p1", "/ro", True)]))
    assert "UKL_RUN_SHARES='ukl9p0 /srv rw ukl9p1 /ro ro'\n" in conf


def test_a_missing_folder_is_one_error_line_before_anything(tmp_path: Path) -> None:
    res = ukl("run", "no-such-image", "-v", f"{tmp_path}/gone:/srv")
    assert res.returncode == 2
    assert res.stderr == f"ukl: error: -v {tmp_path}/gone:/srv: host folder " \
        f"{tmp_path}/gone does not exist\n"
    assert not (tmp_path / "gone").exists()


def test_one_mount_per_guest_directory(tmp_path: Path) -> None:
    res = ukl("run", "no-such-image", "-v", f"{tmp_path}:/srv",
              "--disk", f"{tmp_path}/d.ext4::/srv/db")
    assert res.returncode == 2 and "/srv/db is inside /srv" in res.stderr, res.stderr
    assert not (tmp_path / "d.ext4").exists()


def test_kernel_without_9p_is_one_error_line(tmp_path: Path) -> None:
    image = fake_image(tmp_path, "img", build=tmp_path / "build", kernel_config=(
        "CONFIG_VIRTIO_PCI=y\nCONFIG_NET_9P=y\nCONFIG_NET_9P_VIRTIO=y\n"))
    res = ukl("run", str(image), "-v", f"{tmp_path}:/srv",
              env={"UKL_BUILD_DIR": str(tmp_path / "build")})
    assert res.returncode == 1
    assert res.stderr.startswith("ukl: error: -v: the kernel of flavour plain lacks "
                                 "CONFIG_9P_FS") and res.stderr.count("\n") == 1, res.stderr
    assert "cannot mount a shared folder over virtio-9p" in res.stderr
