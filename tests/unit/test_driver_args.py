"""ukl-cc argument handling and remembered progress estimates."""
from __future__ import annotations

import re

import pytest
from pathlib import Path

from ukl.common.proc import StepCounter
from ukl.toolchain import driver
from ukl.toolchain.driver import (DriverError, host_inputs, is_link, split_output, standin_soname,
                                  static_inputs)


def test_split_output_forms() -> None:
    assert split_output(["-O2", "-o", "app", "a.c", "-lm"]) == ("app", ["-O2", "a.c", "-lm"])
    assert split_output(["-oapp", "a.c"]) == ("app", ["a.c"])
    assert split_output(["a.c"]) == ("a.out", ["a.c"])


def test_is_link() -> None:
    assert is_link(["-o", "x", "a.c"])
    assert not is_link(["-c", "a.c"])
    assert not is_link(["-E", "-dM", "-x", "c", "/dev/null"])
    assert not is_link(["--version"])
    assert not is_link([])


def test_step_counter_remembers_largest_run(tmp_path: Path) -> None:
    pattern = re.compile(r"^  CC +(?P<what>\S+)")
    counter = StepCounter.remembered(pattern, tmp_path, default=3)
    assert counter.expected == 3
    for i in range(4):
        counter.feed(f"  CC      f{i}.o")
    assert (counter.seen, counter.last, counter.percent()) == (4, "f3.o", 99)
    counter.save(tmp_path)  # a full build larger than the default is recorded
    assert StepCounter.remembered(pattern, tmp_path, default=3).expected == 4
    small = StepCounter.remembered(pattern, tmp_path, default=3)
    small.feed("  CC      only.o")
    small.save(tmp_path)  # an incremental run does not shrink the estimate
    assert StepCounter.remembered(pattern, tmp_path, default=3).expected == 4
    assert StepCounter.remembered(pattern, tmp_path / "x", default=3).expected == 3
    noop = StepCounter.remembered(pattern, tmp_path, default=3)
    noop.save(tmp_path)
    assert (tmp_path / ".ukl-steps").read_text() == "4"


def test_static_inputs_take_the_archive_beside_a_shared_library(tmp_path: Path) -> None:
    libs = tmp_path / ".libs"
    libs.mkdir()
    (libs / "liblzma.so.5.4.1").write_text("")
    (libs / "liblzma.a").write_text("")
    (libs / "libonly.so").write_text("")
    shared = str(libs / "liblzma.so.5.4.1")
    assert static_inputs(["-O2", shared, "-lm"]) == ["-O2", str(libs / "liblzma.a"), "-lm"]
    with pytest.raises(DriverError, match="no libonly.a beside it"):
        static_inputs([str(libs / "libonly.so")])


def test_host_libraries_in_a_link_trace_are_found(tmp_path: Path) -> None:
    trace = "\n".join([
        f"{tmp_path}/user.o",
        "/usr/lib/x86_64-linux-gnu/libreadline.a(readline.o)",
        "/lib/x86_64-linux-gnu/libtinfo.so",
        f"{tmp_path}/sysroot/usr/lib/x86_64-linux-gnu/libc.a(printf.o)",
    ])
    assert host_inputs(trace) == ["/lib/x86_64-linux-gnu/libtinfo.so",
                                  "/usr/lib/x86_64-linux-gnu/libreadline.a"]


def test_standin_soname_forms() -> None:
    assert standin_soname(["-Wl,-soname,libz.so.1", "a.o"]) == "libz.so.1"
    assert standin_soname(["-Wl,-soname=libz.so.1"]) == "libz.so.1"
    assert standin_soname(["-Wl,-soname", "-Wl,liblzma.so.5"]) == "liblzma.so.5"
    # Python's: without a soname dpkg-gensymbols saw no library.
    assert standin_soname(["-Wl,-hlibpython3.11.so.1.0", "a.o"]) == "libpython3.11.so.1.0"
    assert standin_soname(["-Wl,-h,libfoo.so.2"]) == "libfoo.so.2"
    assert standin_soname(["a.o"]) is None


def test_final_link_options_are_left_out_of_the_partial_link() -> None:
    assert driver.partial_link_args(["-Wl,-z,relro", "-Wl,--gc-sections", "-O2", "x.o",
                                     "-Wl,-z,now,--gc-sections,-O1"]) == [
        "-Wl,-z,relro", "-O2", "x.o", "-Wl,-z,now,-O1"]


