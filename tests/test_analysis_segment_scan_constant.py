"""segment_scan names one fact once: constant segments and segments that are the same rows
(real DuckDB tables, the SQL guard in the loop)."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from analysis_data import planted

from d2_notebook.data import GuardedSQL, QueryResult
from d2_notebook.data.analysis import FlagKind, compare_within, decompose, segment_scan

METRIC = "avg(e.processing_time)"


def _expenses() -> GuardedSQL:
    """Expense lines like an InsightBench task's: the 60% not processed yet have no
    processed date and a placeholder processing time of 0 on every row; among the
    processed ones, the Legal department's take 10 days longer. The team column holds
    "counsel" on exactly the Legal rows (one fact under two names)."""
    rng = np.random.default_rng(7)
    rows = 2000
    department = rng.choice(["Legal", "Sales", "IT", "HR", "Finance"], rows)
    state = rng.choice(["Processed", "Declined", "Pending", "Submitted"], rows,
                       p=[0.4, 0.2, 0.2, 0.2])
    processed = state == "Processed"
    opened = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 365 * 24, rows),
                                                          unit="h")
    days = rng.integers(1, 9, rows) + np.where(department == "Legal", 10, 0)
    frame = pd.DataFrame({
        "expense_id": np.arange(1, rows + 1),
        "department": department,
        "team": np.where(department == "Legal", "counsel",
                         rng.choice(["north", "south", "east"], rows)),
        "state": state,
        "amount": rng.normal(500.0, 100.0, rows).round(2),
        "opened_at": opened,
        "processed_date": pd.Series(opened + pd.to_timedelta(days, unit="D")).where(processed),
        "processing_time": np.where(processed, days, 0),
    })
    con = duckdb.connect()
    con.register("_frame", frame)
    con.execute("CREATE TABLE expenses AS SELECT * FROM _frame")
    con.unregister("_frame")
    return GuardedSQL(con)


@pytest.fixture(scope="module")
def expenses() -> GuardedSQL:
    return _expenses()


@pytest.fixture(scope="module")
def scanned(expenses: GuardedSQL) -> QueryResult:
    return segment_scan(expenses, source="expenses e", metric=METRIC)


def _row(result: QueryResult, dimension: str, value: str) -> dict:
    rows = result.frame[(result.frame["dimension"] == dimension)
                        & (result.frame["value"] == value)]
    assert len(rows) == 1, f"no row for {dimension} = {value}"
    return rows.iloc[0].to_dict()


def _flag_block(summary: str) -> str:
    """The FLAGGED SEGMENTS header and its lines."""
    lines = summary.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("FLAGGED SEGMENTS"))
    block = [lines[start]]
    block += [line for line in lines[start + 1:] if line.startswith("- ")][:50]
    return "\n".join(block)


def test_a_placeholder_value_is_named_once_with_the_filter_that_leaves_it_out(
        scanned: QueryResult) -> None:
    summary = scanned.summary
    constant = [line for line in summary.splitlines() if line.startswith("Constant segments")]
    assert len(constant) == 1, summary
    (line,) = constant
    unprocessed = _row(scanned, "quarter(expenses.processed_date)", "(missing)")["n"]
    assert "expenses.processed_date = (missing) (the segments " in line
    assert f"0 on all {unprocessed} rows" in line
    assert "where e.processed_date IS NOT NULL" in line
    # its complement, the processed expenses, is named with it
    assert "its complement expenses.state = Processed" in line
    # the date parts of the missing date are named in that line only, never as a flag
    for part in ("quarter", "month", "month_of_year", "day_of_week", "hour"):
        row = _row(scanned, f"{part}(expenses.processed_date)", "(missing)")
        assert row["tested"] and not row["flagged"] and row["metric"] == 0
        assert row["n"] == unprocessed  # the row stays in the frame
        assert f"{part}(expenses.processed_date) = (missing)" not in _flag_block(summary)
    assert not _row(scanned, "expenses.state", "Processed")["flagged"]
    assert not any("(missing)" in f.text or "state = Processed" in f.text
                   for f in scanned.flags)


def test_the_filter_named_ranks_the_rest(expenses: GuardedSQL) -> None:
    again = segment_scan(expenses, source="expenses e", metric=METRIC,
                         where="e.processed_date IS NOT NULL")
    assert "Constant segments" not in again.summary
    legal = _row(again, "expenses.department", "Legal")
    assert legal["flagged"] and legal["difference"] == pytest.approx(10, abs=1)


def test_the_real_deviation_is_still_flagged(scanned: QueryResult) -> None:
    legal = _row(scanned, "expenses.department", "Legal")
    assert legal["flagged"] and legal["difference"] > 0
    assert "expenses.department" in {f.dimension for f in scanned.flags
                                     if f.kind is FlagKind.SEGMENT}
    assert "- expenses.department = Legal:" in _flag_block(scanned.summary)


def test_a_dimension_whose_segment_is_the_same_rows_is_reported_once(
        scanned: QueryResult) -> None:
    legal = _row(scanned, "expenses.department", "Legal")
    counsel = _row(scanned, "expenses.team", "counsel")
    # both rows stay, as they are...
    assert counsel["flagged"] and counsel["n"] == legal["n"]
    assert counsel["q_value"] == pytest.approx(legal["q_value"])
    # ...but one flag and one line name them
    named = [f for f in scanned.flags if "counsel" in f.text or "= Legal" in f.text]
    assert len(named) == 1, [f.text for f in named]
    assert "also expenses.team = counsel (the same rows)" in named[0].text
    block = _flag_block(scanned.summary)
    assert sum("counsel" in line or "= Legal" in line for line in block.splitlines()) == 1
    repeated = int(scanned.frame["flagged"].sum()) - len(scanned.flags)
    assert repeated >= 1
    assert f"FLAGGED SEGMENTS ({len(scanned.flags)}, besides {repeated} of other " in block


def test_a_constant_plain_value_gets_an_unequal_filter() -> None:
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE fees AS
        SELECT i AS fee_id,
               ['standard', 'express', 'waived'][1 + i % 3] AS plan,
               ['web', 'store'][1 + i % 2] AS channel,
               CASE WHEN i % 3 = 2 THEN 0.0 ELSE 10 + (i * 7919 % 97) / 10.0 END AS fee
        FROM range(3000) t(i)""")
    result = segment_scan(GuardedSQL(con), source="fees", metric="avg(fee)")
    assert not _row(result, "fees.plan", "waived")["flagged"]
    assert "fees.plan = waived: 0 on all 1000 rows" in result.summary
    assert "where fees.plan <> 'waived'" in result.summary
    assert not [f for f in result.flags if "waived" in f.text]


