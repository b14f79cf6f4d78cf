"""Kernel flavours: a name -> the fragments and the UKL options it has.

A flavour is looked up once, where its name enters (the CLI's arguments, a
matrix combination, a test fixture), and passed down as a Flavour object,
which carries its merged Kconfig options and its UKL options; the layers
below ask it questions instead of re-reading files.

Named flavours: `stock` and `ukl` and the combinations in
kernel/flavours.ini, and `ukl-NAME` for each option of kernel/options.ini
marked `flavour = yes`. Any other combination is BASE+OPTION+...
(`ukl+ret+rtc`): BASE's fragments plus each option's.
"""
from __future__ import annotations

import configparser
import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError, UsageError
from ukl.kbuild import kconfig
from ukl.kbuild.options import CONFIGS_DIR, Option, table

FLAVOURS_INI = paths.REPO_ROOT / "kernel" / "flavours.ini"
DEFAULT_EXEC_NAME = "/UKL"


@dataclass(frozen=True)
class Flavour:
    name: str
    description: str
    fragments: tuple[Path, ...]
    # Every option the fragments set, merged in order (Kconfig's input).
    kconfig: dict[str, str] = field(compare=False, repr=False)
    # The UKL options on, in the table's order.
    options: tuple[Option, ...] = field(compare=False)
    # Built only when a command asks for it, not by `ukl kernel build`
    # without names (`make kernel`): the performance runs' flavours.
    on_demand: bool = field(default=False, compare=False)
    # The QEMU CPU model its measurements boot with: a vendor model for a
    # flavour whose mitigations Linux turns on only for that vendor's bugs.
    cpu: str = field(default="max", compare=False)

    @property
    def is_ukl(self) -> bool:
        """Whether the flavour links an application into vmlinux."""
        return self.kconfig.get("CONFIG_UNIKERNEL_LINUX") == "y"

    def has(self, option: str) -> bool:
        if option not in table():
            raise ValueError(f"no UKL option {option!r} in the options table")
        return any(o.name == option for o in self.options)

    @property
    def exec_name(self) -> str:
        """The path whose exec starts the linked application."""
        return self.kconfig.get("CONFIG_UNIKERNEL_LINUX_EXEC_NAME",
                                DEFAULT_EXEC_NAME).strip('"')

    @property
    def bench_skips(self) -> tuple[str, ...]:
        """lebench groups the flavour's options rule out by design."""
        return tuple(g for o in self.options for g in o.bench_skips)

    @property
    def bench_args(self) -> tuple[str, ...]:
        return tuple(a for o in self.options for a in o.bench_args)

    @property
    def boot_args(self) -> tuple[str, ...]:
        return tuple(a for o in self.options for a in o.boot_args)

    @property
    def dir_name(self) -> str:
        """The name as a file name (image and log names have no '+')."""
        return self.name.replace("+", "-")


def make(name: str, description: str, fragments: tuple[Path, ...]) -> Flavour:
    for f in fragments:
        if not f.is_file():
            raise UklError(f"flavour {name}: missing fragment {f}")
    merged: dict[str, str] = {}
    for frag in fragments:
        merged.update(kconfig.parse(frag.read_text(), str(frag)))
    on = tuple(o for o in table().values() if merged.get(o.config) == "y")
    return Flavour(name, description, fragments, merged, on)


def _with_options(name: str, description: str, base: Flavour,
                  option_names: list[str]) -> Flavour:
    opts = table()
    frags = list(base.fragments)
    for opt in option_names:
        if opt not in opts:
            raise UsageError(f"flavour {name}: no UKL option '{opt}'; options: "
                             f"{', '.join(opts)} (kernel/options.ini)")
        if opts[opt].fragment not in frags:
            frags.append(opts[opt].fragment)
    return make(name, description, tuple(frags))


def parse_named(ini: Path = FLAVOURS_INI, configs: Path = CONFIGS_DIR) -> dict[str, Flavour]:
    """The named flavours, in this order: those made of fragments, one per
    option marked `flavour = yes`, then the combinations of flavours.ini."""
    parser = configparser.ConfigParser()
    if not parser.read(ini):
        raise UklError(f"cannot read {ini}")
    named: dict[str, Flavour] = {}
    for name in parser.sections():
        if "fragments" in parser[name]:
            named[name] = _settings(make(name, parser[name].get("description", ""),
                                         tuple(configs / f
                                               for f in parser[name]["fragments"].split())),
                                    parser[name], None, ini)
    if "ukl" in named:
        for opt in table().values():
            if opt.own_flavour:
                named[opt.flavour_name] = _with_options(
                    opt.flavour_name, f"UKL base model + {opt.config[7:]}: {opt.summary}",
                    named["ukl"], [opt.name])
    for name in parser.sections():
        row = parser[name]
        if "fragments" in row:
            continue
        if row.get("base") not in named:
            raise UklError(f"{ini} [{name}]: give `fragments`, or `base` (a flavour "
                           "made of fragments) and `options`")
        base = named[row["base"]]
        named[name] = _settings(_with_options(name, row.get("description", ""), base,
                                              row.get("options", "").split()),
                                row, base, ini)
    return named


def _settings(f: Flavour, row: configparser.SectionProxy, base: Flavour | None,
              ini: Path) -> Flavour:
    """`on-demand` and `cpu` from the flavour's section, else its base's."""
    unknown = set(row) - {"description", "fragments", "base", "options", "on-demand", "cpu"}
    if unknown:
        raise UklError(f"{ini} [{f.name}]: unknown keys: {', '.join(sorted(unknown))}")
    on_demand = row.getboolean("on-demand", base.on_demand if base else False)
    cpu = row.get("cpu", base.cpu if base else "max")
    return dataclasses.replace(f, on_demand=on_demand, cpu=cpu)


@functools.cache
def named() -> dict[str, Flavour]:
    """Every named flavour (read once per process)."""
    return parse_named()


@functools.cache
def get(name: str) -> Flavour:
    """A named flavour, or a composed one, BASE+OPTION+... (each composed
    once per process: `ukl matrix` asks for its combinations again at every
    results write)."""
    flavours = named()
    if name in flavours:
        return flavours[name]
    if "+" in name:
        base, *opts = name.split("+")
        if base not in flavours:
            raise UsageError(f"flavour {name}: unknown base flavour '{base}'; known: "
                             f"{', '.join(sorted(flavours))}")
        composed = _with_options(name, f"{base} + {', '.join(opts)}", flavours[base], opts)
        # The same kernel as a named flavour is that flavour: one build
        # directory, one image name (ukl+ret is ukl-ret).
        for same in flavours.values():
            if set(same.fragments) == set(composed.fragments):
                return same
        return composed
    raise UsageError(f"unknown kernel flavour '{name}'; known: {', '.join(sorted(flavours))}, "
                     "or BASE+OPTION+... with options from kernel/options.ini")


def get_all(names: list[str]) -> list[Flavour]:
    """Several different flavours, looked up at once (bad names fail before
    any build)."""
    if not names:
        raise UsageError("no kernel flavour given")
    found = [get(n) for n in names]
    for i, f in enumerate(found):
        if f in found[:i]:
            raise UsageError(f"{names[i]} is the same kernel as {names[found.index(f)]}; "
                             "give each flavour once")
    return found
