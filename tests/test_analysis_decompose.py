"""decompose on data with known answers: a rise driven by one segment's rate, with a real
minor contributor; a rise that is all mix; shares that add up; bad inputs refused."""

from __future__ import annotations

import math

import duckdb
import pandas as pd
import pytest
from change_data import rising_churn, shifting_mix

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import FlagKind, decompose
from d2_notebook.data.analysis.decompose import MIX_OF_ALL, OVERALL
from d2_notebook.data.analysis.specs import spec_for

SOURCE = "accounts a JOIN customers c ON a.customer_id = c.customer_id"
CHURN = "avg(CASE WHEN a.churned THEN 1 ELSE 0 END)"
PERIOD = "year(a.opened_on)"


@pytest.fixture(scope="module")
def churn() -> GuardedSQL:
    return GuardedSQL(rising_churn())


@pytest.fixture(scope="module")
def mix() -> GuardedSQL:
    return GuardedSQL(shifting_mix())


def _rows(result, dimension: str):
    """A dimension's segments (without its mix-of-all row), by segment."""
    frame = result.frame
    return frame[(frame["dimension"] == dimension)
                 & (frame["segment"] != MIX_OF_ALL)].set_index("segment")


def test_a_main_cause_and_a_minor_contributor_get_their_shares(churn: GuardedSQL) -> None:
    result = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD)
    overall = result.frame.iloc[0]
    assert overall["dimension"] == OVERALL
    assert overall["contribution"] == pytest.approx(0.0575)
    assert overall["ci_low"] < 0.0575 < overall["ci_high"]
    region = _rows(result, "customers.region")
    assert region.loc["north", "share_of_change"] == pytest.approx(0.05 / 0.0575)
    assert region.loc["east", "share_of_change"] == pytest.approx(0.0075 / 0.0575)
    assert region.loc["west", "share_of_change"] == pytest.approx(0)
    # the minor contributor is real: its share's interval excludes 0, and stays small
    assert 0 < region.loc["east", "share_low"] < 0.13 < region.loc["east", "share_high"] < 0.25
    assert region.loc["east", "rate_change"] == pytest.approx(0.03)
    assert region.loc["east", "ci_low"] > 0 and region.loc["east", "flagged"]
    assert not region.loc["west", "flagged"]
    assert region["mix_part"].abs().max() < 1e-12  # shares of rows did not move
    drivers = {f.text.split(":")[0] for f in result.flags if f.kind is FlagKind.DRIVER}
    assert {"DRIVER customers.region = north", "DRIVER customers.region = east"} <= drivers
    assert "explains 13% of the change (95% CI" in result.summary
    # the region dimension (largest single share) comes first, north before east
    assert result.frame["dimension"].iloc[1] == "customers.region"
    assert list(region.index[:2]) == ["north", "east"]


def test_contributions_add_up_to_the_change_in_every_dimension(churn: GuardedSQL) -> None:
    result = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD)
    body = result.frame.iloc[1:]
    for dimension, rows in body.groupby("dimension"):
        mixed = rows[rows["segment"] == MIX_OF_ALL]
        rows = rows[rows["segment"] != MIX_OF_ALL]
        assert rows["contribution"].sum() == pytest.approx(0.0575, abs=1e-12), dimension
        assert rows["share_of_change"].sum() == pytest.approx(1.0, abs=1e-9), dimension
        assert (rows["rate_part"] + rows["mix_part"]).tolist() == pytest.approx(
            rows["contribution"].tolist())
        # its mix row comes before every segment: its whole mix part, with an interval
        assert body[body["dimension"] == dimension]["segment"].iloc[0] == MIX_OF_ALL
        assert body.index[body["segment"] == MIX_OF_ALL].max() < body.index[
            body["segment"] != MIX_OF_ALL].min()
        [mix] = mixed.itertuples()
        assert mix.contribution == pytest.approx(rows["mix_part"].sum())
        assert mix.contribution_low <= mix.contribution <= mix.contribution_high
        assert mix.share_of_change == pytest.approx(mix.contribution / 0.0575)
        assert mix.share_low <= mix.share_of_change <= mix.share_high
    segments = body[body["segment"] != MIX_OF_ALL]
    assert (segments["contribution_low"] <= segments["contribution"]).all()
    assert (segments["contribution"] <= segments["contribution_high"]).all()


