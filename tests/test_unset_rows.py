"""trend names the periods where many rows have no metric value yet (a duration on the
cases already closed, InsightBench flag-6's open December and January). Real DuckDB."""

from __future__ import annotations

import duckdb
import pytest

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import trend

DURATION = "avg(date_diff('day', c.opened_at, c.closed_at))"


@pytest.fixture(scope="module")
def cases() -> GuardedSQL:
    """Cases opened over 12 months by two agents, about 5 days to close; agent x's cases
    of the last two months are mostly still open, and all of agent z's last two."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE cases AS
        SELECT i AS id, ['x', 'y', 'z'][1 + i % 3] AS agent,
               TIMESTAMP '2023-01-01' + to_hours(i * 7) AS opened_at,
               CASE WHEN i * 7 / 24 >= 304 AND i % 3 = 2 THEN NULL
                    WHEN i * 7 / 24 >= 304 AND i % 3 = 0 AND i % 4 <> 0 THEN NULL
                    ELSE TIMESTAMP '2023-01-01' + to_hours(i * 7) + to_days(3 + i % 5)
               END AS closed_at
        FROM range(1250) r(i)""")
    return GuardedSQL(con)


def test_periods_with_many_open_rows_are_named(cases: GuardedSQL) -> None:
    for where in ("c.closed_at IS NOT NULL", None):
        result = trend(cases, source="cases c", metric=DURATION, time="c.opened_at",
                       grain="month", periods=0, where=where)
        line = next(x for x in result.summary.splitlines() if x.startswith("METRIC NOT SET"))
        assert "its value is empty (left out of the means) on many rows of 2023-11 (60 of " \
            "103 rows), 2023-12 (" in line and "2023-10" not in line
        assert "If these are rows not finished yet (a case still open)" in line


def test_the_filter_other_than_the_set_check_is_kept(cases: GuardedSQL) -> None:
    """agent y has no open case: filtered to it, nothing is named (the filter's other
    conjuncts count; only 'closed_at IS NOT NULL' is dropped for the count)."""
    result = trend(cases, source="cases c", metric=DURATION, time="c.opened_at",
                   grain="month", periods=0,
                   where="c.closed_at IS NOT NULL AND c.agent = 'y'")
    assert "METRIC NOT SET" not in result.summary


def test_periods_after_the_fit_with_no_value_at_all_are_named(cases: GuardedSQL) -> None:
    result = trend(cases, source="cases c", metric=DURATION, time="c.opened_at",
                   grain="month", periods=0, where="(c.closed_at IS NOT NULL) AND c.agent = 'z'")
    line = next(x for x in result.summary.splitlines() if x.startswith("METRIC NOT SET"))
    assert "the fit ends before 2023-11 (0 of 35 rows set), 2023-12 (0 of 34 rows set)" in line


@pytest.mark.parametrize("where", [
    "WHERE c.closed_at IS NOT NULL",  # a leading WHERE, as optional_where accepts
    "(c.closed_at IS NOT NULL AND c.agent <> 'q') AND c.id >= 0",  # nested parentheses
    "NOT (c.closed_at IS NULL)",
])
def test_other_spellings_of_the_set_check_are_dropped(cases: GuardedSQL, where: str) -> None:
    """A review found each of these losing the note without a word."""
    result = trend(cases, source="cases c", metric=DURATION, time="c.opened_at",
                   grain="month", periods=0, where=where)
    assert "METRIC NOT SET: its value is empty" in result.summary, where


def test_a_period_stands_out_even_where_most_rows_are_empty() -> None:
    """Half the cases open every month and 95% in the last two: twice the usual share is
    over 100%, which had turned the note off (a review)."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE c AS
        SELECT TIMESTAMP '2023-01-01' + to_hours(i * 7) AS opened_at,
               CASE WHEN i * 7 / 24 >= 304 AND i % 20 <> 1 THEN NULL
                    WHEN i % 2 = 0 THEN NULL
                    ELSE TIMESTAMP '2023-01-01' + to_hours(i * 7) + to_days(3 + i % 5)
               END AS closed_at
        FROM range(1250) r(i)""")
    result = trend(GuardedSQL(con), source="c", metric="avg(date_diff('day', opened_at, "
                   "closed_at))", time="opened_at", grain="month", periods=0,
                   where="closed_at IS NOT NULL", min_support=3)
    assert "on many rows of 2023-11 (" in result.summary, result.summary


def test_a_thin_period_after_the_fit_is_named_with_its_set_rows() -> None:
    """December has one closed case of about a hundred: too thin to fit, and it had been
    named only as '1 row left out' (a review)."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE c AS
        SELECT TIMESTAMP '2023-01-01' + to_hours(i * 7) AS opened_at,
               CASE WHEN i * 7 / 24 >= 334 AND i <> 1200 THEN NULL
                    ELSE TIMESTAMP '2023-01-01' + to_hours(i * 7) + to_days(3 + i % 5)
               END AS closed_at
        FROM range(1250) r(i)""")
    result = trend(GuardedSQL(con), source="c", metric="avg(date_diff('day', opened_at, "
                   "closed_at))", time="opened_at", grain="month", periods=0)
    assert "the fit ends before 2023-12 (1 of " in result.summary, result.summary


def test_a_metric_set_on_every_row_gets_no_note() -> None:
    con = duckdb.connect()
    con.execute("""CREATE TABLE t AS SELECT TIMESTAMP '2023-01-01' + to_hours(i * 7) AS at_,
                   (i % 9)::DOUBLE AS v FROM range(1250) r(i)""")
    result = trend(GuardedSQL(con), source="t", metric="avg(v)", time="at_", grain="month")
    assert "METRIC NOT SET" not in result.summary
