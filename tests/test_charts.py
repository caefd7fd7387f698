"""Charts of evidence: one per chartable shape, none where a chart does not help, the same
spec for the same rows, and data values drawn as text, never as markup."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.charts import (
    VEGA_LITE_MIME,
    ChartHint,
    ChartKind,
    chart_for_evidence,
    chart_for_frame,
    chart_svg,
)
from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within, segment_scan, trend
from d2_notebook.datasets import hospital

SOURCE = ("admissions a JOIN patients p USING (patient_id) JOIN treatments t "
          "USING (admission_id) JOIN outcomes o USING (admission_id)")
DEATHS = "avg(CASE WHEN o.died THEN 1 ELSE 0 END)"
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def sql() -> GuardedSQL:
    return GuardedSQL(hospital.create(patients=2000))


def _data(spec: dict) -> list[dict]:
    """Every inline data row of a spec (Altair keeps them under ``datasets``)."""
    return [row for rows in spec.get("datasets", {}).values() for row in rows]


def _fields(spec: dict) -> set[str]:
    found: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("field"), str):
                found.add(node["field"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec.get("layer", spec.get("encoding", {})))
    walk(spec.get("encoding", {}))
    return found


def test_segment_scan_draws_each_segment_with_its_interval_and_the_rest(sql) -> None:
    result = segment_scan(sql, source=SOURCE, metric=DEATHS, where="t.drug = 'Virexa'",
                          dimensions=["admissions.severity", "patients.sex"])
    chart = chart_for_frame(result.frame, title="segments")
    assert chart is not None and chart.kind is ChartKind.SEGMENTS
    rows = [r for r in _data(chart.spec) if "row" in r]
    assert {r["row"] for r in rows} == {
        f"{d} = {v}" for d, v in zip(result.frame["dimension"], result.frame["value"],
                                     strict=True)}
    first = result.frame.iloc[0]
    drawn = next(r for r in rows if r["row"] == f"{first['dimension']} = {first['value']}")
    assert drawn["metric"] == pytest.approx(first["metric"])
    assert drawn["metric_low"] == pytest.approx(first["metric_low"])
    assert drawn["rest_metric"] == pytest.approx(first["rest_metric"])
    assert {"metric", "metric_low", "metric_high", "rest_metric"} <= _fields(chart.spec)


def test_compare_within_draws_a_forest_with_crude_and_standardised_effects(sql) -> None:
    result = compare_within(sql, source=SOURCE, metric=DEATHS, exposure="t.drug",
                            value="Corvalin", dimensions=["admissions.severity"])
    chart = chart_for_frame(result.frame, title="forest")
    assert chart is not None and chart.kind is ChartKind.FOREST
    strata = result.frame[(result.frame["dimension"] != "(overall)")
                          & result.frame["effect"].notna()]  # a stratum without one arm
    drawn = {r["row"]: r for r in _data(chart.spec) if "row" in r}
    assert len(strata) >= 2
    for stratum in strata.itertuples():
        row = drawn[f"{stratum.dimension} = {stratum.stratum}"]
        assert row["effect"] == pytest.approx(stratum.effect)
    assert "admissions.severity = (standardised)" in drawn
    crude = [r for r in _data(chart.spec) if r.get("label") == "crude effect"]
    overall = result.frame[result.frame["dimension"] == "(overall)"].iloc[0]
    assert crude and crude[0]["crude"] == pytest.approx(overall["effect"])


def test_trend_draws_the_series_the_fit_and_the_labelled_projection(sql) -> None:
    result = trend(sql, source=SOURCE, metric=DEATHS, time="a.admitted_on", grain="quarter")
    chart = chart_for_frame(result.frame, title="trend")
    assert chart is not None and chart.kind is ChartKind.TREND
    kinds = {r["kind"] for r in _data(chart.spec)}
    assert kinds == {"observed", "projection"}
    assert {"metric", "fitted", "ci_low", "ci_high"} <= _fields(chart.spec)
    assert len(_data(chart.spec)) == len(result.frame)


def test_a_rate_with_its_count_gets_bars_with_wilson_intervals() -> None:
    frame = pd.DataFrame({"drug": ["A", "B", "C"], "death_rate": [0.1, 0.25, 0.5],
                          "n": [100, 40, 4]})
    chart = chart_for_frame(frame)
    assert chart is not None and chart.kind is ChartKind.RATE_BARS
    rows = {r["category"]: r for r in _data(chart.spec)}
    assert rows["A"]["low"] < 0.1 < rows["A"]["high"]
    # fewer rows, wider interval; bounds stay inside [0, 1]
    assert rows["C"]["high"] - rows["C"]["low"] > rows["A"]["high"] - rows["A"]["low"]
    assert all(0 <= r["low"] <= r["high"] <= 1 for r in rows.values())


def test_two_arms_with_their_counts_get_paired_rate_bars() -> None:
    frame = pd.DataFrame({"severity": ["mild", "severe"], "rate_drug": [0.05, 0.3],
                          "n_drug": [200, 40], "rate_care": [0.08, 0.35], "n_care": [400, 90]})
    chart = chart_for_frame(frame)
    assert chart is not None and chart.kind is ChartKind.RATE_BARS
    rows = {(r["category"], r["series"]): r for r in _data(chart.spec)}
    assert set(rows) == {(c, s) for c in ("mild", "severe") for s in ("rate_drug", "rate_care")}
    assert rows[("severe", "rate_drug")]["count"] == 40
    assert rows[("mild", "rate_care")]["rate"] == pytest.approx(0.08)


def test_one_category_and_a_measure_gets_bars_in_the_result_order() -> None:
    frame = pd.DataFrame({"ward": ["icu", "ward", "hdu"], "avg_days": [9.5, 4.0, 6.2]})
    chart = chart_for_frame(frame)
    assert chart is not None and chart.kind is ChartKind.BARS
    assert chart.spec["encoding"]["y"]["sort"] == ["icu", "ward", "hdu"]
    assert chart.spec["encoding"]["x"]["field"] == "avg_days"


def test_a_time_column_and_measures_get_lines() -> None:
    frame = pd.DataFrame({"month": pd.date_range("2024-01-01", periods=4, freq="MS"),
                          "orders": [10, 12, 9, 14], "revenue": [100.0, 130.0, 80.0, 150.0]})
    chart = chart_for_frame(frame)
    assert chart is not None and chart.kind is ChartKind.LINES
    assert chart.spec["transform"][0]["fold"] == ["orders", "revenue"]


def test_two_measures_get_a_scatter_and_a_hint_picks_the_columns() -> None:
    frame = pd.DataFrame({"dose": [1.0, 2.0, 3.0], "effect": [0.1, 0.3, 0.2],
                          "weight": [60.0, 70.0, 80.0]})
    assert chart_for_frame(frame) is None  # three measures and no category: no rule
    two = frame[["dose", "effect"]]
    chart = chart_for_frame(two)
    assert chart is not None and chart.kind is ChartKind.SCATTER
    hinted = chart_for_frame(pd.DataFrame({"g": ["a", "b"], "x": [1, 2], "y": [3, 4]}),
                             hint=ChartHint(y="y"))
    assert hinted is not None and hinted.spec["encoding"]["x"]["field"] == "y"


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"person_id": [17], "name": ["Ann"], "address": ["1 Main St"]}),
    pd.DataFrame({"person_id": [1, 2], "name": ["Ann", "Bob"]}),
    pd.DataFrame({"transcript": ["I saw a man run out of the gym at about nine pm " * 2,
                                 "I heard a shot and then I saw the man leave in a car"]}),
    pd.DataFrame({"a": ["x", "y"], "b": ["p", "q"]}),
    pd.DataFrame({"k": [f"v{i}" for i in range(60)], "m": range(60)}),
], ids=["id lookup", "ids and names", "free text", "two categories", "too many bars"])
def test_no_chart_where_none_helps(frame: pd.DataFrame) -> None:
    assert chart_for_frame(frame) is None


def test_the_same_rows_give_the_same_spec_byte_for_byte(sql) -> None:
    result = segment_scan(sql, source=SOURCE, metric=DEATHS,
                          dimensions=["admissions.severity"])
    first = chart_for_frame(result.frame, title="t")
    again = chart_for_frame(result.frame.copy(), title="t")
    assert first is not None and again is not None
    assert first.to_json() == again.to_json()


def test_a_board_evidence_charts_from_its_stored_rows_and_says_when_cut(tmp_path) -> None:
    board = Board.open(tmp_path / "b.d2board", max_rows=3)
    frame = pd.DataFrame({"drug": list("ABCDE"), "rate": [0.1, 0.2, 0.3, 0.4, 0.5],
                          "n": [10, 20, 30, 40, 50]})
    evidence = board.add_evidence("SELECT 1", frame, description="rates by drug")
    chart = chart_for_evidence(board, evidence.id)
    assert chart is not None
    assert [r["category"] for r in _data(chart.spec)] == ["A", "B", "C"]
    assert chart.spec["title"]["subtitle"] == "first 3 of 5 rows"
    assert chart.spec["title"]["text"] == f"{evidence.id}: rates by drug"
    bundle = chart._repr_mimebundle_()
    assert bundle[VEGA_LITE_MIME] == chart.spec
    assert bundle["image/svg+xml"].lstrip().startswith("<svg")
    board.close()


def test_hostile_values_are_drawn_as_text_in_the_svg() -> None:
    frame = pd.DataFrame({"name": [HOSTILE, "<script>alert(2)</script>"],
                          "share": [0.2, 0.4], "n": [10, 20]})
    chart = chart_for_frame(frame, title=HOSTILE)
    assert chart is not None
    svg = chart_svg(chart)
    assert "<img" not in svg and "<script" not in svg
    assert "&lt;img src=x onerror=alert(1)&gt;" in svg
    json.loads(chart.to_json())  # the spec stays plain JSON data
