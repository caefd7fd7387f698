"""segment_scan on data with known answers (real DuckDB, the SQL guard in the loop)."""

from __future__ import annotations

import dataclasses

import duckdb
import pandas as pd
import pytest
from analysis_data import planted

from d2_notebook.data import GuardedSQL, QueryResult
from d2_notebook.data.analysis import AnalysisTool, FlagKind, compare_within, segment_scan, trend
from d2_notebook.data.coverage import column_usage
from d2_notebook.data.dimensions import read_catalog
from d2_notebook.errors import QueryFailedError

RATE = "avg(CASE WHEN o.returned THEN 1 ELSE 0 END)"


@pytest.fixture(scope="module", params=[True, False], ids=["declared-keys", "inferred-keys"])
def sql(request: pytest.FixtureRequest) -> GuardedSQL:
    return GuardedSQL(planted(declared=request.param))


def _row(result: QueryResult, dimension: str, value: str) -> dict:
    rows = result.frame[(result.frame["dimension"] == dimension)
                        & (result.frame["value"] == value)]
    assert len(rows) == 1, f"no row for {dimension} = {value}"
    return rows.iloc[0].to_dict()


def test_finds_the_planted_segment_carried_by_a_1_to_n_table(sql: GuardedSQL) -> None:
    result = segment_scan(sql, source="orders o", metric=RATE)
    assert isinstance(result, QueryResult) and result.tool is AnalysisTool.SEGMENT_SCAN
    veteran = _row(result, "has tags.tag", "veteran")
    assert veteran["flagged"] and veteran["n"] > 5000
    assert veteran["metric"] == pytest.approx(2 * veteran["rest_metric"], rel=0.2)
    assert veteran["ci_low"] < veteran["difference"] < veteran["ci_high"]
    assert veteran["ci_low"] > 0.1
    assert 0 < veteran["metric_low"] < veteran["metric"] < veteran["metric_high"] < 1  # Wilson
    # the other tags carry nothing
    for tag in ("student", "senior", "family"):
        assert not _row(result, "has tags.tag", tag)["flagged"]
    # the N:1 attribute table is reached too, and the flag leads the summary
    assert _row(result, "customers.tier", "pro")["flagged"]
    assert "FLAGGED SEGMENTS" in result.summary.splitlines()[1]
    assert "has tags.tag = veteran" in result.summary
    flagged = [f for f in result.flags if f.kind is FlagKind.SEGMENT]
    assert {f.dimension for f in flagged} >= {"has tags.tag", "customers.tier"}
    assert not any(_row(result, "orders.channel", c)["flagged"] for c in ("web", "store"))


def test_rows_are_ranked_by_a_sample_size_aware_score(sql: GuardedSQL) -> None:
    frame = segment_scan(sql, source="orders o", metric=RATE).frame
    flagged = frame[frame["flagged"]]
    assert list(flagged["score"]) == sorted(flagged["score"], reverse=True)
    assert (frame["score"] <= frame["difference"].abs() + 1e-12).all()
    assert frame.index[frame["flagged"]].max() < frame.index[~frame["flagged"]].min()


def test_one_pass_is_the_evidence_sql_and_splits_by_every_dimension(sql: GuardedSQL) -> None:
    result = segment_scan(sql, source="orders o JOIN customers c USING (customer_id)",
                          metric=RATE, where="c.age >= 30")
    assert result.sql.startswith("WITH __rows AS")
    assert "UNION ALL" in result.sql and result.sql.count("FROM orders o") == 1
    assert sql.run(result.sql).row_count > 10  # it runs as is through the guard
    tables = {t.name: [c.name for c in t.columns] for t in read_catalog(sql).tables}
    usage = column_usage(result.sql, tables)
    assert {(r.table, r.column) for r in usage.groups} >= {
        ("customers", "region"), ("customers", "tier"), ("tags", "tag"), ("orders", "channel"),
        ("orders", "ordered_on")}
    assert ("customers", "age") in {(r.table, r.column) for r in usage.filters}


