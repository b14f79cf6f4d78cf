"""Kconfig fragments: parse, merge, and check what Kconfig actually chose.

Kconfig silently drops an option whose dependencies are not met, so after
`allnoconfig` with our fragment we compare the resulting .config with every
line of the fragment and fail naming each option that did not stick.
"""
from __future__ import annotations

import configparser
import re
from dataclasses import dataclass
from pathlib import Path

from ukl.common import paths
from ukl.common.errors import UklError

CONFIGS_DIR = paths.REPO_ROOT / "kernel" / "configs"
FLAVOURS_INI = paths.REPO_ROOT / "kernel" / "flavours.ini"

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")


@dataclass(frozen=True)
class Flavour:
    name: str
    description: str
    fragments: tuple[Path, ...]


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


def load_flavours(ini: Path = FLAVOURS_INI, configs: Path = CONFIGS_DIR) -> dict[str, Flavour]:
    parser = configparser.ConfigParser()
    if not parser.read(ini):
        raise UklError(f"cannot read {ini}")
    flavours = {}
    for name in parser.sections():
        frags = tuple(configs / f for f in parser[name]["fragments"].split())
        for f in frags:
            if not f.is_file():
                raise UklError(f"flavour {name}: missing fragment {f}")
        flavours[name] = Flavour(name, parser[name].get("description", ""), frags)
    return flavours


def get_flavour(name: str) -> Flavour:
    """A flavour from flavours.ini, or a composed one: BASE+OPTION+... adds
    kernel/configs/OPTION.config to BASE's fragments (`ukl+ret+rtc`)."""
    flavours = load_flavours()
    if name in flavours:
        return flavours[name]
    if "+" in name:
        return compose(name, flavours)
    raise UklError(f"unknown kernel flavour '{name}'; known: {', '.join(sorted(flavours))}, "
                   f"or BASE+OPTION+... with options from {CONFIGS_DIR}")


def compose(name: str, flavours: dict[str, Flavour], configs: Path = CONFIGS_DIR) -> Flavour:
    base, *options = name.split("+")
    if base not in flavours:
        raise UklError(f"flavour {name}: unknown base flavour '{base}'; known: "
                       f"{', '.join(sorted(flavours))}")
    frags = list(flavours[base].fragments)
    for opt in options:
        frag = configs / f"{opt}.config"
        if not opt or not frag.is_file():
            known = sorted(p.stem for p in configs.glob("*.config"))
            raise UklError(f"flavour {name}: no option fragment {frag}; options: "
                           f"{', '.join(known)}")
        if frag not in frags:
            frags.append(frag)
    return Flavour(name, f"{base} + {', '.join(options)}", tuple(frags))


def merged_options(flavour: Flavour) -> dict[str, str]:
    options: dict[str, str] = {}
    for frag in flavour.fragments:
        options.update(parse(frag.read_text(), str(frag)))
    return options


def is_ukl(flavour: Flavour) -> bool:
    """Whether the flavour links an application into vmlinux."""
    return merged_options(flavour).get("CONFIG_UNIKERNEL_LINUX") == "y"


def has_bypass(flavour: Flavour) -> bool:
    """Whether the flavour's application threads can turn on UKL_BYP."""
    return is_ukl(flavour) and merged_options(flavour).get("CONFIG_UKL_BYP") == "y"


def has_shortcuts(flavour: Flavour) -> bool:
    """Whether the flavour's application can use the UKL_SHORTCUTS calls."""
    return is_ukl(flavour) and merged_options(flavour).get("CONFIG_UKL_SHORTCUTS") == "y"


def ruled_out_bench_groups(flavour: Flavour) -> tuple[str, ...]:
    """Benchmark groups a flavour's restrictions forbid by design: with
    UKL_NSS_PS the app's stacks are fixed and pinned (no stack growth) and
    fork from them is refused; with UKL_NSS the app may not fork."""
    if not is_ukl(flavour):
        return ()
    options = merged_options(flavour)
    if options.get("CONFIG_UKL_NSS_PS") == "y":
        return ("stack-fault", "fork")
    if options.get("CONFIG_UKL_NSS") == "y":
        return ("fork",)
    return ()


def ukl_exec_name(flavour: Flavour) -> str:
    """The path whose exec starts the linked application (Kconfig default /UKL)."""
    return merged_options(flavour).get("CONFIG_UNIKERNEL_LINUX_EXEC_NAME", "/UKL").strip('"')
