"""ukl/kbuild/objtool.py: objtool's warnings in a kernel build log."""
from __future__ import annotations

from pathlib import Path

from ukl.kbuild import objtool

LOG = """  CC      arch/x86/kernel/ukl.o
arch/x86/entry/entry_64.o: warning: objtool: ukl_entry_SYSCALL_64+0x119: return with UACCESS enabled
  LD      vmlinux.o
vmlinux.o: warning: objtool: __handle_intr_saferet+0x27: RET before UNTRAIN
  DESCEND objtool
"""


def test_finds_each_warning_with_object_symbol_and_finding() -> None:
    found = objtool.find(LOG)
    assert [str(w) for w in found] == [
        "arch/x86/entry/entry_64.o: ukl_entry_SYSCALL_64+0x119: return with UACCESS enabled",
        "vmlinux.o: __handle_intr_saferet+0x27: RET before UNTRAIN",
    ]
    assert found[0].symbol == "ukl_entry_SYSCALL_64"


def test_only_debians_known_warning_is_excused_at_any_offset() -> None:
    assert [w.obj for w in objtool.unexpected(LOG)] == ["arch/x86/entry/entry_64.o"]
    other_offset = LOG.replace("+0x27", "+0x31")
    assert len(objtool.unexpected(other_offset)) == 1
    same_symbol_other_finding = "vmlinux.o: warning: objtool: __handle_intr_saferet+0x1: " \
        "call without frame pointer save/setup\n"
    assert len(objtool.unexpected(same_symbol_other_finding)) == 1
    assert objtool.unexpected("  CC      kernel/fork.o\n") == []


def test_forget_removes_the_objects_so_they_are_checked_again(tmp_path: Path) -> None:
    obj = tmp_path / "arch/x86/entry/entry_64.o"
    obj.parent.mkdir(parents=True)
    obj.write_bytes(b"\x7fELF")
    objtool.forget(objtool.unexpected(LOG), tmp_path)
    assert not obj.exists()
    objtool.forget(objtool.unexpected(LOG), tmp_path)  # already gone: no error
