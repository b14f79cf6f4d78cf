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
