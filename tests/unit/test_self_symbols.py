"""The table of an application's own symbols for dlsym
(ukl/toolchain/self_symbols.py): made only for a program that calls
dlsym, holding what -rdynamic would export, sorted as strcmp orders."""
from __future__ import annotations

import subprocess
from pathlib import Path

from ukl.toolchain import self_symbols

CODE = """
#include <dlfcn.h>
int Zeta(void) { return 1; }
int alpha(void) { return 2; }
int data_word = 3;
char big_table[200000] = { 1 };
int common_word;
static int private_one(void) { return 4; }
__attribute__((visibility("hidden"))) int hidden_one(void) { return 5; }
__attribute__((weak)) int weak_one(void) { return 6; }
__thread int tls_one;
extern int elsewhere(void);
int look(void) { return dlsym(RTLD_DEFAULT, "alpha") != 0 && elsewhere() + private_one(); }
"""


def _object(tmp_path: Path, code: str) -> Path:
    src = tmp_path / "p.c"
    src.write_text(code)
    obj = tmp_path / "p.o"
    subprocess.run(["gcc", "-O2", "-fcommon", "-c", str(src), "-o", str(obj)], check=True)
    return obj


def test_what_rdynamic_would_export_sorted_as_strcmp(tmp_path: Path) -> None:
    syms = self_symbols.symbols(_object(tmp_path, CODE))
    assert self_symbols.calls_dlsym(syms)
    # Upper case sorts before lower case, as strcmp does; no static,
    # hidden, thread-local or undefined names.
    # big_table: readelf prints a size over 99999 in hex.
    assert self_symbols.exported(syms) == ["Zeta", "alpha", "big_table", "common_word",
                                           "data_word", "look", "weak_one"]


def test_no_table_for_a_program_that_does_not_call_dlsym(tmp_path: Path) -> None:
    obj = _object(tmp_path, "int main(void) { return 0; }\n")
    assert self_symbols.table_for(obj) is None


def test_the_table_assembles_to_name_address_pairs(tmp_path: Path) -> None:
    obj = _object(tmp_path, CODE)
    table = self_symbols.table_for(obj)
    assert table is not None
    src = tmp_path / "t.s"
    src.write_text(table)
    out = tmp_path / "t.o"
    subprocess.run(["gcc", "-c", str(src), "-o", str(out)], check=True)
    linked = tmp_path / "linked.o"
    subprocess.run(["ld", "-r", str(obj), str(out), "-o", str(linked)], check=True)
    syms = {s.name: s for s in self_symbols.symbols(linked)}
    assert syms[self_symbols.TABLE].section not in ("UND", "ABS")
    # Seven entries of two 8-byte words, and the count.
    sizes = subprocess.run(["nm", "-S", str(out)], capture_output=True, text=True,
                           check=True).stdout
    assert f"0000000000000070 D {self_symbols.TABLE}" in sizes
    assert f"0000000000000008 D {self_symbols.COUNT}" in sizes
    # Each entry refers to its symbol (a relocation), and nothing is left
    # undefined but the program's own references.
    relocs = subprocess.run(["readelf", "-rW", str(out)], capture_output=True, text=True,
                            check=True).stdout
    for name in ("Zeta", "alpha", "big_table", "common_word", "data_word", "look", "weak_one"):
        assert "R_X86_64_64" in relocs and f" {name} + 0" in relocs, relocs


def test_a_cxx_inline_functions_static_variable_is_exported(tmp_path: Path) -> None:
    """g++ gives it UNIQUE binding; -rdynamic exports it."""
    src = tmp_path / "u.cc"
    src.write_text("#include <dlfcn.h>\n"
                   "inline int &counter() { static int n; return n; }\n"
                   "int bump() { return ++counter() + (dlsym(RTLD_DEFAULT, \"x\") != 0); }\n")
    obj = tmp_path / "u.o"
    subprocess.run(["g++", "-O2", "-c", str(src), "-o", str(obj)], check=True)
    names = self_symbols.exported(self_symbols.symbols(obj))
    assert "_ZZ7countervE1n" in names and "_Z4bumpv" in names
