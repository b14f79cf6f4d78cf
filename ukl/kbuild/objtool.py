"""objtool's warnings in a kernel build log: a kernel with one fails to build.

Kbuild prints objtool's findings as warnings and goes on (Linux 6.1's
objtool has no --Werror), so a flavour could boot with entry code objtool
found wrong. `ukl kernel build` reads the log of each build instead and
fails on any warning not listed in KNOWN, naming each. Kbuild does not
print a warning again for an object it does not rebuild, so the objects
named are deleted: the next build compiles and checks them again.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_WARNING = re.compile(r"^(?P<obj>\S+\.o): warning: objtool: (?P<where>\S+): (?P<what>.+)$")


@dataclass(frozen=True)
class Finding:
    obj: str        # the object objtool checked, relative to the build directory
    where: str      # symbol+offset
    what: str       # the finding

    def __str__(self) -> str:
        return f"{self.obj}: {self.where}: {self.what}"

    @property
    def symbol(self) -> str:
        return self.where.split("+", 1)[0]


# Warnings in Debian's own source, which a build may keep: (object, symbol,
# finding) -> why it is not ours to fix.
KNOWN = {
    ("vmlinux.o", "__handle_intr_saferet", "RET before UNTRAIN"):
        "Debian's SRSO backport (arch/x86/lib/retpoline.S) calls it from the "
        "kernel-mode path of error_entry, which never untrains returns; objtool's "
        "unret check follows every path from an entry. Seen on stock-distro too.",
}


def find(log: str) -> list[Finding]:
    """Every objtool warning in a build log, in order."""
    return [Finding(m["obj"], m["where"], m["what"])
            for m in map(_WARNING.match, log.splitlines()) if m]


def unexpected(log: str) -> list[Finding]:
    """The warnings of a build log that KNOWN does not excuse."""
    return [w for w in find(log) if (w.obj, w.symbol, w.what) not in KNOWN]


def forget(found: list[Finding], out: Path) -> None:
    """Delete the objects warned about, so that the next build checks them."""
    for w in found:
        (out / w.obj).unlink(missing_ok=True)
