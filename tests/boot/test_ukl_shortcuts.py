"""Boot tests: UKL shortcuts (TCP send/recv straight into TCP, pinned
buffers) and run-to-completion, all from <ukl.h>, under QEMU TCG.

The program checks itself inside the guest (tests/programs/shortcuts.c); the
echo test checks the TCP shortcut from outside, through a forwarded port.
Kernels without the options must refuse every call with the documented
error, stock included.
"""
from __future__ import annotations

import pytest

from tests.apps.guest import booted, connect, read_until
from tests.boot.test_ukl_boot import BOOT_TIMEOUT
from tests.conftest import PROGRAMS, assert_suite_passed, build_image, fixture_name, ukl
from ukl.bench import report

pytestmark = pytest.mark.boot
SHORTCUTS = str(PROGRAMS / "shortcuts.c")
ECHO_PORT = 17007


def test_shortcuts_pinned_buffers_and_run_to_completion(ukl_ret_byp_kernel) -> None:
    image = build_image("t-sc", SHORTCUTS, "--kernel", "ukl-ret-byp")
    # One CPU: run-to-completion is checked against a busy process on it.
    res = ukl("run", image, "--smp", "1", "--timeout", BOOT_TIMEOUT, "--", "checks")
    out = res.stdout + res.stderr
    assert "shortcuts: cpl=0" in out, out
    assert_suite_passed(out, ["tcp", "refusals", "pinned", "pinned-copies", "rtc"],
                        program="shortcuts")
    assert res.returncode == 0, out


@pytest.mark.parametrize("flavour", ["ukl", "stock"])
def test_kernels_without_the_options_refuse_them(flavour: str, request) -> None:
    request.getfixturevalue(fixture_name(flavour))
    image = build_image(f"t-sc-{flavour}", SHORTCUTS, "--kernel", flavour)
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT, "--", "unsupported")
    out = res.stdout + res.stderr
    assert f"shortcuts: cpl={0 if flavour == 'ukl' else 3}" in out, out
    assert "shortcuts: unsupported as expected" in out and res.returncode == 0, out


def test_tcp_echo_through_the_shortcut_from_the_host(ukl_ret_byp_kernel) -> None:
    image = build_image("t-sc-echo", SHORTCUTS, "--kernel", "ukl-ret-byp")
    # A short one and one larger than the server's 16 kB pinned buffer.
    messages = [b"hello through tcp_recvmsg <end>", bytes(range(256)) * 400 + b"<end>"]
    with booted(image, ECHO_PORT, 7, "echo", "7") as runner:
        seen = ""
        while "shortcuts: echo listening" not in seen:
            line = runner.stdout.readline()
            assert line, f"the guest ended before its server listened:\n{seen}"
            seen += line
        for msg in messages:
            with connect(ECHO_PORT, lambda c: True) as conn:
                conn.sendall(msg)
                assert read_until(conn, b"<end>") == msg
        with connect(ECHO_PORT, lambda c: True) as conn:
            conn.sendall(b"quit\n")
        out, _ = runner.communicate(timeout=120)
        out = seen + out
    total = sum(map(len, messages))
    assert "shortcuts: echo listening on port 7 (ring 0)" in out, out
    assert f"shortcuts: echo done, {total} bytes through ukl_tcp_recv/ukl_tcp_send" in out, out
    assert runner.returncode == 0, out


def test_tcp_shortcut_cuts_instructions(tmp_path, ukl_byp_kernel, ukl_ret_byp_kernel) -> None:
    # Exact instruction counts (icount): both configs bypass entry/exit work,
    # only ukl-ret-byp sends through the shortcut (lebench --shortcuts).
    res = ukl("bench", "--quick", "--name", "sc", "--configs", "ukl-byp,ukl-ret-byp", "tcp",
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    rows = report.read_csv(tmp_path / "sc" / "results.csv")
    for op in ("send-tcp", "recv-tcp"):
        one_byte = {r.config: r.median for r in rows if r.op == op and r.size == 1}
        assert one_byte["ukl-ret-byp"] < one_byte["ukl-byp"], (op, one_byte)