def test_a_rate_of_zero_is_a_finding_not_a_placeholder() -> None:
    """A 0/1 metric whose segment has no event at all keeps its flag."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i, ['a', 'b', 'c'][1 + i % 3] AS g, "
                "(i % 3 <> 0 AND i % 4 = 0)::INT AS y FROM range(3000) r(i)")
    result = segment_scan(GuardedSQL(con), source="t", metric="avg(y)")
    assert _row(result, "t.g", "a")["flagged"] and _row(result, "t.g", "a")["metric"] == 0
    assert "Constant segments" not in result.summary


@pytest.mark.parametrize("metric", ["avg(CASE WHEN o.returned THEN 1 ELSE 0 END)",
                                    "avg(o.amount)"])
def test_without_constant_or_repeated_segments_the_summary_is_as_before(metric: str) -> None:
    result = segment_scan(GuardedSQL(planted(declared=True)), source="orders o", metric=metric)
    summary = result.summary
    assert "Constant segments" not in summary and "besides" not in summary
    assert "(the same rows)" not in summary
    flagged = result.frame[result.frame["flagged"]]
    assert len(result.flags) == len(flagged)  # one flag per flagged row, in rank order
    assert [f.dimension for f in result.flags] == list(flagged["dimension"])
    if len(flagged):
        assert f"FLAGGED SEGMENTS ({len(flagged)}; false-discovery level" in summary


def test_a_rate_named_once_for_the_missing_value_of_every_date_part() -> None:
    """A 0/1 metric: the date parts of a column all at (missing) are one flag."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE claims AS
        SELECT i AS claim_id,
               CASE WHEN i % 5 = 0 THEN NULL
                    ELSE TIMESTAMP '2023-01-01' + to_hours(i * 37 % 8760) END AS reviewed_at,
               ['north', 'south'][1 + i % 2] AS region,
               (CASE WHEN i % 5 = 0 THEN i % 2 = 0 ELSE i % 10 = 1 END)::INT AS disputed
        FROM range(6000) t(i)""")
    result = segment_scan(GuardedSQL(con), source="claims c", metric="avg(c.disputed)")
    missing = [f for f in result.flags if f.text.split(":")[0].endswith("= (missing)")]
    assert len(missing) == 1, [f.text for f in missing]
    assert "/hour(claims.reviewed_at) = (missing) (the same rows)" in missing[0].text
    assert "Constant segments" not in result.summary  # a rate of 0.5 is no placeholder
    for part in ("quarter", "month", "month_of_year", "day_of_week", "hour"):
        assert _row(result, f"{part}(claims.reviewed_at)", "(missing)")["flagged"]


def test_a_rate_with_equal_counts_in_other_rows_is_not_merged() -> None:
    """Two columns whose segments have the same count and count of ones but different
    rows: a 0/1 metric's moments cannot tell them apart, so both stay flagged apart."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i, CASE WHEN i % 4 = 0 THEN 'a' ELSE 'b' END AS g1, "
                "CASE WHEN i % 4 = 1 THEN 'a' ELSE 'b' END AS g2, "
                "(i % 8 IN (0, 1))::INT AS y FROM range(8000) r(i)")
    result = segment_scan(GuardedSQL(con), source="t", metric="avg(y)")
    first, second = _row(result, "t.g1", "a"), _row(result, "t.g2", "a")
    assert first["flagged"] and second["flagged"]
    assert (first["n"], first["metric"]) == (second["n"], second["metric"])
    assert {"t.g1", "t.g2"} <= {f.dimension for f in result.flags}
    assert "(the same rows)" not in result.summary


