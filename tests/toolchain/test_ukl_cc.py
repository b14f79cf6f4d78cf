"""Host-side tests of the UKL toolchain (no QEMU).

ukl-cc/ukl-c++ link each program twice: a host executable using the UKL
libc through a user-space stand-in for the kernel entry point (run here),
and the embedded relocatable UKL object for the kernel (checked here).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PROGRAMS, REPO
from ukl.toolchain import driver, layout
from ukl.toolchain.lint import lint

UKL_CC = str(REPO / "bin" / "ukl-cc")
UKL_CXX = str(REPO / "bin" / "ukl-c++")


@pytest.fixture(scope="session", autouse=True)
def toolchain() -> None:
    if not (layout.ukl_libdir() / "host-entry.o").is_file():
        subprocess.run([str(REPO / "bin" / "ukl"), "toolchain", "build"], check=True)


def _build(compiler: str, src: Path, out: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([compiler, "-O2", *flags, "-o", str(out), str(src)],
                          capture_output=True, text=True)


def _builds_and_runs(src: Path, *flags: str) -> None:
    """`src` links with ukl-cc, and the host executable exits with 0."""
    exe = src.with_suffix("")
    res = _build(UKL_CC, src, exe, *flags)
    assert res.returncode == 0, res.stderr
    assert subprocess.run([str(exe)]).returncode == 0


def _ukl_object(exe: Path, tmp: Path) -> Path:
    obj = tmp / "app.ukl.o"
    driver.extract_ukl_object(exe, obj)
    return obj


def _check_ukl_object(obj: Path) -> None:
    assert obj.read_bytes()[:4] == b"\x7fELF"
    assert lint(obj) == []
    undefined = driver.undefined_symbols(obj)
    assert "ukl_entry_SYSCALL_64" in undefined
    assert all(driver.crossing(s) for s in undefined), undefined
    defined = subprocess.run(["nm", "--defined-only", str(obj)], capture_output=True,
                             text=True, check=True).stdout.split("\n")
    names = [line.split()[-1] for line in defined if len(line.split()) == 3]
    assert "__ukl_main" in names and "__ukl__start" in names
    assert not [n for n in names if not n.startswith(driver.SYMBOL_PREFIX)
                and not n.startswith(".")]


def _suite(compiler: str, source: Path, tmp_path: Path) -> str:
    """Build a test suite program, run it on the host (it must exit 0), check
    its embedded UKL object, and return what it printed."""
    exe = tmp_path / source.stem
    res = _build(compiler, source, exe)
    assert res.returncode == 0, res.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    _check_ukl_object(_ukl_object(exe, tmp_path))
    return run.stdout


def test_libc_suite(tmp_path: Path) -> None:
    stdout = _suite(UKL_CC, PROGRAMS / "libc_suite.c", tmp_path)
    for check in ("stdio", "malloc-touch", "thread-tls", "main-tls", "sigalrm",
                  "sa_siginfo", "fork-wait", "vfork-wait", "longjmp"):
        assert f"ok {check}" in stdout
    assert stdout.count("ok thread-tls") == 8


def test_cxx_suite(tmp_path: Path) -> None:
    stdout = _suite(UKL_CXX, PROGRAMS / "cxx_suite.cc", tmp_path)
    assert stdout.splitlines() == ["ok static-ctor", "ok iostream-string", "ok std-thread",
                                   "ok exception", "cxx_suite: all passed"]


def test_exit_status_and_args(tmp_path: Path) -> None:
    exe = tmp_path / "exit_with"
    assert _build(UKL_CC, PROGRAMS / "exit_with.c", exe).returncode == 0
    run = subprocess.run([str(exe), "3", "x y"], capture_output=True, text=True)
    assert run.returncode == 3
    assert "exit_with: argv[2]=<x y>" in run.stdout


def test_ukl_h_on_the_host_reports_unsupported(tmp_path: Path) -> None:
    # <ukl.h> functions are kernel functions: the host build links the
    # stand-ins, which fail with EOPNOTSUPP; the UKL object leaves the name
    # undefined for the kernel link.
    exe = tmp_path / "bypass"
    res = _build(UKL_CC, PROGRAMS / "bypass.c", exe)
    assert res.returncode == 0, res.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "bypass: unsupported (errno 95)" in run.stdout
    assert "ukl_set_bypass" in driver.undefined_symbols(_ukl_object(exe, tmp_path))


def test_ukl_h_shortcuts_on_the_host_report_enosys(tmp_path: Path) -> None:
    # The shortcuts are system calls the host kernel does not know (ENOSYS);
    # run-to-completion is a kernel function whose stand-in says EOPNOTSUPP.
    exe = tmp_path / "shortcuts"
    res = _build(UKL_CC, PROGRAMS / "shortcuts.c", exe)
    assert res.returncode == 0, res.stderr
    run = subprocess.run([str(exe), "unsupported"], capture_output=True, text=True, timeout=60)
    assert "shortcuts: unsupported as expected" in run.stdout, run.stdout + run.stderr
    assert run.returncode == 0
    assert "ukl_set_run_to_completion" in driver.undefined_symbols(_ukl_object(exe, tmp_path))


def test_raw_syscall_fails_link_naming_function(tmp_path: Path) -> None:
    src = tmp_path / "raw.c"
    src.write_text("long sneaky_getpid(void) { long r; __asm__ volatile(\"syscall\" "
                   ": \"=a\"(r) : \"0\"(39L) : \"rcx\", \"r11\", \"memory\"); return r; }\n"
                   "int main(void) { return sneaky_getpid() < 0; }\n")
    res = _build(UKL_CC, src, tmp_path / "raw")
    assert res.returncode != 0
    assert re.search(r"user.o: sneaky_getpid: raw `syscall`", res.stderr), res.stderr


def test_red_zone_assembly_links(tmp_path: Path) -> None:
    # The kernel link decides: most UKL kernels never write below the
    # application's stack pointer (tests/boot/test_ukl_red_zone.py).
    src = tmp_path / "rz.c"
    src.write_text("__asm__(\".globl red\\nred:\\n\\tmovl %edi,-4(%rsp)\\n\\tmovl -4(%rsp),%eax"
                   "\\n\\tret\\n\");\nint red(int);\nint main(void) { return red(0); }\n")
    res = _build(UKL_CC, src, tmp_path / "rz")
    assert res.returncode == 0, res.stderr
    found = [f.where for f in lint(_ukl_object(tmp_path / "rz", tmp_path)) if f.red_zone]
    assert len(found) == 2 and all(w.endswith("red") for w in found), found


def test_compile_only_uses_ukl_headers_and_flags(tmp_path: Path) -> None:
    res = subprocess.run([UKL_CC, "-E", "-dM", "-x", "c", "/dev/null"], capture_output=True,
                         text=True, check=True)
    assert "__x86_64__" in res.stdout
    deps = subprocess.run([UKL_CC, "-M", str(PROGRAMS / "exit_with.c")], capture_output=True,
                          text=True, check=True).stdout
    headers = [t for t in deps.split() if t.endswith(".h")]
    assert str(layout.include_dir() / "stdio.h") in headers
    # Nothing from the host's C library headers.
    assert not [h for h in headers if h.startswith("/usr/include/")], headers


def test_ukl_cc_compiles_a_cxx_source_with_the_cxx_headers(tmp_path: Path) -> None:
    # Python's build_ext compiles C++ extensions with $CC (protobuf's):
    # gcc compiles foo.cc as C++, and ukl-cc gives it the C++ headers.
    src = tmp_path / "ext.cc"
    src.write_text("#include <atomic>\nstd::atomic<int> n;\nint bump() { return ++n; }\n")
    res = subprocess.run([UKL_CC, "-c", str(src), "-o", str(tmp_path / "ext.o")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    deps = subprocess.run([UKL_CC, "-M", str(src)], capture_output=True, text=True,
                          check=True).stdout
    assert not [t for t in deps.split() if t.startswith("/usr/include/")]


def test_a_c_program_gets_the_maths_library_without_asking(tmp_path: Path) -> None:
    # A static archive does not name the libraries it needs
    # (libpython3.11.a uses hypot; unbound links it with -lpython3.11
    # alone): every UKL link has libm, as the shared library named it.
    src = tmp_path / "m.c"
    src.write_text("#include <math.h>\nint main(int argc, char **argv) { (void)argv;\n"
                   "  return hypot(3.0, argc + 3.0) == 5.0 ? 0 : 1; }\n")
    _builds_and_runs(src)


def test_archives_link_in_any_order(tmp_path: Path) -> None:
    # protoc-c names -lprotobuf before -lprotoc, which needs it: shared
    # libraries link in any order, and so do a UKL link's archives.
    for name, text in (("a", "int b(void);\nint a(void) { return b() + 1; }\n"),
                       ("b", "int b(void) { return 41; }\n")):
        (tmp_path / f"{name}.c").write_text(text)
        subprocess.run([UKL_CC, "-c", "-o", str(tmp_path / f"{name}.o"),
                        str(tmp_path / f"{name}.c")], check=True)
        subprocess.run(["ar", "rcs", str(tmp_path / f"lib{name}.a"), str(tmp_path / f"{name}.o")],
                       check=True)
    (tmp_path / "m.c").write_text("int a(void);\nint main(void) { return a() == 42 ? 0 : 1; }\n")
    _builds_and_runs(tmp_path / "m.c", f"-L{tmp_path}", "-lb", "-la")


def test_main_from_a_static_archive_links(tmp_path: Path) -> None:
    # OpenSSL's test programs take main() from libtestutil.a.
    (tmp_path / "main.c").write_text("int run(void);\nint main(void) { return run(); }\n")
    (tmp_path / "prog.c").write_text("int run(void) { return 7; }\n")
    subprocess.run([UKL_CC, "-c", "-o", str(tmp_path / "main.o"), str(tmp_path / "main.c")],
                   check=True)
    subprocess.run(["ar", "rcs", str(tmp_path / "libmain.a"), str(tmp_path / "main.o")],
                   check=True)
    res = _build(UKL_CC, tmp_path / "prog.c", tmp_path / "prog", f"-L{tmp_path}", "-lmain")
    assert res.returncode == 0, res.stderr
    assert subprocess.run([str(tmp_path / "prog")]).returncode == 7


def test_makefile_project_builds_unchanged(tmp_path: Path) -> None:
    project = tmp_path / "wordstat"
    shutil.copytree(REPO / "tests" / "projects" / "wordstat", project)
    res = subprocess.run(["make", f"CC={UKL_CC}"], cwd=project, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    run = subprocess.run([str(project / "wordstat"), "a bb ccc dddd"], capture_output=True,
                         text=True, check=True)
    assert run.stdout == "words=4 mean=2.50 sqrt=2.000\n"
    _check_ukl_object(_ukl_object(project / "wordstat", tmp_path))


def test_autotools_project_configures_and_builds(tmp_path: Path) -> None:
    """GNU libiberty (from the gcc-12-source tree the toolchain unpacked) is a
    real autoconf project: ./configure CC=ukl-cc must find a working, native
    (not cross) compiler, make must build it, and a program using it must run."""
    from ukl.sources import debian
    source = debian.get("gcc").tree
    build = tmp_path / "libiberty"
    build.mkdir()
    conf = subprocess.run([str(source / "libiberty" / "configure"), f"CC={UKL_CC}"],
                          cwd=build, capture_output=True, text=True)
    assert conf.returncode == 0, conf.stdout[-3000:] + conf.stderr[-3000:]
    assert "checking whether the C compiler works... yes" in conf.stdout
    assert "checking whether we are cross compiling... no" in conf.stdout
    make = subprocess.run(["make", "-j2"], cwd=build, capture_output=True, text=True)
    assert make.returncode == 0, make.stdout[-3000:] + make.stderr[-3000:]
    prog = tmp_path / "use_iberty.c"
    prog.write_text('#include <stdio.h>\n#include <string.h>\n#include "libiberty.h"\n'
                    'int main(void) { char *s = concat(xstrdup("ukl"), "-", "iberty", NULL);\n'
                    '  puts(s); return strcmp(s, "ukl-iberty") != 0; }\n')
    exe = tmp_path / "use_iberty"
    res = subprocess.run([UKL_CC, "-O2", f"-I{source / 'include'}", "-o", str(exe), str(prog),
                          str(build / "libiberty.a")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True)
    assert (run.returncode, run.stdout) == (0, "ukl-iberty\n")
    _check_ukl_object(_ukl_object(exe, tmp_path))


def test_large_frames_are_probed_page_by_page(tmp_path: Path) -> None:
    # A UKL_NSS_PS pinned stack has one guard page below it, in kernel
    # memory: a frame larger than a page must touch every page on its way
    # down (stack clash protection), or it could step over the guard.
    src = tmp_path / "big.c"
    src.write_text("void use(volatile char *p);\n"
                   "void big(void) { volatile char frame[1 << 20]; frame[0] = 1; use(frame); }\n")
    res = subprocess.run([UKL_CC, "-O2", "-S", "-o", "-", str(src)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert re.search(r"orq\s+\$0, \(%rsp\)", res.stdout), res.stdout


def test_returns_and_indirect_branches_go_through_the_kernels_thunks(tmp_path: Path) -> None:
    # The kernel link makes each of these what the kernel makes of its own
    # (ukl/kbuild/thunks.py); a project's own speculation options cannot
    # turn them off, and -fcf-protection gives way to the kernel's none.
    src = tmp_path / "branches.c"
    src.write_text("int (*fp)(int);\n"
                   "int call_it(int x) { return fp(x) + 1; }\n")
    src.write_text(src.read_text() + "int puts(const char *);\n"
                   "int hello(void) { return puts(\"hello\"); }\n")
    # -fno-plt would call puts through the GOT with a memory thunk the
    # kernel lacks: dropped too.
    res = subprocess.run([UKL_CC, "-O2", "-fcf-protection", "-mindirect-branch=keep",
                          "-mfunction-return=keep", "-fno-plt", "-S", "-o", "-", str(src)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert re.search(r"(call|jmp)\s+puts\b", res.stdout), res.stdout
    assert "__x86_indirect_thunk\n" not in res.stdout
    assert re.search(r"call\s+__x86_indirect_thunk_rax", res.stdout), res.stdout
    assert re.search(r"jmp\s+__x86_return_thunk\n", res.stdout), res.stdout
    assert "endbr64" not in res.stdout


def test_stack_protected_code_runs_on_the_host(tmp_path: Path) -> None:
    # Debian's flags carry -fstack-protector-strong; a build tool compiled
    # with them and run on the host (ncurses' make_hash) crashed reading
    # the kernel code model's canary at %gs:40. It comes from the C
    # library's TLS instead, and a smashed canary is still caught.
    src = tmp_path / "guarded.c"
    src.write_text("#include <string.h>\n"
                   "static int fill(const char *s, int n)\n"
                   "{ char buf[8]; memset(buf, 'x', n); return buf[0] + (s != 0); }\n"
                   "int main(int argc, char **argv)\n"
                   "{ return fill(argv[0], argc > 1 ? 64 : 8) == 'x' + 1 ? 0 : 1; }\n")
    exe = tmp_path / "guarded"
    res = _build(UKL_CC, src, exe, "-fstack-protector-all")
    assert res.returncode == 0, res.stderr
    disassembly = subprocess.run(["objdump", "-d", str(exe)], capture_output=True, text=True,
                                 check=True).stdout
    assert "%fs:0x28" in disassembly and "%gs:0x28" not in disassembly
    assert subprocess.run([str(exe)]).returncode == 0
    smashed = subprocess.run([str(exe), "smash"], capture_output=True, text=True)
    assert smashed.returncode == -6 and "stack smashing detected" in smashed.stderr, smashed


def _sysroot_library(name: str) -> Path:
    """A library or crt file of the sysroot, in the C library's directory
    or in gcc's (usr/lib/ukl)."""
    return next(p for p in (layout.libdir() / name, layout.ukl_libdir() / name) if p.is_file())


