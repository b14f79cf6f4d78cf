"""Config fragments: parsing, merging flavours, catching options Kconfig dropped."""
from __future__ import annotations

import pytest

from ukl.common.errors import UklError
from ukl.kbuild import flavour
from ukl.kbuild import kconfig as config
from ukl.kbuild.options import CONFIGS_DIR


def test_parse_render_round_trip() -> None:
    text = "# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"str\"\n\nCONFIG_D=32\n"
    opts = config.parse(text)
    assert opts == {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": '"str"', "CONFIG_D": "32"}
    assert config.parse(config.render(opts)) == opts


def test_parse_rejects_garbage_with_location() -> None:
    with pytest.raises(UklError, match=r"frag:2: not a Kconfig line"):
        config.parse("CONFIG_A=y\nCONFIG_B y\n", "frag")


def test_mismatches_names_dropped_options() -> None:
    wanted = {"CONFIG_A": "y", "CONFIG_B": "n", "CONFIG_C": "y"}
    actual = {"CONFIG_A": "y", "CONFIG_C": "m"}
    assert config.mismatches(wanted, actual) == ["CONFIG_C: wanted y, Kconfig chose m"]


def test_every_flavour_loads_and_base_options_are_documented() -> None:
    flavours = flavour.named()
    assert list(flavours)[:2] == ["stock", "ukl"]
    for f in flavours.values():
        assert f.kconfig and f.fragments[0].name == "base.config"
    # Each option carries a comment saying why: every run of option lines
    # starts right below a comment line.
    for frag in CONFIGS_DIR.glob("*.config"):
        lines = frag.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.startswith("CONFIG_"):
                j = i
                while j > 0 and lines[j - 1].startswith("CONFIG_"):
                    j -= 1
                assert j > 0 and lines[j - 1].startswith("# "), \
                    f"{frag.name}: {line} has no comment above it"


def test_ukl_flavour_is_ukl_and_names_its_exec_trigger() -> None:
    assert flavour.get("ukl").is_ukl
    assert flavour.get("ukl").exec_name == "/UKL"
    assert not flavour.get("stock").is_ukl
    assert flavour.get("stock").options == ()
