"""The coverage map: evidence SQL read by DuckDB's parser into columns, then dimensions."""

from __future__ import annotations

import pytest

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within
from d2_notebook.data.coverage import ColumnRef, column_usage, coverage_map
from d2_notebook.data.dimensions import (
    DatePart,
    DimensionKind,
    candidate_dimensions,
    read_catalog,
)
from d2_notebook.datasets import hospital
from d2_notebook.errors import QueryFailedError

TRUTHS = {t.id: t for t in hospital.PLANTED_TRUTHS}


@pytest.fixture(scope="module")
def sql() -> GuardedSQL:
    return GuardedSQL(hospital.create(patients=1500))


@pytest.fixture(scope="module")
def tables(sql: GuardedSQL) -> dict[str, list[str]]:
    return {t.name: [c.name for c in t.columns] for t in read_catalog(sql).tables}


def _pairs(refs: frozenset[ColumnRef]) -> set[tuple[str, str]]:
    return {(r.table, r.column) for r in refs}


def test_filters_groups_and_joins_of_a_planted_truth(tables: dict) -> None:
    usage = column_usage(TRUTHS["H3"].sql, tables)
    assert _pairs(usage.filters) >= {("patients", "age"), ("treatments", "drug"),
                                     ("comorbidities", "condition")}  # IN (subquery)
    assert _pairs(usage.groups) == {("treatments", "drug")}
    assert _pairs(usage.joins) >= {("admissions", "patient_id"), ("patients", "patient_id"),
                                   ("treatments", "admission_id")}  # USING (...)
    assert _pairs(column_usage(TRUTHS["P1"].sql, tables).groups) >= {  # GROUP BY ALL
        ("admissions", "severity"), ("treatments", "drug")}
    assert ("admissions", "severity") in _pairs(column_usage(TRUTHS["C1"].sql, tables).groups)


def test_columns_are_traced_through_ctes_subqueries_aliases_and_positions(tables: dict) -> None:
    sql = """
        WITH older AS (SELECT p.patient_id AS pid, a.severity AS sev, a.admitted_on
                       FROM patients p JOIN admissions a ON a.patient_id = p.patient_id
                       WHERE p.age >= 65)
        SELECT s.band, count(*) FROM (
            SELECT sev AS band, month(admitted_on) AS m FROM older
            WHERE pid IN (SELECT patient_id FROM comorbidities WHERE condition = 'copd')
        ) s
        GROUP BY 1 HAVING count(*) > 3
        QUALIFY row_number() OVER (PARTITION BY s.m) = 1
    """
    usage = column_usage(sql, tables)
    assert _pairs(usage.groups) == {("admissions", "severity"), ("admissions", "admitted_on")}
    assert _pairs(usage.filters) >= {("patients", "age"), ("comorbidities", "condition")}
    assert _pairs(usage.joins) == {("admissions", "patient_id"), ("patients", "patient_id")}
    unqualified = column_usage("SELECT sex, count(*) FROM patients WHERE age > 80 GROUP BY sex",
                               tables)
    assert _pairs(unqualified.groups) == {("patients", "sex")}
    assert _pairs(unqualified.filters) == {("patients", "age")}


def test_bad_sql_is_reported_not_guessed(tables: dict) -> None:
    with pytest.raises(QueryFailedError, match="cannot parse"):
        column_usage("SELEC sex FROM patients", tables)
    assert column_usage("SELECT * FROM no_such_table WHERE x = 1", tables).controlled == set()


def test_candidate_dimensions_of_the_database(sql: GuardedSQL) -> None:
    dimensions = {d.name: d for d in candidate_dimensions(sql)}
    assert dimensions["comorbidities.condition"].kind is DimensionKind.VALUES
    assert dimensions["patients.age"].kind is DimensionKind.BINS
    assert len(dimensions["patients.age"].edges) == 4
    assert dimensions["month_of_year(admissions.admitted_on)"].part is DatePart.MONTH_OF_YEAR
    assert "patients.patient_id" not in dimensions and "admissions.admission_id" not in dimensions
    assert not any(name.endswith("_id") for name in dimensions)
    with pytest.raises(ValueError, match="max_levels must be >= 2"):
        candidate_dimensions(sql, max_levels=1)