def test_a_rise_from_a_shift_in_mix_is_mix_not_rate(mix: GuardedSQL) -> None:
    result = decompose(mix, source="visits",
                       metric="avg(CASE WHEN converted THEN 1 ELSE 0 END)", period="year")
    channel = _rows(result, "visits.channel")
    assert result.frame.iloc[0]["contribution"] == pytest.approx(0.04)
    assert channel["rate_part"].abs().max() == pytest.approx(0, abs=1e-12)
    assert channel["mix_part"].sum() == pytest.approx(0.04)
    assert channel.loc["web", "share_before"] == 0.5 and channel.loc["web", "share_after"] == 0.7
    assert [f.kind for f in result.flags] == [FlagKind.MIX_SHIFT]
    assert "MIX SHIFT by visits.channel" in result.summary
    assert "(100% of the change)" in result.flags[0].text
    assert "spread evenly" not in result.summary  # no rate moved: nothing to spread
    frame = result.frame
    [mix] = frame[(frame["dimension"] == "visits.channel")
                  & (frame["segment"] == MIX_OF_ALL)].itertuples()
    assert mix.contribution == pytest.approx(0.04) and mix.flagged
    assert mix.share_of_change == pytest.approx(1.0)


def test_periods_default_to_the_first_and_last_and_can_be_named(churn: GuardedSQL) -> None:
    named = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD, before=2024,
                      after="2025")
    assert named.frame.equals(decompose(churn, source=SOURCE, metric=CHURN,
                                        period=PERIOD).frame)
    backwards = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD, before=2025,
                          after=2024)
    assert backwards.frame.iloc[0]["contribution"] == pytest.approx(-0.0575)
    assert _rows(backwards, "customers.region").loc["north", "share_of_change"] == \
        pytest.approx(0.05 / 0.0575)


def test_no_material_change_means_no_shares(churn: GuardedSQL) -> None:
    result = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD,
                       where="c.region IN ('west', 'south')")
    assert result.frame.iloc[0]["contribution"] == pytest.approx(0)
    assert result.frame.iloc[1:]["share_of_change"].isna().all()
    assert "The change is not material" in result.summary
    assert not [f for f in result.flags if f.kind is FlagKind.DRIVER]


def test_named_dimensions_and_the_period_column_left_out(churn: GuardedSQL) -> None:
    result = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD,
                       dimensions=["c.region"])
    assert set(result.frame["dimension"]) == {OVERALL, "customers.region"}
    every = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD)
    assert not any("opened_on" in d for d in every.frame["dimension"])


@pytest.mark.parametrize(("arguments", "message"), [
    ({"before": 2020, "after": 2025}, "no row has period year(a.opened_on) = '2020'; its "
                                      "values include: 2024, 2025"),
    ({"before": 2025, "after": 2025}, "before and after are the same period"),
    ({"before": True}, "before must be a value of period"),
    ({"period": " "}, "period is required"),
    ({"min_support": 1}, "min_support must be an integer >= 2"),
])
def test_bad_inputs_are_refused_with_the_fix(churn: GuardedSQL, arguments, message) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        decompose(churn, **{"source": SOURCE, "metric": CHURN, "period": PERIOD, **arguments})


def test_the_tool_spec_takes_exactly_the_functions_inputs(churn: GuardedSQL) -> None:
    spec = spec_for("decompose")
    assert spec.input_schema["required"] == ["source", "metric", "period"]
    result = spec.function(churn, source=SOURCE, metric=CHURN, period=PERIOD)
    assert result.tool.value == "decompose"


def test_an_empty_database_table_gives_a_clear_error() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (y INTEGER, flag BOOLEAN, g VARCHAR)")
    with pytest.raises(ValueError, match="period y has no value in the population"):
        decompose(GuardedSQL(con), source="t", metric="avg(CASE WHEN flag THEN 1 ELSE 0 END)",
                  period="y")