@pytest.mark.parametrize("library", ["libc.a", "libstdc++.a", "libgcc.a"])
def test_libraries_are_built_with_stack_clash_protection(library: str) -> None:
    # What the application links is held to the same rule: the compiler
    # records its options in each object's debug information.
    path = _sysroot_library(library)
    data = path.read_bytes()
    assert b"-mcmodel=kernel" in data, f"{path}: no recorded compile options"
    assert b"-fstack-clash-protection" in data, path


# A branch the CPU may speculate through: a return, or an indirect call or
# jump (with or without a prefix), not a direct call of a thunk.
_PLAIN_BRANCH = re.compile(r"^\s+[0-9a-f]+:\s+(?:(?:rep[nz]*|notrack|bnd|cs|ds)\s+)*"
                           r"(?:l?retq?\b|(?:call|jmp)q?\s+\*)", re.MULTILINE)
_MEMBER = re.compile(r"^(\S+):\s+file format \S+$", re.MULTILINE)


def _disassembly(archive: Path) -> list[tuple[str, str]]:
    """(member, its code) for each member of an archive (or the one
    object), in order."""
    code = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", str(archive)],
                          capture_output=True, text=True, check=True).stdout
    parts = _MEMBER.split(code)
    return list(zip(parts[1::2], parts[2::2]))


