"""The function table of a profile: every function of the kernel (vmlinux)
and of the application, as non-overlapping address ranges, each marked
"app" or "kernel". The plugin maps each executed instruction to one of
them by address; this side names them.

Read with `nm -S` (binutils, already needed to build kernels): the project
has no ELF library, and `nm` gives exactly the text symbols with sizes.
"""
from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from ukl.common.errors import UklError, UsageError
from ukl.common.proc import run_quiet

APP = "app"
KERNEL = "kernel"
# The lower half holds the firmware before Linux, and other processes on
# a kernel whose program is profiled as an ordinary process.
UNKNOWN_USER = "[other user-half code]"
UNKNOWN_KERNEL = "[unknown kernel code]"
# Where an exception, interrupt or system call enters the kernel: the
# plugin makes these children of the code they interrupted, not tail calls.
# The IRQ stubs are one symbol whose every stub is an entry ("E").
_ENTRY = re.compile(r"asm_exc_\w+|asm_sysvec_\w+|asm_common_interrupt|asm_spurious_interrupt"
                    r"|entry_SYSCALL_64|entry_SYSCALL_compat|entry_SYSENTER_compat"
                    r"|entry_INT80_compat|asm_int80_emulation")
_ENTRY_TABLES = {"irq_entries_start", "spurious_entries_start"}
# A program's entry point (a UKL application's in vmlinux): its call stack
# starts empty there, whatever ran before in that process.
_PROGRAM_ENTRIES = {"_start"}
# The kernel's context switch, for per-task call stacks: the plugin finds
# the two instructions of __switch_to_asm that save and load the stack
# pointer ("s"); a new task starts in ret_from_fork ("f"); a task that
# switches out from do_task_dead has exited ("x").
SWITCH = "__switch_to_asm"
_TASK_FLAGS = {SWITCH: "s", "ret_from_fork": "f", "do_task_dead": "x"}
# The UKL toolchain prefixes every symbol of the application in vmlinux;
# shown without it, an application's functions have the same names in a
# UKL profile as in a profile of the same program on stock.
UKL_PREFIX = "__ukl_"
_TEXT_TYPES = "TtWw"


@dataclass(frozen=True)
class Function:
    lo: int
    hi: int          # exclusive
    name: str
    kind: str        # APP or KERNEL

    @property
    def flags(self) -> str:
        if self.kind == APP and self.name in _PROGRAM_ENTRIES:
            return "r"
        if self.name in _ENTRY_TABLES:
            return "E"
        if self.kind == KERNEL and self.name in _TASK_FLAGS:
            return _TASK_FLAGS[self.name]
        return "e" if self.kind == KERNEL and _ENTRY.fullmatch(self.name) else "-"


@dataclass(frozen=True)
class _Symbol:
    lo: int
    size: int
    type: str
    name: str


def parse_nm(text: str) -> list[_Symbol]:
    """The text symbols of `nm -S` output (sized or not)."""
    out = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in _TEXT_TYPES:
            out.append(_Symbol(int(parts[0], 16), int(parts[1], 16), parts[2], parts[3]))
        elif len(parts) == 3 and parts[1] in _TEXT_TYPES:
            out.append(_Symbol(int(parts[0], 16), 0, parts[1], parts[2]))
    return out


def _preference(s: _Symbol) -> tuple[int, int, int, int, str]:
    """Among symbols at one address, the one to name it by: the largest,
    then global before weak before local, fewer leading underscores, shorter."""
    rank = {"T": 0, "W": 1, "w": 1, "t": 2}[s.type]
    return (-s.size, rank, len(s.name) - len(s.name.lstrip("_")), len(s.name), s.name)


def functions(symbols: list[_Symbol], default_kind: str = KERNEL,
              app_range: tuple[int, int] | None = None) -> list[Function]:
    """Non-overlapping functions from `symbols`: a symbol inside one already
    taken (an alias, a label, a nested symbol) is left out, and one without
    a size ends where the next begins."""
    ordered = sorted(symbols, key=lambda s: (s.lo, _preference(s)))
    starts = sorted({s.lo for s in ordered})
    out: list[Function] = []
    end = -1
    for s in ordered:
        if s.lo < end or s.name.startswith(".L"):
            continue
        hi = s.lo + s.size
        if s.size == 0:
            i = bisect_right(starts, s.lo)
            if i == len(starts):
                continue
            hi = starts[i]
        kind, name = default_kind, s.name
        if app_range is not None and app_range[0] <= s.lo < app_range[1]:
            kind = APP
            name = name[len(UKL_PREFIX):] if name.startswith(UKL_PREFIX) else name
        out.append(Function(s.lo, hi, name, kind))
        end = hi
    return out


def from_elf(path: Path, kind: str) -> list[Function]:
    """The functions of an ELF file (a static program or vmlinux); in a
    vmlinux with a UKL application, those in __ukl_text_start..__ukl_text_end
    are the application's."""
    symbols = parse_nm(run_quiet(["nm", "-S", path], what=f"reading the symbols of {path}"))
    where = {s.name: s.lo for s in symbols}
    app = None
    if "__ukl_text_start" in where and "__ukl_text_end" in where:
        app = (where["__ukl_text_start"], where["__ukl_text_end"])
    return functions(symbols, default_kind=kind, app_range=app)


def merge(kernel: list[Function], program: list[Function]) -> list[Function]:
    """A kernel's functions and an ordinary program's (user half), sorted."""
    both = sorted([*kernel, *program], key=lambda f: f.lo)
    for a, b in zip(both, both[1:]):
        if a.hi > b.lo:
            raise UklError(f"{a.name} and {b.name} overlap: the program's symbols are not "
                           "at its run-time addresses")
    return both


def write(funcs: list[Function], path: Path) -> None:
    """The plugin's syms= file: "LO HI FLAGS KIND NAME" a line (hex)."""
    path.write_text("".join(f"{f.lo:x} {f.hi:x} {f.flags} {f.kind} {f.name}\n"
                            for f in funcs))


def read(path: Path) -> list[Function]:
    funcs = []
    for line in path.read_text().splitlines():
        lo, hi, _flags, kind, name = line.split(" ", 4)
        funcs.append(Function(int(lo, 16), int(hi, 16), name, kind))
    return funcs


def names(funcs: list[Function]) -> list[str]:
    """Each function index's name, the two unknown buckets last (as the
    plugin numbers them)."""
    return [*(f.name for f in funcs), UNKNOWN_USER, UNKNOWN_KERNEL]


def kinds(funcs: list[Function]) -> list[str]:
    return [*(f.kind for f in funcs), "user", KERNEL]


def address(funcs: list[Function], name: str) -> int:
    """The start of function `name` (for a window between two functions)."""
    found = [f.lo for f in funcs if f.name == name]
    if not found:
        raise UsageError(f"no function {name!r} in the image's symbols")
    if len(found) > 1:
        raise UsageError(f"{len(found)} functions are named {name!r}; give one that is unique")
    return found[0]
