"""Boot tests: the UKL base model (CONFIG_UNIKERNEL_LINUX) under QEMU TCG.

The same test program runs linked into the UKL kernel and, for reference,
as an ordinary process on the stock kernel built from the same tree: each
check must pass in both, and only the privilege level differs.
"""
from __future__ import annotations

import re

import pytest

from tests.conftest import (PROGRAMS, assert_suite_passed, build_image, fixture_name,
                            gdb_break_session, stop_run, ukl)
from ukl.matrix import BASE_CHECKS

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "300"
CHECKS = list(BASE_CHECKS)


def _run(image: str, *args: str, smp: int = 1) -> tuple[int, str]:
    res = ukl("run", image, "--smp", str(smp), "--mem", "1G", "--timeout", BOOT_TIMEOUT,
              "--append", "UKL_SUITE_ENV=from-cmdline", "--", *args)
    return res.returncode, res.stdout + res.stderr


def test_ukl_image_is_a_ukl_image(suite_ukl: str) -> None:
    from ukl.image import image
    img = image.find(suite_ukl)
    assert img.meta.mode == "ukl"
    assert img.meta.program == "/UKL"


def test_app_runs_at_cpl0_with_argv_env_and_status(suite_ukl: str) -> None:
    rc, out = _run(suite_ukl, "ids", "pipe")
    assert "ukl_suite: cpl=0 argc=3 argv0=/UKL env=from-cmdline" in out, out
    assert_suite_passed(out, ["ids", "pipe"])
    assert rc == 0, out


def test_same_program_on_stock_runs_at_cpl3(suite_stock: str) -> None:
    rc, out = _run(suite_stock, *CHECKS)
    assert "ukl_suite: cpl=3" in out, out
    assert_suite_passed(out, CHECKS)
    assert rc == 0, out


@pytest.mark.parametrize("check", CHECKS)
def test_base_model_check(suite_ukl: str, check: str) -> None:
    rc, out = _run(suite_ukl, check)
    assert "ukl_suite: cpl=0" in out, out
    assert_suite_passed(out, [check])
    assert rc == 0, out


@pytest.mark.parametrize("smp", [1, 2])
@pytest.mark.parametrize("kernel", ["ukl", "stock"])
def test_coroutine_stack_in_bss(request: pytest.FixtureRequest, kernel: str, smp: int) -> None:
    # Timer signals and a SIGSEGV on a stack in .bss (kernel memory for a
    # UKL application) are the application's: no oops, nothing beside the
    # stack changed.
    rc, out = _run(request.getfixturevalue(f"suite_{kernel}"), "bss-stack", smp=smp)
    assert_suite_passed(out, ["bss-stack"])
    assert rc == 0, out


@pytest.mark.parametrize("kernel", ["ukl", "stock"])
def test_clocks_without_the_tsc(request: pytest.FixtureRequest, kernel: str) -> None:
    # On the HPET the vDSO (at CPL0: the kernel's stand-ins, which are
    # application code) cannot compute the time itself and makes the system
    # call: every clock must still agree with it, stepped through or not.
    res = ukl("run", request.getfixturevalue(f"suite_{kernel}"), "--timeout", BOOT_TIMEOUT,
              "--append", "clocksource=hpet loglevel=7", "--", "clocks", "single-step")
    out = res.stdout + res.stderr
    assert "Switched to clocksource hpet" in out, out
    assert_suite_passed(out, ["clocks", "single-step"])
    assert res.returncode == 0, out


def test_single_step_on_stock(suite_stock: str) -> None:
    # The reference for the UKL case below: SIGTRAP per instruction, and a
    # single-stepped system call still answers.
    rc, out = _run(suite_stock, "single-step")
    assert_suite_passed(out, ["single-step"])
    assert rc == 0, out


def test_single_step_at_cpl0(suite_ukl: str) -> None:
    rc, out = _run(suite_ukl, "single-step")
    assert "WARNING:" not in out, out
    assert_suite_passed(out, ["single-step"])
    assert rc == 0, out