def _producers(archive: Path) -> list[str]:
    """The compiler that made each member, in order ("" when none says)."""
    info = subprocess.run(["readelf", "--debug-dump=info", str(archive)], capture_output=True,
                          text=True, check=True).stdout
    dumps = re.split(r"^File: \S+\(\S+\)$", info, flags=re.MULTILINE)[1:]
    return [m.group(1) if (m := re.search(r"DW_AT_producer\s*:.*?:\s*(GNU \S+)", d)) else ""
            for d in dumps]


@pytest.mark.parametrize("library", ["libc.a", "libm.a", "libstdc++.a", "libsupc++.a",
                                     "libgcc.a", "libgcc_eh.a"])
def test_runtime_libraries_branch_only_through_the_kernels_thunks(library: str) -> None:
    # The C library, libgcc and libstdc++ join the application in the
    # kernel, so their code is held to the application's rule: compiled
    # code by its flags, glibc's hand-written assembly by its own patch
    # (libc/patches: `ret` is a macro there).
    path = _sysroot_library(library)
    members = _disassembly(path)
    assert any(made_by.startswith("GNU C") for made_by in _producers(path)), \
        f"{path}: no member says it was compiled from C or C++"
    plain = {name: found for name, code in members if (found := _PLAIN_BRANCH.findall(code))}
    assert not plain, f"{path}: plain branches"
    assert any("__x86_return_thunk" in code for _, code in members), path