def test_coverage_map_per_hypothesis_and_untouched(sql: GuardedSQL, tables: dict) -> None:
    dimensions = candidate_dimensions(sql)
    check = compare_within(sql, source="admissions a JOIN patients p USING (patient_id) "
                           "JOIN treatments t USING (admission_id) JOIN outcomes o "
                           "USING (admission_id)", metric="avg(o.died::INTEGER)",
                           exposure="t.drug", value="Virexa", where="p.age >= 65")
    evidence = [("H1", TRUTHS["H1"].sql), ("H1", TRUTHS["C1"].sql), ("H2", check.sql),
                (None, "SELECT sex, count(*) FROM patients GROUP BY sex"), ("H3", "PRAGMA version")]
    coverage = coverage_map(dimensions, evidence, tables)
    by_id = {h.hypothesis_id: h for h in coverage.hypotheses}
    assert set(by_id["H1"].controlled) == {"patients.age", "treatments.drug",
                                           "admissions.severity", "admissions.severity_score"}
    assert "comorbidities.condition" in by_id["H1"].untouched
    assert "comorbidities.condition" in by_id["H2"].controlled  # the 1:N membership scan
    assert "month_of_year(admissions.admitted_on)" in by_id["H2"].controlled
    assert by_id["H1"].evidence_read == 2 and coverage.unreadable == 1
    assert "patients.sex" not in coverage.untouched  # board-level evidence counts
    assert "outcomes.ventilated" in coverage.untouched  # left out: recorded with the death
    assert set(coverage.untouched) == set(coverage.dimensions) - {
        n for h in coverage.hypotheses for n in h.controlled} - {"patients.sex"}
    text = coverage.describe()
    assert "H1: controlled or split by" in text and "Untouched by any evidence:" in text
    # the pure function also works from the dimensions alone
    assert coverage_map(dimensions, evidence).untouched == coverage.untouched


def test_a_date_part_counts_only_when_the_evidence_splits_by_that_part(
        sql: GuardedSQL, tables: dict) -> None:
    dimensions = [d for d in candidate_dimensions(sql) if d.column == "admitted_on"]
    parts = {d.part.value for d in dimensions}
    assert {"year", "quarter", "month", "month_of_year", "day_of_week"} <= parts

    def controlled(sql_text: str) -> set[str]:
        found = coverage_map(dimensions, [("H1", sql_text)], tables).hypotheses[0].controlled
        return {name.split("(")[0] for name in found}

    by = "SELECT count(*) FROM admissions a JOIN treatments t USING (admission_id) GROUP BY "
    assert controlled(by + "month(a.admitted_on)") == {"month_of_year"}
    assert controlled(by + "date_trunc('month', a.admitted_on)") == {
        "year", "quarter", "month", "month_of_year"}
    assert controlled(by + "year(a.admitted_on) * 100 + month(a.admitted_on)") == {
        "year", "quarter", "month", "month_of_year"}
    assert controlled(by + "strftime(a.admitted_on, '%Y')") == {"year"}
    assert controlled(by + "dayname(a.admitted_on)") == {"day_of_week"}
    # an expression that merely reads the column splits by none of its parts
    assert controlled(by + "date_diff('day', a.admitted_on, t.started_on) > 7") == set()
    # the column itself (or its date) splits by every part
    assert controlled(by + "a.admitted_on") >= {"year", "month", "day_of_week"}
    assert controlled(by + "a.admitted_on::DATE") >= {"year", "month", "day_of_week"}


JOINED = (" FROM admissions a JOIN patients p USING (patient_id) JOIN treatments t "
          "USING (admission_id) JOIN outcomes o USING (admission_id)")


def test_a_case_condition_inside_an_aggregate_splits_by_its_columns(tables: dict) -> None:
    usage = column_usage(
        "SELECT t.drug, avg(CASE WHEN a.severity = 'critical' THEN o.died::INT END) AS crit, "
        "avg(CASE WHEN a.severity = 'mild' THEN o.died::INT END) AS mild" + JOINED
        + " GROUP BY t.drug", tables)
    assert _pairs(usage.splits) == {("admissions", "severity")}
    assert _pairs(usage.controlled) == {("admissions", "severity"), ("treatments", "drug")}
    assert _pairs(usage.measured) == {("outcomes", "died")}  # the value stays measured
    share = column_usage(
        "SELECT sum(CASE WHEN a.ward = 'ICU' THEN 1 ELSE 0 END) / count(*) FROM admissions a",
        tables)
    assert _pairs(share.controlled) == {("admissions", "ward")}
    assert share.measured == set()


