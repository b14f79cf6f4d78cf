"""The application's speculation thunks, made what the kernel it joins
makes of its own.

`ukl-cc` compiles application code as a kernel with the CPU mitigations
compiles itself (ukl.toolchain.layout.SPECULATION_CFLAGS): every indirect
call or jump goes through `__x86_indirect_thunk_REG`, every return through
`__x86_return_thunk`. A kernel with CONFIG_RETPOLINE and CONFIG_RETHUNK
rewrites its own such sites at boot, for the CPU it runs on, from the
tables objtool writes (`.retpoline_sites`, `.return_sites`): a retpoline,
`lfence; jmp *%reg` or a plain `call *%reg`; the SRSO or retbleed return
thunk or a plain `ret`. objtool never sees the application, so here, for
one kernel's link:

* with the thunks in the kernel, the application's sites join those
  tables (an added object of `.long site - .` entries) and the kernel
  patches them as its own;
* without (the lab kernels have no thunks), each site is rewritten in the
  object to what the kernel makes of it on a CPU that needs no
  mitigation: `call *%reg`, `jmp *%reg`, `ret`.

The C library, libgcc and libstdc++ are compiled the same way
(ukl.toolchain.glibc, ukl.toolchain.gcc_runtime), and glibc's assembly
goes through the thunks by a patch of ours. An application's own
hand-written assembly keeps its plain `ret` and indirect branches, which
objtool would complain of in the kernel: nothing here can find them.

One more thunk has no kernel counterpart: where a function returns to an
address in a register (`__builtin_eh_return`: the unwinder's
`pop %rcx; jmp __x86_return_thunk_rcx`), gcc branches through
`__x86_return_thunk_REG`. That is an indirect jump, and becomes a jump
through the kernel's `__x86_indirect_thunk_REG` first.
"""
from __future__ import annotations

import re
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

from elftools.elf.elffile import ELFFile
from elftools.elf.relocation import RelocationSection

from ukl.common.errors import UklError
from ukl.common.proc import run_quiet

RETURN_THUNK = "__x86_return_thunk"
# Every general-purpose register but %rsp.
_THUNK_REGISTER = r"(r[a-d]x|r[sd]i|rbp|r(?:8|9|1[0-5]))"
INDIRECT_THUNK = re.compile(rf"^__x86_indirect_thunk_{_THUNK_REGISTER}$")
RETURN_VIA_REGISTER = re.compile(rf"^__x86_return_thunk_{_THUNK_REGISTER}$")
REGISTERS = ["rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
             "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"]
R_X86_64_NONE, R_X86_64_PC32, R_X86_64_PLT32 = 0, 2, 4
SHF_EXECINSTR = 0x4
CALL, JMP, JCC_PREFIX, CS_PREFIX = 0xE8, 0xE9, 0x0F, 0x2E
INT3, RET = 0xCC, 0xC3
# Multi-byte NOPs that pad a call *%reg to the length of the call it
# replaces, in front of it: the return address stays where it was.
NOPS = {2: bytes([0x66, 0x90]), 3: bytes([0x0F, 0x1F, 0x00]),
        4: bytes([0x0F, 0x1F, 0x40, 0x00])}
# CONFIG_ options that say the kernel has the thunks and patches sites.
RETPOLINE_OPTION = "CONFIG_RETPOLINE"
RETHUNK_OPTION = "CONFIG_RETHUNK"
OBJTOOL_OPTION = "CONFIG_OBJTOOL"
# Symbols at the start of each section with sites, for the tables.
SITE_BASE = "__x86_ukl_thunk_sites_"


@dataclass(frozen=True)
class Site:
    """A branch to a thunk: `section` (the executable section's name and
    index), `offset` of the instruction in it, its `opcode` (CALL, JMP or
    a Jcc's second byte), `register` (None: the return thunk), where its
    relocation entry lies in the file (`rela_entry`), and its `length`
    (6 for a Jcc, or a call or jump with a CS prefix)."""
    section: str
    index: int
    offset: int
    opcode: int
    register: str | None
    rela_entry: int
    length: int = 5


