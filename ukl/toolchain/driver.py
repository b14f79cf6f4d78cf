"""ukl-cc / ukl-c++: drop-in compiler drivers for UKL applications.

Compiling adds the UKL sysroot and the kernel code-generation flags. The
final link produces two things in one file (a configure check's and a
library build's programs, which no kernel links, only the first):

  * an ordinary static executable for the build host, linked at a user
    address with a stand-in for the kernel's entry point (toolchain/
    host-entry.S), so ./configure probes and host-side tests can run it;
  * embedded in its `.ukl.object` section, the relocatable UKL object
    (app + libc + libgcc [+ libstdc++]) that `ukl build` links into vmlinux.
    Every symbol in it carries the `__ukl_` prefix, so app and kernel names
    cannot collide, except the undefined names the kernel provides (see
    KERNEL_PROVIDED); `ukl lint` runs on it before it is embedded.
"""
from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ukl.common.buildenv import have_ccache
from ukl.common.errors import UklError
from ukl.toolchain import layout
from ukl.toolchain import lint
from ukl.toolchain import lint_inputs
from ukl.toolchain import self_symbols

UKL_SECTION = ".ukl.object"
SYMBOL_PREFIX = "__ukl_"
# Names an app object may leave undefined: the kernel's entry point and the
# symbols its linker script defines for libc's static start-up. Nothing else
# crosses between app and kernel.
KERNEL_PROVIDED = {
    "ukl_entry_SYSCALL_64",
    # The C library's syscall() enters through this one (libc/patches).
    "ukl_syscall",
    # <ukl.h> (sysroot/include/ukl.h): kernel functions the app calls.
    "ukl_set_bypass", "ukl_set_run_to_completion",
    # The kernel's stand-ins for the vDSO, which libc calls (libc/patches/0004).
    "ukl_vdso_clock_gettime", "ukl_vdso_gettimeofday", "ukl_vdso_time",
    "__preinit_array_start", "__preinit_array_end",
    "__init_array_start", "__init_array_end",
    "__fini_array_start", "__fini_array_end",
    "__rela_iplt_start", "__rela_iplt_end",
    "__ehdr_start",
    # Defined by ld itself in any link that uses GOT-relative relocations
    # (initial-exec TLS references name it even when relaxed away).
    "_GLOBAL_OFFSET_TABLE_",
    # End of the loaded image; only dl-minimal-malloc (static dlopen) uses it.
    "_end",
}
# ld defines __start_SEC/__stop_SEC for sections glibc collects
# (__libc_atexit, __libc_IO_vtables, ...); in the kernel link the UKL
# linker script does.
# The kernel's speculation thunks (layout.SPECULATION_CFLAGS) cross too.
_THUNK_REGISTER = r"(?:r[a-d]x|r[sd]i|rbp|r(?:8|9|1[0-5]))"
KERNEL_PROVIDED_PATTERN = re.compile(r"^(__(start|stop)_[A-Za-z0-9_]+"
                                     rf"|__x86_return_thunk(?:_{_THUNK_REGISTER})?"
                                     rf"|__x86_indirect_thunk_{_THUNK_REGISTER})$")

_COMPILE_ONLY = {"-c", "-S", "-E", "-M", "-MM"}
_OTHER_ABIS = {"-m32", "-mx32"}
# Set by `ukl build --debian` for Debian's own builds (ukl.app.debian.rules):
# the libraries a package depends on, built for UKL and unpacked there
# (usr/include, usr/lib/x86_64-linux-gnu), searched after the UKL sysroot.
DEPS_SYSROOT_ENV = "UKL_DEPS_SYSROOT"
# Also set for Debian's builds: a `-shared` link makes a stand-in shared
# object (see _shared_standin) instead of failing, so that a library
# package's own build and packaging run to the end and give its static
# archive and headers, the parts a UKL program links.
SHARED_STANDIN_ENV = "UKL_SHARED_STANDIN"
# Set for a Debian build wanted only for its static libraries and headers
# (a UKL program's library dependency): no UKL link takes its programs,
# which are host executables only (see link). They link against its
# static archives where Debian's link used its
# shared libraries, whose version script hides internal functions that
# a test program then defines itself (OpenSSL's tls13secretstest): the
# program's own definitions are taken first (-z muldefs), as they would
# be found first in the dynamic link.
LIBRARY_BUILD_ENV = "UKL_LIBRARY_BUILD"
# Set for a Debian build that left libraries out: their link names
# (lzf for liblzf-dev), space-separated. Debian's rules may still name them
# in every link (redis's LDFLAGS add -llzf though it compiles its own LZF):
# a -lNAME of theirs that the UKL directories do not have is dropped, and
# a link that truly needed it fails on the undefined symbols.
LEFT_OUT_LIBS_ENV = "UKL_LEFT_OUT_LIBS"
# gcc's runtime libraries the UKL toolchain does not build, dropped the
# same way: libatomic (redis's rules add -latomic for the architectures
# that need it). On x86-64 gcc inlines every atomic operation of up to 8
# bytes; a program that needs libatomic's (16-byte or unaligned) fails to
# link on the __atomic_* functions it calls.
NOT_IN_TOOLCHAIN = frozenset({"atomic"})
# Set with them: a directory of compiler names that run ukl-cc (Debian's
# rules that call x86_64-linux-gnu-gcc directly), first in PATH. The
# compilers ukl-cc runs must be the real ones: it takes the directory out.
COMPILER_SHIMS_ENV = "UKL_COMPILER_SHIMS"
# Host library directories: nothing built there is kernel-model code (see
# _check_inputs).
_HOST_LIBRARY_DIRS = (Path("/usr/lib"), Path("/lib"), Path("/usr/local/lib"), Path("/lib64"))
# -Wl,-soname,X, -Wl,-soname=X, -Wl,-h,X and -Wl,-hX (Python's).
_SONAME = re.compile(r"^-Wl,(?:-soname[,=]|-h[,=]?)(.+)$")
# Position-independent code cannot use the kernel code model, and a UKL app
# is one static object: projects that ask for PIC (for a static library they
# could also make shared, like hiredis) get ordinary kernel-model code.
_POSITION_INDEPENDENT = {"-fPIC", "-fpic", "-fPIE", "-fpie", "-pie"}
# -fno-plt calls through the GOT: with the speculation thunks gcc makes
# that `push mem; jmp __x86_indirect_thunk`, a thunk the kernel does not
# have (-mindirect-branch-register notwithstanding). A static link has no
# PLT anyway (libxcrypt asks for it).
_NO_PLT = "-fno-plt"
# A project's own speculation options would undo layout.SPECULATION_CFLAGS
# (-mindirect-branch=keep), and gcc refuses -fcf-protection beside
# -mindirect-branch=thunk or thunk-inline. UKL kernels have no IBT, so
# -fcf-protection's ENDBR64 and NOTRACK would only cost: the kernel's
# choice, -fcf-protection=none, wins.
_SPECULATION_PREFIXES = ("-mindirect-branch", "-mfunction-return", "-mharden-sls",
                         "-fcf-protection")
