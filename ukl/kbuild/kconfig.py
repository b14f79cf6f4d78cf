"""Kconfig fragments: parse, merge, and check what Kconfig actually chose.

Kconfig silently drops an option whose dependencies are not met, so after
`allnoconfig` with our fragment we compare the resulting .config with every
line of the fragment and fail naming each option that did not stick.
"""
from __future__ import annotations

import re

from ukl.common.errors import UklError

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


def parse(text: str, origin: str = "<fragment>") -> dict[str, str]:
    """Option -> value ('y', 'm', a string or number; 'n' for 'is not set')."""
    options: dict[str, str] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if m := _UNSET.match(line):
            options[m.group(1)] = "n"
        elif m := _SET.match(line):
            options[m.group(1)] = m.group(2)
        elif line and not line.startswith("#"):
            raise UklError(f"{origin}:{lineno}: not a Kconfig line: {line!r}")
    return options


def render(options: dict[str, str]) -> str:
    return "".join(
        f"# {k} is not set\n" if v == "n" else f"{k}={v}\n" for k, v in options.items())


def mismatches(wanted: dict[str, str], actual: dict[str, str]) -> list[str]:
    """Human-readable list of options whose final value differs from the fragment."""
    out = []
    for opt, want in wanted.items():
        got = actual.get(opt, "n")
        if got != want:
            out.append(f"{opt}: wanted {want}, Kconfig chose {got}")
    return out
