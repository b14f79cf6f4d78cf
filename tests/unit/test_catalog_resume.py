"""`ukl catalog --resume`: keep what passed in an earlier run, run the rest."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.conftest import ukl
from ukl import catalog


def _entry(name: str) -> catalog.Entry:
    return catalog.Entry(name=name, package=name, program=None, test=f"tests {name}", args=[],
                         expect="ok")


def _write(path: Path, rows: list[catalog.Row]) -> None:
    header, body = catalog.rows_table(rows)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(body)


def test_only_rows_that_passed_everything_are_kept(tmp_path: Path) -> None:
    good, bad_ukl, bad_build = _entry("good"), _entry("bad-ukl"), _entry("bad-build")
    rows = [
        catalog.Row(good, version="1.0-1", build=catalog.Verdict(True), ukl=catalog.Verdict(True),
                    stock=catalog.Verdict(True), without=["libfoo-dev: why", "libbar-dev: why"],
                    recipe="none", seconds=90.0),
        catalog.Row(bad_ukl, version="2.0-1", build=catalog.Verdict(True),
                    ukl=catalog.Verdict(False, "exit status 1"), stock=catalog.Verdict(True)),
        catalog.Row(bad_build, build=catalog.Verdict(False, "debian/rules failed")),
    ]
    path = tmp_path / "catalog.csv"
    _write(path, rows)
    # An entry since removed from the catalog is not kept either.
    kept = catalog.passed_before(path, [good, bad_ukl, bad_build])
    assert list(kept) == ["good"]
    row = kept["good"]
    assert row.kept and row.version == "1.0-1" and row.recipe == "none"
    assert row.without == ["libfoo-dev: why", "libbar-dev: why"]
    assert abs(row.seconds - 90.0) < 1
    assert catalog.passed_before(path, [bad_ukl]) == {}
    assert catalog.passed_before(tmp_path / "none.csv", [good]) == {}
    md = catalog.markdown([row, rows[1]])
    assert "| good | 1.0-1 | tests good | pass | pass | pass |" in md
    assert "Not run again, as an earlier run recorded under this name left them " \
        "(column `ran`): good." in md


def test_resume_without_a_name_is_one_line() -> None:
    res = ukl("catalog", "--resume", "hello")
    assert res.returncode == 2
    assert res.stderr.startswith("ukl: error: --resume needs --name NAME")
    assert res.stderr.count("\n") == 1


def test_a_run_of_only_kept_packages_records_them_and_builds_nothing(tmp_path: Path) -> None:
    hello = next(e for e in catalog.load() if e.name == "hello")
    (tmp_path / "cat").mkdir()
    _write(tmp_path / "cat" / "catalog.csv", [
        catalog.Row(hello, version="2.10-3", build=catalog.Verdict(True),
                    ukl=catalog.Verdict(True), stock=catalog.Verdict(True), recipe="none",
                    seconds=12.0)])
    res = ukl("catalog", "--name", "cat", "--resume", "hello",
              env={"UKL_RESULTS_DIR": str(tmp_path)})
    assert res.returncode == 0, res.stdout + res.stderr
    assert "hello passed in the earlier run, kept" in res.stderr
    md = (tmp_path / "cat" / "catalog.md").read_text()
    assert "| hello | 2.10-3 | prints its greeting | pass | pass | pass | 0.2 |" in md
    assert "(column `ran`): hello." in md


def test_a_resumed_run_stopped_part_way_keeps_what_it_had_not_reached(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept hello is recorded, then the run is stopped in bc: jq, kept but
    not reached, must still be in the table for the next --resume."""
    from ukl import cli
    entries = {e.name: e for e in catalog.load()}
    (tmp_path / "cat").mkdir()
    _write(tmp_path / "cat" / "catalog.csv", [
        catalog.Row(entries[n], version="1", build=catalog.Verdict(True),
                    ukl=catalog.Verdict(True), stock=catalog.Verdict(True), recipe="none")
        for n in ("hello", "jq")])
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))

    def stopped(*args: object) -> catalog.Row:
        raise KeyboardInterrupt
    monkeypatch.setattr(catalog, "run_entry", stopped)
    assert cli.main(["catalog", "--name", "cat", "--resume", "hello", "bc", "jq"]) == 130
    assert sorted(catalog.passed_before(tmp_path / "cat" / "catalog.csv",
                                        list(entries.values()))) == ["hello", "jq"]


