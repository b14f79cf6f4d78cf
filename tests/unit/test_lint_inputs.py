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
    assert lint_inputs.lint_link(trace, combined) == []
    assert lint.lint(combined) == []

    calls_raw = _compile(tmp_path, "main2", "long raw(void); int main(void) { return raw(); }\n")
    trace, combined = _partial_link(tmp_path, [str(calls_raw), str(lib)])
    found = lint_inputs.lint_link(trace, combined)
    assert [(f.obj, f.where) for f in found] == [("raw.o", "raw")]
    assert _summary(found) == _summary(lint.lint(combined))


def test_the_users_own_objects_are_linted(tmp_path: Path) -> None:
    own = _compile(tmp_path, "own",
                   "int main(void) { return 0; }\n" + RAW_SYSCALL.format(name="mine"))
    trace, combined = _partial_link(tmp_path, [str(own)])
    found = lint_inputs.lint_link(trace, combined)
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
        assert [f.where for f in lint_inputs.lint_link(trace, combined)] == ["raw"]
    # The archive once; each program's own object once.
    assert [p.name for p in linted] == ["m0.o", "libmix.a", "m1.o", "m2.o"]


def test_a_change_to_the_input_is_linted_again(tmp_path: Path) -> None:
    obj = _compile(tmp_path, "own", "int main(void) { return 0; }\n")
    trace, combined = _partial_link(tmp_path, [str(obj)])
    assert lint_inputs.lint_link(trace, combined) == []
    obj = _compile(tmp_path, "own",
                   "int main(void) { return 0; }\n" + RAW_SYSCALL.format(name="now"))
    trace, combined = _partial_link(tmp_path, [str(obj)])
    assert [f.where for f in lint_inputs.lint_link(trace, combined)] == ["now"]


def test_a_trace_it_cannot_read_lints_the_combined_object(tmp_path: Path) -> None:
    lib = _archive(tmp_path)
    main = _compile(tmp_path, "main", "long raw(void); int main(void) { return raw(); }\n")
    trace, combined = _partial_link(tmp_path, [str(main), str(lib)])
    # A member name `ar` does not list, and an input that is not a file.
    for odd in (trace.replace("raw.o", "elsewhere.o"), trace + "\n/no/such/input.o\n"):
        assert [f.where for f in lint_inputs.lint_link(odd, combined)] == ["raw"]
