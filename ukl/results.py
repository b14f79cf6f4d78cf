"""The one writer of recorded runs: results/NAME/ for `ukl bench`,
`ukl bench-apps` and `ukl matrix`.

Every file a run writes says how to reproduce it: the markdown starts with
the command line and the date, and the meta JSON holds them together with
the kernel source, QEMU and each kernel flavour's configuration. The
command line is the one the CLI was given, passed in; nothing here reads
sys.argv.
"""
from __future__ import annotations

import csv
import io
import json
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Iterable, Sequence

from ukl.common import paths
from ukl.kbuild.flavour import Flavour
from ukl.qemu import command as qemu
from ukl.sources import debian


def results_dir() -> Path:
    """results/ in the repository; UKL_RESULTS_DIR overrides (tests use it)."""
    override = os.environ.get("UKL_RESULTS_DIR")
    return Path(override).resolve() if override else paths.REPO_ROOT / "results"


def _qemu_version() -> str:
    try:
        out = subprocess.run([qemu.QEMU, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return "?"
    return out.splitlines()[0] if out else "?"


class ResultsWriter:
    """results/NAME/ for one run of `command` (as the user typed it)."""

    def __init__(self, name: str, command: str) -> None:
        self.dir = results_dir() / name
        self.command = command
        self.date = time.strftime("%Y-%m-%d %H:%M:%S %Z")

    def _path(self, filename: str) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        return self.dir / filename

    def _write(self, filename: str, text: str) -> Path:
        """Written whole and moved in: a run stopped while writing, or a
        reader at the same time, never sees half a file (the catalog's
        table is the only record of its earlier rows)."""
        path = self._path(filename)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
        return path

    def csv(self, filename: str, header: Sequence[str],
            rows: Iterable[Sequence[object]]) -> Path:
        out = io.StringIO(newline="")
        writer = csv.writer(out)
        writer.writerow(header)
        writer.writerows(rows)
        return self._write(filename, out.getvalue())

    def markdown(self, filename: str, body: str) -> Path:
        """`body` under a first line that says how the figures were made."""
        return self._write(filename,
                           f"Command: `{self.command}` (run {self.date})\n\n{body.rstrip()}\n")

    def meta(self, filename: str, flavours: Sequence[Flavour],
             **fields: object) -> Path:
        """The run's metadata: command, date, kernel source, QEMU, and for
        each flavour its fragments and every Kconfig option they set;
        `fields` add what is particular to the run."""
        linux = debian.get("linux")
        meta: dict[str, object] = {
            "command": self.command,
            "date": self.date,
            "kernel": f"{linux.package} {linux.recorded_version} + kernel/patches",
            "qemu": _qemu_version(),
            "host": platform.node(),
            "configs": {f.name: [p.name for p in f.fragments] for f in flavours},
            "config_options": {f.name: f.kconfig for f in flavours},
            **fields,
        }
        return self._write(filename, json.dumps(meta, indent=2) + "\n")