def test_search_dirs_name_the_ukl_libraries_not_the_hosts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # perl's Configure and libtool look for libraries in what
    # -print-search-dirs names: the host's directories there let perl find
    # the host's libcrypt.a, which no UKL link may take.
    monkeypatch.setenv(driver.DEPS_SYSROOT_ENV, str(tmp_path / "deps"))
    text = driver.search_dirs("gcc")
    libraries = [line for line in text.splitlines() if line.startswith("libraries:")]
    assert len(libraries) == 1
    dirs = libraries[0].removeprefix("libraries: =").split(":")
    assert str(driver.layout.libdir()) in dirs
    assert str(tmp_path / "deps" / "usr/lib") in dirs
    assert not any(d.startswith(("/usr/lib", "/lib")) for d in dirs)
    assert any(line.startswith("install:") for line in text.splitlines())


def test_a_shared_only_library_gets_a_static_twin(tmp_path: Path) -> None:
    # cJSON's CMake build makes libcjson.so only: its objects become
    # libcjson.a beside the stand-in, which a UKL link can take.
    import subprocess
    objs = []
    for name in ("a", "b"):
        src = tmp_path / f"{name}.c"
        src.write_text(f"int {name}_fn(void) {{ return 1; }}\n")
        obj = tmp_path / "CMakeFiles" / f"{name}.c.o"
        obj.parent.mkdir(exist_ok=True)
        subprocess.run(["gcc", "-c", str(src), "-o", str(obj)], check=True)
        objs.append(str(obj))
    rsp = tmp_path / "objects.rsp"
    rsp.write_text(objs[1] + "\n")
    out = tmp_path / "libdemo.so.1.2.3"
    twin = driver.static_twin(out, ["-Wl,-soname,libdemo.so.1", objs[0], f"@{rsp}", "-lm"])
    assert twin == tmp_path / "libdemo.a"
    members = subprocess.run(["ar", "t", str(twin)], capture_output=True, text=True,
                             check=True).stdout.split()
    assert members == ["a.c.o", "b.c.o"]
    # Never over an archive the build made, never for libtool's .libs/.
    assert driver.static_twin(out, objs) is None
    libs = tmp_path / ".libs"
    libs.mkdir()
    assert driver.static_twin(libs / "libother.so.0.0.0", objs) is None
    assert driver.static_twin(tmp_path / "plugin.so", objs) is None


