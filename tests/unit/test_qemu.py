"""QEMU command line, kernel command line and status decoding."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.common.errors import UklError
from ukl.qemu import command as qemu
from ukl.qemu.run import decode_status


def _opts(**kw) -> qemu.RunOptions:
    return qemu.RunOptions(kernel=Path("/k/vmlinux"), initramfs=Path("/k/initramfs.cpio"), **kw)


def _arg(cmd: list[str], flag: str) -> str:
    return cmd[cmd.index(flag) + 1]


def test_defaults_tcg_serial_debug_exit() -> None:
    cmd = qemu.command(_opts())
    assert cmd[0] == "qemu-system-x86_64"
    assert _arg(cmd, "-accel") == "tcg"
    assert _arg(cmd, "-serial") == "stdio"
    assert _arg(cmd, "-kernel") == "/k/vmlinux"
    assert _arg(cmd, "-initrd") == "/k/initramfs.cpio"
    assert "isa-debug-exit,iobase=0xf4,iosize=0x01" in cmd
    assert "-icount" not in cmd and "-S" not in cmd and "-singlestep" not in cmd


def test_one_insn_per_tb() -> None:
    assert "-singlestep" in qemu.command(_opts(one_insn_per_tb=True))


def test_icount_smp_mem_gdb() -> None:
    cmd = qemu.command(_opts(icount=True, smp=2, mem="1G", gdb=True))
    assert _arg(cmd, "-icount") == "shift=0,sleep=off"
    assert _arg(cmd, "-smp") == "2"
    assert _arg(cmd, "-m") == "1G"
    assert _arg(cmd, "-gdb") == "tcp::1234" and "-S" in cmd
    # The guest's randomness and clock stay the host's unless asked.
    assert "-seed" not in cmd and "-rtc" not in cmd


def test_repeatable_fixes_the_guests_seeds_under_icount() -> None:
    cmd = qemu.command(_opts(icount=True, repeatable=True))
    assert _arg(cmd, "-seed") == "1"
    assert _arg(cmd, "-rtc") == "base=2026-01-01T00:00:00,clock=vm"


@pytest.mark.parametrize("mem", ["", "0", "lots", "1T", "-5M"])
def test_bad_mem_rejected(mem: str) -> None:
    with pytest.raises(UklError, match="--mem"):
        qemu.command(_opts(mem=mem))


def test_cpu_model_default_and_named() -> None:
    assert _arg(qemu.command(_opts()), "-cpu") == "max"
    assert _arg(qemu.command(_opts(cpu="Skylake-Client,+md-clear")), "-cpu") == \
        "Skylake-Client,+md-clear"


@pytest.mark.parametrize("cpu", ["", "max -enable-kvm", "EPYC;reboot", ",max"])
def test_bad_cpu_rejected(cpu: str) -> None:
    with pytest.raises(UklError, match="--cpu"):
        qemu.command(_opts(cpu=cpu))


def test_bad_smp_rejected() -> None:
    with pytest.raises(UklError, match="--smp"):
        qemu.command(_opts(smp=0))


def test_cmdline_passes_program_args_after_dashes() -> None:
    line = qemu.kernel_cmdline(_opts(append=["loglevel=7"], program_args=["a", "b c", "x=y"]))
    assert line == 'console=ttyS0 panic=-1 quiet loglevel=5 loglevel=7 -- a "b c" x=y'


def test_cmdline_without_args_has_no_dashes() -> None:
    assert "--" not in qemu.kernel_cmdline(_opts())


@pytest.mark.parametrize("bad", ["", 'say "hi"', "two\nlines"])
def test_unpassable_args_rejected(bad: str) -> None:
    with pytest.raises(UklError, match="cannot be passed"):
        qemu.kernel_cmdline(_opts(program_args=[bad]))


def test_too_many_args_rejected() -> None:
    with pytest.raises(UklError, match="too many program arguments"):
        qemu.kernel_cmdline(_opts(program_args=["x"] * 31))


def test_overlong_cmdline_rejected() -> None:
    with pytest.raises(UklError, match="command line"):
        qemu.kernel_cmdline(_opts(program_args=["y" * 2100]))


@pytest.mark.parametrize("status", [0, 1, 3, 127, 128, 200, 255])
def test_decode_status_both_channels_agree(status: int) -> None:
    console = b"boot...\nukl-init: exit status %d\n" % status
    assert decode_status(((status & 127) << 1) | 1, console) == status


def test_decode_status_rejects_disagreement_and_missing_line() -> None:
    assert decode_status(7, b"ukl-init: exit status 4\n") is None  # port said 3
    assert decode_status(1, b"qemu: could not load kernel\n") is None  # QEMU's own error
    assert decode_status(0, b"ukl-init: exit status 0\n") is None  # reboot, not debug-exit


def test_port_forwards_add_a_virtio_nic() -> None:
    base = qemu.command(_opts())
    assert base[base.index("-nic") + 1] == "none"
    cmd = qemu.command(_opts(forwards=[qemu.parse_forward("8080:80"),
                                       qemu.parse_forward("6379:6379")]))
    assert cmd[cmd.index("-nic") + 1] == (
        "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:8080-:80,"
        "hostfwd=tcp:127.0.0.1:6379-:6379")


@pytest.mark.parametrize("spec", ["80", "a:b", "0:80", "8080:70000", "1:2:3"])
def test_bad_port_forward_is_refused(spec: str) -> None:
    with pytest.raises(UklError, match="use HOST:GUEST"):
        qemu.parse_forward(spec)


def test_decode_status_of_a_program_that_replaced_init() -> None:
    # UKL_NSS: init.sh execs the program; the kernel's panic carries its exit.
    replaced = b"ukl-init: UKL_NSS: /UKL replaces init; no helper processes\n"
    panic = b"Kernel panic - not syncing: Attempted to kill init! exitcode=0x%08x\n"
    assert decode_status(0, replaced + panic % (3 << 8)) == 3
    assert decode_status(0, replaced + panic % 0) == 0
    assert decode_status(0, replaced + panic % 11) == 128 + 11  # SIGSEGV
    assert decode_status(0, replaced) is None  # no panic: it never ended
    # Without the marker, an init panic is not the program's status.
    assert decode_status(0, panic % (3 << 8)) is None


def test_cpu_model_must_be_one_qemu_has() -> None:
    from ukl.qemu import models
    known = frozenset({"max", "EPYC", "Skylake-Client"})
    assert models.check_known("EPYC,+md-clear", known) == "EPYC,+md-clear"
    with pytest.raises(UklError, match="no CPU model 'Nosuch'"):
        models.check_known("Nosuch,+x", known)
    with pytest.raises(UklError, match="--cpu"):
        models.check_known("max -enable-kvm", known)


def test_qemu_lists_the_models_the_tests_use() -> None:
    from ukl.qemu import models
    known = models.known_models()
    assert known is not None and {"max", "EPYC", "Skylake-Client"} <= known


def test_unknown_cpu_model_is_one_error_line() -> None:
    res = ukl("run", "no-such-image-either", "--cpu", "nosuch")
    assert res.returncode != 0
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert res.stderr.startswith("ukl: error: --cpu nosuch: this QEMU has no CPU model"), \
        res.stderr


def test_vulnerabilities_and_missing_mitigations() -> None:
    from ukl.qemu import models
    console = ("boot\nvuln meltdown: Mitigation: PTI\nvuln mds: Mitigation: Clear CPU buffers; "
               "SMT Host state unknown\nvuln spectre_v2: Mitigation: Retpolines, IBPB\n")
    vulns = models.parse_vulnerabilities(console)
    assert vulns["meltdown"] == "Mitigation: PTI"
    assert models.vendor_of("Skylake-Client") == "intel" and models.vendor_of("max") is None
    assert models.missing_mitigations(vulns, "intel") == [
        "indirect_target_selection: 'absent' lacks 'Mitigation'"]
    assert models.missing_mitigations({**vulns, "indirect_target_selection": "Mitigation: x"},
                                      "intel") == []


def test_accel_kvm_and_tcg_command_lines() -> None:
    assert _arg(qemu.command(_opts(accel="tcg")), "-accel") == "tcg"
    cmd = qemu.command(_opts(accel="kvm", smp=2, forwards=[(8080, 80)]))
    assert _arg(cmd, "-accel") == "kvm"
    # Nothing else changes with the accelerator.
    assert cmd[cmd.index("-cpu"):] == \
        qemu.command(_opts(accel="tcg", smp=2, forwards=[(8080, 80)]))[cmd.index("-cpu"):]


@pytest.mark.parametrize("tcg_only, flag", [({"icount": True}, "--icount"),
                                            ({"gdb": True}, "--gdb"),
                                            ({"plugin": "/p.so,out=x"}, "--count"),
                                            ({"one_insn_per_tb": True}, "--one-insn-per-tb")])
def test_kvm_refused_with_what_needs_tcg(tcg_only: dict[str, object], flag: str) -> None:
    with pytest.raises(UklError, match=f"--accel kvm cannot be combined with {flag}"):
        qemu.command(_opts(accel="kvm", **tcg_only))
    assert _arg(qemu.command(_opts(accel="tcg", **tcg_only)), "-accel") == "tcg"


def test_unknown_accel_refused() -> None:
    with pytest.raises(UklError, match="accelerator 'hvf'"):
        qemu.command(_opts(accel="hvf"))


def test_kvm_probe_command_line() -> None:
    from ukl.qemu import accel
    cmd = accel.probe_command(Path("/k/vmlinux"), Path("/k/initramfs.cpio"))
    assert _arg(cmd, "-accel") == "kvm"
    append = _arg(cmd, "-append")
    # busybox replaces init and prints the marker; the command line holds
    # only the arithmetic that makes it, so the kernel echoing its command
    # line cannot fake a success.
    assert "rdinit=/bin/busybox -- sh -c" in append
    assert accel.PROBE_MARKER.decode() not in append
    assert "poweroff -f" in append