@pytest.mark.parametrize("crt", ["crt1.o", "crti.o", "crtn.o", "crtbeginT.o", "crtend.o"])
def test_crt_files_branch_only_through_the_kernels_thunks(crt: str) -> None:
    # crtbeginT.o has no debug information to say how it was compiled;
    # crt1.o, crti.o and crtn.o are assembly.
    [(_, code)] = _disassembly(_sysroot_library(crt))
    assert not _PLAIN_BRANCH.search(code), code


def test_a_configure_check_links_for_the_host_only(tmp_path: Path) -> None:
    """autoconf's conftest gets no UKL object (nothing puts it into a
    kernel), but is linted as the real program would be: a check that
    would fail `ukl lint` fails, so configure turns the feature off."""
    src = tmp_path / "conftest.c"
    src.write_text("int main(void) { return 0; }\n")
    probe = tmp_path / "conftest"
    subprocess.run([str(REPO / "bin" / "ukl-cc"), str(src), "-o", str(probe)], check=True)
    assert subprocess.run([str(probe)]).returncode == 0
    with pytest.raises(driver.DriverError):
        driver.extract_ukl_object(probe, tmp_path / "none.o")
    program = tmp_path / "program"
    subprocess.run([str(REPO / "bin" / "ukl-cc"), str(src), "-o", str(program)], check=True)
    driver.extract_ukl_object(program, tmp_path / "program.ukl.o")
    raw = tmp_path / "conftest.c"
    raw.write_text("int main(void) { __asm__ volatile(\"syscall\"); return 0; }\n")
    res = subprocess.run([str(REPO / "bin" / "ukl-cc"), str(raw), "-o", str(probe)],
                         capture_output=True, text=True)
    assert res.returncode != 0 and "ukl lint" in res.stderr


