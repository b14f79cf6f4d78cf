"""Boot tests of what a run keeps or shares with the host: `--disk` (an ext4
disk that outlives the guest, one guest at a time) and `-v` (a host folder
over virtio-9p, read-write or read-only). tests/apps/test_redis.py has
Redis saving its dataset on a disk and loading it in the next guest."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, REPO, build_image, stop_run, ukl

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "300"


@pytest.fixture(scope="module")
def files_image(ukl_kernel) -> str:
    """tests/programs/files_rw.c linked into the UKL kernel."""
    return build_image("t-files-rw", str(PROGRAMS / "files_rw.c"))


@pytest.fixture(scope="module")
def waiting_image(ukl_kernel) -> str:
    return build_image("t-wait-term", str(PROGRAMS / "wait_for_term.c"))


def test_a_disk_keeps_what_one_guest_wrote_for_the_next(
        files_image: str, tmp_path: Path) -> None:
    data = tmp_path / "d.ext4"
    one = ukl("run", files_image, "--timeout", BOOT_TIMEOUT, "--disk", f"{data}:16M:/srv/d",
              "--", "write:/srv/d/note:written by the first guest")
    assert one.returncode == 0, one.stdout + one.stderr
    assert "files_rw: write:/srv/d/note:written by the first guest: ok" in one.stdout
    two = ukl("run", files_image, "--timeout", BOOT_TIMEOUT, "--disk", f"{data}::/srv/d",
              "--", "read:/srv/d/note")
    assert two.returncode == 0, two.stdout + two.stderr
    assert "files_rw: read:/srv/d/note: <written by the first guest>" in two.stdout


def test_a_disk_serves_one_guest_at_a_time(waiting_image: str, tmp_path: Path) -> None:
    data = tmp_path / "d.ext4"
    first = subprocess.Popen(
        [sys.executable, str(REPO / "bin" / "ukl"), "run", waiting_image, "--timeout",
         BOOT_TIMEOUT, "--disk", f"{data}:16M"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        cwd=REPO, start_new_session=True)
    try:
        assert first.stdout is not None
        while "wait_for_term: cpl=0 waiting" not in first.stdout.readline():
            assert first.poll() is None, first.communicate()[0]
        second = ukl("run", waiting_image, "--disk", str(data))
        assert second.returncode == 2
        assert second.stderr == (f"ukl: error: --disk {data}: in use by another `ukl run`; "
                                 "a disk serves one guest at a time\n")
    finally:
        stop_run(first)


def test_a_file_that_is_not_ext4_is_refused_untouched(
        files_image: str, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"precious\n" * 100)
    before = notes.stat().st_mtime_ns
    res = ukl("run", files_image, "--disk", str(notes))
    assert res.returncode == 2
    assert res.stderr == (f"ukl: error: --disk {notes}: it is not an ext4 file system (no "
                          "ext2/3/4 superblock); give a new file name to have one made\n")
    assert notes.read_bytes() == b"precious\n" * 100 and notes.stat().st_mtime_ns == before


def test_a_shared_folder_read_write_and_read_only(files_image: str, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    (folder / "from-host").write_text("put there by the host")
    rw = ukl("run", files_image, "--timeout", BOOT_TIMEOUT, "-v", f"{folder}:/mnt/host",
             "--", "read:/mnt/host/from-host", "write:/mnt/host/from-guest:written in the guest")
    assert rw.returncode == 0, rw.stdout + rw.stderr
    assert "files_rw: read:/mnt/host/from-host: <put there by the host>" in rw.stdout
    assert (folder / "from-guest").read_text() == "written in the guest"
    ro = ukl("run", files_image, "--timeout", BOOT_TIMEOUT, "-v", f"{folder}:/mnt/host:ro",
             "--", "read:/mnt/host/from-guest", "write:/mnt/host/from-guest:again",
             "write:/mnt/host/new:x")
    assert ro.returncode == 2, ro.stdout + ro.stderr  # both writes failed
    assert "files_rw: read:/mnt/host/from-guest: <written in the guest>" in ro.stdout
    assert "files_rw: write:/mnt/host/new:x: failed: Read-only file system" in ro.stdout
    assert (folder / "from-guest").read_text() == "written in the guest"
    assert sorted(p.name for p in folder.iterdir()) == ["from-guest", "from-host"]


def test_static_buffers_move_through_a_shared_folder_and_o_direct(
        files_image: str, tmp_path: Path) -> None:
    """A transfer of more than a kilobyte over 9p pins the buffer's pages
    (virtio's zero-copy path), as O_DIRECT does: on UKL a static buffer is
    in the kernel image, and in a forked child in the child's own copy of
    the application's data (the parent's, still zeros, stays as it was)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    payload = os.urandom(200 * 1024)
    (folder / "in.bin").write_bytes(payload)
    data = tmp_path / "d.ext4"
    res = ukl("run", files_image, "--timeout", BOOT_TIMEOUT, "-v", f"{folder}:/mnt/host",
              "--disk", f"{data}:16M:/srv/d",
              "--", "childcopy:/mnt/host/in.bin:/mnt/host/child.bin",
              "copy:/mnt/host/in.bin:/mnt/host/out.bin", "direct:/srv/d/direct")
    assert res.returncode == 0, res.stdout + res.stderr
    digest = f"{len(payload)} bytes, digest {_fnv1a(payload):08x}"
    assert f"files_rw: copy:/mnt/host/in.bin:/mnt/host/out.bin: {digest}" in res.stdout
    assert f"files_rw: childcopy:/mnt/host/in.bin:/mnt/host/child.bin: {digest}" in res.stdout
    assert "files_rw: childcopy:/mnt/host/in.bin:/mnt/host/child.bin: the parent's buffer " \
        "is its own" in res.stdout
    assert "files_rw: direct:/srv/d/direct: 65536 bytes written and read back" in res.stdout
    assert (folder / "out.bin").read_bytes() == payload
    assert (folder / "child.bin").read_bytes() == payload


