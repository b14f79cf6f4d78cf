"""What `ukl fuzz` reads from the fuzzer's console (ukl/fuzz.py counts())."""
from __future__ import annotations

from ukl import fuzz


def test_counts_from_the_end_of_run_line() -> None:
    console = ("fuzz: progress 10\nfuzz: done calls 12 distinct 276 ok 5 stalled 1 "
               "peer-alive yes\n")
    assert fuzz.counts(console) == (12, 276, 5, 1)


def test_a_run_that_ended_early_counts_its_last_progress() -> None:
    console = "fuzz: progress 10\nfuzz: progress 27499681\nfuzz: signal 11 ended the fuzzing\n"
    assert fuzz.counts(console) == (27499681, 0, 0, 0)


def test_no_output_counts_nothing() -> None:
    assert fuzz.counts("Kernel panic\n") == (0, 0, 0, 0)


DONE = "fuzz: done calls 9 distinct 276 ok 5 stalled {stalled} peer-alive yes\n"


def test_a_clean_run_has_no_findings() -> None:
    assert fuzz.findings("fuzz: progress 9\n" + DONE.format(stalled=0), 0, "", []) == []


def test_a_stalled_worker_a_spare_replaced_is_no_finding() -> None:
    console = ("fuzz: stalled worker 0 (S) call 7(0x0, 0x0, 0x0, 0x0, 0x0, 0x0) #3\n" +
               DONE.format(stalled=1))
    assert fuzz.findings(console, 0, "", []) == []


def test_no_worker_left_to_take_over_fails_the_run() -> None:
    console = ("fuzz: stalled worker 0 (S) call 7(0x0, 0x0, 0x0, 0x0, 0x0, 0x0) #3\n"
               "fuzz: pthread_create failed: Resource temporarily unavailable\n"
               "fuzz: no slot for another worker\n" + DONE.format(stalled=1))
    assert fuzz.findings(console, 0, "", []) == [
        "every worker blocked for good in a call and none was left to take over: "
        "the fuzzing stopped early"]


def test_kernel_complaints_and_a_missing_end_are_findings() -> None:
    found = fuzz.findings("fuzz: progress 9\n", 125, "kernel panic", ["Oops: 0000 [#1] SMP"])
    assert found == ["kernel: Oops: 0000 [#1] SMP", "no end of run (status 125: kernel panic)"]