def test_a_left_out_library_is_dropped_from_links(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    # redis's rules add -llzf to every link, though it compiles its own
    # LZF; liblzf left out, the link goes on without it.
    monkeypatch.setenv(driver.LEFT_OUT_LIBS_ENV, "lzf systemd")
    monkeypatch.setenv(driver.DEPS_SYSROOT_ENV, str(tmp_path))
    args = ["-o", "x", "a.o", "-llzf", "-lm", "-l", "systemd", "-lssl"]
    assert driver.without_left_out(args) == ["-o", "x", "a.o", "-lm", "-lssl"]
    # One a UKL directory has is kept (it was built after all).
    (tmp_path / "usr/lib").mkdir(parents=True)
    (tmp_path / "usr/lib" / "liblzf.a").write_bytes(b"!<arch>\n")
    assert "-llzf" in driver.without_left_out(args)
    monkeypatch.delenv(driver.LEFT_OUT_LIBS_ENV)
    assert driver.without_left_out(args) == args
    # libatomic is not in the UKL toolchain: on x86-64 gcc inlines atomics.
    assert driver.without_left_out(["a.o", "-latomic", "-lm"]) == ["a.o", "-lm"]


def test_the_shared_standin_exports_the_objects_symbols(tmp_path: Path) -> None:
    # Debian's rules read the symbols of the shared libraries they build
    # (Python's edit libpython3.11's symbols file): the stand-in has them,
    # functions that trap, data of its size.
    import subprocess
    src = tmp_path / "a.c"
    src.write_text("int counter[4];\nint get(void) { return counter[0]; }\n"
                   "static int hidden(void) { return 1; }\nint use(void) { return hidden(); }\n"
                   # libxcrypt's versioned names (crypt@@XCRYPT_2.0) are
                   # exported under their plain names.
                   "int crypt_impl(void) { return 2; }\n"
                   "__asm__(\".symver crypt_impl, crypt@@XCRYPT_2.0\");\n"
                   "int old_impl(void) { return 3; }\n"
                   "__asm__(\".symver old_impl, crypt_old@GLIBC_2.2.5\");\n")
    obj = tmp_path / "a.o"
    subprocess.run(["gcc", "-c", "-fcommon", str(src), "-o", str(obj)], check=True)
    out = tmp_path / "libdemo.so.1"
    import os
    env = dict(os.environ, **{driver.SHARED_STANDIN_ENV: "1"})
    res = subprocess.run([str(Path(driver.__file__).parents[2] / "bin" / "ukl-cc"), "-shared",
                          "-Wl,-soname,libdemo.so.1", str(obj), "-o", str(out)], env=env)
    assert res.returncode == 0
    dynsyms = subprocess.run(["nm", "-D", "--defined-only", str(out)], capture_output=True,
                             text=True, check=True).stdout
    names = {line.split()[-1]: line.split()[-2] for line in dynsyms.splitlines()}
    assert names.get("get") == "T" and names.get("use") == "T"
    assert names.get("counter") in ("B", "D") and "hidden" not in names
    assert names.get("crypt") == "T" and names.get("crypt_old") == "T"
    assert (tmp_path / "libdemo.a").is_file()
    # Nothing loads it: dlopen fails as for a missing module.
    dynamic = subprocess.run(["readelf", "-d", str(out)], capture_output=True, text=True,
                             check=True).stdout
    assert f"[{driver.STANDIN_NEEDED}]" in dynamic
    import ctypes
    with pytest.raises(OSError, match=driver.STANDIN_NEEDED):
        ctypes.CDLL(str(out))


def test_a_shared_librarys_archive_brings_what_its_link_named(tmp_path: Path) -> None:
    # Debian's libpython3.11.so is linked with -lexpat -lz, which the
    # dynamic linker loads with it; unbound links -lpython3.11 alone, and
    # the static archive needs them too. The stand-in records them, the
    # library's install writes them beside its archive, a UKL link adds
    # them (and what they need in turn, but only what a UKL directory has).
    import os
    import subprocess
    from ukl.app.debian import rules
    src = tmp_path / "py.c"
    src.write_text("int Py_Initialize(void) { return 0; }\n")
    obj = tmp_path / "py.o"
    subprocess.run(["gcc", "-c", str(src), "-o", str(obj)], check=True)
    staged = tmp_path / "tree" / "debian" / "tmp" / "usr/lib/x86_64-linux-gnu"
    staged.mkdir(parents=True)
    shared = staged / "libpython3.11.so.1.0"
    env = dict(os.environ, **{driver.SHARED_STANDIN_ENV: "1"})
    res = subprocess.run([str(Path(driver.__file__).parents[2] / "bin" / "ukl-cc"), "-shared",
                          "-Wl,-hlibpython3.11.so.1.0", str(obj), "-lm", "-L/deps", "-lexpat",
                          "-l", "z", "-lexpat", "-ldl", "-lc", "-o", str(shared)], env=env)
    assert res.returncode == 0
    assert driver.standin_needs(shared) == ["m", "expat", "z", "dl"]
    assert driver.standin_needs(obj) == []
    # CMake names the shared libraries a library links by path.
    assert driver.linked_libraries(["-o", "libbrotlidec.so.1.0.9", "decode.o",
                                    "/b/libbrotlicommon.so.1.0.9", "-Wl,-soname,x.so.1",
                                    "libz.so", "-lz"]) == ["brotlicommon", "z"]
    (staged / "libpython3.11.so").symlink_to("libpython3.11.so.1.0")
    (staged / "libpython3.11.a").write_text("!<arch>\n")
    (staged / "libexpat.a").write_text("!<arch>\n")
    dest = tmp_path / "install"
    rules.install_library(tmp_path / "tree", [], dest)
    libdir = dest / "usr/lib/x86_64-linux-gnu"
    needs = driver.archive_needs_file(libdir / "libpython3.11.a")
    assert needs.read_text().split() == ["m", "expat", "z", "dl"]
    assert not driver.archive_needs_file(libdir / "libexpat.a").exists()
    # A UKL link: zlib's archive is in another dependency's directory and
    # needs libmd (say); libdl's is in none (left out), nor is libm's.
    zlib = tmp_path / "zlib"
    zlib.mkdir()
    (zlib / "libz.a").write_text("!<arch>\n")
    (zlib / "libmd.a").write_text("!<arch>\n")
    driver.archive_needs_file(zlib / "libz.a").write_text("md\nexpat\n")
    dirs = [libdir, zlib]
    assert driver.with_archive_needs(["unbound.o", "-lpython3.11", "-lexpat"], dirs) == [
        "unbound.o", "-lpython3.11", "-lexpat", "-lz", "-lmd"]
    assert driver.with_archive_needs(["unbound.o", str(libdir / "libpython3.11.a")], dirs) == [
        "unbound.o", str(libdir / "libpython3.11.a"), "-lexpat", "-lz", "-lmd"]
    assert driver.with_archive_needs(["a.o", "-lexpat"], dirs) == ["a.o", "-lexpat"]
    # In a build tree (libtool's .libs/libcurl.a), the stand-in beside the
    # archive says what it needs.
    assert driver.with_archive_needs(["a.o", str(staged / "libpython3.11.a")], [zlib]) == [
        "a.o", str(staged / "libpython3.11.a"), "-lz", "-lmd"]
    # A library linked as C++ needs libstdc++, which g++ adds unnamed.
    cxx_shared = tmp_path / "libicuuc.so.72"
    res = subprocess.run([str(Path(driver.__file__).parents[2] / "bin" / "ukl-c++"), "-shared",
                          str(obj), "-lm", "-o", str(cxx_shared)], env=env)
    assert res.returncode == 0
    assert driver.standin_needs(cxx_shared) == ["m", "stdc++"]


def test_a_libtool_archive_brings_its_dependencies(tmp_path: Path) -> None:
    # gnutls-cli links ../lib/.libs/libgnutls.so; its archive needs Nettle,
    # GMP and a convenience library of its own, which the .la file names.
    libs = tmp_path / "lib" / ".libs"
    libs.mkdir(parents=True)
    for name in ("libgnutls.so", "libgnutls.a"):
        (libs / name).write_text("")
    gl = tmp_path / "gl"
    (gl / ".libs").mkdir(parents=True)
    (gl / ".libs" / "libgnu.a").write_text("")
    (gl / "libgnu.la").write_text("old_library='libgnu.a'\n")
    (tmp_path / "lib" / "libgnutls.la").write_text(
        f"dependency_libs=' -L/deps/usr/lib {gl / 'libgnu.la'} -lnettle -lgmp -pthread'\n"
        "old_library='libgnutls.a'\n")
    got = static_inputs(["cli.o", str(libs / "libgnutls.so"), "-lm"])
    assert got == ["cli.o", str(libs / "libgnutls.a"), "-lm", "-L/deps/usr/lib",
                   str(gl / ".libs" / "libgnu.a"), "-lnettle", "-lgmp"]


def test_a_cxx_compile_is_told_by_its_source_or_language() -> None:
    assert driver.compiles_cxx(["-c", "pyext/descriptor.cc", "-o", "d.o"])
    assert driver.compiles_cxx(["-x", "c++", "-c", "-"])
    assert driver.compiles_cxx(["-xc++", "-E", "/dev/null"])
    assert driver.compiles_cxx(["-c", "Lib.C"])
    assert driver.compiles_cxx(["-c", "a.c", "b.cc"])
    assert driver.compiles_cxx(["-x", "c++-cpp-output", "-c", "a.i"])
    assert not driver.compiles_cxx(["-c", "a.c", "-o", "a.o", "-I/src/x.cc"])
    assert not driver.compiles_cxx(["-x", "c", "/dev/null"])
    # Option values are not sources; -x c makes a.cc C.
    assert not driver.compiles_cxx(["-c", "a.c", "-o", "a.C", "-MT", "x.cc", "-MF", "x.cc.d",
                                    "-I", "inc.cc", "-include", "pre.hh"])
    assert not driver.compiles_cxx(["-x", "c", "-c", "a.cc"])
    assert not driver.compiles_cxx(["-c", "start.S", "-o", "start.o"])
