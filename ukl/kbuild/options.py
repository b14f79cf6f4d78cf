"""The UKL options table (kernel/options.ini): one row per option.

Everything else that depends on the set of options (named flavours, the
matrix's combinations and checks, what the benchmarks skip or switch on)
is derived from these rows, so adding an option is one row, its fragment
and its kernel patch.
"""
from __future__ import annotations

import configparser
import functools
from dataclasses import dataclass
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError

OPTIONS_INI = paths.REPO_ROOT / "kernel" / "options.ini"
CONFIGS_DIR = paths.REPO_ROOT / "kernel" / "configs"
UNRANKED = 1000
_KEYS = {"config", "summary", "flavour", "excludes", "rebuild", "checks", "drops",
         "bench-skips", "bench-args", "boot-args", "red-zone"}


@dataclass(frozen=True)
class Option:
    name: str
    config: str                    # the Kconfig symbol its fragment turns on
    summary: str
    own_flavour: bool              # `make kernel` builds ukl-NAME
    excludes: frozenset[str]
    rebuild: int                   # rank: how much toggling it rebuilds
    checks: tuple[str, ...]        # ukl_suite checks it adds
    drops: tuple[str, ...]         # ukl_suite checks it rules out
    bench_skips: tuple[str, ...]   # lebench groups it rules out
    bench_args: tuple[str, ...]
    boot_args: tuple[str, ...]
    fragment: Path                 # kernel/configs/NAME.config
    # False: its entry code writes below the application's stack pointer,
    # so code that keeps data in the red zone cannot run with it.
    red_zone: bool = True

    @property
    def flavour_name(self) -> str:
        return "ukl-" + self.name.replace("_", "-")


def parse(ini: Path, configs: Path = CONFIGS_DIR) -> dict[str, Option]:
    """The table in file order, checked: every key known, every fragment
    present, exclusions symmetric."""
    parser = configparser.ConfigParser(inline_comment_prefixes=None)
    if not parser.read(ini):
        raise UklError(f"cannot read {ini}")
    table: dict[str, Option] = {}
    for name in parser.sections():
        row = parser[name]
        where = f"{ini} [{name}]"
        unknown = set(row) - _KEYS
        if unknown:
            raise UklError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; "
                           f"known: {', '.join(sorted(_KEYS))}")
        if "config" not in row:
            raise UklError(f"{where}: no `config` (the Kconfig symbol the option turns on)")
        # Unranked: toggled least often, as if it changed every object.
        rebuild = row.get("rebuild", str(UNRANKED))
        if not rebuild.isdigit():
            raise UklError(f"{where}: rebuild = {rebuild}; give a rank, a whole number "
                           "(1: toggling it rebuilds the least)")
        fragment = configs / f"{name}.config"
        if not fragment.is_file():
            raise UklError(f"{where}: its fragment {fragment} is missing")
        table[name] = Option(
            name=name, config=row["config"], summary=row.get("summary", ""),
            own_flavour=row.getboolean("flavour", fallback=False),
            excludes=frozenset(row.get("excludes", "").split()), rebuild=int(rebuild),
            checks=tuple(row.get("checks", "").split()),
            drops=tuple(row.get("drops", "").split()),
            bench_skips=tuple(row.get("bench-skips", "").split()),
            bench_args=tuple(row.get("bench-args", "").split()),
            boot_args=tuple(row.get("boot-args", "").split()),
            fragment=fragment, red_zone=row.getboolean("red-zone", fallback=True))
    for opt in table.values():
        for other in opt.excludes:
            if other not in table or opt.name not in table[other].excludes:
                raise UklError(f"{ini} [{opt.name}]: excludes {other}, but [{other}] "
                               f"does not exclude {opt.name} (exclusion goes both ways)")
    return table


@functools.cache
def table() -> dict[str, Option]:
    """The options, in the table's order (read once per process)."""
    return parse(OPTIONS_INI)
