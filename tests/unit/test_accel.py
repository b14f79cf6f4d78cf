"""`ukl run --accel`: which accelerator auto picks, with a fake probe for
each outcome, and how its verdict is cached."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.common.errors import UklError
from ukl.qemu import accel
from ukl.qemu import command as qemu


def _opts(**kw: object) -> qemu.RunOptions:
    return qemu.RunOptions(kernel=Path("/k/vmlinux"), initramfs=Path("/k/initramfs.cpio"),
                           **kw)  # type: ignore[arg-type]


class FakeProbe:
    """Answers like probe_boot and counts its calls."""

    def __init__(self, verdict: accel.Verdict) -> None:
        self.verdict = verdict
        self.calls: list[tuple[Path, Path]] = []

    def __call__(self, kernel: Path, initramfs: Path) -> accel.Verdict:
        self.calls.append((kernel, initramfs))
        return self.verdict


@pytest.fixture
def kvm(tmp_path: Path) -> Path:
    """A stand-in for /dev/kvm that this user can open."""
    dev = tmp_path / "kvm"
    dev.write_bytes(b"")
    return dev


@pytest.fixture(autouse=True)
def qemu_found(monkeypatch: pytest.MonkeyPatch) -> None:
    # choose() probes only when QEMU exists; the fake probe needs none.
    monkeypatch.setattr(accel.shutil, "which", lambda name: f"/usr/bin/{name}")


def test_auto_takes_kvm_when_the_probe_reaches_init(tmp_path: Path, kvm: Path) -> None:
    probe = FakeProbe(accel.Verdict(True))
    cache = tmp_path / "probe.json"
    choice = accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache)
    assert choice == accel.Choice("kvm")
    assert probe.calls == [(Path("/k/vmlinux"), Path("/k/initramfs.cpio"))]
    # The verdict is kept: the next run does not probe.
    assert accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache).accel == "kvm"
    assert len(probe.calls) == 1


def test_auto_falls_back_to_tcg_with_the_reason(tmp_path: Path, kvm: Path) -> None:
    probe = FakeProbe(accel.Verdict(False, "a KVM probe boot did not reach init in 20 s"))
    cache = tmp_path / "probe.json"
    choice = accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache)
    assert choice == accel.Choice("tcg", "a KVM probe boot did not reach init in 20 s")
    again = accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache)
    assert again.accel == "tcg" and len(probe.calls) == 1
    assert again.why_not_kvm.startswith("a KVM probe boot did not reach init in 20 s (verdict")
    assert str(cache) in again.why_not_kvm


def test_cached_verdict_expires_and_is_per_host(tmp_path: Path, kvm: Path) -> None:
    probe = FakeProbe(accel.Verdict(False, "no"))
    cache = tmp_path / "probe.json"
    accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache)
    data = json.loads(cache.read_text())
    assert data["key"] == accel.host_key(kvm) and "boot=" in data["key"]
    data["time"] -= accel.VERDICT_TTL_S + 1
    cache.write_text(json.dumps(data))
    accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache)
    assert len(probe.calls) == 2
    # Another host (or boot): another key.
    cache.write_text(json.dumps({**json.loads(cache.read_text()), "key": "elsewhere"}))
    accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache)
    assert len(probe.calls) == 3
    cache.write_text("not json")
    accel.choose("auto", _opts(), probe=probe, device=kvm, cache=cache)
    assert len(probe.calls) == 4


@pytest.mark.parametrize("tcg_only", [{"icount": True}, {"gdb": True}, {"plugin": "p.so"}])
def test_what_needs_tcg_gets_it_without_a_probe(tmp_path: Path, kvm: Path,
                                                tcg_only: dict[str, object]) -> None:
    probe = FakeProbe(accel.Verdict(True))
    choice = accel.choose("auto", _opts(**tcg_only), probe=probe, device=kvm,
                          cache=tmp_path / "c.json")
    assert choice == accel.Choice("tcg") and not probe.calls


def test_named_accelerators_never_probe(tmp_path: Path, kvm: Path) -> None:
    probe = FakeProbe(accel.Verdict(True))
    for name in ("tcg", "kvm"):
        assert accel.choose(name, _opts(), probe=probe, device=kvm,
                            cache=tmp_path / "c.json") == accel.Choice(name)
    assert not probe.calls
    with pytest.raises(UklError, match="--accel hvf: use one of auto, kvm, tcg"):
        accel.choose("hvf", _opts(), probe=probe, device=kvm)


def test_no_kvm_device_means_tcg(tmp_path: Path) -> None:
    probe = FakeProbe(accel.Verdict(True))
    choice = accel.choose("auto", _opts(), probe=probe, device=tmp_path / "none",
                          cache=tmp_path / "c.json")
    assert choice == accel.Choice("tcg", f"there is no {tmp_path / 'none'}")
    assert not probe.calls


def test_bad_accel_is_one_error_line() -> None:
    res = ukl("run", "no-such-image", "--accel", "fast")
    assert res.returncode == 2
    assert res.stderr == "ukl: error: --accel fast: use one of auto, kvm, tcg\n"
    res = ukl("run", "no-such-image", env={"UKL_ACCEL": "fast"})
    assert res.stderr == "ukl: error: UKL_ACCEL=fast: use one of auto, kvm, tcg\n"
