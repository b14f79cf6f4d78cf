"""The table of an application's own symbols that dlsym searches.

A dynamically linked executable built with -rdynamic can find its own
functions by name, and some programs rely on it: lighttpd looks up its
built-in modules with dlsym(RTLD_DEFAULT, "mod_indexfile_plugin_init")
before trying to load them as shared objects. A UKL application is one
static object with no dynamic symbol table, so the UKL C library's dlsym
searches a table instead (libc/patches: "elf: find a UKL application's
own symbols with dlsym"): `_dl_ukl_self_symbols`, pairs of name and
address sorted by name, and `_dl_ukl_self_symbols_count`.

The table is made only for a program that calls dlsym, from the user
object (the program's code and the libraries it links, not the UKL C and
C++ runtime), and only for what -rdynamic would export: global and weak
functions and data of default or protected visibility, not thread-local
variables.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import NamedTuple

from ukl.common.errors import UklError

TABLE = "_dl_ukl_self_symbols"
COUNT = "_dl_ukl_self_symbols_count"
# The C library's entry points that search the table.
_LOOKUPS = {"dlsym", "dlvsym"}
# readelf -sW: Num: Value Size Type Bind Vis Ndx Name (a size over 99999
# is printed in hex, 0x30d40)
_SYMBOL = re.compile(r"^\s*\d+:\s+[0-9a-f]+\s+(?:\d+|0x[0-9a-f]+)\s+(\w+)\s+(\w+)\s+(\w+)"
                     r"\s+(\w+)\s+(\S+)$")
_EXPORTED_TYPES = {"FUNC", "OBJECT", "NOTYPE"}
# UNIQUE: g++'s static variables of inline functions.
_EXPORTED_BINDS = {"GLOBAL", "WEAK", "UNIQUE"}
_EXPORTED_VISIBILITY = {"DEFAULT", "PROTECTED"}
# Names the assembler takes unquoted; others (none in C or C++ output)
# are left out rather than quoted.
_PLAIN_NAME = re.compile(r"^[A-Za-z_.$][A-Za-z0-9_.$]*$")


class Symbol(NamedTuple):
    type: str
    bind: str
    visibility: str
    section: str  # readelf's Ndx: UND, ABS, COM or a section number
    name: str


def symbols(obj: Path) -> list[Symbol]:
    res = subprocess.run(["readelf", "-sW", str(obj)], capture_output=True, text=True,
                         errors="replace")
    if res.returncode != 0:
        raise UklError(f"readelf cannot read {obj}: {res.stderr.strip()}")
    out = []
    for line in res.stdout.splitlines():
        if m := _SYMBOL.match(line):
            out.append(Symbol(*m.groups()))
    return out


def calls_dlsym(syms: list[Symbol]) -> bool:
    return any(s.section == "UND" and s.name in _LOOKUPS for s in syms)


def exported(syms: list[Symbol]) -> list[str]:
    """The names -rdynamic would put in the dynamic symbol table, sorted
    as strcmp orders them."""
    names = {s.name for s in syms
             if s.type in _EXPORTED_TYPES and s.bind in _EXPORTED_BINDS
             and s.visibility in _EXPORTED_VISIBILITY and s.section not in ("UND", "ABS")
             and _PLAIN_NAME.match(s.name) and s.name not in (TABLE, COUNT)}
    return sorted(names, key=lambda n: n.encode())


def table_source(names: list[str]) -> str:
    """Assembly for the table of `names`."""
    lines = ['\t.section .rodata.ukl_self_symbols.str,"aMS",@progbits,1']
    lines += [f'.Lukl_self_name{i}:\n\t.string "{n}"' for i, n in enumerate(names)]
    lines += ['\t.section .data.rel.ro.ukl_self_symbols,"aw",@progbits', "\t.balign 8",
              f"\t.globl {TABLE}", f"\t.type {TABLE}, @object", f"{TABLE}:"]
    lines += [f"\t.quad .Lukl_self_name{i}, {n}" for i, n in enumerate(names)]
    lines += [f"\t.size {TABLE}, . - {TABLE}",
              f"\t.globl {COUNT}", f"\t.type {COUNT}, @object", f"{COUNT}:",
              f"\t.quad {len(names)}", f"\t.size {COUNT}, 8",
              '\t.section .note.GNU-stack,"",@progbits', ""]
    return "\n".join(lines)


def table_for(user_obj: Path) -> str | None:
    """The table's assembly for `user_obj`, or None if the program does
    not call dlsym."""
    syms = symbols(user_obj)
    return table_source(exported(syms)) if calls_dlsym(syms) else None
