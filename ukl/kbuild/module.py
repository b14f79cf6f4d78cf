"""Out-of-tree kernel modules built against one kernel flavour's build.

Kbuild's external module build (`make M=DIR`) needs the flavour's output
directory (its .config, headers and modpost) and the module linker script,
which a vmlinux-only build does not make. The module's sources are copied
to build/kmod/FLAVOUR/NAME, where Kbuild writes its objects, so the
repository stays clean and each flavour has its own objects.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError
from ukl.common.proc import run_logged
from ukl.kbuild import build, seed
from ukl.kbuild.flavour import Flavour
from ukl.sources import debian, series


def modules_dir(flavour: str) -> Path:
    return paths.build_root() / "kmod" / flavour


def build_module(flavour: Flavour, source: Path) -> Path:
    """Build the module in `source` (a directory with a Kbuild file and its
    C files) against `flavour`'s built kernel; the path of NAME.ko, NAME
    being the directory's name."""
    out = build.output_dir(flavour.name)
    if not (out / "vmlinux").is_file():
        raise UklError(f"kernel flavour {flavour.name} is not built; run `ukl kernel build "
                       f"{flavour.name}` first")
    if flavour.kconfig.get("CONFIG_MODULES") != "y":
        raise UklError(f"kernel flavour {flavour.name} is built without CONFIG_MODULES")
    work = modules_dir(flavour.name) / source.name
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(source, work)
    tree = series.prepare(debian.get("linux"))
    log = paths.logs_dir() / f"kmod-{flavour.name}-{source.name}.log"
    # The flavour's output directory is shared with its kernel builds.
    with seed.locked(out):
        run_logged(build.make_command(tree, out, "scripts/module.lds"),
                   label=f"module linker script ({flavour.name})", env=build.make_env(),
                   log_path=log)
        run_logged(build.make_command(tree, out, f"M={work}", "modules"),
                   label=f"module {source.name} ({flavour.name})", env=build.make_env(),
                   log_path=log, append=True)
    ko = work / f"{source.name}.ko"
    if not ko.is_file():
        raise UklError(f"module build finished but {ko} is missing; full log: {log}")
    return ko
