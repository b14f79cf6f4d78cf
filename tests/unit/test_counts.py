"""The ukl_counts plugin's host side: its QEMU argument and its CSV."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from ukl.bench import counts
from ukl.common.errors import UklError
from ukl.qemu.command import RunOptions, command


def test_plugin_argument_and_qemu_command(tmp_path: Path) -> None:
    kernel = counts.KernelLayout(app=(0xffffffff81600100, 0xffffffff81b79490),
                                 ithunks=[(0x10, 0x20), (0x40, 0x80)], rthunks=[(0x90, 0x92)],
                                 page_fault=0xabc)
    arg = counts.plugin_argument(Path("/p/ukl_counts.so"), Path("/o/c.csv"), kernel)
    assert arg == ("/p/ukl_counts.so,out=/o/c.csv,app=ffffffff81600100-ffffffff81b79490,"
                   "ithunks=10-20:40-80,rthunks=90-92,pf=abc")
    bare = counts.KernelLayout(None, [], [], None)
    assert counts.plugin_argument(Path("/p/x.so"), Path("/o/c.csv"), bare) == \
        "/p/x.so,out=/o/c.csv"
    cmd = command(RunOptions(kernel=Path("k"), initramfs=Path("i"), plugin=arg))
    assert cmd[cmd.index("-plugin") + 1] == arg
    assert "-plugin" not in command(RunOptions(kernel=Path("k"), initramfs=Path("i")))
    with pytest.raises(UklError, match="without commas"):
        counts.plugin_argument(Path("/p/x.so"), Path("/o/a,b.csv"), bare)


def test_layout_of_a_distribution_like_kernel(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # nm -S lines as a kernel with retpolines and return thunks has them.
    nm = tmp_path / "nm"
    nm.write_text("#!/bin/sh\ncat <<'EOF'\n"
                  "ffffffff81800cc0 0000000000000200 T __x86_indirect_thunk_array\n"
                  "ffffffff81800cc0 T __x86_indirect_thunk_rax\n"
                  "ffffffff81801470 0000000000000002 T __x86_return_thunk\n"
                  "ffffffff81600be0 0000000000000027 T asm_exc_page_fault\n"
                  "ffffffff81600100 T __ukl_text_start\nffffffff81b79490 T __ukl_text_end\n"
                  "ffffffff81bc9299 r __kstrtab___x86_indirect_thunk_rax\nEOF\n")
    nm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    got = counts.layout(Path("vmlinux"))
    assert got.app == (0xffffffff81600100, 0xffffffff81b79490)
    assert got.ithunks == [(0xffffffff81800cc0, 0xffffffff81800ec0)]
    assert got.rthunks == [(0xffffffff81801470, 0xffffffff81801472)]
    assert got.page_fault == 0xffffffff81600be0


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
