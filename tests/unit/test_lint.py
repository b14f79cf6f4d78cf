"""`ukl lint` catches each kind of code that cannot be linked into the kernel."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl.toolchain.lint import lint, problems, red_zone

KERNEL_FLAGS = ["-O2", "-mcmodel=kernel", "-mno-red-zone", "-fno-pic", "-fno-pie"]


def _obj(tmp_path: Path, code: str, flags: list[str] = KERNEL_FLAGS) -> Path:
    src = tmp_path / "t.c"
    src.write_text(code)
    obj = tmp_path / "t.o"
    subprocess.run(["gcc", *flags, "-c", src, "-o", obj], check=True)
    return obj


def _problems(obj: Path) -> list[str]:
    return [f"{f.where}: {f.problem}" for f in lint(obj)]


def test_clean_kernel_model_object(tmp_path: Path) -> None:
    obj = _obj(tmp_path, "int g; int *addr(void) { return &g; }\n"
               "int leaf(int x) { volatile int a[4]; a[0] = x; return a[0]; }\n")
    assert lint(obj) == []
    res = ukl("lint", str(obj))
    assert res.returncode == 0 and "clean" in res.stderr


def test_raw_syscall_named(tmp_path: Path) -> None:
    obj = _obj(tmp_path, "long my_getpid(void) { long r; __asm__ volatile(\"syscall\" "
               ": \"=a\"(r) : \"0\"(39L) : \"rcx\", \"r11\", \"memory\"); return r; }\n")
    problems = _problems(obj)
    assert len(problems) == 1 and problems[0].startswith("my_getpid: raw `syscall`")
    res = ukl("lint", str(obj))
    assert res.returncode == 1 and "my_getpid: raw `syscall`" in res.stderr


def test_int80_and_sysenter_named(tmp_path: Path) -> None:
    obj = _obj(tmp_path, "void a(void) { __asm__ volatile(\"int $0x80\"); }\n"
               "void b(void) { __asm__ volatile(\"sysenter\"); }\n")
    assert [p.split(":")[0] for p in _problems(obj)] == ["a", "b"]


def test_red_zone_store_named_apart_from_the_problems(tmp_path: Path) -> None:
    # Fine on most UKL kernels (the kernel link refuses it for the options
    # that write below the application's stack pointer), so `ukl lint`
    # names it and succeeds.
    obj = _obj(tmp_path, "int uses_red_zone(int x) { volatile int a[4]; a[0] = x; "
               "return a[0]; }\n", ["-O2", "-mcmodel=kernel", "-fno-pic"])
    found = _problems(obj)
    assert found and all(p.startswith("uses_red_zone: red-zone access") for p in found)
    assert problems(lint(obj)) == []
    assert [f.where for f in red_zone(obj)] == ["uses_red_zone"] * len(found)
    res = ukl("lint", str(obj))
    assert res.returncode == 0, res.stderr
    assert "red-zone access(es): fine on every UKL kernel but those with CONFIG_UKL_RET or " \
        "CONFIG_UKL_PF_DF" in res.stderr, res.stderr


def test_abs32_relocation_named(tmp_path: Path) -> None:
    obj = _obj(tmp_path, "int g; int *small_model_addr(void) { return &g; }\n",
               ["-O2", "-mcmodel=small", "-mno-red-zone", "-fno-pic"])
    assert _problems(obj) == [
        "small_model_addr: R_X86_64_32 relocation against g at 0x0; "
        "build with -mcmodel=kernel -fno-pic"]


def test_unrelaxable_got_relocation_named(tmp_path: Path) -> None:
    # Without relaxable relocations the assembler emits plain GOTPCREL,
    # which leaves a GOT entry in the final link.
    obj = _obj(tmp_path, "extern int ext; int via_got(void) { return ext; }\n",
               ["-O2", "-mno-red-zone", "-fPIC", "-Wa,-mrelax-relocations=no"])
    problems = _problems(obj)
    assert len(problems) == 1 and problems[0].startswith("via_got: R_X86_64_GOTPCREL ")


def test_relaxable_got_and_debug_relocations_pass(tmp_path: Path) -> None:
    obj = _obj(tmp_path, "extern int ext; int via_got(void) { return ext; }\n",
               ["-O2", "-g", "-mno-red-zone", "-fPIC"])
    assert lint(obj) == []


def test_ifunc_named(tmp_path: Path) -> None:
    obj = _obj(tmp_path, "static int impl(void) { return 1; }\n"
               "static void *pick(void) { return (void *)impl; }\n"
               "int chosen(void) __attribute__((ifunc(\"pick\")));\n")
    assert "chosen: IFUNC symbol (needs IRELATIVE relocations); build without multi-arch" \
        in _problems(obj)


def test_archive_members_named(tmp_path: Path) -> None:
    obj = _obj(tmp_path, "void bad(void) { __asm__ volatile(\"syscall\"); }\n")
    archive = tmp_path / "libt.a"
    subprocess.run(["ar", "rcs", archive, obj], check=True)
    findings = lint(archive)
    assert [(f.obj, f.where) for f in findings] == [("t.o", "bad")]


def test_missing_file(tmp_path: Path) -> None:
    res = ukl("lint", str(tmp_path / "nope.o"))
    assert res.returncode == 2 and "does not exist" in res.stderr


@pytest.mark.parametrize("junk", [b"not an object"])
def test_unreadable_file_is_error(tmp_path: Path, junk: bytes) -> None:
    f = tmp_path / "junk.o"
    f.write_bytes(junk)
    res = ukl("lint", str(f))
    assert res.returncode == 2 and "cannot read" in res.stderr


def test_toolchain_build_rejects_a_dirty_library(tmp_path: Path, monkeypatch) -> None:
    from ukl.common.errors import UklError
    from ukl.toolchain import build, layout
    clean = _obj(tmp_path, "int f(int x) { return x + 1; }\n")
    dirty_dir = tmp_path / "dirty"
    dirty_dir.mkdir()
    dirty = _obj(dirty_dir, "void g(void) { __asm__ volatile(\"syscall\"); }\n")
    root = tmp_path / "sysroot"
    for group in build.LINTED.values():
        for subdir, names in group:
            (root / subdir).mkdir(parents=True, exist_ok=True)
            for name in names:
                (root / subdir / name).write_bytes(clean.read_bytes())
    (root / layout.UKL_LIBDIR / "libgcc.a").write_bytes(dirty.read_bytes())
    (root / layout.LIBDIR / "libstdc++.a").write_bytes(dirty.read_bytes())
    monkeypatch.setattr(layout, "sysroot", lambda: root)
    with pytest.raises(UklError, match="libgcc.a fails ukl lint") as err:
        build.lint_libraries("c")
    assert "g: raw `syscall`" in err.value.detail
    with pytest.raises(UklError, match="libstdc\\+\\+.a fails ukl lint"):
        build.lint_libraries("c++")
    # Once clean, it passes and records that.
    (root / layout.UKL_LIBDIR / "libgcc.a").write_bytes(clean.read_bytes())
    build.lint_libraries("c")
    assert (root / ".ukl-libraries-linted-c").is_file()
