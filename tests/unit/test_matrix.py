"""The option matrix and composed flavours (no builds)."""
from __future__ import annotations

from pathlib import Path

import pytest

from ukl.bench import matrix
from ukl.common.errors import UklError
from ukl.kernel import config


def test_every_subset_kconfig_allows_once() -> None:
    combos = matrix.combinations()
    # UKL_NSS and UKL_NSS_PS exclude each other: a quarter of the subsets.
    assert len(combos) == 2 ** len(matrix.OPTIONS) * 3 // 4 == len(set(combos))
    assert not [c for c in combos if "+nss_ps" in c and c.endswith("+nss")]
    assert combos[0] == "ukl"
    assert "ukl+byp+ret+shortcuts+rtc+pf_df+nss" in combos
    assert "ukl+byp+ret+shortcuts+rtc+pf_df+nss_ps" in combos
    for option in matrix.OPTIONS:
        assert (config.CONFIGS_DIR / f"{option}.config").is_file()


def test_suite_checks_follow_the_stack_options() -> None:
    assert matrix.suite_checks("ukl") == list(matrix.BASE_CHECKS)
    assert matrix.suite_checks("ukl+byp+ret") == list(matrix.BASE_CHECKS)
    pfdf = matrix.suite_checks("ukl+rtc+pf_df")
    assert pfdf == [*matrix.BASE_CHECKS, "pf-df"]
    ps = matrix.suite_checks("ukl+pf_df+nss_ps")
    assert "stack" not in ps and "fork" not in ps and "pf-df" not in ps
    assert ps[-3:] == ["nss-ps-stack", "nss-ps-fork", "nss-ps-limit"]
    nss = matrix.suite_checks("ukl+byp+nss")
    assert not {"fork", "spawn", "smap", "pf-df"} & set(nss) and "stack" in nss
    assert nss[-3:] == ["nss-stack", "nss-mirror", "nss-alone"]


def test_suite_checks_exist_in_the_suite_program() -> None:
    source = matrix.SUITE.read_text()
    for check in {*matrix.BASE_CHECKS, *(c for cs in matrix.OPTION_CHECKS.values() for c in cs)}:
        assert f'{{ "{check}", check_' in source, check


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
    assert matrix.flavour_for("ukl+pf_df", flavours) == "ukl-pf-df"
    assert matrix.flavour_for("ukl+nss_ps", flavours) == "ukl-nss-ps"
    assert matrix.flavour_for("ukl+nss", flavours) == "ukl-nss"


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


def test_bench_skips_only_what_an_option_forbids() -> None:
    nss_ps = config.get_flavour("ukl-nss-ps")
    assert config.ruled_out_bench_groups(nss_ps) == ("stack-fault", "fork")
    assert config.ruled_out_bench_groups(config.get_flavour("ukl-nss")) == ("fork",)
    for name in ("stock", "ukl", "ukl-ret-byp", "ukl-pf-df"):
        assert config.ruled_out_bench_groups(config.get_flavour(name)) == ()


def test_run_order_changes_one_option_at_a_time() -> None:
    # Gray code order: neighbours differ by one option, except around the
    # combinations Kconfig forbids (nss with nss_ps), which are skipped.
    order = sorted(matrix.combinations(), key=matrix.build_order)
    assert order[0] == "ukl"
    steps = [len(set(a.split("+")) ^ set(b.split("+"))) for a, b in zip(order, order[1:])]
    assert max(steps) <= 3 and steps.count(1) > len(steps) * 3 // 4
    assert sorted(matrix.BY_REBUILD_COST) == sorted(matrix.OPTIONS)