def test_a_second_date_column_that_tracks_the_period_is_not_a_segment() -> None:
    from d2_notebook.datasets import hospital

    source = ("admissions a JOIN patients p USING (patient_id) JOIN treatments t "
              "USING (admission_id) JOIN outcomes o USING (admission_id)")
    result = decompose(GuardedSQL(hospital.create()), source=source,
                       metric="avg(CASE WHEN o.died THEN 1 ELSE 0 END)",
                       period="year(a.admitted_on)")
    split = set(result.frame["dimension"])
    assert "year(treatments.started_on)" not in split
    assert "month_of_year(treatments.started_on)" in split  # a season overlaps both years
    assert "Not split by year(treatments.started_on), quarter(treatments.started_on), " \
           "month(treatments.started_on): aligned with the period" in result.summary
    assert "The change itself is not beyond chance" in result.summary


def test_a_large_mix_shift_between_two_groups_is_split_not_called_aligned() -> None:
    """IT's goals are 85% high priority, the others' 18%: their shares overlap by only a
    third, yet that mix shift is the finding — decompose splits the gap by priority and
    puts it in the mix part, instead of refusing priority as 'aligned with the period'."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE goals AS
        SELECT i, CASE WHEN i % 5 = 0 THEN 'IT' ELSE 'other' END AS dept,
               CASE WHEN (i % 5 = 0 AND i % 20 <> 5) OR (i % 5 <> 0 AND i % 11 < 2)
                    THEN 'high' ELSE 'low' END AS priority,
               i % 7 AS spare
        FROM range(3000) r(i)""")
    con.execute("""CREATE TABLE g AS SELECT *, CASE WHEN priority = 'high' AND hash(i) % 10 < 6
                   THEN 1 WHEN priority = 'low' AND hash(i) % 10 < 1 THEN 1 ELSE 0 END AS met
                   FROM goals""")
    result = decompose(GuardedSQL(con), source="g", metric="avg(met)", period="dept",
                       before="other", after="IT", dimensions=["g.priority"])
    assert "aligned with the period" not in result.summary
    rows = _rows(result, "g.priority")
    assert len(rows) == 2
    assert rows["mix_part"].sum() > 0.8 * rows["contribution"].sum() > 0


def test_a_new_segment_of_near_zero_rows_shows_its_dilution() -> None:
    """Test orders at $0.01 appear in the second period only. Their mix part is centred on
    the overall metric, so their row says they pulled the average down by nearly the whole
    change; uncentred it read +0.0009 (a share of 0%), and the drop hid in the regular
    orders' mix part, which a judge copying a row would have called no effect."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE orders AS
        SELECT p AS period, 'regular' AS kind, 100 + (i % 5) - 2 AS amount
        FROM range(2) a(p), range(1000) r(i)
        UNION ALL SELECT 1, 'staff', 0.01 FROM range(100)""")
    result = decompose(GuardedSQL(con), source="orders", metric="avg(amount)",
                       period="period", dimensions=["orders.kind"])
    rows = result.frame.set_index(["dimension", "segment"])
    staff, regular = rows.loc[("orders.kind", "staff")], rows.loc[("orders.kind", "regular")]
    change = rows.loc[("(overall)", "")]["contribution"]
    after = 100 * 1000 / 1100 + 0.01 * 100 / 1100
    assert change == pytest.approx(after - 100)
    assert staff["contribution"] == pytest.approx(100 / 1100 * (0.01 - (100 + after) / 2))
    assert staff["contribution"] / change > 0.9  # the dilution is the staff rows'
    # ... but a segment of one period gets no share: it would read as the discount
    # tier's "91% of the drop" on the retail case, where the discount is about a quarter
    assert math.isnan(staff["share_of_change"]) and math.isnan(staff["share_high"])
    assert not math.isnan(regular["share_of_change"])
    assert "staff: -8.6" in result.summary and "(one period only: no share)" in result.summary
    assert "they get no share of it (share_of_change empty)" in result.summary
    assert staff["contribution"] + regular["contribution"] == pytest.approx(change)
    assert "its mean metric - the overall mean metric" in result.summary
    assert "In one period only: orders.kind = staff (new, contribution -8.6" in result.summary