def test_an_aggregate_s_filter_clause_splits_by_its_columns(tables: dict) -> None:
    usage = column_usage(
        "SELECT count(*) FILTER (WHERE a.severity = 'critical') AS n_crit, "
        "count(*) FILTER (WHERE a.severity <> 'critical') FROM admissions a", tables)
    assert _pairs(usage.controlled) == {("admissions", "severity")}
    assert usage.measured == set()
    older = column_usage(
        "SELECT avg(o.died::INT) FILTER (WHERE p.age >= 65) "
        "- avg(o.died::INT) FILTER (WHERE p.age < 65)" + JOINED, tables)
    assert _pairs(older.controlled) == {("patients", "age")}
    assert _pairs(older.measured) == {("outcomes", "died")}


def test_a_rate_written_as_a_case_keeps_its_outcome_measured(tables: dict) -> None:
    """An indicator that reads no other value measures what its condition tests as a
    yes/no outcome; a condition on the aggregated column itself measures it too."""
    for rate in ("avg(CASE WHEN o.died THEN 1 ELSE 0 END)",
                 "sum(CASE WHEN o.died = 1 THEN 1 ELSE 0 END) / count(*)",
                 "avg(CASE WHEN NOT o.died THEN 1.0 ELSE 0.0 END)",
                 "count(*) FILTER (WHERE o.died IS TRUE) / count(*)",
                 "avg(CASE WHEN o.days_to_discharge > 30 THEN NULL "
                 "ELSE o.days_to_discharge END)"):
        usage = column_usage(f"SELECT {rate}" + JOINED, tables)
        assert usage.controlled == set(), rate
        assert len(usage.measured) == 1, rate
    both = column_usage("SELECT avg(CASE WHEN o.died AND a.severity = 'critical' THEN 1 "
                        "ELSE 0 END)" + JOINED, tables)
    assert _pairs(both.controlled) == {("admissions", "severity")}
    assert _pairs(both.measured) == {("outcomes", "died")}
    # a flag is a stratum when the aggregate measures another column
    within = column_usage("SELECT avg(o.died::INT) FILTER (WHERE o.ventilated)" + JOINED,
                          tables)
    assert _pairs(within.controlled) == {("outcomes", "ventilated")}


def test_a_case_outside_any_aggregate_is_a_split_only_when_grouped_by(tables: dict) -> None:
    band = "CASE WHEN severity = 'critical' THEN 'crit' ELSE 'other' END AS band"
    grouped = column_usage(f"SELECT {band}, count(*) FROM admissions GROUP BY band", tables)
    assert _pairs(grouped.groups) == {("admissions", "severity")}
    label = column_usage(f"SELECT admission_id, {band} FROM admissions", tables)
    assert label.controlled == set() and label.measured == set()  # a per-row label


def test_a_condition_inside_an_aggregate_splits_by_the_date_parts_it_determines(
        sql: GuardedSQL, tables: dict) -> None:
    dimensions = candidate_dimensions(sql)

    def controlled(select: str, tail: str = "") -> set[str]:
        return set(coverage_map(dimensions, [("H1", f"SELECT {select}{JOINED}{tail}")],
                                tables).hypotheses[0].controlled)

    assert {n for n in controlled("count(*) FILTER (WHERE month(a.admitted_on) = 1)")
            if "admitted_on" in n} == {"month_of_year(admissions.admitted_on)"}
    assert controlled("count(*) FILTER (WHERE date_diff('day', a.admitted_on, "
                      "t.started_on) > 7)") == set()
    split = controlled("t.drug, avg(CASE WHEN a.severity = 'critical' THEN o.died::INT END)",
                       " GROUP BY t.drug")
    assert split == {"admissions.severity", "treatments.drug"}


