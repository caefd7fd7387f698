"""segment_scan names once, under the outlier, the other values of its dimension that
read off the rest only because the outlier is in it (flag-6: one agent at 31 days made
each of the other four "lower than the rest" beyond chance). Real DuckDB."""

from __future__ import annotations

import duckdb

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import segment_scan


def _incidents(low_agent_days: float = 5.0) -> GuardedSQL:
    """Five agents, 100 incidents each: Fred at about 30 days, Beth at ``low_agent_days``,
    the other three at about 5; a second, unrelated column (priority)."""
    con = duckdb.connect()
    con.execute(f"""
        CREATE TABLE incidents AS
        SELECT i AS id,
               ['Fred', 'Beth', 'Charlie', 'Luke', 'Howard'][1 + i % 5] AS agent,
               ['High', 'Low'][1 + (i // 5) % 2] AS priority,
               CASE i % 5 WHEN 0 THEN 30.0 WHEN 1 THEN {low_agent_days} ELSE 5.0 END
                   + ((hash(i) % 1001)::INTEGER - 500) / 125.0 AS days
        FROM range(500) r(i)""")
    return GuardedSQL(con)


def test_values_pulled_by_the_outlier_are_named_in_its_flag_not_flagged() -> None:
    result = segment_scan(_incidents(), source="incidents", metric="avg(days)")
    assert [f.dimension for f in result.flags] == ["incidents.agent"], result.summary
    flag = result.flags[0].text
    assert flag.startswith("incidents.agent = Fred: avg(days) = ")
    assert "other values read lower than the rest only because Fred is in it" in flag
    for agent in ("Beth", "Charlie", "Luke", "Howard"):
        assert f"{agent} " in flag.split("without it: ")[1]
    frame = result.frame
    others = frame[(frame["dimension"] == "incidents.agent") & (frame["value"] != "Fred")]
    # each still differs from the whole rest beyond chance, in the rows, unflagged and
    # after the segments left to explain
    assert not others["flagged"].any() and (others["q_value"] < 0.001).all()
    assert others.index.min() > frame[frame["dimension"] == "incidents.priority"].index.max()
    assert "FLAGGED SEGMENTS (1;" in result.summary


def test_a_value_that_differs_without_the_outlier_too_stays_flagged() -> None:
    result = segment_scan(_incidents(low_agent_days=1.0), source="incidents",
                          metric="avg(days)")
    flagged = {(f.dimension, f.text.split(":")[0]) for f in result.flags}
    assert flagged == {("incidents.agent", "incidents.agent = Fred"),
                       ("incidents.agent", "incidents.agent = Beth")}, result.summary
    fred = next(f.text for f in result.flags if f.text.startswith("incidents.agent = Fred"))
    assert "without it: " in fred and "Beth" not in fred.split("without it: ")[1]


def test_a_rate_uses_the_scans_proportion_test() -> None:
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE calls AS
        SELECT ['A', 'B', 'C', 'D'][1 + i % 4] AS team,
               CASE WHEN i % 4 = 0 THEN (i % 8 = 0 OR i % 12 = 0)
                    ELSE i % 40 < 4 END AS dropped
        FROM range(4000) r(i)""")
    result = segment_scan(GuardedSQL(con), source="calls",
                          metric="avg(CASE WHEN dropped THEN 1 ELSE 0 END)")
    assert [f.text.split(":")[0] for f in result.flags] == ["calls.team = A"], result.summary
    assert "other values read lower than the rest only because A is in it" in \
        result.flags[0].text


def test_two_values_have_no_rest_without_the_outlier() -> None:
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE t AS SELECT ['x', 'y'][1 + i % 2] AS g,
               CASE WHEN i % 2 = 0 THEN 10.0 ELSE 1.0 END + (i % 7) / 7.0 AS v
        FROM range(400) r(i)""")
    result = segment_scan(GuardedSQL(con), source="t", metric="avg(v)")
    # each is the other's rest: nothing is left to compare, and the split is named once
    assert "only because" not in result.summary