_QUERY_PREFIXES = ("-print-", "-dump", "--version", "-v", "--help", "-###")


class DriverError(Exception):
    pass


def _gcc_include() -> str:
    out = subprocess.run(["gcc", "-print-file-name=include"], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip()


def deps_sysroots() -> list[Path]:
    """The dependency sysroots named by $UKL_DEPS_SYSROOT (colon-separated)."""
    return [Path(d) for d in os.environ.get(DEPS_SYSROOT_ENV, "").split(":") if d]


# A stack protector's canary (-fstack-protector-strong, in Debian's
# default flags): with -mcmodel=kernel gcc reads it from %gs:40, which is
# nothing on the host (a configure probe or a build tool run there
# crashes) and the kernel's own canary at CPL0. The C library's, in the
# thread's TLS at %fs:40, serves both.
STACK_PROTECTOR_GUARD = ["-mstack-protector-guard=tls", "-mstack-protector-guard-reg=fs",
                         "-mstack-protector-guard-offset=40"]


def code_generation_flags() -> list[str]:
    """What every UKL compile adds to generate code for the kernel: part of
    the state of a build made with ukl-cc, so that changing it redoes it."""
    return layout.KERNEL_CFLAGS + layout.SPECULATION_CFLAGS + STACK_PROTECTOR_GUARD


def compile_flags(cxx: bool) -> list[str]:
    """Flags for every compile: UKL headers only (and the dependencies'),
    kernel code generation."""
    includes = [str(d) for d in layout.cxx_include_dirs()] if cxx else []
    includes += [_gcc_include(), str(layout.include_dir())]
    for deps in deps_sysroots():
        includes += [str(deps / "usr/include" / layout.MULTIARCH), str(deps / "usr/include")]
    flags = ["-nostdinc"]
    for inc in includes:
        flags += ["-isystem", inc]
    return flags + code_generation_flags()


def _library_paths() -> list[Path]:
    """The UKL library directories: the sysroot's, then the dependencies'."""
    dirs = [layout.libdir(), layout.ukl_libdir()]
    for deps in deps_sysroots():
        dirs += [deps / layout.LIBDIR, deps / "usr/lib"]
    return dirs


def search_dirs(gcc: str) -> str:
    """-print-search-dirs as a UKL link sees it: gcc's own install and
    program directories, and for libraries the UKL sysroot's and the
    dependencies' (what _library_paths gives a link). Build systems that
    look for libraries themselves read it (perl's Configure, libtool): with
    gcc's answer they find the host's libcrypt.a and libgdbm.a, which no
    UKL link may take."""
    out = subprocess.run([gcc, "-print-search-dirs"], capture_output=True, text=True,
                         check=True).stdout
    lines = [line for line in out.splitlines() if not line.startswith("libraries:")]
    dirs = [str(d) for d in _library_paths()]
    return "\n".join([*lines, "libraries: =" + ":".join(dirs)]) + "\n"


def _link_inputs(cxx: bool) -> tuple[list[str], list[str], list[str]]:
    """(start files, libraries, end files) for a static link against the sysroot."""
    lib, ukl = layout.libdir(), layout.ukl_libdir()
    start = [str(lib / "crt1.o"), str(lib / "crti.o"), str(ukl / "crtbeginT.o")]
    end = [str(ukl / "crtend.o"), str(lib / "crtn.o")]
    libs = [f"-L{lib}", f"-L{ukl}", "-Wl,--start-group"]
    if cxx:
        libs += ["-lstdc++"]
    # The maths library in every link, C too: a static archive does not
    # name the libraries it needs as a shared library does (Debian's
    # libpython3.11.so names libm; unbound, linking libpython3.11.a with
    # -lpython3.11 alone, lacked hypot). Only what is used is taken.
    libs += ["-lm", "-lc", "-lgcc", "-lgcc_eh", "-Wl,--end-group"]
    return start, libs, end


def link_identity() -> str:
    """A digest of what a UKL link adds to a program: the start and end
    files and the libraries of the sysroot (the C library and the gcc
    runtime, libstdc++ included), the host stand-in for the entry point,
    and this driver's own code (its symbol table, its renaming). A program
    linked with another identity holds another C library."""
    start, _, end = _link_inputs(True)
    lib, ukl = layout.libdir(), layout.ukl_libdir()
    files = [Path(f) for f in (*start, *end)]
    files += [lib / n for n in ("libc.a", "libm.a", "libstdc++.a")]
    files += [ukl / n for n in ("libgcc.a", "libgcc_eh.a", "host-entry.o")]
    files += [Path(__file__), Path(self_symbols.__file__)]
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0")
        try:
            with f.open("rb") as data:
                for block in iter(lambda: data.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            h.update(b"missing")
    return h.hexdigest()


def split_output(args: list[str]) -> tuple[str, list[str]]:
    """The -o target (default a.out) and the arguments without it."""
    output, rest, take_next = "a.out", [], False
    for a in args:
        if take_next:
            output, take_next = a, False
        elif a == "-o":
            take_next = True
        elif a.startswith("-o") and len(a) > 2:
            output = a[2:]
        else:
            rest.append(a)
    return output, rest


def _run(cmd: list[str]) -> None:
    res = subprocess.run(cmd)
    if res.returncode != 0:
        raise DriverError(f"exit status {res.returncode}")


def without_left_out(args: list[str], name: str = "ukl-cc") -> list[str]:
    """The link arguments without each -lNAME (or -l NAME) of a library
    left out of the build (LEFT_OUT_LIBS_ENV) or not in the UKL toolchain
    (NOT_IN_TOOLCHAIN) that no UKL library directory has; each dropped
    with a note."""
    left_out = set(os.environ.get(LEFT_OUT_LIBS_ENV, "").split()) | NOT_IN_TOOLCHAIN
    dirs = _library_paths()
    out: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        lib, width = (a[2:], 1) if a.startswith("-l") and len(a) > 2 else (
            (args[i + 1], 2) if a == "-l" and i + 1 < len(args) else ("", 1))
        if lib in left_out and not any((d / f"lib{lib}.a").is_file() for d in dirs):
            why = ("not in the UKL toolchain" if lib in NOT_IN_TOOLCHAIN
                   else "its library was left out of this build")
            print(f"{name}: note: -l{lib} dropped: {why} (a link that needs it fails on "
                  "its undefined symbols)", file=sys.stderr)
        else:
            out += args[i:i + width]
        i += width
    return out


def static_inputs(args: list[str]) -> list[str]:
    """The user's link arguments with each shared library named by path
    (libtool passes .libs/libfoo.so) replaced by the static archive beside
    it, followed by what that archive needs (libtool_dependencies); a
    shared library without one cannot be linked."""
    out = []
    needs: list[str] = []
    for a in args:
        m = re.match(r"^(.*)\.so(\.[0-9.]+)?$", a)
        if m and not a.startswith("-") and Path(a).exists():
            archive = Path(m.group(1) + ".a")
            if not archive.is_file():
                raise DriverError(f"{a} is a shared library and there is no {archive.name} "
                                  "beside it; a UKL program links static archives only")
            a = str(archive)
            needs += [d for d in libtool_dependencies(archive) if d not in needs]
        out.append(a)
    return out + needs


_LA_DEPENDENCIES = re.compile(r"^dependency_libs='([^']*)'", re.M)
_LA_OLD_LIBRARY = re.compile(r"^old_library='([^']*)'", re.M)


def libtool_dependencies(archive: Path) -> list[str]:
    """What a libtool library's static archive needs in a link: its .la
    file's dependency_libs (-L, -l, other .la files as their archives).
    A link against libgnutls.so needs none of them (the shared library
    names them); one against libgnutls.a needs Nettle, GMP and the rest
    (gnutls-cli, linked against its own library)."""
    la = archive.parent.parent / (archive.stem + ".la") if archive.parent.name == ".libs" \
        else archive.with_suffix(".la")
    if not la.is_file():
        return []
    m = _LA_DEPENDENCIES.search(la.read_text(errors="replace"))
    out: list[str] = []
    for word in shlex.split(m.group(1)) if m else []:
        if word.endswith(".la"):
            dep = Path(word)
            old = _LA_OLD_LIBRARY.search(dep.read_text(errors="replace")) if dep.is_file() \
                else None
            if not old or not old.group(1):
                continue
            word = str(dep.parent / ".libs" / old.group(1))
            if not Path(word).is_file():
                word = str(dep.parent / old.group(1))
        elif not word.startswith(("-l", "-L")):
            continue
        out.append(word)
    return out


# Linker options that only mean something in a final link: a partial link
# (-r) refuses --gc-sections without an entry point to keep.
_FINAL_LINK_ONLY = {"--gc-sections", "-gc-sections"}


def partial_link_args(args: list[str]) -> list[str]:
    """The user's link arguments for the partial (-r) link that gathers
    their code: without options only a final link takes (dbus passes
    -Wl,--gc-sections; ld refuses it in a partial link without an entry
    point)."""
    out = []
    for a in args:
        if a.startswith("-Wl,"):
            kept = [w for w in a[4:].split(",") if w not in _FINAL_LINK_ONLY]
            if not kept:
                continue
            a = "-Wl," + ",".join(kept)
        out.append(a)
    return out


def host_inputs(trace: str) -> list[str]:
    """Input files named by ld --trace that come from the host's library
    directories: code not built for the kernel model, which must not reach
    a UKL program (a configure check that finds the host's libreadline must
    fail, as if the library were absent)."""
    found = []
    for line in trace.splitlines():
        line = line.strip()
        # --trace names archive members as "archive(member)".
        path = Path(line.split("(", 1)[0]) if line.startswith("/") else None
        if path is None:
            continue
        real = path.resolve()
        if any(real.is_relative_to(d) for d in _HOST_LIBRARY_DIRS):
            found.append(str(path))
    return sorted(set(found))


def undefined_symbols(obj: Path, kind: str = "U") -> list[str]:
    """Undefined symbols of a relocatable object: strong ("U") by default,
    or weak ("w"), which may stay 0, or both ("Uw")."""
    out = subprocess.run(["nm", "-u", str(obj)], capture_output=True, text=True, check=True)
    names = []
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] in kind:
            names.append(parts[1])
    return names


def crossing(name: str) -> bool:
    return name in KERNEL_PROVIDED or bool(KERNEL_PROVIDED_PATTERN.match(name))


def _combine_user_inputs(cxx: bool, user_args: list[str], out: Path,
                         first_definition_wins: bool = False) -> None:
    """Compile the user's sources and combine them with the user's objects and
    libraries into one relocatable object, then lint it.

    Only user code is linted per link: the UKL libraries were linted when the
    toolchain was built, and this keeps each link (and so ./configure) fast;
    each input file is linted once, whatever links it (lint_inputs).
    """
    gcc = "g++" if cxx else "gcc"
    # -Bstatic: -lfoo finds libfoo.a only. --trace lists every input, so
    # that one from the host's library directories is refused. main may
    # live in one of the archives (OpenSSL's tests take theirs from
    # libtestutil.a): nothing in a partial link asks for it, so say it is
    # wanted, as crt1.o would in a final link. --trace twice names the
    # archive members taken too, whose findings lint_inputs keeps.
    muldefs = ["-Wl,-z,muldefs"] if first_definition_wins else []
    dirs = _library_paths()
    cmd = [gcc, *compile_flags(cxx or compiles_cxx(user_args)), "-r", "-nostdlib",
           "-Wl,-Bstatic",
           "-Wl,--trace", "-Wl,--trace", *muldefs,
           "-Wl,--undefined=main",
           # One group: archives in any order, as shared libraries link
           # (protoc-c names -lprotobuf before -lprotoc, which needs it).
           *(f"-L{d}" for d in dirs), "-Wl,--start-group",
           *with_archive_needs(static_inputs(partial_link_args(without_left_out(user_args))),
                               dirs),
           "-Wl,--end-group", "-o", str(out)]
    res = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if res.returncode != 0:
        raise DriverError(f"exit status {res.returncode}")
    host = host_inputs(res.stdout)
    if host:
        raise DriverError("links the host's " + ", ".join(host) + ", not built for UKL; "
                          "build the library with ukl-cc (ukl build --debian does for "
                          "a package's library build-dependencies)")
    # Red-zone use is checked at the kernel link: only some kernels mind.
    findings = lint.problems(lint_inputs.lint_link(res.stdout, out, user_args))
    if findings:
        print(lint.report(out, findings), file=sys.stderr)
        raise DriverError("the program failed `ukl lint`")


def _self_symbols(user_obj: Path, tmp: Path) -> list[str]:
    """The object of the table of the program's own symbols that the UKL
    C library's dlsym searches (self_symbols), if the program calls dlsym."""
    try:
        table = self_symbols.table_for(user_obj)
    except UklError as e:
        raise DriverError(e.message) from e
    if table is None:
        return []
    src, obj = tmp / "self-symbols.s", tmp / "self-symbols.o"
    src.write_text(table)
    _run(["gcc", "-c", str(src), "-o", str(obj)])
    return [str(obj)]


# The sections glibc collects whose bounds the kernel's linker script
# defines (__start___libc_atexit ...): the kernel link's, as before.
_KERNEL_SETS = {"__libc_subfreeres", "__libc_atexit", "__libc_IO_vtables"}
_SET_BOUND = re.compile(r"^__(?:start|stop)_([A-Za-z_][A-Za-z0-9_]*)$")


def section_sets(user_obj: Path) -> list[str]:
    """The sections the program finds by ld's __start_NAME/__stop_NAME
    (haproxy's initcall lists, i_STG_PREPARE), which the user object has:
    an ordinary link defines those bounds for a section named like a C
    identifier, the kernel link (where the section is .uklNAME) does not."""
    wanted = {m.group(1) for s in undefined_symbols(user_obj, "Uw")
              if (m := _SET_BOUND.match(s)) and m.group(1) not in _KERNEL_SETS}
    if not wanted:
        return []
    out = subprocess.run(["objdump", "-h", str(user_obj)], capture_output=True, text=True,
                         check=True).stdout
    present = {parts[1] for line in out.splitlines()
               if len(parts := line.split()) > 1 and parts[0].isdigit()}
    return sorted(wanted & present)


def section_set_script(names: list[str]) -> str:
    """A linker script for the partial link that gathers each set into a
    data section of its own (.data.ukl_set.NAME: the kernel's script takes
    .ukl.data.*) between its __start_/__stop_ symbols, which the link then
    defines relative to it."""
    lines = ["SECTIONS {"]
    for n in names:
        lines += [f"  .data.ukl_set.{n} : {{", f"    __start_{n} = .;", f"    KEEP(*({n}))",
                  f"    __stop_{n} = .;", "  }"]
    return "\n".join(lines + ["}"]) + "\n"


def make_ukl_object(cxx: bool, user_obj: Path, out: Path, tmp: Path) -> None:
    """ld -r the user object with the UKL libraries, check what stays
    undefined, and prefix every other name."""
    start, libs, end = _link_inputs(cxx)
    raw = tmp / "raw.o"
    gcc = "g++" if cxx else "gcc"
    sets = section_sets(user_obj)
    script: list[str] = []
    if sets:
        (tmp / "sets.ld").write_text(section_set_script(sets))
        script = [f"-Wl,-T,{tmp / 'sets.ld'}"]
    _run([gcc, "-r", "-nostdlib", *script, *start, str(user_obj),
          *_self_symbols(user_obj, tmp),
          *libs, *end, "-o", str(raw)])
    undefined = undefined_symbols(raw)
    stray = [s for s in undefined if not crossing(s)]
    if stray:
        raise DriverError("undefined symbols not provided by libc or the kernel: "
                          + ", ".join(sorted(stray)[:20]))
    # Weak references that the kernel link resolves too: glibc's symbol sets
    # (__start___libc_atexit, __start___libc_IO_vtables, ...). Left prefixed
    # they would be 0, and stdio would reject every FILE's vtable.
    weak = [s for s in undefined_symbols(raw, "w") if crossing(s)]
    mapping = tmp / "crossing.map"
    mapping.write_text("".join(f"{SYMBOL_PREFIX}{s} {s}\n" for s in undefined + weak))
    # Two passes: within one objcopy run the renames apply before the prefix.
    _run(["objcopy", f"--prefix-symbols={SYMBOL_PREFIX}", str(raw), str(out)])
    _run(["objcopy", f"--redefine-syms={mapping}", str(out)])


# What autoconf's checks link (conftest$ac_exeext): run on the host or
# only linked, never put into a kernel.
_PROBE = re.compile(r"^conftest(\.exe)?$")


def configure_probe(output: Path) -> bool:
    """Whether `output` is a configure check's program, which needs no UKL
    object: the host link already tells configure whether it links, and
    the user code was linted (a check fails as the real program would)."""
    return bool(_PROBE.match(output.name))


def link(cxx: bool, args: list[str]) -> None:
    output_name, user_args = split_output(args)
    output = Path(output_name)
    start, libs, end = _link_inputs(cxx)
    gcc = "g++" if cxx else "gcc"
    host_entry = layout.ukl_libdir() / "host-entry.o"
    with tempfile.TemporaryDirectory(prefix="ukl-cc-") as tmpdir:
        tmp = Path(tmpdir)
        user_obj = tmp / "user.o"
        library_build = os.environ.get(LIBRARY_BUILD_ENV) == "1"
        probe = configure_probe(output)
        # A library build's programs (LIBRARY_BUILD_ENV); not configure's
        # checks, whose answers must not change.
        _combine_user_inputs(cxx, user_args, user_obj,
                             first_definition_wins=library_build and not probe)
        _run([gcc, "-static", "-no-pie", "-nostdlib", *start, str(user_obj), str(host_entry),
              *libs, *end, "-o", str(output)])
        # Neither a configure check nor a library build's program is ever
        # linked into a kernel: the host executable is all they need. (The
        # UKL object, the program with the whole C library, made for each
        # of OpenSSL's test programs, was 10 GB of its build tree.)
        if probe or library_build:
            return
        ukl_obj = tmp / "app.ukl.o"
        make_ukl_object(cxx, user_obj, ukl_obj, tmp)
        _run(["objcopy", "--add-section", f"{UKL_SECTION}={ukl_obj}",
              "--set-section-flags", f"{UKL_SECTION}=readonly,noload", str(output)])


def extract_ukl_object(executable: Path, out: Path) -> None:
    """Copy the embedded UKL object out of a ukl-cc executable."""
    res = subprocess.run(["objcopy", f"--dump-section={UKL_SECTION}={out}", str(executable),
                          "/dev/null"], capture_output=True, text=True)
    if res.returncode != 0 or not out.is_file():
        raise DriverError(f"{executable} has no {UKL_SECTION} section; was it linked "
                          "with ukl-cc or ukl-c++?")


def is_link(args: list[str]) -> bool:
    if not args:
        return False
    if any(a in _COMPILE_ONLY for a in args):
        return False
    return not any(a.startswith(_QUERY_PREFIXES) for a in args)


def _shared_standin(args: list[str], cxx: bool = False) -> int:
    """A `-shared` link in one of Debian's builds: a shared object with the
    requested soname that stands in for the real library, so the package's
    build and packaging finish; nothing UKL links reads it (a UKL link
    takes static archives only, see static_inputs). It exports the global
    symbols of the objects it was asked to link (standin_assembly), so
    that Debian's symbols files come out (Python's rules edit
    libpython3.11's); each function traps. It cannot be loaded: it needs
    a library that does not exist (STANDIN_NEEDED), so dlopen fails as
    for a missing module (Python's setup.py imports the extension modules
    it just built, and goes on without those that fail), and a program
    linked with it does not start. It names the libraries its link named
    (STANDIN_NEEDS_SECTION), and libstdc++ when linked as C++ (`cxx`:
    g++ adds it unnamed; ICU's libraries need it, and libxml2's programs,
    C, link them). Beside it, the static twin of the library
    (static_twin)."""
    output, rest = split_output(args)
    soname = standin_soname(rest)
    flags = [f"-Wl,-soname,{soname}"] if soname else []
    inputs = [a for a in _expand_response_files(rest)
              if a.endswith((".o", ".obj", ".a")) and Path(a).is_file()]
    with tempfile.TemporaryDirectory(prefix="ukl-standin-") as tmp:
        stub = Path(tmp) / "standin.s"
        needs = linked_libraries(rest)
        needs += ["stdc++"] if cxx and "stdc++" not in needs else []
        stub.write_text(standin_assembly(_defined_globals(inputs), needs))
        needed = Path(tmp) / STANDIN_NEEDED
        res = subprocess.run(["gcc", "-shared", "-nostdlib", "-x", "c", "/dev/null",
                              f"-Wl,-soname,{STANDIN_NEEDED}", "-o", str(needed)])
        if res.returncode == 0:
            res = subprocess.run(["gcc", "-shared", "-nostdlib", str(stub), *flags,
                                  "-Wl,--no-as-needed", str(needed), "-o", output])
    if res.returncode == 0:
        static_twin(Path(output), rest)
    return res.returncode


def _defined_globals(inputs: list[str]) -> list[tuple[str, str, int]]:
    """(name, nm type, size) of the global symbols `inputs` define."""
    if not inputs:
        return []
    res = subprocess.run(["nm", "-P", "--defined-only", "--extern-only", *inputs],
                         capture_output=True, text=True)
    found: dict[str, tuple[str, str, int]] = {}
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2 or parts[0].endswith(":") or parts[1] in ("U", "w", "v"):
            continue
        # A versioned name (libxcrypt's crypt@@XCRYPT_2.0, set by .symver)
        # is exported under its plain name: the stand-in has no version
        # script, and the assembler takes no '@' in a label.
        name = parts[0].split("@", 1)[0]
        if not _ASM_NAME.match(name):
            continue
        size = int(parts[3], 16) if len(parts) > 3 else 0
        found.setdefault(name, (name, parts[1], size))
    return sorted(found.values())


# A name the assembler takes as a label as it is.
_ASM_NAME = re.compile(r"^[A-Za-z_.$][A-Za-z0-9_.$]*$")


# nm's types of code: text, weak code, indirect functions.
_CODE_TYPES = {"T", "W", "i"}


def standin_assembly(symbols: list[tuple[str, str, int]], needs: Sequence[str] = ()) -> str:
    """Assembly that defines `symbols` (nm's name, type, size): a function
    as a trap (ud2), data as zeros of its size (at least one byte); and
    names the libraries in `needs` (STANDIN_NEEDS_SECTION)."""
    lines = [".text"]
    data = []
    for name, kind, size in symbols:
        if kind in _CODE_TYPES:
            lines += [f".globl {name}", f".type {name}, @function", f"{name}:", "ud2"]
        else:
            data += [f".globl {name}", f".type {name}, @object",
                     f".size {name}, {max(size, 1)}", f"{name}:", f".zero {max(size, 1)}"]
    if data:
        lines += [".data", *data]
    if needs:
        # Allocated, so that no strip (dh_strip's) takes it out.
        lines += [f'.section {STANDIN_NEEDS_SECTION},"a"',
                  *(f'.ascii "{name}\\n"' for name in needs)]
    return "\n".join(lines + ['.section .note.GNU-stack,"",@progbits']) + "\n"


# A section of each shared stand-in that names, one per line, the
# libraries its link named (-lexpat -lz for libpython3.11). Debian's
# shared library names them for the dynamic linker; its static archive
# names nothing, and a program that links the archive as it would link
# the shared library (unbound: -lpython3.11) lacks them. A library build
# puts them beside the archive it installs (ARCHIVE_NEEDS_SUFFIX), and a
# UKL link adds them (with_archive_needs).
STANDIN_NEEDS_SECTION = ".ukl.needs"
ARCHIVE_NEEDS_SUFFIX = ".ukl-needs"
# Libraries every link has, whatever it names.
_ALWAYS_LINKED = {"c", "gcc", "gcc_s", "gcc_eh"}
# A library name the assembler's string and a -l option take as they are.
_LIBRARY_NAME = re.compile(r"^[A-Za-z0-9_.+-]+$")


def linked_libraries(args: list[str]) -> list[str]:
    """The libraries a link names with -lNAME or -l NAME, or as a shared
    library's path (CMake's: libbrotlidec.so is linked with
    .../libbrotlicommon.so.1.0.9), first mention first, without those
    every link has."""
    out: list[str] = []
    words = iter(_expand_response_files(args))
    for a in words:
        if a == "-o":
            next(words, None)
            continue
        shared = _SHARED_NAME.match(Path(a).name) if not a.startswith("-") else None
        name = a[2:] if a.startswith("-l") and len(a) > 2 else (
            next(words, "") if a == "-l" else (shared.group(1)[3:] if shared else ""))
        if _LIBRARY_NAME.match(name) and name not in _ALWAYS_LINKED and name not in out:
            out.append(name)
    return out


def standin_needs(shared: Path) -> list[str]:
    """The libraries shared stand-in `shared` names (STANDIN_NEEDS_SECTION);
    none for any other file."""
    with tempfile.TemporaryDirectory(prefix="ukl-needs-") as tmp:
        dumped = Path(tmp) / "needs"
        res = subprocess.run(["objcopy", f"--dump-section={STANDIN_NEEDS_SECTION}={dumped}",
                              str(shared), str(Path(tmp) / "copy")],
                             capture_output=True, text=True)
        if res.returncode != 0 or not dumped.is_file():
            return []
        return [n for n in dumped.read_text(errors="replace").split() if _LIBRARY_NAME.match(n)]


def archive_needs_file(archive: Path) -> Path:
    """Where a static archive's needs are written (ARCHIVE_NEEDS_SUFFIX)."""
    return archive.with_name(archive.name + ARCHIVE_NEEDS_SUFFIX)


def archive_needs(archive: Path) -> list[str]:
    """The libraries static archive `archive` needs: as its install wrote
    them (archive_needs_file), or as the shared stand-in beside it in a
    build tree names them (libtool's .libs/libcurl.a and libcurl.so)."""
    needs = archive_needs_file(archive)
    if needs.is_file():
        return needs.read_text(errors="replace").split()
    shared = archive.with_suffix(".so")
    return standin_needs(shared) if shared.exists() else []


def with_archive_needs(args: list[str], dirs: list[Path]) -> list[str]:
    """`args` followed by -lNAME for each library that an archive they
    link needs (archive_needs), and so on for those: an archive named by
    path, or by -lNAME found in `dirs` (the UKL library directories).
    Only what a UKL directory has is added."""
    out = list(args)
    linked = linked_libraries(args)
    named = set(linked)
    pending = [Path(a) for a in args if a.endswith(".a") and not a.startswith("-")]
    pending += [d / f"lib{n}.a" for n in linked for d in dirs]
    seen: set[Path] = set()
    while pending:
        archive = pending.pop(0)
        if archive in seen or not archive.is_file():
            continue
        seen.add(archive)
        for name in archive_needs(archive):
            found = [d / f"lib{name}.a" for d in dirs if (d / f"lib{name}.a").is_file()]
            # One no UKL directory has was left out of the build (or is
            # the C library's, in every link): a link that truly needs it
            # fails on its undefined symbols.
            if _LIBRARY_NAME.match(name) and name not in named and found:
                named.add(name)
                out.append(f"-l{name}")
                pending += found
    return out


# What every shared stand-in needs and no system has: loading one fails.
STANDIN_NEEDED = "libukl-standin-not-loadable.so"
# A shared library's file name: libcjson.so, libcjson.so.1.7.15.
_SHARED_NAME = re.compile(r"^(lib.+?)\.so(?:\.[0-9][0-9.]*)?$")


def _expand_response_files(args: list[str]) -> list[str]:
    """@FILE arguments replaced by the words in FILE (CMake's long links)."""
    out: list[str] = []
    for a in args:
        if a.startswith("@") and Path(a[1:]).is_file():
            out += shlex.split(Path(a[1:]).read_text())
        else:
            out.append(a)
    return out


def static_twin(output: Path, args: list[str]) -> Path | None:
    """A static archive of the objects a shared library is linked from,
    made beside it (libcjson.so.1.7.15 -> libcjson.a) when the build makes
    no static library of its own: some builds make shared libraries only
    (cJSON's CMake build, by BUILD_SHARED_LIBS), and a UKL program links
    static archives only. The objects are already kernel-model code (this
    driver compiled them). Not for libtool (.libs/), which config.site
    tells to make its own; never over an archive that exists. Returns the
    archive made, if any."""
    m = _SHARED_NAME.match(output.name)
    if not m or ".libs" in output.parts:
        return None
    twin = output.parent / f"{m.group(1)}.a"
    if twin.exists():
        return None
    objects = [a for a in _expand_response_files(args)
               if a.endswith((".o", ".obj")) and Path(a).is_file()]
    if not objects:
        return None
    res = subprocess.run(["ar", "rcs", str(twin), *objects], capture_output=True, text=True)
    if res.returncode != 0:
        twin.unlink(missing_ok=True)
        return None
    return twin


def standin_soname(args: list[str]) -> str | None:
    """The soname a -shared link asks for: -Wl,-soname,X, -Wl,-soname=X,
    or libtool's -Wl,-soname -Wl,X."""
    for i, a in enumerate(args):
        m = _SONAME.match(a)
        if m:
            return m.group(1)
        if a in ("-Wl,-soname", "-Wl,-h") and i + 1 < len(args) and args[i + 1].startswith("-Wl,"):
            return args[i + 1][4:]
    return None


def _real_compilers_first() -> None:
    """Drop the compiler shims ($UKL_COMPILER_SHIMS) from PATH, for this
    process and the compilers it runs (through ccache, which looks gcc up
    in PATH)."""
    shims = os.environ.get(COMPILER_SHIMS_ENV)
    if shims:
        path = os.environ.get("PATH", "").split(":")
        os.environ["PATH"] = ":".join(d for d in path if d and Path(d) != Path(shims))


# What gcc compiles as C++ by the file name (.ii: preprocessed C++; .hh,
# .hpp: C++ headers to precompile).
_CXX_SOURCES = (".cc", ".cp", ".cxx", ".cpp", ".CPP", ".c++", ".C", ".ii", ".hh", ".hpp")
# Options whose value is the next argument, never a source.
_SEPARATE_VALUE = {"-o", "-MF", "-MT", "-MQ", "-I", "-isystem", "-iquote", "-idirafter",
                   "-include", "-imacros", "-L", "-l", "-D", "-U", "-Xlinker", "-T"}


def compiles_cxx(args: list[str]) -> bool:
    """Whether a compile through ukl-cc is of C++: gcc compiles foo.cc as
    C++ whichever driver name it is called by, and Python's build_ext
    compiles C++ extensions with $CC (protobuf's). Such a compile needs
    the C++ headers, which ukl-c++ adds. A source is C++ by its name, or
    by the `-x` language in effect before it."""
    language = "none"
    words = iter(args)
    for a in words:
        if a in _SEPARATE_VALUE:
            next(words, None)
        elif a.startswith("-x"):
            language = next(words, "") if a == "-x" else a[2:]
        elif a == "-" or not a.startswith("-"):
            by_name = a.endswith(_CXX_SOURCES)
            if (language == "none" and by_name) or language.startswith("c++"):
                return True
    return False


def main(cxx: bool, argv: list[str] | None = None) -> int:
    _real_compilers_first()
    args = list(sys.argv[1:] if argv is None else argv)
    if os.environ.get(SHARED_STANDIN_ENV) == "1" and any(a in _OTHER_ABIS for a in args):
        # A Debian build's 32-bit or x32 variant (zlib's lib32z1): never
        # part of a UKL program, which is 64-bit kernel code; the real
        # compiler builds it as Debian's build expects.
        gcc = "g++" if cxx else "gcc"
        os.execvp(gcc, [gcc, *args])
    args = [a for a in args if a not in _POSITION_INDEPENDENT and a != _NO_PLT
            and not a.startswith(_SPECULATION_PREFIXES)]
    name = "ukl-c++" if cxx else "ukl-cc"
    if "-shared" in args:
        if os.environ.get(SHARED_STANDIN_ENV) == "1" and is_link(args):
            return _shared_standin(args, cxx)
        print(f"{name}: error: shared libraries cannot be linked into a UKL kernel; "
              "build the static library instead", file=sys.stderr)
        return 1
    if not (layout.libdir() / "libc.a").is_file():
        print(f"{name}: the UKL toolchain is not built; run `make toolchain` "
              "(or `bin/ukl toolchain build`)", file=sys.stderr)
        return 2
    try:
        gcc = "g++" if cxx else "gcc"
        if "-print-search-dirs" in args:
            sys.stdout.write(search_dirs(gcc))
            return 0
        if is_link(args):
            link(cxx, args)
            return 0
        cmd = [gcc, *compile_flags(cxx or compiles_cxx(args)), *args]
        # Large projects (Redis, nginx) rebuild in seconds from the cache.
        if have_ccache() and os.environ.get("UKL_CCACHE", "1") != "0":
            cmd.insert(0, "ccache")
        os.execvp(cmd[0], cmd)
    except DriverError as e:
        print(f"{name}: error: {e}", file=sys.stderr)
        return 1
