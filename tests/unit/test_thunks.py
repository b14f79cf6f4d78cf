"""ukl.kbuild.thunks: the application's speculation thunk sites, rewritten
for a kernel without thunks and listed for one with them."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from ukl.common.errors import UklError
from ukl.kbuild import thunks
from ukl.toolchain import layout

SOURCE = r"""
int (*fp)(int);
__attribute__((noinline)) int probe(int x) { return x + 1; }
int call_it(int x) { return fp(x) + 2; }
int tail_call(int x) { return fp(x); }
int cond(int x) { if (x) return fp(x); return 3; }
"""
LAB = "CONFIG_SMP=y\n"
DEPLOYED = "CONFIG_RETPOLINE=y\nCONFIG_RETHUNK=y\nCONFIG_OBJTOOL=y\n"


@pytest.fixture
def app(tmp_path: Path) -> Path:
    src = tmp_path / "app.c"
    src.write_text(SOURCE)
    obj = tmp_path / "app.o"
    subprocess.run(["gcc", "-O2", *layout.KERNEL_CFLAGS, *layout.SPECULATION_CFLAGS,
                    "-c", str(src), "-o", str(obj)], check=True)
    return obj


def _config(tmp_path: Path, text: str) -> Path:
    cfg = tmp_path / f"config-{len(text)}"
    cfg.write_text(text)
    return cfg


def _assemble(tmp_path: Path, name: str, code: str) -> Path:
    """An object of one function f whose body is `code`."""
    src = tmp_path / f"{name}.s"
    src.write_text(f"\t.text\nf:\n{code}")
    obj = tmp_path / f"{name}.o"
    subprocess.run(["as", "--64", "-o", str(obj), str(src)], check=True)
    return obj


def _disassembly(obj: Path) -> str:
    return subprocess.run(["objdump", "-dr", str(obj)], capture_output=True, text=True,
                          check=True).stdout


def test_every_return_and_indirect_branch_is_found(app: Path) -> None:
    sites = thunks.find_sites(app)
    returns = [s for s in sites if s.register is None]
    indirect = [s for s in sites if s.register is not None]
    # probe, call_it and cond return once each; call_it calls, tail_call
    # and cond jump through fp.
    assert len(returns) == 3
    assert sorted((s.opcode, s.register) for s in indirect) == \
        [(thunks.CALL, "rax"), (thunks.JMP, "rax"), (thunks.JMP, "rax")]


def test_without_thunks_each_site_becomes_the_plain_branch(app: Path, tmp_path: Path) -> None:
    out = thunks.for_kernel(app, _config(tmp_path, LAB), tmp_path / "lab.o")
    text = _disassembly(out)
    assert "__x86_" not in text
    assert thunks.find_sites(out) == []
    # The call keeps its return address: the NOPs come first.
    assert re.search(r"nopl\s+\(%rax\)\n.*\n?\s+\S+:\s+ff d0\s+call\s+\*%rax", text), text
    assert len(re.findall(r"\tret\s*\n", text)) == 3
    assert len(re.findall(r"jmp\s+\*%rax", text)) == 2


def test_with_thunks_the_sites_join_the_kernels_tables(app: Path, tmp_path: Path) -> None:
    out = thunks.for_kernel(app, _config(tmp_path, DEPLOYED), tmp_path / "deployed.o")
    # The branches stay as they are, for the kernel to patch at boot.
    assert len(thunks.find_sites(out)) == 6
    # The symbols the tables are relative to are local, with no size.
    nm = subprocess.run(["nm", "-S", str(out)], capture_output=True, text=True,
                        check=True).stdout
    bases = [line.split() for line in nm.splitlines() if thunks.SITE_BASE in line]
    assert bases and all(b[1] == "t" and len(b) == 3 for b in bases), nm
    relocs = subprocess.run(["objdump", "-r", "-j", ".return_sites", "-j", ".retpoline_sites",
                             str(out)], capture_output=True, text=True, check=True).stdout
    tables = relocs.split("RELOCATION RECORDS FOR ")
    listed = {t.split("]")[0].strip("["): re.findall(r"R_X86_64_PC32\s+(\S+)", t)
              for t in tables[1:]}
    sites = thunks.find_sites(app)
    expected = {
        ".retpoline_sites": sorted(f"{thunks.SITE_BASE}0+0x{s.offset:016x}"
                                   for s in sites if s.register),
        ".return_sites": sorted(f"{thunks.SITE_BASE}0+0x{s.offset:016x}"
                                for s in sites if s.register is None),
    }
    assert {k: sorted(v) for k, v in listed.items()} == expected


def test_an_unchanged_application_is_not_rewritten(app: Path, tmp_path: Path) -> None:
    cfg = _config(tmp_path, LAB)
    out = thunks.for_kernel(app, cfg, tmp_path / "lab.o")
    before = out.stat().st_mtime_ns
    thunks.for_kernel(app, cfg, out)
    assert out.stat().st_mtime_ns == before


def test_a_thunk_address_taken_is_refused(tmp_path: Path) -> None:
    src = tmp_path / "bad.c"
    src.write_text("extern char __x86_return_thunk[];\n"
                   "void *where(void) { return __x86_return_thunk; }\n")
    obj = tmp_path / "bad.o"
    subprocess.run(["gcc", "-O2", *layout.KERNEL_CFLAGS, "-c", str(src), "-o", str(obj)],
                   check=True)
    with pytest.raises(UklError, match="not a branch"):
        thunks.find_sites(obj)


def _decode(code: bytes, tmp_path: Path) -> list[str]:
    raw = tmp_path / "code.bin"
    raw.write_bytes(code)
    dump = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64", str(raw)],
                          capture_output=True, text=True, check=True).stdout
    return [m.group(1).split()[0] + " " + " ".join(m.group(1).split()[1:])
            for m in re.finditer(r"^\s*[0-9a-f]+:\t(?:[0-9a-f]{2} )+\s*\t(.+)$", dump, re.M)]


@pytest.mark.parametrize("length", [5, 6])
@pytest.mark.parametrize("register", [r for r in thunks.REGISTERS if r != "rsp"])
def test_plain_branches_decode_as_the_indirect_branch(register: str, length: int,
                                                      tmp_path: Path) -> None:
    call = _decode(thunks.plain_bytes(thunks.Site(".text", 1, 0, thunks.CALL, register, 0,
                                                  length)), tmp_path)
    # NOPs first (objdump shows 66 90 as xchg %ax,%ax), then the call.
    nops = ("nop", "xchg %ax,%ax")
    assert call[-1] == f"call *%{register}" and all(i.startswith(nops) for i in call[:-1])
    jump = _decode(thunks.plain_bytes(thunks.Site(".text", 1, 0, thunks.JMP, register, 0,
                                                  length)), tmp_path)
    assert jump[0] == f"jmp *%{register}" and all(i == "int3 " for i in jump[1:]), jump


@pytest.mark.parametrize("register,expected", [
    ("rax", "0f1f00ffd0"), ("r11", "669041ffd3")])
def test_plain_call_encodings(register: str, expected: str) -> None:
    site = thunks.Site(".text", 1, 0, thunks.CALL, register, 0)
    assert thunks.plain_bytes(site).hex() == expected


def test_plain_conditional_jump_skips_the_indirect_jump() -> None:
    # jne thunk_r9 (0f 85) -> je +4; jmp *%r9; int3
    site = thunks.Site(".text", 1, 0, 0x85, "r9", 0, 6)
    assert thunks.plain_bytes(site).hex() == "740441ffe1cc"


def test_a_cs_prefixed_call_is_one_site(tmp_path: Path) -> None:
    # -mindirect-branch-cs-prefix: `cs call __x86_indirect_thunk_r11` is
    # one 6-byte site, the prefix included, as objtool lists it.
    obj = _assemble(tmp_path, "cs", "nop\n.byte 0x2e\ncall __x86_indirect_thunk_r11\nret\n")
    [site] = thunks.find_sites(obj)
    assert (site.offset, site.length, site.register) == (1, 6, "r11")
    out = thunks.for_kernel(obj, _config(tmp_path, LAB), tmp_path / "lab.o")
    assert re.search(r"4:\s+41 ff d3\s+call\s+\*%r11\n\s+7:\s+c3\s+ret", _disassembly(out))


def test_a_byte_0x2e_before_a_low_register_call_is_not_a_prefix(tmp_path: Path) -> None:
    # gcc puts the CS prefix only before %r8..%r15; before `call
    # __x86_indirect_thunk_rax`, 0x2e ends the instruction in front
    # (here `lea 0x2e(%rsp),%rdi`), which a 6-byte site would overwrite.
    obj = _assemble(tmp_path, "lea", "lea 0x2e(%rsp), %rdi\ncall __x86_indirect_thunk_rax\nret\n")
    [site] = thunks.find_sites(obj)
    assert (site.offset, site.length) == (5, 5)
    out = thunks.for_kernel(obj, _config(tmp_path, LAB), tmp_path / "lab.o")
    assert re.search(r"lea\s+0x2e\(%rsp\),%rdi\n.*call\s+\*%rax", _disassembly(out), re.S)


def test_a_return_through_a_register_jumps_through_the_kernels_thunk(tmp_path: Path) -> None:
    # The unwinder's __builtin_eh_return: `pop %rcx; jmp
    # __x86_return_thunk_rcx`, a thunk only gcc knows; the kernel has the
    # same jump as __x86_indirect_thunk_rcx, which the object may already
    # reference too.
    obj = _assemble(tmp_path, "eh", "pop %rcx\njmp __x86_return_thunk_rcx\n"
                    "g:\njmp __x86_indirect_thunk_rcx\n")
    deployed = thunks.for_kernel(obj, _config(tmp_path, DEPLOYED), tmp_path / "deployed.o")
    text = _disassembly(deployed)
    assert "__x86_return_thunk_rcx" not in text
    assert text.count("R_X86_64_PLT32\t__x86_indirect_thunk_rcx-0x4") == 2, text
    lab = _disassembly(thunks.for_kernel(obj, _config(tmp_path, LAB), tmp_path / "lab.o"))
    assert len(re.findall(r"jmp\s+\*%rcx", lab)) == 2, lab