def test_requested_dimensions_and_min_support(sql: GuardedSQL) -> None:
    result = segment_scan(sql, source="orders o JOIN customers c USING (customer_id)",
                          metric="avg(o.amount)", dimensions=["c.region", "has tags.tag",
                                                             "month_of_year(orders.ordered_on)"])
    assert list(dict.fromkeys(result.frame["dimension"])) != []
    # an aliased column names its catalog dimension, as the tools print it
    assert set(result.frame["dimension"]) == {"customers.region", "has tags.tag",
                                              "month_of_year(orders.ordered_on)"}
    november = _row(result, "month_of_year(orders.ordered_on)", "11")
    assert november["flagged"] and november["difference"] > 4
    strict = segment_scan(sql, source="orders o", metric="avg(o.amount)",
                          dimensions=["month_of_year(orders.ordered_on)"], min_support=5000)
    assert not strict.frame["flagged"].any() and strict.frame["p_value"].isna().all()
    assert "0 of 12 segments of 1 dimensions tested" in strict.summary
    assert "month_of_year(orders.ordered_on) = 4: not tested (n = " in strict.summary


def test_results_are_capped_like_any_query() -> None:
    con = planted()
    result = segment_scan(GuardedSQL(con, max_rows=5), source="orders o", metric=RATE)
    assert len(result.frame) == 5 and result.truncated and result.row_count > 5


def test_a_flat_single_table_uses_all_its_columns() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i, i % 3 AS g, (i % 3 = 0 AND i % 2 = 0)::INT AS y "
                "FROM range(3000) r(i)")
    result = segment_scan(GuardedSQL(con), source="t", metric="avg(y)")
    assert _row(result, "t.g", "0")["flagged"]


def _tickets_connection() -> duckdb.DuckDBPyConnection:
    """Tickets whose time to close doubles for those opened in December; open tickets
    have no close time (NULL), so the close time's date parts encode the outcome, and
    every cell of state = 'open' has no metric value at all."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE tickets AS
        SELECT i AS ticket_id,
               TIMESTAMP '2023-01-01' + to_hours(i % 8760) AS opened,
               ['low', 'high'][1 + i % 2] AS priority,
               CASE WHEN i % 10 = 0 THEN 'open' ELSE 'done' END AS state,
               CASE WHEN i % 10 = 0 THEN NULL
                    ELSE TIMESTAMP '2023-01-01' + to_hours(i % 8760)
                         + to_hours(CASE WHEN month(TIMESTAMP '2023-01-01'
                                                    + to_hours(i % 8760)) = 12
                                         THEN 48 ELSE 24 END + i % 7) END AS closed
        FROM range(20000) t(i)""")
    return con


def _tickets() -> GuardedSQL:
    return GuardedSQL(_tickets_connection())


def test_a_duration_is_split_by_the_date_parts_of_its_complete_start_time() -> None:
    result = segment_scan(_tickets(), source="tickets t",
                          metric="avg(date_diff('hour', t.opened, t.closed))")
    december = _row(result, "month_of_year(tickets.opened)", "12")
    assert december["flagged"] and december["metric"] > 1.7 * december["rest_metric"]
    dimensions = set(result.frame["dimension"])
    # the end time has NULLs (open tickets): its parts would explain the metric trivially
    assert not any("tickets.closed" in d for d in dimensions)
    assert "tickets.priority" in dimensions


def test_a_complete_end_time_of_a_duration_is_no_dimension() -> None:
    """Warranty length from purchase to expiry: a real model read "year(expiry) = 2029"
    as a segment of long warranties (the expiry is the purchase plus the length). Only
    the duration's start, the earlier complete time, is split by its date parts."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE assets AS
        SELECT i AS asset_id, DATE '2023-04-01' + (i % 365)::INT AS purchased,
               CASE WHEN i % 3 = 0 THEN 'computer' ELSE 'server' END AS category,
               DATE '2023-04-01' + (i % 365)::INT
                   + (365 * (1 + i % 5) * CASE WHEN i % 3 = 0 THEN 1 ELSE 0 END
                      + 365 + 30 * (i % 2))::INT AS expires
        FROM range(3000) t(i)""")
    result = segment_scan(GuardedSQL(con), source="assets a",
                          metric="avg(date_diff('day', a.purchased, a.expires))")
    dimensions = set(result.frame["dimension"])
    assert not any("assets.expires" in d for d in dimensions)
    assert "month_of_year(assets.purchased)" in dimensions
    assert "assets.category" in dimensions


