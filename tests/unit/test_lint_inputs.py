"""A link's findings come from its inputs, each linted once: the members
it takes from an archive count, the others do not, and the result is what
linting the combined object finds."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ukl.toolchain import lint, lint_inputs

KERNEL_FLAGS = ["-O2", "-mcmodel=kernel", "-mno-red-zone", "-fno-pic", "-fno-pie"]
RAW_SYSCALL = ("long {name}(void) {{ long r; __asm__ volatile(\"syscall\" : \"=a\"(r) "
               ": \"0\"(39L) : \"rcx\", \"r11\", \"memory\"); return r; }}\n")


@pytest.fixture(autouse=True)
def own_build_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_BUILD_DIR", str(tmp_path / "build"))


def _compile(tmp_path: Path, name: str, code: str) -> Path:
    src = tmp_path / f"{name}.c"
    src.write_text(code)
    obj = tmp_path / f"{name}.o"
    subprocess.run(["gcc", *KERNEL_FLAGS, "-c", str(src), "-o", str(obj)], check=True)
    return obj


def _partial_link(tmp_path: Path, inputs: list[str]) -> tuple[str, Path]:
    out = tmp_path / "combined.o"
    res = subprocess.run(["gcc", "-r", "-nostdlib", "-Wl,--trace", "-Wl,--trace",
                          "-Wl,--undefined=main", *inputs, "-o", str(out)],
                         check=True, capture_output=True, text=True)
    return res.stdout, out


def _archive(tmp_path: Path) -> Path:
    """libmix.a: `clean` (used) and `raw` (a raw syscall, used only by
    programs that call it)."""
    clean = _compile(tmp_path, "clean", "int clean(void) { return 1; }\n")
    raw = _compile(tmp_path, "raw", RAW_SYSCALL.format(name="raw"))
    lib = tmp_path / "libmix.a"
    subprocess.run(["ar", "rcs", str(lib), str(clean), str(raw)], check=True)
    return lib


def _summary(findings: list[lint.Finding]) -> list[tuple[str, str]]:
    return sorted((f.where, f.problem) for f in findings)


def test_only_the_members_a_link_takes_count(tmp_path: Path) -> None:
    lib = _archive(tmp_path)
    main = _compile(tmp_path, "main", "int clean(void); int main(void) { return clean(); }\n")
    trace, combined = _partial_link(tmp_path, [str(main), str(lib)])
    assert lint_inputs.lint_link(trace, combined, []) == []
    assert lint.lint(combined) == []

    calls_raw = _compile(tmp_path, "main2", "long raw(void); int main(void) { return raw(); }\n")
    trace, combined = _partial_link(tmp_path, [str(calls_raw), str(lib)])
    found = lint_inputs.lint_link(trace, combined, [])
    assert [(f.obj, f.where) for f in found] == [("raw.o", "raw")]
    assert _summary(found) == _summary(lint.lint(combined))


def test_the_users_own_objects_are_linted(tmp_path: Path) -> None:
    own = _compile(tmp_path, "own",
                   "int main(void) { return 0; }\n" + RAW_SYSCALL.format(name="mine"))
    trace, combined = _partial_link(tmp_path, [str(own)])
    found = lint_inputs.lint_link(trace, combined, [])
    assert [f.where for f in found] == ["mine"]
    assert _summary(found) == _summary(lint.lint(combined))


def test_each_input_is_linted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = _archive(tmp_path)
    linted: list[Path] = []
    real = lint.lint

    def counting(path: Path) -> list[lint.Finding]:
        linted.append(path)
        return real(path)

    monkeypatch.setattr(lint, "lint", counting)
    for i in range(3):
        main = _compile(tmp_path, f"m{i}", "long raw(void); int main(void) { return raw(); }\n"
                        f"int unique{i};\n")
        trace, combined = _partial_link(tmp_path, [str(main), str(lib)])
        assert [f.where for f in lint_inputs.lint_link(trace, combined, [])] == ["raw"]
    # The archive once; each program's own object once.
    assert [p.name for p in linted] == ["m0.o", "libmix.a", "m1.o", "m2.o"]


def test_a_change_to_the_input_is_linted_again(tmp_path: Path) -> None:
    obj = _compile(tmp_path, "own", "int main(void) { return 0; }\n")
    trace, combined = _partial_link(tmp_path, [str(obj)])
    assert lint_inputs.lint_link(trace, combined, []) == []
    obj = _compile(tmp_path, "own",
                   "int main(void) { return 0; }\n" + RAW_SYSCALL.format(name="now"))
    trace, combined = _partial_link(tmp_path, [str(obj)])
    assert [f.where for f in lint_inputs.lint_link(trace, combined, [])] == ["now"]


def test_a_trace_it_cannot_read_lints_the_combined_object(tmp_path: Path) -> None:
    lib = _archive(tmp_path)
    main = _compile(tmp_path, "main", "long raw(void); int main(void) { return raw(); }\n")
    trace, combined = _partial_link(tmp_path, [str(main), str(lib)])
    # A member name `ar` does not list, and an input that is not a file.
    for odd in (trace.replace("raw.o", "elsewhere.o"), trace + "\n/no/such/input.o\n"):
        assert [f.where for f in lint_inputs.lint_link(odd, combined, [])] == ["raw"]


def test_an_object_named_like_an_archive_is_linted(tmp_path: Path) -> None:
    """Whether an input is an archive is in its content, not its name."""
    raw = _compile(tmp_path, "raw", RAW_SYSCALL.format(name="raw"))
    disguised = tmp_path / "evil.a"
    disguised.write_bytes(raw.read_bytes())
    main = _compile(tmp_path, "main", "long raw(void); int main(void) { return raw(); }\n")
    trace, combined = _partial_link(tmp_path, [str(main), str(disguised)])
    assert [f.where for f in lint_inputs.lint_link(trace, combined, [])] == ["raw"]


def test_a_member_whose_name_has_a_space(tmp_path: Path) -> None:
    clean = _compile(tmp_path, "clean", "int clean(void) { return 1; }\n")
    raw = _compile(tmp_path, "raw", RAW_SYSCALL.format(name="raw"))
    spaced = tmp_path / "bad x.o"
    raw.rename(spaced)
    lib = tmp_path / "libsp.a"
    subprocess.run(["ar", "rcs", str(lib), str(clean), str(spaced)], check=True)
    main = _compile(tmp_path, "main", "long raw(void); int main(void) { return raw(); }\n")
    trace, combined = _partial_link(tmp_path, [str(main), str(lib)])
    found = lint_inputs.lint_link(trace, combined, [])
    assert [(f.obj, f.where) for f in found] == [("bad x.o", "raw")]
    # A program that takes only the clean member has nothing to answer for.
    other = _compile(tmp_path, "other", "int clean(void); int main(void) { return clean(); }\n")
    trace, combined = _partial_link(tmp_path, [str(other), str(lib)])
    assert lint_inputs.lint_link(trace, combined, []) == []


def test_a_linker_script_means_the_combined_object_is_linted(tmp_path: Path) -> None:
    """A script can put a data section's bytes into .text: the inputs'
    own findings would miss a syscall hidden so."""
    hidden = tmp_path / "hide.s"
    hidden.write_text('\t.section .rodata.hide,"a"\n\t.globl hidden_code\nhidden_code:\n'
                      "\t.byte 0x0f, 0x05, 0xc3\n")
    obj = tmp_path / "hide.o"
    subprocess.run(["gcc", "-c", str(hidden), "-o", str(obj)], check=True)
    script = tmp_path / "move.ld"
    script.write_text("SECTIONS { .text : { *(.text .text.*) *(.rodata.hide) } }\n")
    main = _compile(tmp_path, "main", "int main(void) { return 0; }\n")
    args = [str(main), str(obj), f"-Wl,-T,{script}"]
    trace, combined = _partial_link(tmp_path, args)
    assert lint_inputs.lint_link(trace, combined, [str(main), str(obj)]) == []
    assert "syscall" in str(lint_inputs.lint_link(trace, combined, args))
    for spelling in (["-T", "x.ld"], ["-Wl,--script=x.ld"], ["-Xlinker", "-Ttext=0x1000"]):
        assert lint_inputs.changes_layout(spelling), spelling
    assert not lint_inputs.changes_layout(["-Wl,--gc-sections", "-lm", "-O2"])


def test_an_unwritable_cache_costs_time_not_the_link(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the cache directory would be")
    monkeypatch.setattr(lint_inputs, "cache_dir", lambda: blocked / "lint-cache")
    main = _compile(tmp_path, "main", "int main(void) { return 0; }\n" +
                    RAW_SYSCALL.format(name="mine"))
    trace, combined = _partial_link(tmp_path, [str(main)])
    assert [f.where for f in lint_inputs.lint_link(trace, combined, [])] == ["mine"]