def test_a_date_names_the_period_of_a_timestamp_truncation() -> None:
    """date_trunc of a date gives a timestamp, whose text ends in 00:00:00: a model that
    named the period "2024-01-01", as the tool's description suggests, was refused."""
    con = duckdb.connect()
    con.execute("CREATE TABLE o AS SELECT DATE '2024-01-01' + INTERVAL (i % 180) DAY AS day, "
                "i % 7 AS amount FROM range(2000) r(i)")
    result = decompose(GuardedSQL(con), source="o", metric="avg(amount)",
                       period="date_trunc('quarter', day)", before="2024-01-01",
                       after="2024-04-01")
    assert result.summary.startswith("decompose of avg(amount) by date_trunc('quarter', day): "
                                     "2024-01-01 00:00:00 (n = ")
    with pytest.raises(ValueError, match=r"no row has period .* = '2024-02-01'"):
        decompose(GuardedSQL(con), source="o", metric="avg(amount)",
                  period="date_trunc('quarter', day)", before="2024-02-01", after="2024-04-01")


def _cells(cells: dict[tuple[str, int], tuple[int, int]]) -> GuardedSQL:
    """``t(period, grp, plan, hit)`` with exactly ``hits`` of ``n`` rows hit per (grp,
    period); ``plan`` alternates row by row, so both plans hold the same rate in every
    cell (within one row): a dimension the change is spread evenly over."""
    rows = [(period, grp, "b" if i % 2 else "a", int(i < hits))
            for (grp, period), (n, hits) in cells.items() for i in range(n)]
    con = duckdb.connect()
    con.register("frame", pd.DataFrame(rows, columns=["period", "grp", "plan", "hit"]))
    con.execute("CREATE TABLE t AS SELECT period::INTEGER AS period, grp, plan, "
                "hit::INTEGER AS hit FROM frame")
    con.unregister("frame")
    return GuardedSQL(con)


def _split(sql: GuardedSQL, **arguments):
    return decompose(sql, source="t", metric="avg(hit)", period="period", **arguments)


def test_a_rise_shared_by_every_segment_localises_nothing(churn: GuardedSQL) -> None:
    """Churn rose about as much on both plans (0.0596 and 0.0555): their shares (52%, 48%)
    follow their row counts. Neither is a DRIVER, and the summary says the change is
    spread evenly over the plans; north, whose rate rose 0.2 against 0 in the regions
    without a driver, stays one, and east (0.03 against 0) too."""
    result = decompose(churn, source=SOURCE, metric=CHURN, period=PERIOD)
    plan = _rows(result, "customers.plan")
    assert not plan["flagged"].any()
    assert (plan["q_value"] < 1e-10).all()  # each plan's churn rose beyond chance ...
    assert (plan["vs_rest_q"] > 0.05).all()  # ... alike: neither differs from the other
    assert plan.loc["basic", "rest_rate_change"] == pytest.approx(plan.loc["pro", "rate_change"])
    assert plan.loc["basic", "vs_rest_low"] < 0 < plan.loc["basic", "vs_rest_high"]
    assert ("customers.plan: the change is spread evenly over its segments (rate changes "
            "0.0555 to 0.0596; none differs from the rest's beyond chance); its shares "
            "follow row counts and localise nothing.") in result.summary
    assert "must not be added across dimensions" in result.summary
    assert "customers.region: the change is spread evenly" not in result.summary
    region = _rows(result, "customers.region")
    assert region.loc["north", "rest_rate_change"] == pytest.approx(0)  # west and south
    assert region.loc["north", "vs_rest"] == pytest.approx(0.2)
    assert region.loc["north", "vs_rest_low"] > 0.15 and region.loc["north", "flagged"]
    assert region.loc["east", "rest_rate_change"] == pytest.approx(0)
    assert region.loc["east", "flagged"]
    drivers = {f.dimension for f in result.flags if f.kind is FlagKind.DRIVER}
    assert drivers == {"customers.region"}
    assert "the rest of customers.region: rate change 0, difference 0.200" in result.summary
    # the new columns sit before flagged: earlier columns keep their places
    assert result.frame.columns.tolist().index("share_high") == 19