def find_sites(obj: Path) -> list[Site]:
    """Every branch to a speculation thunk in a relocatable object."""
    sites = []
    with obj.open("rb") as f:
        elf = ELFFile(f)
        for rela in elf.iter_sections():
            if not isinstance(rela, RelocationSection) or not rela.is_RELA():
                continue
            symtab = elf.get_section(rela["sh_link"])
            target_index = rela["sh_info"]
            target = elf.get_section(target_index)
            if not target["sh_flags"] & SHF_EXECINSTR or target["sh_type"] == "SHT_NOBITS":
                continue
            data = target.data()
            for i, reloc in enumerate(rela.iter_relocations()):
                name = symtab.get_symbol(reloc["r_info_sym"]).name
                if not is_thunk(name):
                    continue
                where = f"{obj.name}: {target.name}+{reloc['r_offset']:#x}"
                if reloc["r_info_type"] not in (R_X86_64_PC32, R_X86_64_PLT32) \
                        or reloc["r_addend"] != -4:
                    raise UklError(f"{where}: a reference to a speculation thunk that is "
                                   "not a branch")
                offset = reloc["r_offset"]
                start, opcode = _branch(data, offset, thunk_register(name), where)
                sites.append(Site(target.name, target_index, start, opcode,
                                  thunk_register(name),
                                  rela["sh_offset"] + i * rela["sh_entsize"],
                                  offset + 4 - start))
    return sites


def is_thunk(name: str) -> bool:
    return name == RETURN_THUNK or INDIRECT_THUNK.match(name) is not None


def thunk_register(name: str) -> str | None:
    """The register of an indirect-branch thunk; None for the return thunk."""
    m = INDIRECT_THUNK.match(name)
    return m.group(1) if m else None


def _branch(data: bytes, offset: int, register: str | None, where: str) -> tuple[int, int]:
    """Where the branch whose rel32 is at `offset` starts, and its opcode
    (a Jcc's second byte). The kernel patches calls, jumps and (for the
    indirect-branch thunks) conditional jumps; so is anything else refused."""
    if register is not None and offset >= 2 and data[offset - 2] == JCC_PREFIX \
            and 0x80 <= data[offset - 1] <= 0x8F:
        return offset - 2, data[offset - 1]
    if offset >= 1 and (data[offset - 1] == JMP or
                        (data[offset - 1] == CALL and register is not None)):
        # -mindirect-branch-cs-prefix: a CS prefix gives the kernel room
        # to put an LFENCE in front of `call *%r8`..`%r15`, and only
        # there: before another branch, 0x2E is the last byte of the
        # instruction in front.
        prefixed = register in REGISTERS[8:] and offset >= 2 and data[offset - 2] == CS_PREFIX
        return offset - (2 if prefixed else 1), data[offset - 1]
    raise UklError(f"{where}: a branch to a speculation thunk of an unknown form")


def plain_bytes(site: Site) -> bytes:
    """What the site becomes without the thunk: the kernel's choice on a
    CPU that needs no mitigation (arch/x86/kernel/alternative.c)."""
    if site.register is None:
        return bytes([RET] + [INT3] * (site.length - 1))
    n = REGISTERS.index(site.register)
    rex = bytes([0x41]) if n >= 8 else b""
    if site.opcode == CALL:
        call = rex + bytes([0xFF, 0xD0 | (n & 7)])
        return NOPS[site.length - len(call)] + call
    jump = rex + bytes([0xFF, 0xE0 | (n & 7)])
    if site.opcode == JMP:
        return jump + bytes([INT3] * (site.length - len(jump)))
    # Jcc: the opposite condition jumps over `jmp *%reg` to the next
    # instruction.
    skip = site.length - 2
    opposite = bytes([0x70 | ((site.opcode & 0xF) ^ 1), skip])
    return opposite + jump + bytes([INT3] * (skip - len(jump)))


def kernel_patches(config: Path) -> tuple[bool, bool]:
    """Whether the kernel configured in `config` (.config) has, and patches
    at boot, (indirect-branch thunks, return thunks)."""
    text = config.read_text()

    def on(option: str) -> bool:
        return re.search(rf"^{option}=y$", text, re.M) is not None
    objtool = on(OBJTOOL_OPTION)
    return on(RETPOLINE_OPTION) and objtool, on(RETHUNK_OPTION) and objtool


