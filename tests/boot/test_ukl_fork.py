"""Full fork (Documentation/x86/ukl.rst, "Full fork"): every process of the
UKL application has its own copy of the application's .data and .bss, which
live in the kernel image. The checks of guest/ukl_suite.c run in the UKL
image and, for reference, as an ordinary process on stock: a parent, child
and grandchild each keep their own globals, C library state and __thread
variables; a fork from a multi-threaded application gets one thread and a
copy nobody else writes; 4,000 fork+exit cycles give their memory back.
"""
from __future__ import annotations

import re

import pytest

from tests.conftest import assert_suite_passed, ukl

pytestmark = pytest.mark.boot
BOOT_TIMEOUT = "300"
CHECKS = ["fork", "fork-data", "fork-threads", "fork-cycles"]


@pytest.mark.parametrize("smp", [1, 2])
@pytest.mark.parametrize("kernel", ["ukl", "stock"])
def test_each_process_has_its_own_static_data(request: pytest.FixtureRequest, kernel: str,
                                              smp: int) -> None:
    image = request.getfixturevalue(f"suite_{kernel}")
    res = ukl("run", image, "--smp", str(smp), "--mem", "1G", "--timeout", BOOT_TIMEOUT,
              "--", *CHECKS)
    out = res.stdout + res.stderr
    assert f"ukl_suite: cpl={0 if kernel == 'ukl' else 3}" in out, out
    assert_suite_passed(out, CHECKS)
    # The parent's pending stdout line came out once, after its child ran.
    assert out.count("ukl_suite: fork-data: pending output\n") == 1, out
    assert "fork-threads child: malloc and printf work" in out, out
    m = re.search(r"fork-cycles: MemFree (\d+) kB before, (\d+) kB after", out)
    assert m and int(m.group(1)) - int(m.group(2)) <= 8192, out
    assert res.returncode == 0, out