def test_a_common_rise_beside_a_local_spike_flags_only_the_spike() -> None:
    """Every group's rate rose 0.10 -> 0.15, north's 0.10 -> 0.35. North rose more than
    the rest (both rose): a DRIVER. The others rose beyond chance but no more than each
    other: comparing them with a rest that holds north would call each of them different,
    so north is set aside from their rest; none is a DRIVER."""
    cells = {(g, p): (4000, 400 if p == 1 else (1400 if g == "north" else 600))
             for g in ("north", "east", "west", "south") for p in (1, 2)}
    result = _split(_cells(cells))
    grp = _rows(result, "t.grp")
    assert (grp["q_value"] < 1e-6).all()
    assert grp["flagged"].tolist() == [True, False, False, False]
    assert grp.index[0] == "north"
    assert grp.loc["north", "rate_change"] == pytest.approx(0.25)
    assert grp.loc["north", "rest_rate_change"] == pytest.approx(0.05)
    assert grp.loc["north", "vs_rest"] == pytest.approx(0.20)
    assert grp.loc["east", "rest_rate_change"] == pytest.approx(0.05)
    assert grp.loc["east", "vs_rest"] == pytest.approx(0, abs=1e-12)
    assert "t.plan: the change is spread evenly over its segments" in result.summary
    assert "t.grp: the change is spread evenly" not in result.summary
    assert [f.text.split(":")[0] for f in result.flags] == ["DRIVER t.grp = north"]


def test_a_segment_that_rose_less_than_the_others_is_no_driver() -> None:
    """Three groups rose 0.10 -> 0.20, one only to 0.13: the laggard's own rise is real
    but it holds less of the change than its rows would; no DRIVER, and no claim that
    the change is spread evenly either (the laggard differs from the rest)."""
    cells = {(g, p): (4000, 400 if p == 1 else (520 if g == "west" else 800))
             for g in ("north", "east", "west", "south") for p in (1, 2)}
    result = _split(_cells(cells), dimensions=["t.grp"])
    grp = _rows(result, "t.grp")
    assert not grp["flagged"].any()
    assert grp.loc["west", "vs_rest"] == pytest.approx(-0.07)
    assert grp.loc["west", "vs_rest_q"] < 1e-6
    assert "spread evenly" not in result.summary


def test_a_dimension_of_one_segment_has_no_rest() -> None:
    """Every row is in group north: its one segment holds the whole change, which it
    cannot localise (no rest to differ from): no DRIVER, its rest columns empty."""
    sql = _cells({("north", p): (4000, 400 if p == 1 else 1400) for p in (1, 2)})
    result = _split(sql, dimensions=["t.grp", "t.plan"])
    grp = _rows(result, "t.grp")
    assert list(grp.index) == ["north"]
    assert grp.loc["north", "q_value"] < 1e-10
    assert math.isnan(grp.loc["north", "rest_rate_change"])
    assert math.isnan(grp.loc["north", "vs_rest_q"]) and not grp.loc["north", "flagged"]
    assert grp.loc["north", "share_of_change"] == pytest.approx(1.0)
    assert "t.grp: the change is spread evenly" not in result.summary
    assert ("t.plan: the change is spread evenly over its segments (rate change 0.250 in "
            "each; none differs") in result.summary
    assert not [f for f in result.flags if f.kind is FlagKind.DRIVER]


def test_a_segment_of_one_period_and_a_tiny_segment_are_left_out_of_the_test() -> None:
    """A trial group exists after only (its contribution is mix, no rate change); a group
    of 6 rows per period, under the minimum support, spikes from 0 to 6 hits. Neither is
    compared with a rest nor flagged; the tiny one's rows still count in the others' rest
    (by their small weight); the trial group is in nobody's rest."""
    cells = {(g, p): (3000, 300 if p == 1 else (900 if g == "north" else 450))
             for g in ("north", "east", "west") for p in (1, 2)}
    cells |= {("trial", 2): (500, 50), ("tiny", 1): (6, 0), ("tiny", 2): (6, 6)}
    result = _split(_cells(cells), dimensions=["t.grp"])
    grp = _rows(result, "t.grp")
    for name in ("trial", "tiny"):
        assert math.isnan(grp.loc[name, "vs_rest_q"]) and not grp.loc[name, "flagged"]
    assert math.isnan(grp.loc["trial", "rest_rate_change"])
    assert grp.loc["tiny", "rate_change"] == pytest.approx(1.0)
    assert grp.loc["tiny", "rest_rate_change"] == pytest.approx(0.05)  # east and west
    # north's rest: east and west (0.05) and the tiny group (1.0) by their mean row shares
    weights = {g: (grp.loc[g, "share_before"] + grp.loc[g, "share_after"]) / 2
               for g in ("east", "west", "tiny")}
    rest = (0.05 * (weights["east"] + weights["west"]) + 1.0 * weights["tiny"]) / sum(
        weights.values())
    assert grp.loc["north", "rest_rate_change"] == pytest.approx(rest)
    assert grp.loc["north", "flagged"]
    assert not grp.loc[["east", "west"], "flagged"].any()
    assert "Rate change not tested" in result.summary and "t.grp = tiny" in result.summary