def test_cells_with_no_metric_value_do_not_poison_the_marginals() -> None:
    """A joint cell whose rows all have a NULL metric sums to NULL; its marginals (and
    the false-discovery adjustment over every segment) must still be numbers."""
    result = segment_scan(_tickets(), source="tickets t",
                          metric="avg(date_diff('hour', t.opened, t.closed))")
    frame = result.frame
    assert frame["metric"].notna().all() and frame["q_value"].notna().all()
    high = _row(result, "tickets.priority", "high")
    assert high["n"] == 10000 and 25 < high["metric"] < 32
    assert _row(result, "tickets.priority", "low")["n"] == 8000  # its open tickets have none
    assert "open" not in set(frame.loc[frame["dimension"] == "tickets.state", "value"])
    assert result.flags and "No segment deviates" not in result.summary


def test_an_uncomputable_p_value_counts_as_one_in_the_adjustment() -> None:
    from d2_notebook.data.analysis.stats import benjamini_hochberg

    assert benjamini_hochberg([0.01, float("nan"), 0.02]) == pytest.approx([0.03, 1.0, 0.03])


def test_requested_dimensions_may_be_written_with_the_alias_or_a_bare_column() -> None:
    """Dimensions are named ``part(table.column)``; models also write the source's alias
    or a bare column. A column the metric is computed from is no dimension even when
    asked for: the answer says it is part of the metric's definition."""
    result = segment_scan(_tickets(), source="tickets t",
                          metric="avg(date_diff('hour', t.opened, t.closed))",
                          dimensions=["day_of_week(t.opened)", "priority",
                                      "month_of_year(t.closed)", "t.closed IS NULL"])
    assert set(result.frame["dimension"]) == {"day_of_week(tickets.opened)",
                                              "tickets.priority"}
    assert "month_of_year(tickets.opened)" not in result.summary
    assert ("Not split by month_of_year(tickets.closed), t.closed IS NULL: part of the "
            "metric's definition") in result.summary


def test_a_dimension_named_twice_is_split_once() -> None:
    result = segment_scan(_tickets(), source="tickets t",
                          metric="avg(date_diff('hour', t.opened, t.closed))",
                          dimensions=["priority", "t.priority", "tickets.priority = high"])
    assert sorted(result.frame["value"]) == ["high", "low"]


class _ReversedRows(GuardedSQL):
    """DuckDB may return a grouped result's rows in any order (its threads): this
    connection returns the tools' one pass (a UNION ALL of GROUP BYs, no ORDER BY)
    upside down."""

    def run(self, sql: str, **options: object) -> QueryResult:
        result = super().run(sql, **options)
        if not sql.startswith("WITH __rows"):
            return result
        return dataclasses.replace(result, frame=result.frame.iloc[::-1].reset_index(drop=True))


def test_results_do_not_depend_on_the_order_duckdb_returns_groups_in() -> None:
    """Ties in the ranking and float sums follow one canonical order, so the evidence and
    every prompt built from it are the same on every run (replay compares them)."""
    metric = "avg(date_diff('minute', t.opened, t.closed) / 60.0)"
    plain = segment_scan(_tickets(), source="tickets t", metric=metric)
    upside_down = segment_scan(_ReversedRows(_tickets_connection()), source="tickets t",
                               metric=metric)
    pd.testing.assert_frame_equal(plain.frame, upside_down.frame, check_exact=True)
    assert plain.summary == upside_down.summary
    for tool, extra in ((compare_within, {"exposure": "t.priority", "value": "high"}),
                        (trend, {"time": "t.opened"})):
        runs = [tool(sql, source="tickets t", metric=metric, **extra)
                for sql in (_tickets(), _ReversedRows(_tickets_connection()))]
        pd.testing.assert_frame_equal(runs[0].frame, runs[1].frame, check_exact=True)
        assert runs[0].summary == runs[1].summary


