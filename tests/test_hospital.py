"""Tests for the synthetic COVID-19 hospital and its planted truths (real DuckDB)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from d2_notebook.datasets import hospital

TRUTHS = {truth.id: truth for truth in hospital.PLANTED_TRUTHS}


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


def _contents(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple]]:
    return {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in hospital.TABLES}


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return con.execute(sql).fetchall()[0][0]


def _by_drug(con: duckdb.DuckDBPyConnection, truth_id: str) -> dict[str, tuple[int, float]]:
    """drug -> (admissions, death rate) from a truth's canonical query."""
    rows = con.execute(TRUTHS[truth_id].sql).fetchall()
    return {row[0]: (row[1], row[3]) for row in rows}


def _strata(con: duckdb.DuckDBPyConnection) -> tuple[dict, dict]:
    """Raw rates by drug and stratified rates by (drug, score) from the C1 query."""
    raw, strata = {}, {}
    for drug, score, _severity, n, _deaths, rate in con.execute(TRUTHS["C1"].sql).fetchall():
        if score is None:
            raw[drug] = rate
        else:
            strata[drug, score] = (n, rate)
    return raw, strata


def _standardized(strata: dict, drug: str, scores: tuple[int, ...]) -> float:
    """Death rate of ``drug`` re-weighted to the severity mix of all older patients."""
    weight = {s: sum(n for (_d, sc), (n, _r) in strata.items() if sc == s) for s in scores}
    total = sum(weight.values())
    return sum(strata[drug, s][1] * weight[s] for s in scores) / total


def test_deterministic_from_seed() -> None:
    first = _contents(hospital.create(seed=3, patients=400))
    assert first == _contents(hospital.create(seed=3, patients=400))
    assert first != _contents(hospital.create(seed=4, patients=400))


def test_sizes_and_values(con: duckdb.DuckDBPyConnection) -> None:
    assert _count(con, "SELECT COUNT(*) FROM patients") == 5000
    assert _count(con, "SELECT COUNT(*) FROM admissions") == 5000
    assert _count(con, "SELECT COUNT(*) FROM treatments") == 5000
    assert 4850 <= _count(con, "SELECT COUNT(*) FROM outcomes") < 5000
    assert 0.5 < _count(con, "SELECT AVG((age >= 65)::INTEGER) FROM patients") < 0.65
    drugs = {r[0] for r in con.execute("SELECT DISTINCT drug FROM treatments").fetchall()}
    assert drugs == set(hospital.DRUGS)
    severities = con.execute("SELECT DISTINCT severity, severity_score FROM admissions").fetchall()
    assert sorted(severities, key=lambda r: r[1]) == [
        (name, i + 1) for i, name in enumerate(hospital.SEVERITIES)
    ]
    conditions = con.execute("SELECT DISTINCT condition FROM comorbidities").fetchall()
    assert {r[0] for r in conditions} == set(hospital.CONDITIONS)


def test_column_types(con: duckdb.DuckDBPyConnection) -> None:
    types = {
        (table, row[0]): row[1]
        for table in hospital.TABLES
        for row in con.execute(f"DESCRIBE {table}").fetchall()
    }
    assert types["patients", "age"] == "INTEGER"
    assert types["admissions", "admitted_on"] == "DATE"
    assert types["treatments", "started_on"] == "DATE"
    assert types["treatments", "dose_mg"].startswith("DECIMAL")
    assert types["outcomes", "died"] == "BOOLEAN"
    assert types["outcomes", "days_to_discharge"] == "INTEGER"


def test_realistic_noise(con: duckdb.DuckDBPyConnection) -> None:
    assert _count(con, "SELECT COUNT(*) FROM patients WHERE sex IS NULL") > 10
    assert _count(con, "SELECT COUNT(*) FROM treatments WHERE days IS NULL") > 50
    missing_doses = "WHERE drug <> 'Standard care' AND dose_mg IS NULL"
    assert _count(con, f"SELECT COUNT(*) FROM treatments {missing_doses}") > 50
    assert _count(con, "SELECT COUNT(*) FROM treatments WHERE drug = 'Standard care' "
                       "AND dose_mg IS NOT NULL") == 0
    spread = con.execute("SELECT MIN(dose_mg), MAX(dose_mg) FROM treatments "
                         "WHERE drug = 'Virexa'").fetchall()[0]
    assert spread[0] < 190 < 210 < spread[1]
    assert _count(con, "SELECT COUNT(*) FROM outcomes WHERE died AND days_to_discharge "
                       "IS NOT NULL") == 0


def test_referential_integrity(con: duckdb.DuckDBPyConnection) -> None:
    links = [
        ("comorbidities", "patients", "patient_id"),
        ("admissions", "patients", "patient_id"),
        ("treatments", "admissions", "admission_id"),
        ("outcomes", "admissions", "admission_id"),
    ]
    for child, parent, key in links:
        orphans = f"SELECT COUNT(*) FROM {child} ANTI JOIN {parent} USING ({key})"
        assert _count(con, orphans) == 0, child
    assert _count(con, "SELECT COUNT(DISTINCT patient_id) FROM admissions") == 5000
    with pytest.raises(duckdb.ConstraintException):
        con.execute("INSERT INTO treatments VALUES (999999, 999999, 'Virexa', 1, NULL, NULL)")
    with pytest.raises(duckdb.ConstraintException):
        con.execute("INSERT INTO patients VALUES (1, 50, 'F')")