def test_threads_use_both_cpus_with_smp2(suite_ukl: str) -> None:
    rc, out = _run(suite_ukl, "threads", smp=2)
    assert_suite_passed(out, ["threads"])
    m = re.search(r"threads ran on (\d+) CPU", out)
    assert m and int(m.group(1)) == 2, out
    assert rc == 0, out


def test_whole_suite_in_one_boot(suite_ukl: str) -> None:
    # Checks in sequence in one process: state left by one (threads, signal
    # handlers, a forked child) must not break the next.
    rc, out = _run(suite_ukl, *CHECKS)
    assert_suite_passed(out, CHECKS)
    assert rc == 0, out


def test_exit_status_reaches_host(ukl_kernel) -> None:
    image = build_image("t-ukl-exit", str(PROGRAMS / "exit_with.c"))
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT, "--", "7", "two words")
    assert res.returncode == 7, res.stdout + res.stderr
    assert "exit_with: cpl=0 cpus=1 argc=3" in res.stdout
    assert "exit_with: argv[2]=<two words>" in res.stdout


def test_init_is_the_ukl_app(ukl_kernel) -> None:
    # init=/UKL (rdinit for an initramfs): the application is PID 1, with
    # the arguments after `--`; when it exits the kernel panics (125).
    image = build_image("t-ukl-exit", str(PROGRAMS / "exit_with.c"))
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT, "--append", "rdinit=/UKL",
              "--", "9")
    assert "exit_with: cpl=0 cpus=1 argc=2" in res.stdout, res.stdout + res.stderr
    assert res.returncode == 125, res.stdout + res.stderr


def test_cxx_runtime_at_cpl0(ukl_kernel) -> None:
    image = build_image("t-ukl-cxx", str(PROGRAMS / "cxx_suite.cc"))
    res = ukl("run", image, "--smp", "2", "--timeout", BOOT_TIMEOUT)
    out = res.stdout + res.stderr
    for check in ("static-ctor", "iostream-string", "std-thread", "exception"):
        assert f"ok {check}" in out, out
    assert "cxx_suite: all passed" in out, out
    assert res.returncode == 0, out


@pytest.fixture(scope="module")
def corun_peer(tmp_path_factory) -> str:
    """The ordinary (CPL3) process of the co-running test, as --file arg."""
    import subprocess
    out = tmp_path_factory.mktemp("peer") / "corun_peer"
    subprocess.run(["gcc", "-static", "-O2", "-o", str(out),
                    str(PROGRAMS / "corun_peer.c")], check=True)
    return f"{out}:/corun_peer"


# A busybox shell beside the application waits until it is listening, then
# starts the ordinary peer process.
PEER_HELPER = "until [ -e /tmp/corun.ready ]; do sleep 0.1; done; /corun_peer"


@pytest.mark.parametrize("kernel", ["ukl", "stock"])
def test_corunning_process_talks_to_app(request, corun_peer: str, kernel: str) -> None:
    request.getfixturevalue(fixture_name(kernel))
    image = build_image(f"t-{kernel}-corun", str(PROGRAMS / "corun_app.c"), "--kernel", kernel,
                        "--file", corun_peer, "--helper", PEER_HELPER)
    res = ukl("run", image, "--smp", "2", "--timeout", BOOT_TIMEOUT)
    out = res.stdout + res.stderr
    assert f"corun_app: cpl={0 if kernel == 'ukl' else 3}" in out, out
    assert "corun_peer: cpl=3" in out, out
    for what in ("fifo from the peer", "unix socket echo", "tcp loopback echo",
                 "SIGUSR1 from the peer"):
        assert f"corun_app: ok {what}" in out, out
    assert "corun_peer: done" in out, out
    assert res.returncode == 0, out