def test_a_run_of_some_packages_keeps_every_other_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`ukl catalog bc --name cat` updates bc's row; hello (passed), jq
    (failed, with its reason and log) and their days stay as recorded."""
    from ukl import cli
    entries = {e.name: e for e in catalog.load()}
    (tmp_path / "cat").mkdir()
    _write(tmp_path / "cat" / "catalog.csv", [
        catalog.Row(entries["hello"], version="1", build=catalog.Verdict(True),
                    ukl=catalog.Verdict(True), stock=catalog.Verdict(True), recipe="none",
                    ran="2026-11-01"),
        catalog.Row(entries["jq"], version="2", build=catalog.Verdict(True),
                    ukl=catalog.Verdict(False, "exit status 3", Path("/logs/jq.log")),
                    stock=catalog.Verdict(True), recipe="none"),
        catalog.Row(entries["bc"], version="0", build=catalog.Verdict(False, "old failure"),
                    recipe="none", ran="2026-11-02")])
    (tmp_path / "cat" / "meta.json").write_text('{"date": "2026-11-20 10:00:00 UTC"}')
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))

    def passes(entry: catalog.Entry, *args: object) -> catalog.Row:
        return catalog.Row(entry, version="3", build=catalog.Verdict(True),
                           ukl=catalog.Verdict(True), stock=catalog.Verdict(True),
                           recipe="none", ran="2026-12-06")
    monkeypatch.setattr(catalog, "run_entry", passes)
    assert cli.main(["catalog", "--name", "cat", "bc"]) == 0
    rows = catalog.recorded(tmp_path / "cat" / "catalog.csv", list(entries.values()))
    assert list(rows) == ["hello", "jq", "bc"]
    assert rows["bc"].passed() and rows["bc"].version == "3" and rows["bc"].ran == "2026-12-06"
    assert rows["hello"].passed() and rows["hello"].ran == "2026-11-01"
    jq = rows["jq"]
    assert not jq.passed() and jq.build is not None and jq.build.ok and jq.ukl is not None
    assert (jq.ukl.why, jq.ukl.log) == ("exit status 3", Path("/logs/jq.log"))
    # Written before the table had a `ran` column: the earlier run's day.
    assert jq.ran == "2026-11-20"
    md = (tmp_path / "cat" / "catalog.md").read_text()
    assert "2 of 3 packages built and passed their test on UKL" in md
    assert "(column `ran`): hello, jq." in md
    assert "| jq | 2 | adds a JSON array | pass | FAIL | pass |" in md


def test_a_row_not_reached_yet_stays_as_recorded(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A whole run stopped after hello: bc, which it had not reached, keeps
    its recorded row, failure and all."""
    from ukl import cli
    entries = {e.name: e for e in catalog.load()}
    (tmp_path / "cat").mkdir()
    _write(tmp_path / "cat" / "catalog.csv", [
        catalog.Row(entries["bc"], version="0", build=catalog.Verdict(False, "it broke"),
                    recipe="none", ran="2026-11-02")])
    monkeypatch.setenv("UKL_RESULTS_DIR", str(tmp_path))

    def stopped_after_hello(entry: catalog.Entry, *args: object) -> catalog.Row:
        if entry.name != "hello":
            raise KeyboardInterrupt
        return catalog.Row(entry, version="1", build=catalog.Verdict(True),
                           ukl=catalog.Verdict(True), stock=catalog.Verdict(True),
                           recipe="none")
    monkeypatch.setattr(catalog, "run_entry", stopped_after_hello)
    assert cli.main(["catalog", "--name", "cat"]) == 130
    rows = catalog.recorded(tmp_path / "cat" / "catalog.csv", list(entries.values()))
    assert list(rows) == ["hello", "bc"]
    assert rows["bc"].build is not None and rows["bc"].build.why == "it broke"
    assert rows["bc"].ran == "2026-11-02"
    md = (tmp_path / "cat" / "catalog.md").read_text()
    assert f"(In progress: 1 of the {len(entries)} packages of this run so far.)" in md


def test_a_row_of_a_test_since_changed_is_not_carried(tmp_path: Path) -> None:
    entry = _entry("good")
    _write(tmp_path / "catalog.csv", [
        catalog.Row(entry, version="1", build=catalog.Verdict(True), ukl=catalog.Verdict(True),
                    stock=catalog.Verdict(True), recipe="none")])
    assert list(catalog.recorded(tmp_path / "catalog.csv", [entry])) == ["good"]
    changed = catalog.Entry(name="good", package="good", program=None, test="another test",
                            args=[], expect="ok")
    assert catalog.recorded(tmp_path / "catalog.csv", [changed]) == {}
