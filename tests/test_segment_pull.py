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
    assert "other values read off the rest only because Fred is in it" in flag
    pulled = flag.split("only because Fred is in it, so they are not flagged; ")[1]
    assert pulled.startswith("against the rest without it: ")
    for agent in ("Beth", "Charlie", "Luke", "Howard"):
        assert f"{agent} " in pulled
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
    # Beth is peeled off after Fred: the middle three are compared without both
    assert "only because Fred and Beth are in it, so they are not flagged; against the " \
        "rest without them: " in fred
    assert "Beth" not in fred.split("without them: ")[1]
    beth = next(f.text for f in result.flags if f.text.startswith("incidents.agent = Beth"))
    assert "; against the rest without Fred: 1.30 vs " in beth and ", lower (p = " in beth


def _agents(days: dict[str, float], rows_each: int = 400) -> GuardedSQL:
    """One row per incident, ``rows_each`` per agent, at the agent's days plus noise; a
    1:1 code per agent (``agent_code``)."""
    names = ", ".join(f"'{name}'" for name in days)
    levels = ", ".join(str(level) for level in days.values())
    con = duckdb.connect()
    con.execute(f"""
        CREATE TABLE incidents AS
        SELECT [{names}][1 + i % {len(days)}] AS agent, 'C' || i % {len(days)} AS agent_code,
               [{levels}][1 + i % {len(days)}] + ((hash(i) % 1001)::INTEGER - 500) / 125.0
                   AS days
        FROM range({rows_each * len(days)}) r(i)""")
    return GuardedSQL(con)


def test_a_second_outlier_the_outliers_way_is_shown_not_called_an_artifact() -> None:
    """Fred at 30, Beth at 10, three at 5: Beth reads "lower than the rest" (Fred is in
    it), but she is twice the others: her flag says so, with the figures without Fred;
    she is not listed as pulled (a review found her hidden as an artifact at p = 0)."""
    result = segment_scan(_agents({"Fred": 30, "Beth": 10, "Charlie": 5, "Luke": 5,
                                   "Howard": 5}), source="incidents", metric="avg(days)",
                          dimensions=["incidents.agent"])
    flagged = sorted(f.text.split(":")[0] for f in result.flags)
    assert flagged == ["incidents.agent = Beth", "incidents.agent = Fred"], result.summary
    fred = next(f.text for f in result.flags if f.text.startswith("incidents.agent = Fred"))
    assert "only because Fred and Beth are in it" in fred  # the three at 5: no flags
    beth = next(f.text for f in result.flags if f.text.startswith("incidents.agent = Beth"))
    assert ", higher (p = " in beth.split("; against the rest without Fred: ")[1]


def test_two_outliers_on_one_side_are_both_left_out() -> None:
    """Fred at 30 and George at 28: the three at 5 read lower only because both are in
    their rest (a review found them still flagged with only Fred left out)."""
    result = segment_scan(_agents({"Fred": 30, "George": 28, "Charlie": 5, "Luke": 5,
                                   "Howard": 5}), source="incidents", metric="avg(days)",
                          dimensions=["incidents.agent"])
    flagged = sorted(f.text.split(":")[0] for f in result.flags)
    assert flagged == ["incidents.agent = Fred", "incidents.agent = George"], result.summary
    assert "only because Fred and George are in it" in result.flags[0].text


def test_a_dimension_of_the_same_rows_does_not_repeat_the_pulled_values() -> None:
    result = segment_scan(_agents({"Fred": 30, "Beth": 5, "Charlie": 5, "Luke": 5}),
                          source="incidents", metric="avg(days)",
                          dimensions=["incidents.agent", "incidents.agent_code"])
    assert len(result.flags) == 1, result.summary
    text = result.flags[0].text
    assert "also incidents.agent_code = C0 (the same rows)" in text
    assert "only because Fred is in it" in text and "C1" not in text and "C2" not in text


def test_three_values_with_one_outlier_are_all_compared_without_it() -> None:
    """Fred at 30, Beth and Charlie at 5: both are pulled (an earlier rule also left an
    'anchor' out of the other's rest and, with no rest left, kept Charlie's flag)."""
    result = segment_scan(_agents({"Fred": 30, "Beth": 5, "Charlie": 5}),
                          source="incidents", metric="avg(days)",
                          dimensions=["incidents.agent"])
    assert [f.text.split(":")[0] for f in result.flags] == ["incidents.agent = Fred"]
    assert "without it: Beth " in result.flags[0].text or \
        "without it: Charlie " in result.flags[0].text


def test_a_large_typical_value_is_not_taken_for_the_outlier() -> None:
    """Charlie at 5 on most rows, Fred at 30 on few: Fred is the outlier, the gap from
    its rest decides (rows times gap had picked Charlie's side)."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE incidents AS
        SELECT CASE WHEN i < 400 THEN 'Fred' WHEN i < 3400 THEN 'Charlie'
                    WHEN i < 3800 THEN 'Beth' ELSE 'Luke' END AS agent,
               CASE WHEN i < 400 THEN 30.0 ELSE 5.0 END
                   + ((hash(i) % 1001)::INTEGER - 500) / 125.0 AS days
        FROM range(4200) r(i)""")
    result = segment_scan(GuardedSQL(con), source="incidents", metric="avg(days)",
                          dimensions=["incidents.agent"])
    assert [f.text.split(":")[0] for f in result.flags] == ["incidents.agent = Fred"], \
        result.summary


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
    assert "other values read off the rest only because A is in it" in \
        result.flags[0].text


def test_a_membership_dimension_is_left_alone() -> None:
    """A 1:N attribute's segments overlap (an incident with two tags is in both): the rest
    without one is no rest, so its flags stay as the scan gives them."""
    from d2_notebook.data.analysis.segment_pull import unflag_pulled
    from d2_notebook.data.analysis.stats import Moments

    rows = [{"dimension_index": 0, "value": v, "n": 100, "difference": d, "flagged": True,
             "metric": m, "moments": Moments(100.0, 100.0 * m, 100.0 * m * m + 100.0)}
            for v, d, m in (("a", 20.0, 30.0), ("b", -5.0, 5.0), ("c", -5.0, 5.0))]
    total = rows[0]["moments"] + rows[1]["moments"] + rows[2]["moments"]
    unflag_pulled(rows, total, binary=False, pooled=1.0, alpha=0.001, scale=10.0,
                  min_rows=10, memberships={0})
    assert all(r["flagged"] and not r["pulled"] for r in rows)
    unflag_pulled(rows, total, binary=False, pooled=1.0, alpha=0.001, scale=10.0,
                  min_rows=10, memberships=set())
    assert not rows[1]["flagged"] and [p.value for p in rows[0]["pulled"]] == ["b", "c"]


def test_two_values_have_no_rest_without_the_outlier() -> None:
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE t AS SELECT ['x', 'y'][1 + i % 2] AS g,
               CASE WHEN i % 2 = 0 THEN 10.0 ELSE 1.0 END + (i % 7) / 7.0 AS v
        FROM range(400) r(i)""")
    result = segment_scan(GuardedSQL(con), source="t", metric="avg(v)")
    # each is the other's rest: nothing is left to compare, and the split is named once
    assert "only because" not in result.summary