def test_a_library_builds_program_takes_its_own_definitions_first(tmp_path: Path) -> None:
    """OpenSSL's tls13secretstest defines libssl's internal functions
    itself, which the shared libssl hides; linked against libssl.a the
    names clash. In a library's Debian build (whose programs no UKL link
    takes) the program's definitions win, as in the dynamic link; in any
    other link, and in a configure check, the clash is an error."""
    (tmp_path / "lib.c").write_text("int internal(void) { return 1; }\n"
                                    "int api(void) { return internal(); }\n")
    subprocess.run([UKL_CC, "-c", "-o", str(tmp_path / "lib.o"), str(tmp_path / "lib.c")],
                   check=True)
    subprocess.run(["ar", "rcs", str(tmp_path / "libx.a"), str(tmp_path / "lib.o")], check=True)
    (tmp_path / "t.c").write_text("int api(void);\nint internal(void) { return 5; }\n"
                                  "int main(void) { return api() + internal(); }\n")
    library_build = {**os.environ, driver.LIBRARY_BUILD_ENV: "1"}
    for out, env, ok in (("t", None, False), ("t", library_build, True),
                         ("conftest", library_build, False)):
        res = subprocess.run([UKL_CC, "-O2", "-o", str(tmp_path / out), str(tmp_path / "t.c"),
                              f"-L{tmp_path}", "-lx"], capture_output=True, text=True, env=env)
        assert (res.returncode == 0) == ok, (out, env is not None, res.stderr)
        if ok:
            # Its own internal() for both calls: 5 + 5.
            assert subprocess.run([str(tmp_path / out)]).returncode == 10
    # No UKL link takes a library build's programs: they are host
    # executables only.
    with pytest.raises(driver.DriverError, match="no .ukl"):
        driver.extract_ukl_object(tmp_path / "t", tmp_path / "t.ukl.o")