def test_smap_smep_stay_on(suite_ukl: str) -> None:
    # Not SMAP off: the app runs with EFLAGS.AC set, and both features stay
    # enabled in CR4 and in /proc/cpuinfo (for every process).
    rc, out = _run(suite_ukl, "smap")
    assert "ukl_suite: cr4.smap=1 cr4.smep=1 eflags.ac=1" in out, out
    assert_suite_passed(out, ["smap"])
    assert rc == 0, out


def test_makefile_project_builds_unchanged_and_boots(ukl_kernel) -> None:
    # `ukl build DIR`: the project's own Makefile, run with CC=ukl-cc (a
    # static library via ar, -lm), then linked into the kernel.
    image = build_image("t-ukl-wordstat", str(PROGRAMS.parent / "projects" / "wordstat"),
                        "--binary", "wordstat")
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT, "--", "a bb ccc dddd")
    assert "words=4 mean=2.50 sqrt=2.000" in res.stdout, res.stdout + res.stderr
    assert res.returncode == 0, res.stdout + res.stderr


def test_app_change_relinks_without_recompiling(ukl_kernel) -> None:
    # Only the final vmlinux link depends on the application: a new app
    # gives a bootable image with no kernel source recompiled, well within
    # the 60 s goal.
    import time
    from ukl.common import paths
    start = time.monotonic()
    image = build_image("t-ukl-relink", str(PROGRAMS / "exit_with.c"))
    elapsed = time.monotonic() - start
    log = (paths.logs_dir() / "kernel-ukl.log").read_text()
    compiled = [line for line in log.splitlines() if line.strip().startswith("CC ")
                and "version-timestamp" not in line]
    assert compiled == [], compiled
    assert elapsed < 60, f"app change -> image took {elapsed:.0f} s"
    res = ukl("run", image, "--timeout", BOOT_TIMEOUT, "--", "4")
    assert res.returncode == 4, res.stdout + res.stderr


def test_gdb_breaks_in_the_app_with_its_source(ukl_kernel) -> None:
    # The application is part of vmlinux: gdb on the image's vmlinux stops in
    # its main (the symbol is __ukl_main, DWARF still says main) and shows
    # the app's arguments and source line.
    image = build_image("t-ukl-exit", str(PROGRAMS / "exit_with.c"))
    gdb, status, out = gdb_break_session(image, "__ukl_main", "7")
    assert "Breakpoint 1, main (argc=2, argv=" in gdb.stdout, gdb.stdout + gdb.stderr
    assert "exit_with.c:" in gdb.stdout, gdb.stdout
    assert status == 7, out


def _free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_tcp_echo_server_reached_from_host(ukl_kernel) -> None:
    # `ukl run -p HOST:GUEST`: virtio-net on QEMU user networking; the host
    # talks to the UKL echo server through the forwarded port.
    import socket
    import subprocess
    import sys
    import time
    from tests.conftest import REPO
    image = build_image("t-ukl-echo", str(REPO / "examples" / "echo" / "echo.c"))
    port = _free_port()
    runner = subprocess.Popen(
        [sys.executable, str(REPO / "bin" / "ukl"), "run", image, "-p", f"{port}:7",
         "--timeout", BOOT_TIMEOUT], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        seen = ""
        while "echo: listening on port 7 (ring 0)" not in seen:
            line = runner.stdout.readline()
            assert line, f"runner ended before the server listened:\n{seen}"
            seen += line
        replies = []
        for msg in (b"hello from the host\n", b"x" * 3000):
            for _ in range(50):  # QEMU's forward can lag the guest's listen()
                try:
                    conn = socket.create_connection(("127.0.0.1", port), timeout=30)
                    break
                except OSError:
                    time.sleep(0.2)
            with conn:
                conn.sendall(msg)
                got = b""
                while len(got) < len(msg):
                    chunk = conn.recv(65536)
                    assert chunk, "connection closed early"
                    got += chunk
                replies.append(got)
        assert replies == [b"hello from the host\n", b"x" * 3000]
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"quit\n")
        out, _ = runner.communicate(timeout=120)
        assert "echo: done" in out, seen + out
        assert runner.returncode == 0, seen + out
    finally:
        stop_run(runner)