def test_a_few_valued_metric_with_equal_moments_in_other_rows_is_not_merged() -> None:
    """Review finding: a metric of four values has moments that are little more than
    counts, so two columns' segments of different rows matched and were called the same
    rows."""
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT i, CASE WHEN i % 4 = 0 THEN 'a' ELSE 'b' END AS g1, "
                "CASE WHEN i % 4 = 1 THEN 'a' ELSE 'b' END AS g2, "
                "CASE WHEN i % 8 IN (0, 1) THEN 3 WHEN i % 8 IN (4, 5) THEN 1 "
                "WHEN i % 8 IN (2, 6) THEN 2 ELSE 0 END AS y FROM range(8000) r(i)")
    result = segment_scan(GuardedSQL(con), source="t", metric="avg(y)")
    first, second = _row(result, "t.g1", "a"), _row(result, "t.g2", "a")
    assert first["flagged"] and second["flagged"]
    assert {"t.g1", "t.g2"} <= {f.dimension for f in result.flags}
    assert "(the same rows)" not in result.summary


def test_a_constant_other_than_zero_is_a_finding() -> None:
    """Review finding: a product every buyer rated 5 was set aside as a placeholder."""
    con = duckdb.connect()
    con.execute("CREATE TABLE r AS SELECT i, CASE WHEN i % 10 = 0 THEN 'X' ELSE 'other' "
                "END AS product, CASE WHEN i % 10 = 0 THEN 5.0 ELSE 1.0 + (hash(i) % 30) / "
                "10.0 END AS rating FROM range(2000) r(i)")
    result = segment_scan(GuardedSQL(con), source="r", metric="avg(rating)")
    assert _row(result, "r.product", "X")["flagged"]
    assert "Constant segments" not in result.summary


