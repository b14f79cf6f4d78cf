"""`ukl series check`: the kernel's checkpatch.pl --strict on every patch of
a series, as a maintainer would run it before reviewing.

The kernel series must be clean: no error, warning or check. The glibc and
gcc series are GNU-style code, so the kernel's rules for code layout do not
apply to them (GNU_LAYOUT below lists those rules); the rules for a patch
itself (Signed-off-by, a subject and a body, trailing whitespace, DOS line
endings, ...) still do. checkpatch.pl comes from the prepared Linux tree
(`ukl series prepare linux`), so it matches the kernel the series targets.
"""
from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ukl.common.errors import UklError
from ukl.sources import debian
from ukl.sources.debian import Component
from ukl.sources.series import read_series

# checkpatch message types about code layout in the kernel's style, which
# GNU-style code breaks by design: two-space indents, a space before '(',
# GNU block comments, no SPDX lines, no MAINTAINERS file.
GNU_LAYOUT = (
    "LEADING_SPACE", "SPACING", "SUSPECT_CODE_INDENT", "BLOCK_COMMENT_STYLE",
    "FUNCTION_ARGUMENTS", "AVOID_EXTERNS", "COMPARISON_TO_NULL", "COMPLEX_MACRO",
    "PREFER_DEFINED_ATTRIBUTE_MACRO", "SPDX_LICENSE_TAG", "FILE_PATH_CHANGES",
    "CODE_INDENT", "BRACES", "OPEN_BRACE", "TRAILING_STATEMENTS", "PARENTHESIS_ALIGNMENT",
    "LONG_LINE", "LONG_LINE_COMMENT", "MULTIPLE_ASSIGNMENTS", "CAMELCASE", "NEW_TYPEDEFS",
    "UNSPECIFIED_INT", "SPACE_BEFORE_TAB", "WHITESPACE_AFTER_LINE_CONTINUATION",
)
# checkpatch.pl runs scripts/spdxcheck.py with the first python3 on PATH;
# Debian's has python3-ply, which it needs (`ukl setup` installs it).
_ENV = {**os.environ, "PATH": "/usr/bin:" + os.environ.get("PATH", "")}
_TOTAL = re.compile(r"total: (\d+) errors, (\d+) warnings, (?:(\d+) checks, )?")


@dataclass(frozen=True)
class PatchResult:
    name: str
    errors: int
    warnings: int
    checks: int
    findings: list[str]

    @property
    def clean(self) -> bool:
        return self.errors == self.warnings == self.checks == 0


@dataclass(frozen=True)
class Report:
    component: str
    ignored: tuple[str, ...]
    patches: list[PatchResult]

    @property
    def clean(self) -> bool:
        return all(p.clean for p in self.patches)

    def text(self) -> str:
        lines = [f"checkpatch.pl --strict on the {self.component} series"
                 + (" (GNU style: code-layout rules ignored)" if self.ignored else "") + ":"]
        for p in self.patches:
            lines.append(f"  {p.name}: {p.errors} errors, {p.warnings} warnings, "
                         f"{p.checks} checks")
            lines += [f"    {f}" for f in p.findings]
        clean = sum(p.clean for p in self.patches)
        lines.append(f"{clean} of {len(self.patches)} patches clean")
        return "\n".join(lines)


def check(comp: Component) -> Report:
    linux = debian.get("linux").tree
    script = linux / "scripts" / "checkpatch.pl"
    if not script.is_file():
        raise UklError(f"no {script}; run `ukl series prepare linux` first")
    ignored = () if comp.name == "linux" else GNU_LAYOUT
    try:
        return _check_patches(comp, linux, script, ignored)
    finally:
        # checkpatch.pl caches the tree's CamelCase words in it; `ukl
        # series export` would refuse that file as a new file in no patch.
        for cache in linux.glob(".checkpatch-camelcase.*"):
            cache.unlink(missing_ok=True)


def _check_patches(comp: Component, linux: Path, script: Path,
                   ignored: tuple[str, ...]) -> Report:
    results = []
    for patch in read_series(comp.series_dir):
        cmd = ["perl", str(script), "--strict", "--terse", "--show-types", "--no-color"]
        # The kernel series is checked inside its tree (MAINTAINERS, the
        # documentation index, ...); the others are not part of it.
        cmd += ["--ignore", ",".join(ignored), "--no-tree"] if ignored else []
        res = subprocess.run([*cmd, str(patch)], cwd=linux, capture_output=True, text=True,
                             stdin=subprocess.DEVNULL, env=_ENV)
        findings = [line.split(": ", 1)[1] if ": " in line else line
                    for line in res.stdout.splitlines()
                    if re.search(r": (ERROR|WARNING|CHECK):", line)]
        total = _TOTAL.search(res.stdout)
        if total is not None:
            counts = (int(total.group(1)), int(total.group(2)), int(total.group(3) or 0))
        elif res.returncode == 0 and not findings:
            counts = (0, 0, 0)  # --terse prints no summary for a clean patch
        else:
            raise UklError(f"checkpatch.pl failed on {patch.name} (exit status "
                           f"{res.returncode}) without a summary",
                           detail=(res.stderr or res.stdout)[-2000:])
        results.append(PatchResult(patch.name, *counts, findings))
    return Report(comp.name, ignored, results)