def _staff() -> GuardedSQL:
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE emp AS
        SELECT i AS id, CASE WHEN i > 10 THEN 1 + i % 10 END AS manager,
               ['ops', 'lab', 'desk'][1 + i % 3] AS dept, ['north', 'south'][1 + i % 2] AS region,
               (i % 7) * 10.0 AS pay
        FROM range(1, 3001) t(i)""")
    con.execute("CREATE TABLE site AS SELECT * FROM (VALUES ('north', 'x'), ('south', 'y')) "
                "v(region, zone)")
    return GuardedSQL(con)


def test_an_alias_spelling_is_read_as_its_table_only_where_that_is_unambiguous() -> None:
    sql = _staff()
    # a self-join: m.dept is the manager's department, not the catalog's emp.dept
    joined = segment_scan(sql, source="emp e JOIN emp m ON e.manager = m.id",
                          metric="avg(e.pay)", dimensions=["m.dept", "e.dept"])
    assert set(joined.frame["dimension"]) == {"m.dept", "e.dept"}
    assert "m.dept AS" in joined.sql
    # SQL that looks like a dimension keeps its SQL meaning
    split = segment_scan(sql, source="emp e", metric="avg(e.pay)",
                         dimensions=["e.dept = 'ops'", "e.region"])
    assert set(split.frame["value"][split.frame["dimension"] == "e.dept = 'ops'"]) == {
        "true", "false"}
    assert "emp.region" in set(split.frame["dimension"])


def test_a_bare_column_in_two_source_tables_is_left_to_sql() -> None:
    with pytest.raises(QueryFailedError, match=r"(?i)ambiguous"):
        segment_scan(_staff(), source="emp e JOIN site s ON e.region = s.region",
                     metric="avg(e.pay)", dimensions=["region"])
    one = segment_scan(_staff(), source="emp e JOIN site s ON e.region = s.region",
                       metric="avg(e.pay)", dimensions=["zone"])
    assert set(one.frame["dimension"]) == {"site.zone"}


def test_a_metric_that_is_a_function_of_one_time_column_is_not_split_by_its_parts() -> None:
    result = segment_scan(_tickets(), source="tickets t",
                          metric="avg(CASE WHEN t.opened >= TIMESTAMP '2023-07-01' THEN 1 "
                                 "ELSE 0 END)")
    dimensions = set(result.frame["dimension"])
    assert not any("tickets.opened" in d for d in dimensions)
    assert "tickets.priority" in dimensions


def test_a_pass_with_more_groups_than_it_keeps_is_refused_not_cut(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    common = importlib.import_module("d2_notebook.data.analysis.common")
    monkeypatch.setattr(common, "_PASS_ROWS", 500)
    with pytest.raises(ValueError, match="more than 500 groups: name fewer dimensions"):
        segment_scan(_tickets(), source="tickets t",
                     metric="avg(CASE WHEN t.state = 'open' THEN 1 ELSE 0 END)",
                     dimensions=["t.ticket_id % 2000", "t.priority"])


def test_an_empty_table_in_the_database_gives_no_dimensions_and_no_crash() -> None:
    con = _tickets_connection()
    con.execute("CREATE TABLE notes (ticket_id INTEGER, weight DOUBLE, kind VARCHAR, d DATE)")
    result = segment_scan(GuardedSQL(con), source="tickets t", metric="avg(t.ticket_id % 7)")
    assert not any("notes." in d for d in set(result.frame["dimension"]))
    assert "tickets.priority" in set(result.frame["dimension"])


def _orders_by_day() -> GuardedSQL:
    con = duckdb.connect()
    con.execute("CREATE TABLE orders AS SELECT range AS id, DATE '2024-01-01' + "
                "CAST(range % 180 AS INTEGER) AS order_date, (range % 97)::DOUBLE AS revenue,"
                " ['a', 'b', 'c'][1 + range % 3] AS channel FROM range(5000)")
    return GuardedSQL(con)


def test_a_date_part_of_the_filters_time_window_may_be_asked_for() -> None:
    """A filter's time window restricts the rows; ``month(o.order_date)`` over it is a
    dimension, not part of the metric's definition (a real-model collector was refused
    it, and segment_scan then failed on its empty table)."""
    sql = _orders_by_day()
    window = "o.order_date >= DATE '2024-02-01'"
    scanned = segment_scan(sql, source="orders o", metric="avg(o.revenue)", where=window,
                           dimensions=["month(o.order_date)"])
    months = scanned.frame
    assert sorted(months["value"]) == ["2", "3", "4", "5", "6"]
    assert "part of the metric's definition" not in scanned.summary
    within = compare_within(sql, source="orders o", metric="avg(o.revenue)",
                            exposure="o.channel", value="a", where=window,
                            dimensions=["month(o.order_date)"])
    assert "Dimensions checked: month(o.order_date)." in within.summary


def test_an_expression_over_a_durations_own_times_is_part_of_its_definition() -> None:
    """The complete start (and end) of a duration keep their date parts as dimensions,
    but a requested expression over them restates the metric: it is refused as part of
    the metric's definition, not split and flagged (only a filter's time window is
    exempt, as above)."""
    con = duckdb.connect()
    con.execute("CREATE TABLE tickets AS SELECT i AS id, ['low', 'high'][1 + i % 2] AS "
                "priority, TIMESTAMP '2024-01-01' + to_hours(i % 4000) AS opened_at, "
                "TIMESTAMP '2024-01-01' + to_hours(i % 4000) + to_hours(24 * (i % 5)) AS "
                "closed_at FROM range(3000) r(i)")
    metric = "avg(datediff('day', t.opened_at, t.closed_at))"
    asked = "datediff('day', t.opened_at, t.closed_at) > 2"
    scanned = segment_scan(GuardedSQL(con), source="tickets t", metric=metric,
                           dimensions=[asked, "t.priority"])
    assert set(scanned.frame["dimension"]) == {"tickets.priority"}
    assert not scanned.flags
    assert f"Not split by {asked}: part of the metric's definition" in scanned.summary


def test_a_scan_with_nothing_left_to_split_says_why() -> None:
    scanned = segment_scan(_orders_by_day(), source="orders o", metric="avg(o.revenue)",
                           dimensions=["o.revenue"])
    assert "No dimension was split (see below why)." in scanned.summary
    assert "Not split by orders.revenue: part of the metric's definition" in scanned.summary
    assert len(scanned.frame) == 0


def test_a_column_only_the_filter_reads_is_named_when_left_out_and_split_when_asked() -> None:
    """``where p.age >= 65`` restricts the rows; age still varies among them. The default
    scan leaves it out and says so (a real-model collector read "no heterogeneity among
    the 21 dimensions" as covering age); named, it is split, not refused as part of the
    metric's definition."""
    from d2_notebook.datasets import hospital

    sql = GuardedSQL(hospital.create(patients=2000))
    source = ("admissions a JOIN patients p ON a.patient_id = p.patient_id "
              "JOIN treatments t ON t.admission_id = a.admission_id "
              "JOIN outcomes o ON o.admission_id = a.admission_id")
    metric, older = "avg(o.died::INTEGER)", "p.age >= 65"
    default = compare_within(sql, source=source, metric=metric, exposure="t.drug",
                             value="Pulmorex", where=older)
    assert "patients.age" not in set(default.frame["dimension"])
    assert ("Left out of this scan: patients.age, which the where filter reads" in
            default.summary)
    asked = compare_within(sql, source=source, metric=metric, exposure="t.drug",
                           value="Pulmorex", where=older, dimensions=["p.age", "a.severity"])
    assert set(asked.frame["dimension"]) - {"(overall)"} == {"patients.age", "admissions.severity"}
    assert "part of the metric's definition" not in asked.summary
    assert "Left out of this scan" not in asked.summary
    ages = segment_scan(sql, source=source, metric=metric, where=older,
                        dimensions=["p.age >= 80"])
    assert sorted(ages.frame["value"]) == ["false", "true"]
    # a column the metric reads stays part of its definition, filter or not
    died = segment_scan(sql, source=source, metric=metric, where="NOT o.died OR o.died",
                        dimensions=["o.died"])
    assert "Not split by outcomes.died: part of the metric's definition" in died.summary


def test_a_gap_below_the_usual_level_that_the_scan_does_not_flag_is_named_so() -> None:
    """A real judge read a segment at p = 0.0034, "not flagged" at the scan's level 0.001,
    as no signal: the summary says such a gap is one at the usual level, to test alone."""
    con = duckdb.connect()
    con.execute("""CREATE TABLE s AS SELECT i, CASE WHEN i % 10 = 0 THEN 'b' ELSE 'a' END
        AS g, (i % 7) * 1.0 + CASE WHEN i % 10 = 0 THEN 0.9 ELSE 0 END AS y
        FROM range(400) r(i)""")
    result = segment_scan(GuardedSQL(con), source="s", metric="avg(s.y)")
    assert not result.flags and "s.g = b: 3.92 vs 2.99 (n = 40, p = 0.0059)" in result.summary
    assert ("A gap above with p below 0.05 is a signal at the usual level, not at this "
            "scan's level 0.001") in result.summary
    flat = duckdb.connect()
    flat.execute("CREATE TABLE s AS SELECT i, CASE WHEN i % 10 = 0 THEN 'b' ELSE 'a' END "
                 "AS g, (i % 7) * 1.0 AS y FROM range(400) r(i)")
    assert "usual level" not in segment_scan(GuardedSQL(flat), source="s",
                                             metric="avg(s.y)").summary


def test_at_a_scan_level_of_005_the_note_names_the_correction_not_the_level() -> None:
    """At alpha 0.05 the note read "a signal at the usual level, not at this scan's level
    0.05", which a real-model collector called self-contradictory (flag-8): what differs
    is the correction for the many segments tested."""
    con = duckdb.connect()
    con.execute("""CREATE TABLE s AS SELECT i, CASE WHEN i % 10 = 0 THEN 'b' ELSE 'a' END
        AS g, 'k' || (i % 13) AS h,
        (i % 7) * 1.0 + CASE WHEN i % 10 = 0 THEN 0.7 ELSE 0 END AS y FROM range(400) r(i)""")
    result = segment_scan(GuardedSQL(con), source="s", metric="avg(s.y)", alpha=0.05)
    assert not result.flags and "s.g = b: 3.73 vs 2.99 (n = 40, p = 0.03)" in result.summary
    assert ("A gap above with p below 0.05 is a signal on its own, not once corrected for "
            "the many segments tested at once") in result.summary
    assert "usual level" not in result.summary


def test_a_rate_from_one_event_in_a_small_segment_is_not_flagged() -> None:
    """A real-model single agent found "ci = itself: 0.0345 (n = 29) vs 0.259, q =
    3.1e-06" flagged on one declined row; its exact test gave p = 0.0058. The normal
    comparison took the segment's own variance, near 0; a rate is now compared with the
    pooled score test and Newcombe's interval, so one event in 29 is no finding among 24
    segments, while a large gap over many rows still is."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE expense AS
        SELECT CASE WHEN i < 29 THEN 'itself' ELSE 'word' || (i % 19) END AS ci,
               CASE WHEN i % 2 = 0 THEN 'north' ELSE 'south' END AS region,
               CASE WHEN i < 29 THEN i = 0
                    WHEN i % 2 = 0 THEN i % 100 < 34 ELSE i % 100 < 16 END AS declined
        FROM range(2000) r(i)""")
    result = segment_scan(GuardedSQL(con), source="expense",
                          metric="avg(CASE WHEN declined THEN 1 ELSE 0 END)")
    itself = _row(result, "expense.ci", "itself")
    assert itself["n"] == 29 and itself["metric"] == pytest.approx(1 / 29)
    assert not itself["flagged"] and itself["p_value"] > 1e-3
    assert itself["ci_low"] < itself["difference"] < itself["ci_high"] < 0  # asymmetric
    assert itself["difference"] - itself["ci_low"] < itself["ci_high"] - itself["difference"]
    north = _row(result, "expense.region", "north")
    assert north["flagged"] and north["ci_low"] > 0.1


