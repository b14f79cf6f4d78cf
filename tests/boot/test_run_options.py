"""Boot tests of `ukl run`'s options for how a program runs: the
accelerator (--accel auto's KVM probe and its fallback to TCG), and the
program's arguments and environment (-e), which travel in an archive
appended to the initramfs rather than on the kernel command line."""
from __future__ import annotations

import json
import re

import pytest

from tests.conftest import PROGRAMS, build_image, ukl
from ukl.common import paths
from ukl.qemu import accel

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "300"
FNV_OFFSET = 0xCBF29CE484222325


def _fnv1a(data: bytes, h: int = FNV_OFFSET) -> int:
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & (2**64 - 1)
    return h


@pytest.fixture(scope="module")
def sum_images(ukl_kernel, stock_kernel) -> dict[str, str]:
    """tests/programs/args_env_sum.c linked into the UKL kernel, and as an
    ordinary process on stock."""
    src = str(PROGRAMS / "args_env_sum.c")
    return {"ukl": build_image("t-args-env-ukl", src),
            "stock": build_image("t-args-env-stock", src, "--kernel", "stock")}


def _big_args_and_env() -> tuple[list[str], list[str]]:
    """Well past what the kernel command line could carry (2,047 bytes, 31
    init arguments, no '"' or newline): 2,000 arguments and 64 KiB of
    environment, with the characters a shell or the kernel would mangle."""
    args = ["", "two words", 'say "hi"', "it's", "line\nbreak", "$HOME", "*", "--", "-e"]
    args += [f"arg{i:04d}" for i in range(2000 - len(args))]
    env = ["UKLT_SPECIAL=a \"b\" 'c' $d\ne", "UKLT_EMPTY="]
    env += [f"UKLT_{i:02d}=" + chr(ord("a") + i % 26) * 1024 for i in range(64)]
    assert sum(len(e) for e in env) > 64 * 1024
    return args, env


@pytest.mark.parametrize("kernel, cpl", [("ukl", 0), ("stock", 3)])
def test_64k_of_environment_and_2000_arguments_reach_the_program(
        sum_images: dict[str, str], kernel: str, cpl: int) -> None:
    args, env = _big_args_and_env()
    res = ukl("run", sum_images[kernel], "--timeout", BOOT_TIMEOUT,
              *[w for e in env for w in ("-e", e)], "--", *args)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    joined = b"".join(a.encode() + b"\0" for a in args)
    assert (f"args_env_sum: cpl={cpl} args={len(args)} bytes={len(joined)} "
            f"fnv={_fnv1a(joined):016x}") in res.stdout, res.stdout[-3000:]
    entries = [e.encode() + b"\0" for e in env]
    env_sum = sum(_fnv1a(e) for e in entries) & (2**64 - 1)
    assert (f"args_env_sum: env={len(env)} bytes={sum(map(len, entries))} "
            f"sum={env_sum:016x}") in res.stdout, res.stdout[-3000:]
    # Nothing of it went on the kernel command line.
    log = (paths.logs_dir() / f"run-{sum_images[kernel]}.log").read_text(errors="replace")
    assert "arg1999" not in log.splitlines()[0] and "UKLT_" not in log.splitlines()[0]


def test_run_env_overrides_and_image_keeps_no_run_state(sum_images: dict[str, str]) -> None:
    image = sum_images["stock"]
    one = ukl("run", image, "--timeout", BOOT_TIMEOUT, "-e", "UKLT_X=1", "-e", "UKLT_X=2")
    assert one.returncode == 0, one.stdout + one.stderr
    want = _fnv1a(b"UKLT_X=2\0")
    assert f"env=1 bytes=9 sum={want:016x}" in one.stdout, one.stdout
    # The next run without -e or arguments sees neither.
    two = ukl("run", image, "--timeout", BOOT_TIMEOUT)
    assert two.returncode == 0, two.stdout + two.stderr
    assert "args=0 bytes=0" in two.stdout and "env=0 bytes=0" in two.stdout, two.stdout


@pytest.fixture(scope="module")
def exit_image(stock_kernel) -> str:
    return build_image("t-run-exit", str(PROGRAMS / "exit_with.c"), "--kernel", "stock")


def _accel_of_last_run(image: str) -> str:
    first = (paths.logs_dir() / f"run-{image}.log").read_text().splitlines()[0]
    found = re.search(r" -accel (\w+) ", first)
    assert found, first
    return found.group(1)


def test_accel_auto_probes_once_and_falls_back_to_tcg(exit_image: str) -> None:
    """The one test that pays for the KVM probe. On a host whose KVM works
    the run uses it; where it does not (this project's machine: /dev/kvm
    exists but the guest kernel fails or crawls under it) the run says why
    and uses TCG. Either way the next run uses the cached verdict."""
    accel.cache_file().unlink(missing_ok=True)
    res = ukl("run", exit_image, "--accel", "auto", "--timeout", BOOT_TIMEOUT, "--", "3")
    assert res.returncode == 3, res.stdout + res.stderr
    verdict = json.loads(accel.cache_file().read_text())
    if verdict["works"]:
        assert _accel_of_last_run(exit_image) == "kvm"
        assert "ukl: using TCG" not in res.stderr
    else:
        assert _accel_of_last_run(exit_image) == "tcg"
        line = f"ukl: using TCG: {verdict['reason']}\n"
        assert line in res.stderr and verdict["reason"].startswith("a KVM probe boot")
    again = ukl("run", exit_image, "--accel", "auto", "--timeout", BOOT_TIMEOUT, "--", "4")
    assert again.returncode == 4, again.stdout + again.stderr
    assert json.loads(accel.cache_file().read_text()) == verdict  # not probed again
    if not verdict["works"]:
        assert f"ukl: using TCG: {verdict['reason']} (verdict of" in again.stderr


def test_what_needs_tcg_never_probes(exit_image: str) -> None:
    accel.cache_file().unlink(missing_ok=True)
    res = ukl("run", exit_image, "--accel", "auto", "--icount", "--timeout", BOOT_TIMEOUT,
              "--", "0")
    assert res.returncode == 0, res.stdout + res.stderr
    assert not accel.cache_file().exists() and "using TCG" not in res.stderr
    assert _accel_of_last_run(exit_image) == "tcg"
    bad = ukl("run", exit_image, "--accel", "kvm", "--icount")
    assert bad.returncode == 2
    assert bad.stderr == ("ukl: error: --accel kvm cannot be combined with --icount: they "
                          "need TCG (use --accel tcg or auto)\n")
