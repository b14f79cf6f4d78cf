"""The option matrix and composed flavours (no builds)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.bench import matrix
from ukl.common.errors import UklError
from ukl.kernel import config


def test_every_subset_of_the_options_once() -> None:
    combos = matrix.combinations()
    assert len(combos) == 2 ** len(matrix.OPTIONS) == len(set(combos))
    assert combos[0] == "ukl" and combos[-1] == "ukl+" + "+".join(matrix.OPTIONS)
    for option in matrix.OPTIONS:
        assert (config.CONFIGS_DIR / f"{option}.config").is_file()


def test_composed_flavour_adds_option_fragments() -> None:
    flavour = config.get_flavour("ukl+ret+rtc")
    names = [f.name for f in flavour.fragments]
    assert names == ["base.config", "ukl.config", "ret.config", "rtc.config"]
    assert config.is_ukl(flavour) and not config.has_bypass(flavour)


def test_combination_with_a_named_flavours_fragments_builds_as_it() -> None:
    flavours = config.load_flavours()
    assert matrix.flavour_for("ukl", flavours) == "ukl"
    assert matrix.flavour_for("ukl+byp", flavours) == "ukl-byp"
    assert matrix.flavour_for("ukl+byp+ret+shortcuts+rtc", flavours) == "ukl-ret-byp"
    assert matrix.flavour_for("ukl+rtc", flavours) == "ukl+rtc"


@pytest.mark.parametrize("name, message", [
    ("ukl+nosuch", "no option fragment .*nosuch.config; options: .*byp"),
    ("nosuch+byp", "unknown base flavour 'nosuch'"),
    ("ukl+", "no option fragment"),
])
def test_bad_composed_names_say_what_exists(name: str, message: str) -> None:
    with pytest.raises(UklError, match=message):
        config.get_flavour(name)


def test_unknown_combination_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))
    with pytest.raises(UklError, match="not a combination: ukl\\+fast"):
        matrix.run_matrix("m", ["ukl+fast"], resume=False)