SECTION_SET = """\
#include <stdio.h>
struct item { const char *name; };
#define ITEM(n) static const struct item item_##n \\
    __attribute__((used, section("my_set"))) = { #n }
ITEM(one); ITEM(two); ITEM(three);
extern const struct item __start_my_set[], __stop_my_set[];
int main(void) { printf("items=%d\\n", (int)(__stop_my_set - __start_my_set)); return 0; }
"""


def test_a_section_set_has_its_bounds_in_the_ukl_object(tmp_path: Path) -> None:
    # haproxy finds its initcalls between __start_i_STG_PREPARE and
    # __stop_i_STG_PREPARE, which ld defines in an ordinary link; the
    # kernel link renames the section, so the UKL object defines them.
    src = tmp_path / "sets.c"
    src.write_text(SECTION_SET)
    exe = tmp_path / "sets"
    res = _build(UKL_CC, src, exe)
    assert res.returncode == 0, res.stderr
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout == "items=3\n"
    obj = _ukl_object(exe, tmp_path)
    assert driver.undefined_symbols(obj) == [s for s in driver.undefined_symbols(obj)
                                             if "my_set" not in s]
    symbols = subprocess.run(["readelf", "-sW", str(obj)], capture_output=True, text=True,
                             check=True).stdout
    bounds = {f[-1]: int(f[1], 16) for line in symbols.splitlines()
              if (f := line.split()) and f[-1].endswith("_my_set")}
    prefix = driver.SYMBOL_PREFIX
    assert bounds == {f"{prefix}__start_my_set": 0, f"{prefix}__stop_my_set": 24}
    sections = subprocess.run(["objdump", "-h", str(obj)], capture_output=True, text=True,
                              check=True).stdout
    assert ".data.ukl_set.my_set" in sections
