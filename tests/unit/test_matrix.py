"""The options table, flavours composed from it, and the option matrix (no
builds)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import fixture_name, register_kernel_fixtures
from ukl import matrix
from ukl.common.errors import UklError
from ukl.kbuild import flavour, options
from ukl.kbuild.options import CONFIGS_DIR, OPTIONS_INI, table


def test_every_subset_kconfig_allows_once() -> None:
    combos = matrix.combinations()
    # UKL_NSS and UKL_NSS_PS exclude each other: a quarter of the subsets.
    assert len(combos) == 2 ** len(table()) * 3 // 4 == len(set(combos))
    assert not [c for c in combos if "+nss_ps" in c and c.endswith("+nss")]
    assert combos[0] == "ukl"
    assert "ukl+byp+ret+shortcuts+rtc+pf_df+nss" in combos
    assert "ukl+byp+ret+shortcuts+rtc+pf_df+nss_ps" in combos
    for option in table().values():
        assert option.fragment.is_file()
        assert option.config in option.fragment.read_text()


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
    for check in {*matrix.BASE_CHECKS, *(c for o in table().values() for c in o.checks)}:
        assert f'{{ "{check}", check_' in source, check


def test_composed_flavour_adds_option_fragments() -> None:
    composed = flavour.get("ukl+ret+rtc")
    names = [f.name for f in composed.fragments]
    assert names == ["base.config", "ukl.config", "ret.config", "rtc.config"]
    assert composed.is_ukl and composed.has("ret") and not composed.has("byp")
    assert [o.name for o in composed.options] == ["ret", "rtc"]


def test_combination_with_a_named_flavours_fragments_builds_as_it() -> None:
    assert flavour.get("ukl").name == "ukl"
    assert flavour.get("ukl+byp").name == "ukl-byp"
    assert flavour.get("ukl+byp+ret+shortcuts+rtc").name == "ukl-ret-byp"
    assert flavour.get("ukl+rtc").name == "ukl+rtc"
    assert flavour.get("ukl+pf_df").name == "ukl-pf-df"
    assert flavour.get("ukl+nss_ps").name == "ukl-nss-ps"
    assert flavour.get("ukl+nss").name == "ukl-nss"


@pytest.mark.parametrize("name, message", [
    ("ukl+nosuch", "no UKL option 'nosuch'; options: byp, ret"),
    ("nosuch+byp", "unknown base flavour 'nosuch'"),
    ("ukl+", "no UKL option ''"),
])
def test_bad_composed_names_say_what_exists(name: str, message: str) -> None:
    with pytest.raises(UklError, match=message):
        flavour.get(name)


def test_unknown_combination_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))
    with pytest.raises(UklError, match="not a combination: ukl\\+fast"):
        matrix.run_matrix("m", ["ukl+fast"], resume=False, command="ukl matrix")


def test_options_in_any_order_name_one_combination() -> None:
    assert matrix.canonical("ukl+ret+byp") == "ukl+byp+ret"
    assert matrix.canonical("ukl-distro+rtc+ret+byp") in matrix.combinations("ukl-distro")
    assert matrix.canonical("ukl") == "ukl"


def test_other_base_composes_the_same_options(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    distro = matrix.combinations("ukl-distro")
    assert distro[0] == "ukl-distro" and len(distro) == len(matrix.combinations())
    assert "ukl-distro+ret" in distro and "ukl+ret" not in distro
    assert matrix.suite_checks("ukl-distro+nss_ps") == matrix.suite_checks("ukl+nss_ps")
    assert matrix.shared_build("ukl") != matrix.shared_build("ukl-distro")
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))
    for base in ("stock", "ukl+ret"):
        with pytest.raises(UklError, match="--base"):
            matrix.run_matrix("m", [], resume=False, command="ukl matrix", base=base)


def test_bench_skips_and_args_come_from_the_options() -> None:
    assert flavour.get("ukl-nss-ps").bench_skips == ("stack-fault", "fork")
    assert flavour.get("ukl-nss").bench_skips == ("fork",)
    for name in ("stock", "ukl", "ukl-ret-byp", "ukl-pf-df"):
        assert flavour.get(name).bench_skips == ()
    assert flavour.get("ukl-ret-byp").bench_args == ("--bypass", "--shortcuts")
    assert flavour.get("ukl-byp").boot_args == ("ukl_bypass=1",)
    assert flavour.get("stock").bench_args == flavour.get("stock").boot_args == ()


def test_run_order_changes_one_option_at_a_time() -> None:
    # Gray code order: neighbours differ by one option, except around the
    # combinations Kconfig forbids (nss with nss_ps), which are skipped.
    order = sorted(matrix.combinations(), key=matrix.build_order)
    assert order[0] == "ukl"
    steps = [len(set(a.split("+")) ^ set(b.split("+"))) for a, b in zip(order, order[1:])]
    assert max(steps) <= 3 and steps.count(1) > len(steps) * 3 // 4
    assert matrix.by_rebuild_cost() == ["ret", "nss", "pf_df", "shortcuts", "rtc", "byp",
                                        "nss_ps"]


def _table_with(tmp_path: Path, row: str) -> Path:
    configs = tmp_path / "configs"
    configs.mkdir()
    for frag in CONFIGS_DIR.glob("*.config"):
        (configs / frag.name).write_text(frag.read_text())
    ini = tmp_path / "options.ini"
    ini.write_text(OPTIONS_INI.read_text() + row)
    return ini


def test_a_new_option_is_one_row_and_its_fragment(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """What adding a UKL option takes: a row in kernel/options.ini and its
    fragment; the named flavour, its test fixture, the matrix and the
    bench knowledge follow from the table."""
    ini = _table_with(tmp_path, "\n[dummy]\nconfig = CONFIG_UKL_DUMMY\nflavour = yes\nrebuild = 8\n"
                                "summary = a test\nchecks = dummy-check\ndrops = fork\n"
                                "bench-skips = fork\n")
    (tmp_path / "configs" / "dummy.config").write_text("# A test.\nCONFIG_UKL_DUMMY=y\n")
    new_table = options.parse(ini, tmp_path / "configs")
    monkeypatch.setattr(options, "table", lambda: new_table)
    monkeypatch.setattr(flavour, "table", lambda: new_table)
    monkeypatch.setattr(matrix, "table", lambda: new_table)
    named = flavour.parse_named(configs=tmp_path / "configs")
    assert named["ukl-dummy"].has("dummy") and named["ukl-dummy"].bench_skips == ("fork",)
    assert fixture_name("ukl-dummy") == "ukl_dummy_kernel"
    # conftest registers a fixture for every named flavour.
    fixtures: dict[str, object] = {}
    register_kernel_fixtures(fixtures, list(named))
    assert set(fixtures) == {fixture_name(n) for n in named} and "ukl_dummy_kernel" in fixtures
    assert len(matrix.combinations()) == 192 and "ukl+byp+dummy" in matrix.combinations()
    assert matrix.suite_checks("ukl+dummy") == [
        *(c for c in matrix.BASE_CHECKS if c != "fork"), "dummy-check"]


@pytest.mark.parametrize("row, message", [
    ("[bad]\nconfig = CONFIG_X\n", "fragment .*bad.config is missing"),
    ("[byp2]\nsummary = x\n", "no `config`"),
    ("[x]\nconfig = CONFIG_X\ncolour = red\n", "unknown key.*colour"),
    ("[x]\nconfig = CONFIG_X\nrebuild = some\n", "rebuild = some; give a rank"),
    ("[x]\nconfig = CONFIG_X\nexcludes = byp\n", "does not exclude x"),
])
def test_bad_table_rows_are_named(tmp_path: Path, row: str, message: str) -> None:
    ini = _table_with(tmp_path, "\n" + row)
    for name in ("x", "byp2"):
        (tmp_path / "configs" / f"{name}.config").write_text("# t\nCONFIG_X=y\n")
    with pytest.raises(UklError, match=message):
        options.parse(ini, tmp_path / "configs")


def test_the_options_that_write_below_the_application_stack_pointer() -> None:
    # kernel/options.ini `red-zone = no`: the kernel link refuses
    # red-zone code for these (ukl.pipeline).
    assert sorted(o.name for o in options.table().values() if not o.red_zone) == ["pf_df", "ret"]