def test_two_events_of_a_rare_outcome_in_ten_rows_are_not_flagged() -> None:
    """A review found the score test's p far too small where a small segment expects
    less than one event: 2 of 10 rows against 1% of the rest read p = 8.4e-09 (Fisher's
    exact p is 0.0049), and one scan in five over pure noise at a 1% base rate flagged
    something. Below five expected events the exact test decides."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE tickets AS
        SELECT CASE WHEN i < 30 THEN 'tiny' ELSE 'big' || (i % 3) END AS team,
               CASE WHEN i < 30 THEN i < 3 ELSE i % 100 = 0 END AS escalated
        FROM range(2030) r(i)""")
    result = segment_scan(GuardedSQL(con), source="tickets",
                          metric="avg(CASE WHEN escalated THEN 1 ELSE 0 END)")
    tiny = _row(result, "tickets.team", "tiny")
    assert tiny["metric"] == pytest.approx(0.1) and tiny["tested"] and not tiny["flagged"]
    assert 1e-3 < tiny["p_value"] < 0.01  # Fisher's, not the score test's 4e-06
    assert tiny["score"] == pytest.approx(tiny["ci_low"])  # the interval's end nearest 0


def test_the_note_is_not_given_for_a_gap_beyond_chance_but_immaterial() -> None:
    """A review: "its q ... is not below 0.05" was said of a gap at q = 1.8e-83 that is
    only immaterial (said on its own line)."""
    con = duckdb.connect()
    con.execute("""CREATE TABLE s AS SELECT i, CASE WHEN i % 2 = 0 THEN 'b' ELSE 'a' END
        AS g, 1000.0 + (i % 7) * 0.001 + CASE WHEN i % 2 = 0 THEN 0.002 ELSE 0 END AS y
        FROM range(20000) r(i)""")
    result = segment_scan(GuardedSQL(con), source="s", metric="avg(s.y)", alpha=0.05)
    assert "differ beyond chance by less than" in result.summary, result.summary
    assert "A gap above with p below" not in result.summary
