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


def test_progress_lines_with_the_time() -> None:
    console = "fuzz: progress 10 at 9 s\nfuzz: progress 27499681 at 19 s\nfuzz: signal 11\n"
    assert fuzz.counts(console) == (27499681, 0, 0, 0)


DONE = "fuzz: done calls 9 distinct 276 ok 5 stalled {stalled} peer-alive yes\n"
# A 600-second run whose peer said its count after the progress line at
# 540 s, the last minute.
PEER_TO_THE_END = ("fuzz: peer-count 5\nfuzz: progress 8 at 539 s\nfuzz: progress 9 at 549 s\n"
                   "fuzz: peer-count 600\nfuzz: progress 9 at 599 s\n")


def test_a_clean_run_has_no_findings() -> None:
    assert fuzz.findings(PEER_TO_THE_END + DONE.format(stalled=0), 0, "", [], 600) == []


def test_the_peer_is_judged_from_its_console_lines_not_the_fuzzers_view() -> None:
    # The application fuzzing itself could no longer open the count file
    # (peer-alive no), but the peer said its count until the end.
    done = DONE.format(stalled=0).replace("peer-alive yes", "peer-alive no")
    assert fuzz.findings(PEER_TO_THE_END + done, 0, "", [], 600) == []


def test_a_peer_silent_in_the_last_minute_fails_the_run() -> None:
    console = ("fuzz: peer-count 5\nfuzz: peer-count 500\nfuzz: progress 8 at 539 s\n"
               "fuzz: peer: cannot write its count 531\nfuzz: progress 9 at 599 s\n" +
               DONE.format(stalled=0))
    assert fuzz.findings(console, 0, "", [], 600) == [
        "the ordinary process beside the fuzzer stopped counting (cannot write its count 531)"]


def test_a_short_run_looks_at_its_second_half() -> None:
    # 30 seconds: the peer must speak after the progress line at 15 s.
    assert fuzz.peer_counted_to_the_end(
        "fuzz: progress 8 at 15 s\nfuzz: peer-count 20\nfuzz: progress 9 at 29 s\n", 30)
    assert not fuzz.peer_counted_to_the_end(
        "fuzz: progress 7 at 14 s\nfuzz: peer-count 20\nfuzz: progress 8 at 15 s\n"
        "fuzz: progress 9 at 29 s\n", 30)


def test_a_stalled_worker_a_spare_replaced_is_no_finding() -> None:
    console = ("fuzz: stalled worker 0 (S) call 7(0x0, 0x0, 0x0, 0x0, 0x0, 0x0) #3\n" +
               PEER_TO_THE_END + DONE.format(stalled=1))
    assert fuzz.findings(console, 0, "", [], 600) == []


def test_no_worker_left_to_take_over_fails_the_run() -> None:
    console = ("fuzz: stalled worker 0 (S) call 7(0x0, 0x0, 0x0, 0x0, 0x0, 0x0) #3\n"
               "fuzz: pthread_create failed: Resource temporarily unavailable\n"
               "fuzz: no slot for another worker\n" + PEER_TO_THE_END + DONE.format(stalled=1))
    assert fuzz.findings(console, 0, "", [], 600) == [
        "every worker blocked for good in a call and none was left to take over: "
        "the fuzzing stopped early"]


def test_kernel_complaints_and_a_missing_end_are_findings() -> None:
    found = fuzz.findings("fuzz: progress 9\n", 125, "kernel panic", ["Oops: 0000 [#1] SMP"],
                          600)
    assert found == ["kernel: Oops: 0000 [#1] SMP", "no end of run (status 125: kernel panic)"]