def test_truth_metadata(con: duckdb.DuckDBPyConnection) -> None:
    assert len(TRUTHS) == len(hospital.PLANTED_TRUTHS) >= 4
    for truth in hospital.PLANTED_TRUTHS:
        assert truth.expected in ("supported", "contradicted")
        assert truth.drug in hospital.DRUGS
        assert con.execute(truth.sql).fetchall()
    assert hospital.QUESTION == "Which treatment is most effective for older COVID-19 patients?"


def test_h1_virexa_does_not_clearly_help_older_patients(con: duckdb.DuckDBPyConnection) -> None:
    rates = _by_drug(con, "H1")
    assert min(n for n, _ in rates.values()) >= 500
    assert rates["Standard care"][1] - rates["Virexa"][1] < 0.05  # seed 7: 2.2 pp


def test_h3_virexa_helps_older_asthma_patients(con: duckdb.DuckDBPyConnection) -> None:
    rates = _by_drug(con, "H3")
    assert min(n for n, _ in rates.values()) >= 100
    assert rates["Standard care"][1] - rates["Virexa"][1] >= 0.12  # seed 7: 20 pp


def test_h4_virexa_does_not_help_older_diabetics(con: duckdb.DuckDBPyConnection) -> None:
    rates = _by_drug(con, "H4")
    assert min(n for n, _ in rates.values()) >= 100
    assert rates["Standard care"][1] - rates["Virexa"][1] <= 0.0  # seed 7: Virexa 9 pp worse


def test_c1_corvalin_is_confounded_by_severity(con: duckdb.DuckDBPyConnection) -> None:
    raw, strata = _strata(con)
    assert min(raw, key=raw.get) == "Corvalin"
    assert raw["Standard care"] - raw["Corvalin"] >= 0.15  # looks like a big win raw
    assert strata["Corvalin", 1][0] >= 100
    for score in (1, 2):  # where Corvalin patients are: no real difference
        assert abs(strata["Standard care", score][1] - strata["Corvalin", score][1]) < 0.03
    adjusted = _standardized(strata, "Standard care", (1, 2)) - _standardized(
        strata, "Corvalin", (1, 2)
    )
    assert abs(adjusted) < 0.02


def test_p1_pulmorex_helps_in_every_stratum(con: duckdb.DuckDBPyConnection) -> None:
    rows = con.execute(TRUTHS["P1"].sql).fetchall()
    rate = {(score, drug): (n, r) for score, _sev, drug, n, _deaths, r in rows}
    for score in (1, 2, 3, 4):
        assert rate[score, "Standard care"][1] - rate[score, "Pulmorex"][1] >= 0.03
    for score in (3, 4):
        assert min(rate[score, d][0] for d in ("Pulmorex", "Standard care")) >= 100
        assert rate[score, "Standard care"][1] - rate[score, "Pulmorex"][1] >= 0.15
    _, strata = _strata(con)
    scores = (1, 2, 3, 4)
    effect = _standardized(strata, "Standard care", scores) - _standardized(
        strata, "Pulmorex", scores
    )
    assert effect >= 0.1


def test_d1_solvanir_dose_effect(con: duckdb.DuckDBPyConnection) -> None:
    rows = {high: (n, rate) for high, n, _deaths, rate in con.execute(TRUTHS["D1"].sql).fetchall()}
    assert min(n for n, _ in rows.values()) >= 100
    assert rows[False][1] - rows[True][1] >= 0.12  # seed 7: 18 pp


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_truths_hold_for_other_seeds(seed: int) -> None:
    con = hospital.create(seed=seed)
    gap = {k: _by_drug(con, k) for k in ("H1", "H3", "H4")}
    gap = {k: r["Standard care"][1] - r["Virexa"][1] for k, r in gap.items()}
    assert gap["H1"] < 0.08 <= gap["H3"]
    assert gap["H4"] <= 0
    raw, strata = _strata(con)
    assert min(raw, key=raw.get) == "Corvalin"
    for score in (1, 2):
        assert abs(strata["Standard care", score][1] - strata["Corvalin", score][1]) < 0.03
    scores = (1, 2, 3, 4)
    assert _standardized(strata, "Standard care", scores) - _standardized(
        strata, "Pulmorex", scores
    ) >= 0.08
    dose = {high: rate for high, _n, _d, rate in con.execute(TRUTHS["D1"].sql).fetchall()}
    assert dose[False] - dose[True] >= 0.08


def test_file_output_replaces_existing(tmp_path: Path) -> None:
    path = tmp_path / "hospital.duckdb"
    path.write_bytes(b"not a database")
    hospital.create(path, patients=300).close()
    hospital.create(str(path), patients=200).close()
    with duckdb.connect(str(path), read_only=True) as reopened:
        assert _count(reopened, "SELECT COUNT(*) FROM patients") == 200


def test_existing_connection_is_refilled() -> None:
    con = duckdb.connect()
    assert hospital.create(con, patients=150) is con
    hospital.create(con, patients=100)
    assert _count(con, "SELECT COUNT(*) FROM admissions") == 100




def test_describe_mentions_schema_and_truths() -> None:
    text = hospital.describe()
    for word in (*hospital.TABLES, *hospital.DRUGS, *TRUTHS, hospital.QUESTION):
        assert word in text
