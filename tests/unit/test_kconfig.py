"""Config fragments: parsing, merging flavours, catching options Kconfig dropped."""
from __future__ import annotations

import pytest

from ukl.common.errors import UklError
from ukl.kernel import config


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
    flavours = config.load_flavours()
    assert "stock" in flavours
    for flavour in flavours.values():
        assert config.merged_options(flavour)
    # Each option carries a comment saying why: every run of option lines
    # starts right below a comment line.
    for frag in config.CONFIGS_DIR.glob("*.config"):
        lines = frag.read_text().splitlines()
        for i, line in enumerate(lines):
            if line.startswith("CONFIG_"):
                j = i
                while j > 0 and lines[j - 1].startswith("CONFIG_"):
                    j -= 1
                assert j > 0 and lines[j - 1].startswith("# "), \
                    f"{frag.name}: {line} has no comment above it"


def test_ukl_flavour_is_ukl_and_names_its_exec_trigger() -> None:
    from ukl.kernel.config import get_flavour, is_ukl, ukl_exec_name
    assert is_ukl(get_flavour("ukl"))
    assert ukl_exec_name(get_flavour("ukl")) == "/UKL"
    assert not is_ukl(get_flavour("stock"))