def for_kernel(app: Path, config: Path, out: Path) -> Path:
    """The application object `app` made for the kernel configured in
    `config`, written to `out` (rewritten only when it changes, so that an
    unchanged application does not relink the kernel)."""
    with tempfile.TemporaryDirectory(prefix="ukl-thunks-") as tmpdir:
        tmp = Path(tmpdir) / out.name
        shutil.copyfile(app, tmp)
        _jump_through_indirect_thunks(tmp)
        sites = find_sites(tmp)
        indirect, returns = kernel_patches(config)
        patched: list[Site] = []
        plain: list[Site] = []
        for site in sites:
            (patched if (returns if site.register is None else indirect) else plain).append(site)
        _rewrite_plain(tmp, plain)
        if patched:
            _add_site_tables(tmp, patched, tmp)
        if not out.is_file() or out.read_bytes() != tmp.read_bytes():
            shutil.copyfile(tmp, out)
    return out


def _jump_through_indirect_thunks(obj: Path) -> None:
    """Rename every `__x86_return_thunk_REG` in `obj` (in place) to the
    kernel's `__x86_indirect_thunk_REG`: the same jump through REG."""
    with obj.open("rb") as f:
        symtab = ELFFile(f).get_section_by_name(".symtab")
        names = {sym.name for sym in symtab.iter_symbols()
                 if RETURN_VIA_REGISTER.match(sym.name)} if symtab else set()
    if names:
        renames = [f"--redefine-sym={n}={n.replace('return', 'indirect', 1)}"
                   for n in sorted(names)]
        run_quiet(["objcopy", *renames, str(obj)],
                  what="renaming the register return thunks")


def _rewrite_plain(obj: Path, sites: list[Site]) -> None:
    """Rewrite every site in place and drop its relocation (R_X86_64_NONE)."""
    with obj.open("r+b") as f:
        elf = ELFFile(f)
        offsets = {s.index: elf.get_section(s.index)["sh_offset"] for s in sites}
        for site in sites:
            f.seek(offsets[site.index] + site.offset)
            code = plain_bytes(site)
            if len(code) != site.length:
                raise UklError(f"{obj.name}: {site.section}+{site.offset:#x}: the plain "
                               f"branch takes {len(code)} bytes, the site {site.length}")
            f.write(code)
            # r_info is the second 8-byte word of an Elf64_Rela: symbol << 32 | type.
            f.seek(site.rela_entry + 8)
            f.write(struct.pack("<Q", R_X86_64_NONE))


def _add_site_tables(app: Path, sites: list[Site], out: Path) -> None:
    """`ld -r` the application with an object of `.retpoline_sites` and
    `.return_sites` entries, each `.long site - .` as objtool writes them,
    relative to a global symbol added at the start of each site's section."""
    work = out.parent
    names = sorted({s.section for s in sites})
    _check_unique(app, names)
    # Outside the application's symbol prefix (ukl.toolchain.driver's
    # SYMBOL_PREFIX), so no application symbol can collide; local once
    # linked, and without a size, so no symbolizer names a function by it.
    base = {name: f"{SITE_BASE}{i}" for i, name in enumerate(names)}
    marked = work / "marked.o"
    args = ["objcopy"]
    for name in names:
        args += ["--add-symbol", f"{base[name]}={name}:0,global"]
    run_quiet([*args, str(app), str(marked)], what="marking the sections with thunk sites")
    lines = []
    for table, returns in ((".retpoline_sites", False), (".return_sites", True)):
        lines.append(f'\t.section {table}, "a"\n\t.balign 4\n')
        lines += [f"\t.long {base[s.section]} + {s.offset:#x} - .\n"
                  for s in sites if (s.register is None) == returns]
    lines.append('\t.section .note.GNU-stack, "", @progbits\n')
    source = work / "sites.s"
    source.write_text("".join(lines))
    tables = work / "sites.o"
    run_quiet(["as", "--64", "-o", str(tables), str(source)],
              what="assembling the thunk site tables")
    linked = work / "linked.o"
    run_quiet(["ld", "-r", "-o", str(linked), str(marked), str(tables)],
              what="linking the thunk site tables to the application")
    run_quiet(["objcopy", *[f"--localize-symbol={b}" for b in base.values()], str(linked),
               str(out)], what="making the thunk site symbols local")


def _check_unique(obj: Path, names: list[str]) -> None:
    """A symbol is added to a section by name: each must name one."""
    with obj.open("rb") as f:
        seen = [sec.name for sec in ELFFile(f).iter_sections()]
    twice = [n for n in names if seen.count(n) > 1]
    if twice:
        raise UklError(f"{obj.name}: more than one section is named {twice[0]}; "
                       "its speculation thunk sites cannot be listed for the kernel")
