"""`ukl lint`: reject code that cannot run linked into the kernel at CPL0.

Checks an object, archive or relocatable UKL image for:
  - raw system-call instructions (syscall, sysenter, int $0x80): app code must
    call the kernel's UKL entry point instead;
  - memory accesses below %rsp (the red zone x86-64 leaf code may keep data
    in): not a problem on its own (see red_zone below), so reported apart;
  - R_X86_64_32 relocations: zero-extended 32-bit addresses cannot reach the
    kernel's top 2 GiB (kernel-model code uses sign-extended R_X86_64_32S);
  - GOT/PLT relocations the linker cannot relax away, IFUNC symbols and
    .got/.plt sections, all of which the kernel's linker script rejects.
    (GOTPCRELX/REX_GOTPCRELX and initial-exec GOTTPOFF are fine: a static
    link always rewrites them into direct references.)
Relocations in debug sections are not checked: R_X86_64_32 offsets between
DWARF sections are normal and never loaded.
Each finding names the object and function (or section) it is in.

The red zone: at CPL0 the CPU pushes an interrupt's or exception's frame
onto the current stack, over the 128 bytes below %rsp that leaf code may
use. A UKL kernel sends every such event taken in application code to an
IST stack and moves the frame to the task stack, and returns with IRET,
so the application's stack is never written below its stack pointer
(tests/boot/test_ukl_red_zone.py). Two options do write there: UKL_RET
returns with popf+ret through the 16 bytes below it, and UKL_PF_DF lets
page faults push onto the application's stack. Code that uses the red
zone (OpenSSL's assembly does) links into any other kernel; the kernel
link refuses it for those (ukl.pipeline, kernel/options.ini `red-zone`).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ukl.common.errors import UklError

# A member's name may hold spaces: "bad x.o:     file format elf64-x86-64".
_FILE = re.compile(r"^(?:In archive .*|(.+?):\s+file format \S+)$")
_FUNC = re.compile(r"^[0-9a-f]+ <(.+)>:$")
_INSN = re.compile(r"^\s*([0-9a-f]+):\t(\S+)\s*([^\t]*)")
_INLINE_RELOC = re.compile(r"\t[0-9a-f]+: (R_X86_64_\w+)\t(\S+)")
_BELOW_RSP = re.compile(r"-0x[0-9a-f]+\(%rsp\)")
_RAW_SYSCALL = {"syscall", "sysenter"}
_BAD_RELOCS = re.compile(
    r"R_X86_64_(32|GOTPCREL|GOTPCREL64|GOT32|GOT64|GOTOFF64|GOTPC32|GOTPC64|GOTPLT64"
    r"|PLTOFF64|IRELATIVE|COPY|GLOB_DAT|JUMP_SLOT)$")
_BAD_SECTIONS = {".got", ".got.plt", ".plt", ".plt.got", ".iplt", ".rela.iplt",
                 ".rela.plt"}
_READELF_FILE = re.compile(r"^File: (?:.*\()?([^()]+?)\)?$")
_READELF_RELA_SEC = re.compile(r"^Relocation section '\.rela?(\S+)'")
_READELF_RELOC = re.compile(r"^[0-9a-f]+\s+[0-9a-f]+\s+(R_X86_64_\w+)\s+[0-9a-f]*\s*(\S*)")
_READELF_SECTION = re.compile(r"^\s*\[\s*\d+\]\s+(\S+)\s")
# A size over 99999 is printed in hex.
_READELF_IFUNC = re.compile(r"^\s*\d+:\s+[0-9a-f]+\s+(?:\d+|0x[0-9a-f]+)\s+IFUNC"
                            r"\s+\S+\s+\S+\s+\S+\s+(\S+)")


@dataclass(frozen=True)
class Finding:
    obj: str
    where: str  # function, or section for data
    problem: str
    # A red-zone access: a problem only for some kernels (see above).
    red_zone: bool = False

    def __str__(self) -> str:
        return f"{self.obj}: {self.where}: {self.problem}"


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise UklError(f"{name} not found; install binutils (apt-get install binutils)")
    return path


def _run(cmd: list[str]) -> str:
    res = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    if res.returncode != 0:
        raise UklError(f"{Path(cmd[0]).name} cannot read {cmd[-1]}: "
                       f"{res.stderr.strip().splitlines()[-1] if res.stderr else 'failed'}")
    return res.stdout


def scan_code(objdump_text: str) -> list[Finding]:
    """Findings in `objdump -dr -w --no-show-raw-insn` output."""
    findings: list[Finding] = []
    obj, func = "?", "?"
    for line in objdump_text.splitlines():
        if m := _FILE.match(line):
            if m.group(1):
                obj = m.group(1)
            continue
        if m := _FUNC.match(line):
            func = m.group(1)
            continue
        m = _INSN.match(line)
        if not m:
            continue
        offset, mnemonic, operands = m.groups()
        if mnemonic in _RAW_SYSCALL or (mnemonic == "int" and operands.strip() == "$0x80"):
            findings.append(Finding(obj, func, f"raw `{mnemonic}` at 0x{offset}; "
                                    "call the UKL entry point instead"))
        elif mnemonic != "lea" and not mnemonic.startswith("prefetch") \
                and _BELOW_RSP.search(operands):
            findings.append(Finding(obj, func, f"red-zone access `{mnemonic} {operands.strip()}`"
                                    f" at 0x{offset}", red_zone=True))
        for rm in _INLINE_RELOC.finditer(line):
            if _BAD_RELOCS.match(rm.group(1)):
                findings.append(Finding(obj, func, f"{rm.group(1)} relocation against "
                                        f"{rm.group(2)} at 0x{offset}; build with "
                                        "-mcmodel=kernel -fno-pic"))
    return findings


def scan_tables(readelf_text: str, obj: str) -> list[Finding]:
    """Findings in `readelf -SrsW` output: data relocations, sections, IFUNCs.

    `obj` names the file; for archives readelf names each member itself.
    """
    findings: list[Finding] = []
    section = ""
    for line in readelf_text.splitlines():
        if m := _READELF_FILE.match(line):
            obj = m.group(1)
        elif m := _READELF_RELA_SEC.match(line):
            section = m.group(1)
        elif m := _READELF_RELOC.match(line):
            # Code relocations are reported by scan_code with function names.
            if _BAD_RELOCS.match(m.group(1)) and not section.startswith(
                    (".text", ".debug", ".init", ".fini")):
                findings.append(Finding(obj, f"section {section}",
                                        f"{m.group(1)} relocation against {m.group(2)}"))
        elif m := _READELF_SECTION.match(line):
            if m.group(1) in _BAD_SECTIONS:
                findings.append(Finding(obj, f"section {m.group(1)}",
                                        "GOT/PLT section the kernel link rejects"))
        elif m := _READELF_IFUNC.match(line):
            findings.append(Finding(obj, m.group(1), "IFUNC symbol (needs IRELATIVE "
                                    "relocations); build without multi-arch"))
    return findings


def lint(path: Path) -> list[Finding]:
    """Everything the checks find in `path`, red-zone accesses included."""
    if not path.is_file():
        raise UklError(f"{path} does not exist")
    code = _run([_tool("objdump"), "-dr", "-w", "--no-show-raw-insn", str(path)])
    tables = _run([_tool("readelf"), "-SrsW", str(path)])
    return scan_code(code) + scan_tables(tables, str(path))


def problems(findings: list[Finding]) -> list[Finding]:
    """The findings that keep code out of every UKL kernel."""
    return [f for f in findings if not f.red_zone]


def red_zone(path: Path) -> list[Finding]:
    """The red-zone accesses in `path` (code only: no tables read)."""
    code = _run([_tool("objdump"), "-d", "-w", "--no-show-raw-insn", str(path)])
    return [f for f in scan_code(code) if f.red_zone]


def report(path: Path, findings: list[Finding], limit: int = 50,
           what: str = "problem(s)") -> str:
    lines = [f"ukl lint: {path}: {len(findings)} {what}"]
    lines += [f"  {f}" for f in findings[:limit]]
    if len(findings) > limit:
        lines.append(f"  ... and {len(findings) - limit} more")
    return "\n".join(lines)