def _declines(*, rows: int = 3000, decline_rates: tuple[float, float] = (0.3, 0.1),
              note_filled: float = 0.9) -> GuardedSQL:
    """Expense lines whose decline rate is higher in Sales (``decline_rates``: Sales,
    the others): a processed date is filled only on processed lines (never on a declined
    one), a decline reason on most declined lines only, and a note column on a random
    ``note_filled`` share of rows."""
    rng = np.random.default_rng(11)
    department = rng.choice(["Sales", "IT", "HR", "Finance"], rows)
    declined = rng.random(rows) < np.where(department == "Sales", *decline_rates)
    processed = ~declined & (rng.random(rows) < 0.7)
    opened = pd.Timestamp("2024-01-01") + pd.to_timedelta(rng.integers(0, 300, rows), unit="D")
    frame = pd.DataFrame({
        "department": department, "declined": declined, "opened_at": opened,
        "processed_date": (opened + pd.Timedelta(days=5)).where(processed),
        "reason": pd.Series(rng.choice(["policy", "receipt", "limit"], rows)).where(
            declined & (rng.random(rows) < 0.8)),
        "note": pd.Series(rng.choice(["a", "b"], rows)).where(rng.random(rows) < note_filled),
    })
    con = duckdb.connect()
    con.register("frame", frame)
    con.execute("CREATE TABLE e AS SELECT * FROM frame")
    return GuardedSQL(con)


RATE = "avg(CASE WHEN e.declined THEN 1 ELSE 0 END)"
ONE_OUTCOME = "Recorded for one outcome only"


def test_a_column_recorded_for_one_outcome_only_is_named_once_not_flagged() -> None:
    """A real-model collector had to argue away "processed in 2023: 0 declines" and
    "no processed date: 0.295": a processing date no declined line gets restates the
    decline. Such columns are named in one line; the real cause stays flagged."""
    sql = _declines()
    result = segment_scan(sql, source="e", metric=RATE)
    flagged = set(result.frame[result.frame["flagged"]]["dimension"])
    assert flagged == {"e.department"}, flagged
    assert not any("processed_date" in f.text or "reason" in f.text for f in result.flags)
    line = next(x for x in result.summary.splitlines() if x.startswith(ONE_OUTCOME))
    counts = sql.run("SELECT count(*) FILTER (WHERE declined) AS ones, count(*) FILTER "
                     "(WHERE processed_date IS NOT NULL) AS filled, count(*) FILTER (WHERE "
                     "NOT declined) AS zeros, count(reason) AS reasons FROM e").frame.iloc[0]
    assert (f"e.processed_date: empty on all {counts['ones']} rows whose metric is 1, filled "
            f"on {counts['filled']} of the {counts['zeros']} rows whose metric is 0") in line
    assert (f"e.reason: empty on all {counts['zeros']} rows whose metric is 0, "
            f"filled on {counts['reasons']} of the {counts['ones']} rows whose metric is 1"
            ) in line
    assert line.count("e.processed_date") == 1  # its date parts are one column
    assert "note" not in line  # empty on rows of both outcomes: an ordinary column
    rows = result.frame[result.frame["dimension"] == "quarter(e.processed_date)"]
    assert len(rows) and not rows["flagged"].any()  # its rows are kept
    assert "No other tested segment deviates" not in result.summary  # department is flagged