def test_a_dimension_of_nearly_one_value_is_not_ranked_as_a_contribution() -> None:
    """A real-model judge read "year(closed_at): 2023: 0.289 (101%)" ranked first among
    the largest contributions as a finding, when 2023 held nearly every row in both
    periods: such a segment's contribution is about the whole change whatever caused it.
    It is named apart, with its row shares, and the ranking starts with a real split."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE tickets AS
        SELECT CASE WHEN i < 200 THEN 2023 ELSE 2024 END AS opened_year,
               CASE WHEN i % 40 = 0 THEN 'late' ELSE 'same year' END AS closed_when,
               CASE WHEN i % 2 = 0 THEN 'network' ELSE 'database' END AS grp,
               CASE WHEN (i < 200 AND i % 10 < 2) OR (i >= 200 AND i % 10 < 5)
                    THEN 1 ELSE 0 END AS beth
        FROM range(400) t(i)""")
    result = decompose(GuardedSQL(con), source="tickets", metric="avg(beth)",
                       period="opened_year")
    summary = result.summary
    assert ("Not ranked, nearly one value in both periods (one segment holds 90% or more of "
            "the rows in each, so its contribution is most of the change whatever happened "
            "and localises nothing): tickets.closed_when (same year: 98% and 98% of the "
            "rows).") in summary, summary
    ranked = summary.split("Largest contributions by dimension (rate part + mix part):\n")[1]
    ranked = ranked.split("Not ranked")[0]
    assert "tickets.grp" in ranked and "closed_when" not in ranked
    # the rows keep it: only the ranking in the text leaves it out
    assert "tickets.closed_when" in set(result.frame["dimension"])


def test_a_dimension_with_a_mix_shift_keeps_its_own_even_line() -> None:
    """Beyond four evenly spread dimensions the rest are named on one 'Also spread evenly
    ... their shares follow row counts' line; one whose mix shift is flagged had been
    merged there too, though its shares are no mere row counts (a review)."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE t AS
        SELECT ['x', 'y'][1 + i % 2] AS a, ['p', 'q'][1 + i % 5 % 2] AS b,
               ['u', 'v'][1 + i % 7 % 2] AS c, ['m', 'n'][1 + i % 11 % 2] AS d,
               ['r', 's'][1 + i % 13 % 2] AS e,
               CASE WHEN i < 1500 THEN 'H1' ELSE 'H2' END AS half,
               CASE WHEN (i < 1500 AND i % 5 = 0) OR (i >= 1500 AND i % 5 < 3) THEN 'hi'
                    ELSE 'lo' END AS z,
               (hash(i) % 100 < CASE WHEN i < 1500 THEN 30 ELSE 45 END
                   + CASE WHEN (i < 1500 AND i % 5 = 0) OR (i >= 1500 AND i % 5 < 3)
                          THEN 30 ELSE 0 END)::INT AS mine
        FROM range(3000) r(i)""")
    result = decompose(GuardedSQL(con), source="t", metric="avg(mine)", period="half",
                       before="H1", after="H2",
                       dimensions=["t.z", "t.a", "t.b", "t.c", "t.d", "t.e"])
    lines = result.summary.splitlines()
    assert any(f.kind is FlagKind.MIX_SHIFT and f.dimension == "t.z" for f in result.flags)
    also = next(line for line in lines if line.startswith("Also spread evenly"))
    assert "t.z" not in also
    assert any(line.startswith("t.z: the change is spread evenly") and
               line.endswith("(its mix shift is flagged above).") for line in lines)