def test_the_not_examined_table_gives_each_reason_once_grouped_by_table() -> None:
    from d2_notebook.board import DimensionDismissal
    from d2_notebook.detective.report import UNTOUCHED_REASON, not_examined_table

    def dismissal(dimension: str, reason: str) -> DimensionDismissal:
        return DimensionDismissal(1, "I1", dimension, reason, "orchestrator", "t")

    table = not_examined_table(
        [dismissal("admissions.ward", "outside the objective."),
         dismissal("month(admissions.admitted_on)", "outside the objective"),
         dismissal("patients.sex", "outside the objective"),
         dismissal("has comorbidities.condition", "no | such data")],
        untouched=["treatments.days"])
    lines = table.splitlines()
    assert lines[0] == "| why not examined | table | dimensions |"
    assert lines[2] == "| outside the objective | admissions | ward, month(admitted_on) |"
    assert lines[3] == "| (same) | patients | sex |"
    assert lines[4] == "| no \\| such data | comorbidities | has condition |"
    assert lines[5] == f"| {UNTOUCHED_REASON} | treatments | days |"
    assert table.count("outside the objective") == 1
    assert not_examined_table([]) == ""


def test_a_case_that_rewrites_a_value_in_every_branch_splits_by_nothing() -> None:
    """Review finding: a refund sign flip or a currency conversion inside a sum compares
    no strata of status or currency; only a CASE that picks rows (a NULL or constant
    branch) splits."""
    tables = {"orders": ["status", "amount", "currency", "ward"]}
    for sql in ("SELECT sum(CASE WHEN o.status = 'refund' THEN -o.amount ELSE o.amount END) "
                "FROM orders o",
                "SELECT avg(CASE WHEN o.currency = 'EUR' THEN o.amount * 1.1 ELSE o.amount END) "
                "FROM orders o"):
        assert column_usage(sql, tables).splits == frozenset(), sql
    picked = column_usage("SELECT sum(CASE WHEN o.ward = 'ICU' THEN o.amount END) FROM orders o",
                          tables)
    assert {ref.column for ref in picked.splits} == {"ward"}


def test_a_date_column_copying_another_gives_its_date_parts_once() -> None:
    """An incident's closed_at and sys_updated_on are written together: every split by
    one was the same rows as by the other, and real-model scans listed each segment
    twice (26 candidate dimensions on one 500-row table). The copy's date parts are
    marked, left out of the default scan and of the coverage map, and still answer a
    request; the column kept is the event, not the bookkeeping time."""
    import duckdb

    from d2_notebook.data.analysis import segment_scan
    from d2_notebook.detective.coverage_view import read_candidates

    con = duckdb.connect()
    con.execute("CREATE TABLE incident AS SELECT i AS id, i % 4 AS team, "
                "TIMESTAMP '2023-01-01' + INTERVAL (i * 7) HOUR AS opened_at, "
                "TIMESTAMP '2023-01-02' + INTERVAL (i * 5) HOUR AS sys_updated_on, "
                "TIMESTAMP '2023-01-02' + INTERVAL (i * 5) HOUR AS closed_at, "
                "(i % 3 = 0)::INTEGER AS late FROM range(600) r(i)")
    sql = GuardedSQL(con)
    dimensions = candidate_dimensions(sql)
    copies = [d for d in dimensions if d.copy_of is not None]
    assert copies and {d.column for d in copies} == {"sys_updated_on"}
    assert {d.copy_of for d in copies} == {"incident.closed_at"}
    assert any(d.column == "closed_at" and d.copy_of is None for d in dimensions)
    assert any(d.column == "opened_at" and d.copy_of is None for d in dimensions)
    assert all("sys_updated_on" not in name for name in read_candidates(sql).names)
    scan = segment_scan(sql, source="incident", metric="avg(late)")
    scanned = next(line for line in scan.summary.splitlines()
                   if line.startswith("Dimensions scanned"))
    assert "closed_at" in scanned and "sys_updated_on" not in scanned
    named = segment_scan(sql, source="incident", metric="avg(late)",
                         dimensions=["month_of_year(incident.sys_updated_on)"])
    assert "month_of_year(incident.sys_updated_on)" in named.summary
