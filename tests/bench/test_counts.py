"""The ukl_counts QEMU plugin (qemu/plugins/ukl_counts.c) counts exactly:
guest/count_probe.c runs instructions whose numbers are known, inside
counting windows, on stock, UKL and UKL with system call bypass, under
-icount."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO, build_image, ukl
from ukl.bench import counts

pytestmark = pytest.mark.boot
PROBE = REPO / "guest" / "count_probe.c"
N = 1000
FORKS = 20


def _count(image: str, tmp_path: Path, *args: str) -> dict[str, counts.Window]:
    out = tmp_path / f"{image}.csv"
    res = ukl("run", image, "--icount", "--count", str(out), "--timeout", "600",
              *(["--", *args] if args else []))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "count_probe: done" in res.stdout
    return counts.read(out)


def _check_known_instructions(w: dict[str, counts.Window], owner: str) -> None:
    """Windows 0 and 2-5, whose contents do not depend on the kernel.
    `owner`: the column their instructions count in (one marker NOP each)."""
    assert w["0"].passes == 1 and w["0"].counts[owner] == 2 * N + 2
    for name, column in (("2", "cpuid"), ("3", "lfence"), ("3", "mfence"), ("4", "verw"),
                         ("5", "indirect_calls"), ("5", "returns")):
        assert w[name].counts[column] == N, (name, column, w[name].counts)
    assert w["2"].counts["serialising"] == N
    for name in ("0", "2", "3", "4", "5"):
        c = w[name].counts
        assert c["entries_syscall"] + c["entries_other"] + c["swapgs"] == 0, (name, c)
    # Flushed twice: rows per measurement (sums and medians), nothing left
    # unflushed.
    assert (w["6.0"].passes, w["6.0"].counts["cpuid"]) == (3, 3)
    assert (w["6.1"].passes, w["6.1"].counts["cpuid"]) == (5, 5)
    assert (w["6.1.med"].passes, w["6.1.med"].counts["cpuid"]) == (5, 1)
    assert "6" not in w and "6.2" not in w


def test_counts_on_stock(stock_kernel: Path, tmp_path: Path) -> None:
    image = build_image("count-probe-stock", str(PROBE), "--kernel", "stock")
    w = _count(image, tmp_path)
    _check_known_instructions(w, "insns_user")
    # Every syscall(-1) enters with SYSCALL and leaves with SYSRET, and
    # swaps GS both ways; all else runs in user mode. Exact in every pass
    # (the median), and in the sums but for what interrupts add.
    calls, each = w["1.0"].counts, w["1.0.med"].counts
    assert w["1.0"].passes == N
    assert calls["syscall"] == calls["entries_syscall"] == N
    assert calls["exits_sysret"] == N and calls["lost_user_blocks"] == 0
    assert calls["swapgs"] == 2 * calls["entries"]
    assert (each["entries"], each["entries_syscall"], each["exits_sysret"], each["swapgs"]) == \
        (1, 1, 1, 2)
    assert each["insns_kernel"] > 0 and each["insns_app"] == 0
    assert w["total"].counts["insns_app"] == 0
    # A fork child's first return faults on fetching its return address:
    # counted as an exit and an entry that ran no user block.
    forks = w["7.0.med"].counts
    assert w["7.0"].passes == FORKS
    assert forks["lost_user_blocks"] >= 1 and forks["exits"] >= forks["entries"] - 1, forks


@pytest.mark.parametrize("bypass", [False, True], ids=["ukl", "ukl-byp"])
def test_counts_on_ukl(bypass: bool, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    flavour = "ukl-byp" if bypass else "ukl"
    request.getfixturevalue(flavour.replace("-", "_") + "_kernel")
    image = build_image(f"count-probe-{flavour}", str(PROBE), "--kernel", flavour)
    w = _count(image, tmp_path, *(["--bypass"] if bypass else []))
    # The application is kernel-half code, counted as its own.
    _check_known_instructions(w, "insns_app")
    calls = w["1.0"].counts
    assert w["1.0"].passes == N
    # The application's fork child returns to its code at CPL0.
    assert w["7.0"].counts["lost_user_blocks"] == 0
    # A system call is a function call: no privilege transition, no
    # SYSCALL, SWAPGS, SYSRET or IRET.
    for column in ("insns_user", "syscall", "entries_syscall", "entries_other",
                   "exits_sysret", "exits_iret", "swapgs", "iret", "cr3_writes", "verw"):
        assert calls[column] == 0, (column, calls)
    assert calls["insns_kernel"] > 0 and calls["insns_app"] > 0
