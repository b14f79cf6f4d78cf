"""The ukl_counts plugin's host side: its QEMU argument and its CSV."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.bench import counts
from ukl.common.errors import UklError
from ukl.qemu.command import RunOptions, command


def test_plugin_argument_and_qemu_command(tmp_path: Path) -> None:
    arg = counts.plugin_argument(Path("/p/ukl_counts.so"), Path("/o/c.csv"),
                                 (0xffffffff81600100, 0xffffffff81b79490))
    assert arg == "/p/ukl_counts.so,out=/o/c.csv,app=ffffffff81600100-ffffffff81b79490"
    assert counts.plugin_argument(Path("/p/x.so"), Path("/o/c.csv"), None) == \
        "/p/x.so,out=/o/c.csv"
    cmd = command(RunOptions(kernel=Path("k"), initramfs=Path("i"), plugin=arg))
    assert cmd[cmd.index("-plugin") + 1] == arg
    assert "-plugin" not in command(RunOptions(kernel=Path("k"), initramfs=Path("i")))
    with pytest.raises(UklError, match="without commas"):
        counts.plugin_argument(Path("/p/x.so"), Path("/o/a,b.csv"), None)


def test_read_windows_and_total(tmp_path: Path) -> None:
    csv = tmp_path / "c.csv"
    csv.write_text("window,passes,insns_user,swapgs\n1,1000,19000,2000\ntotal,1,50,7\n")
    w = counts.read(csv)
    assert w["1"].passes == 1000 and w["1"].per_pass("swapgs") == 2.0
    assert w["total"].counts == {"insns_user": 50, "swapgs": 7}
    csv.write_text("window,passes,insns_user\n1,1,5\n")
    with pytest.raises(UklError, match="no total row"):
        counts.read(csv)
    with pytest.raises(UklError, match="wrote no"):
        counts.read(tmp_path / "none.csv")