def _fnv1a(data: bytes) -> int:
    h = 2166136261
    for b in data:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def test_a_missing_host_folder_is_one_error_line(files_image: str, tmp_path: Path) -> None:
    res = ukl("run", files_image, "-v", f"{tmp_path / 'nowhere'}:/mnt/host")
    assert res.returncode == 2
    assert res.stderr == (f"ukl: error: -v {tmp_path / 'nowhere'}:/mnt/host: host folder "
                          f"{tmp_path / 'nowhere'} does not exist\n")
    assert not (tmp_path / "nowhere").exists()


def test_a_disk_the_guest_cannot_mount_stops_the_run(
        files_image: str, tmp_path: Path) -> None:
    """A disk the guest cannot mount (here: an incompatible feature its
    kernel does not know) must not let the program write into the
    initramfs as if it were the disk."""
    data = tmp_path / "ext.ext4"
    subprocess.run(["/usr/sbin/mkfs.ext4", "-q", "-F", "-E", "root_owner=0:0", str(data), "16M"],
                   check=True, capture_output=True)
    # Incompatible features: only one, which Linux does not know.
    subprocess.run(["/usr/sbin/debugfs", "-w", "-R", "ssv feature_incompat 0x80000000",
                    str(data)], check=True, capture_output=True)
    started = time.monotonic()
    res = ukl("run", files_image, "--timeout", BOOT_TIMEOUT, "--disk", str(data),
              "--", "write:/data/x:y")
    assert res.returncode == 125, res.stdout + res.stderr
    assert "ukl: error: the guest's init stopped the run: cannot mount the disk /dev/vda " \
        "(ext4) at /data" in res.stderr, res.stderr
    assert "files_rw:" not in res.stdout and time.monotonic() - started < 290
