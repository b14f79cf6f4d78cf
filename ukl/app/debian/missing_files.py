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

import glob
import os
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


def _matches(pattern: str, dirs: list[Path]) -> bool:
    return any(glob.glob(str(d / pattern)) for d in dirs)


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
