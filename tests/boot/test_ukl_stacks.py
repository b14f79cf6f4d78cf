"""Boot tests: the stack options, under QEMU TCG. UKL_PF_SS / UKL_PF_DF (how
a page fault whose frame cannot go on the application stack is survived) and
UKL_NSS_PS (app threads on pinned kernel-half stacks, system calls on them
without a stack switch, its restrictions enforced) and UKL_NSS (system calls
on the app's own user-half stack; the app's address space the only one)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.boot.test_ukl_boot import BOOT_TIMEOUT, CHECKS, _run
from tests.conftest import GUEST, PROGRAMS, assert_suite_passed, build_image, ukl
from ukl.matrix import suite_checks

pytestmark = pytest.mark.boot

SUITE = str(GUEST / "ukl_suite.c")


@pytest.fixture(scope="module")
def suite_pfdf(ukl_pf_df_kernel) -> str:
    return build_image("t-pfdf-suite", SUITE, "--kernel", "ukl-pf-df")


@pytest.fixture(scope="module")
def suite_nss_ps(ukl_nss_ps_kernel) -> str:
    return build_image("t-nss-ps-suite", SUITE, "--kernel", "ukl-nss-ps")


@pytest.fixture(scope="module")
def suite_nss(ukl_nss_kernel) -> str:
    return build_image("t-nss-suite", SUITE, "--kernel", "ukl-nss")


@pytest.fixture(scope="module")
def nss_stack_guard(ukl_nss_kernel: Path) -> str:
    return build_image("t-nss-stack-guard", str(PROGRAMS / "nss_stack_guard.c"),
                       "--kernel", "ukl-nss")


def test_pf_df_base_model_suite_and_reroutes(suite_pfdf: str) -> None:
    # Stack growth (7.5 MiB recursion, new thread stacks) and copy on write
    # after fork all fault with the frame push failing: each must come back
    # from #DF as the page fault it is, on 2 CPUs with 8 threads.
    rc, out = _run(suite_pfdf, *CHECKS, "pf-df", smp=2)
    assert "ukl_suite: cpl=0" in out, out
    assert_suite_passed(out, [*CHECKS, "pf-df"])
    m = re.search(r"pf_df_reroutes (\d+) -> (\d+)", out)
    assert m and int(m.group(2)) > int(m.group(1)) > 0, out
    assert rc == 0, out


def test_pf_ss_is_the_default_and_has_no_reroutes(suite_ukl: str) -> None:
    # The base model uses UKL_PF_SS: no #DF route exists to count.
    # Stack growth works there too (the #PF IST stack), and the pf-df
    # check can fail.
    rc, out = _run(suite_ukl, "stack", "pf-df")
    assert "ukl_suite: ok stack\n" in out, out
    assert "FAIL pf-df: no /sys/module/ukl/parameters/pf_df_reroutes" in out, out
    assert rc == 1, out


def test_nss_ps_suite_and_restrictions(suite_nss_ps: str) -> None:
    # The base-model suite on 2 CPUs, without the 7.5 MiB recursion and the
    # fork a fixed-size pinned stack rules out, plus: both stacks in the
    # kernel half with kernel frames below the stack pointer after a sleep;
    # fork refused with EBUSY and a warning while vfork and posix_spawn
    # work; thread creation beyond ukl.ps_max_kb fails with EAGAIN.
    checks = suite_checks("ukl+nss_ps")
    rc, out = _run(suite_nss_ps, *checks, smp=2)
    assert "ukl_suite: cpl=0" in out, out
    assert_suite_passed(out, checks)
    m = re.search(r"a 1 us sleep changed (\d+) bytes below the stack pointer", out)
    assert m and int(m.group(1)) > 0, out
    assert "2 of 3 threads created, then error 11" in out, out
    assert rc == 0, out


def test_nss_ps_stack_overflow_kills_the_app_not_the_kernel(suite_nss_ps: str) -> None:
    # 1 KiB frames until the fixed 256 KiB stack runs out: the guard page
    # turns it into SIGSEGV for the app (status 128 + 11 reaches init).
    rc, out = _run(suite_nss_ps, "--overflow")
    assert "ukl-init: exit status 139" in out, out
    assert "Kernel panic" not in out and "Oops" not in out, out


def test_nss_ps_calls_near_the_bottom_leave_the_pinned_stack(suite_nss_ps: str) -> None:
    # The same recursion making a poll() at every level: near the bottom of
    # the pinned stack the calls must move to the task stack, so that only
    # the app's own frames reach the guard page (kernel 0028; before it the
    # kernel's frames did: an oops in entry code).
    rc, out = _run(suite_nss_ps, "--overflow-calling")
    assert "ukl-init: exit status 139" in out, out
    assert "Kernel panic" not in out and "Oops" not in out, out


def test_nss_ps_failed_thread_creation_keeps_the_creators_stack(suite_nss_ps: str) -> None:
    # 20 thread creations refused by RLIMIT_NPROC (as nobody) on 2 CPUs:
    # the creator's pinned stack must stay its own (kernel 0029; before it
    # each failed clone freed it: an oops on the stack, found by the fuzzer).
    rc, out = _run(suite_nss_ps, "nss-ps-clone-fail", smp=2)
    assert_suite_passed(out, ["nss-ps-clone-fail"])
    assert rc == 0, out


def test_base_model_switches_stacks_for_system_calls(suite_ukl: str) -> None:
    # The nss-ps-stack check can fail: the base model's stacks are in the
    # user half and no kernel frame lands below the stack pointer.
    rc, out = _run(suite_ukl, "nss-ps-stack")
    assert "a 1 us sleep changed 0 bytes below the stack pointer" in out, out
    assert "FAIL nss-ps-stack" in out and rc == 1, out


def test_nss_suite_and_restrictions(suite_nss: str) -> None:
    # The program replaces init (its status comes from the kernel's "kill
    # init" panic). The base-model suite on 2 CPUs without fork, other
    # programs and SMAP, plus: kernel frames below the stack pointer of the
    # main thread and of a thread (user half), none on the alternate signal
    # stack (the call takes the task stack there); a timer interrupt on
    # another CPU in init_mm waking a read on the app's stack, then on a
    # thread stack alone in a 512 GiB slot whose copy init_mm drops once
    # the stack is unmapped; fork, the exec of
    # /bin/true and of a second app refused with EBUSY and warnings.
    checks = suite_checks("ukl+nss")
    rc, out = _run(suite_nss, *checks, smp=2)
    assert "ukl-init: UKL_NSS: /UKL replaces init" in out, out
    assert "ukl_suite: cpl=0" in out, out
    assert_suite_passed(out, checks)
    m = re.search(r"changed (\d+) bytes below the stack pointer, (\d+) in a thread, "
                  r"(-?\d+) on the signal stack \(fewest of up to 8 tries\); cr4.smap=0", out)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) > 0 and m.group(3) == "0", out
    m = re.search(r"nss_pgd_syncs (\d+) before, (\d+) after, (\d+) after the far stack; "
                  r"nss_pgd_drops (\d+) -> (\d+)", out)
    assert m, out
    syncs0, syncs1, syncs2, drops0, drops2 = map(int, m.groups())
    assert 0 < syncs1 < syncs2 and drops2 > drops0, out
    assert "posix_spawn /bin/true: error 16" in out, out
    assert "Oops" not in out and "BUG:" not in out, out
    assert rc == 0, out


def test_nss_app_killed_by_a_signal_reports_it(suite_nss: str) -> None:
    # 1 KiB frames until the 8 MiB stack limit: SIGSEGV kills the app, which
    # is init, and the host still gets 128 + 11.
    rc, out = _run(suite_nss, "--overflow")
    assert "Attempted to kill init! exitcode=0x0000000b" in out, out
    assert "Oops" not in out, out
    assert rc == 139, out


# tests/programs/nss_stack_guard.c: what another thread (or the caller) tries
# on the stack a read() sleeps on.
NSS_STACK_OPS = ["munmap", "mprotect", "madvise", "mremap", "mmap", "brk", "file", "self",
                 "race"]


@pytest.mark.parametrize("smp", [1, 2])
def test_nss_no_thread_takes_a_stack_from_under_a_call(nss_stack_guard: str, smp: int) -> None:
    # A thread sleeps in read() on a pipe; another unmaps, protects,
    # discards (madvise, process_madvise), moves (mremap) or maps over its
    # stack, shrinks the heap it is in, or truncates or punches a hole in
    # the file it is a mapping of; a thread does the same to the
    # stack under its own call. Each must fail with EBUSY while the same
    # change to the bottom of that stack works; the read must then return
    # what was written with the reader's frame intact; exit with a reader
    # still blocked must be clean. Before kernel 0035 the first change took
    # the read's frames away: an oops when the write woke it.
    res = ukl("run", nss_stack_guard, "--smp", str(smp), "--timeout", BOOT_TIMEOUT)
    out = res.stdout + res.stderr
    assert_suite_passed(out, NSS_STACK_OPS, program="nss_stack_guard")
    assert re.search(r"UKL: UKL_NSS: change of \[0x[0-9a-f]+, 0x[0-9a-f]+\) refused", out), out
    assert res.returncode == 0, out


@pytest.mark.parametrize("smp", [1, 2])
def test_nss_direct_io_keeps_a_stack_under_a_call(nss_stack_guard: str, smp: int,
                                                  tmp_path: Path) -> None:
    # A thread sleeps in read() on a stack in a shared mapping of a file on
    # an ext4 disk; the main thread writes the file with O_DIRECT. Far
    # below the call the written page must leave the page cache (the I/O
    # was direct); over the call's frames the pages must stay mapped and
    # cached (the write goes through the page cache) and the read must
    # return intact. Before kernels 0049-0050 the direct write took the pages
    # of the sleeping call away. Writeback and the invalidation refuse
    # without a word (kernel 0051): no refusal is logged.
    disk = tmp_path / "data.img"
    res = ukl("run", nss_stack_guard, "--smp", str(smp), "--disk", f"{disk}:16M",
              "--timeout", BOOT_TIMEOUT, "--", "direct")
    out = res.stdout + res.stderr
    assert_suite_passed(out, ["direct"], program="nss_stack_guard")
    assert "UKL_NSS: change of" not in out, out
    assert res.returncode == 0, out


@pytest.fixture(scope="module")
def init_threads_exit(ukl_nss_kernel: Path) -> str:
    return build_image("t-nss-init-threads-exit", str(PROGRAMS / "init_threads_exit.c"),
                       "--kernel", "ukl-nss")


# How often the leader gets there first depends on timing: about one boot
# in four showed the BUG before kernel 0047, so twelve boots (3 s each).
INIT_EXIT_BOOTS = 12


def test_nss_app_exiting_beside_busy_threads_reports_the_status(init_threads_exit: str) -> None:
    # Under UKL_NSS the application is init: when it ends with exit_group()
    # while two threads are in mprotect() over 64 MiB, two spin and two
    # sleep, the kernel must end the machine with init's panic carrying
    # status 7, whichever thread gets there first. Before kernel 0047 the
    # leader, waiting in exit_mm() for the mprotect(), could find no
    # thread alive and zap the initial PID namespace: `kernel BUG at
    # include/linux/pid_namespace.h` beside the panic.
    for boot in range(INIT_EXIT_BOOTS):
        res = ukl("run", init_threads_exit, "--smp", "2", "--timeout", BOOT_TIMEOUT)
        out = res.stdout + res.stderr
        assert "init_threads_exit: pid 1 ends with 2 threads running" in out, out
        assert "Attempted to kill init! exitcode=0x00000700" in out, out
        assert "kernel BUG" not in out and "Oops" not in out, f"boot {boot}:\n{out}"
        assert res.returncode == 7, out
