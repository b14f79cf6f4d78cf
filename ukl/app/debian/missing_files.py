"""dh_install for a UKL build that left libraries out: entries of
debian/*.install that match no file the build made are dropped (and
named) before Debian's dh_install runs.

With a library left out, its feature is turned off
(ukl.app.debian.features), and the files it would have made (perl's
DB_File module, lighttpd's Kerberos module) are not there; dh_install
stops at the first missing file. Only what the build did not make is
dropped, so everything else is installed as Debian's rules say.

Run as `dh_install` from the compiler shims directory (first in PATH;
ukl.app.debian.rules); it runs with the Python standard library only and
then execs the real /usr/bin/dh_install with the same arguments.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import subprocess
import sys
from pathlib import Path

REAL = "/usr/bin/dh_install"
MARK = "# ukl build --debian: not built (a library was left out):"


def _source_dirs(argv: list[str]) -> list[Path]:
    """Where dh_install looks for files: the current directory and
    debian/tmp, or --sourcedir."""
    dirs = [Path("."), Path("debian/tmp")]
    for i, arg in enumerate(argv):
        if arg.startswith("--sourcedir="):
            dirs = [Path(arg.partition("=")[2])]
        elif arg == "--sourcedir" and i + 1 < len(argv):
            dirs = [Path(argv[i + 1])]
    return dirs


# debhelper's substitution variables in .install files (debhelper 13):
# ${DEB_HOST_MULTIARCH} (ncurses's usr/lib/${DEB_HOST_MULTIARCH}/*.a),
# ${env:NAME} and the few named characters.
_VARIABLE = re.compile(r"\$\{([A-Za-z0-9_:]+)\}")
_CHARACTERS = {"Space": " ", "Dollar": "$", "Newline": "\n", "Tab": "\t"}


@functools.cache
def _architecture_variable(name: str) -> str:
    if name in os.environ:
        return os.environ[name]
    res = subprocess.run(["dpkg-architecture", f"-q{name}"], capture_output=True, text=True)
    return res.stdout.strip() if res.returncode == 0 else ""


def expand(pattern: str) -> str:
    """A pattern with debhelper's ${...} variables replaced."""
    def value(m: re.Match[str]) -> str:
        name = m.group(1)
        if name.startswith("env:"):
            return os.environ.get(name[4:], "")
        if name in _CHARACTERS:
            return _CHARACTERS[name]
        return _architecture_variable(name) if name.startswith("DEB_") else m.group(0)
    return _VARIABLE.sub(value, pattern)


def _matches(pattern: str, dirs: list[Path]) -> bool:
    return any(glob.glob(str(d / expand(pattern))) for d in dirs)


def prune(install_file: Path, dirs: list[Path]) -> list[str]:
    """Drop the patterns of `install_file` that match nothing (a line left
    with none goes); returns the dropped patterns. dh-exec files
    (executable) are left alone: their lines are not plain patterns."""
    if os.access(install_file, os.X_OK):
        return []
    dropped: list[str] = []
    out: list[str] = []
    for line in install_file.read_text(errors="replace").splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            out.append(line)
            continue
        sources, dest = (words[:-1], words[-1]) if len(words) > 1 else (words, None)
        kept = [w for w in sources if _matches(w, dirs)]
        missing = [w for w in sources if w not in kept]
        if not missing:
            out.append(line)
            continue
        dropped += missing
        out.append(f"{MARK} {line}")
        if kept:
            out.append(" ".join(kept + ([dest] if dest else [])))
    if dropped:
        install_file.write_text("\n".join(out) + "\n")
    return dropped


def main(argv: list[str]) -> None:
    dirs = _source_dirs(argv)
    for install_file in sorted(Path("debian").glob("*.install")) + [Path("debian/install")]:
        if install_file.is_file():
            for pattern in prune(install_file, dirs):
                print(f"ukl: {install_file}: {pattern} was not built (a library was left "
                      "out); not installed", file=sys.stderr)
    os.execv(REAL, [REAL, *argv])


if __name__ == "__main__":
    main(sys.argv[1:])