def test_segments_named_apart_come_last_in_the_table() -> None:
    """A real-model collector's preview was filled with the six date parts of a column
    recorded for one outcome, all the same missing-value rows, ranked above the segments
    left to explain. Rows named apart now follow the others, each part in rank order."""
    result = segment_scan(_declines(), source="e", metric=RATE)
    frame = result.frame
    apart = frame["dimension"].str.contains("processed_date|reason")
    assert apart.any() and not apart[:int((~apart).sum())].any()  # all of them last
    assert frame.iloc[0]["dimension"] == "e.department" and frame.iloc[0]["flagged"]
    # HR and IT read lower than the rest only because Sales is in it: named in its flag,
    # their rows between the segments left to explain and those named apart
    pulled = (frame["dimension"] == "e.department") & frame["value"].isin(["HR", "IT"])
    assert "only because Sales is in it" in result.flags[0].text
    assert list(frame.index[pulled]) == [int((~apart).sum()) - 2, int((~apart).sum()) - 1]
    ordinary = frame[~apart & ~pulled & frame["tested"]]
    assert list(ordinary["score"]) == sorted(ordinary["score"], reverse=True)
    assert "rows are kept, last in the table" in result.summary
    preview = result.preview(max_rows=8, max_chars=20_000)
    shown = preview.split("\n\n", 1)[1]
    assert "processed_date" not in shown.split("... ")[0].split("\n", 2)[2]


def test_a_sparse_column_that_misses_a_rare_outcome_by_chance_is_not_named() -> None:
    """A note filled on 4% of rows at random holds no row of a rare outcome (20 of 3000
    rows) about half the time: that is chance, not a column recorded for one outcome."""
    sql = _declines(rows=3000, decline_rates=(0.01, 0.01), note_filled=0.04)
    empty = sql.run("SELECT count(*) FILTER (WHERE declined AND note IS NOT NULL) FROM e")
    assert empty.frame.iat[0, 0] == 0  # the note misses every declined line here
    result = segment_scan(sql, source="e", metric=RATE)
    assert "e.note" not in "".join(x for x in result.summary.splitlines()
                                   if x.startswith(ONE_OUTCOME))


def test_named_dimensions_are_split_as_asked() -> None:
    result = segment_scan(_declines(), source="e", metric=RATE,
                          dimensions=["e.department", "quarter(e.processed_date)"])
    assert ONE_OUTCOME not in result.summary
    assert result.frame[result.frame["dimension"] == "quarter(e.processed_date)"][
        "flagged"].any()


def test_compare_within_does_not_hold_fixed_a_column_recorded_for_one_outcome() -> None:
    """A real-model single agent met CONFOUNDING by year(processed_date) removing 55% of
    a department's higher decline rate: on the filled rows both arms decline at exactly 0.
    Such a column is named once, not tested as a confounder."""
    sql = _declines()
    result = compare_within(sql, source="e", metric=RATE, exposure="e.department",
                            value="Sales")
    assert not any("processed_date" in str(f.dimension) for f in result.flags)
    assert "processed_date" not in set(result.frame["dimension"].map(str).str.cat(sep=" "))
    line = next(x for x in result.summary.splitlines() if x.startswith(ONE_OUTCOME))
    assert line.startswith(f"{ONE_OUTCOME}, not tested as confounders: e.processed_date: "
                           "empty on all ")
    assert "holding it fixed would hold the outcome fixed" in line
    named = compare_within(sql, source="e", metric=RATE, exposure="e.department",
                           value="Sales", dimensions=["quarter(e.processed_date)"])
    assert ONE_OUTCOME not in named.summary  # a named dimension is split as asked


def test_decompose_does_not_split_a_change_by_a_column_recorded_for_one_outcome() -> None:
    """A change in the decline rate between two opening months split by the processing
    date would share it out by outcome: the column is named once, not split by."""
    sql = _declines()
    result = decompose(sql, source="e", metric=RATE, period="month(e.opened_at)",
                       before=1, after=9)
    assert not any("processed_date" in str(f.dimension) for f in result.flags)
    assert not result.frame["dimension"].map(str).str.contains("processed_date").any()
    line = next(x for x in result.summary.splitlines() if x.startswith(ONE_OUTCOME))
    assert line.startswith(f"{ONE_OUTCOME}, not split by: e.processed_date: empty on all ")
