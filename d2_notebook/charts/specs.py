"""Vega-Lite specs for each chart kind, built with Altair from a stored result.

Every builder is a pure function of the rows it is given: the same rows give the same
spec, byte for byte (Altair names inline data by a hash of it), so a board replayed or
reopened draws the same charts. Data values reach the spec only as data, never as markup:
the renderers (vl-convert, vega-embed) draw them as text.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import altair as alt
import pandas as pd

from d2_notebook.charts.shapes import MAX_CATEGORIES, ChartKind, Shape

__all__ = ["build_spec"]

WIDTH = 420
"""Width of every chart's plotting area, in pixels (the details pane's width)."""
ROW_HEIGHT = 18
"""Height of one row of a segment or forest chart."""
MAX_SEGMENTS = 20
"""Segments a segment chart shows: the stored order's first (flagged first, then by score;
the segments segment_scan names apart, such as the same rows as a flagged one, come last)."""
_Z95 = 1.959964
_FLAGGED = "#c62828"
_PLAIN = "#546e7a"


def build_spec(frame: pd.DataFrame, shape: Shape, title: str, note: str) -> dict[str, Any]:
    """The Vega-Lite spec of ``frame`` drawn as ``shape``.

    Args:
        frame: The stored rows (never queried again).
        shape: What :func:`~d2_notebook.charts.shapes.shape_of` chose.
        title: The chart's title (the evidence's description).
        note: A subtitle, e.g. that the table holds only the first stored rows.
    """
    chart = _BUILDERS[shape.kind](frame, shape)
    titled = chart.properties(title=alt.TitleParams(title, subtitle=note or alt.Undefined,
                                                    anchor="start", fontSize=12))
    return titled.configure_view(stroke=None).to_dict()


def _label(frame: pd.DataFrame, *columns: str) -> pd.Series:
    return frame[list(columns)].astype(str).agg(" = ".join, axis=1)


def _rows_axis(title: str, order: list[str]) -> alt.Y:
    return alt.Y("row:N", sort=order, title=title, axis=alt.Axis(labelLimit=220))


def _segments(frame: pd.DataFrame, shape: Shape) -> alt.LayerChart:
    data = frame.head(MAX_SEGMENTS).copy()
    data["row"] = _label(data, "dimension", "value")
    data["marked"] = data["flagged"].map({True: "flagged", False: "not flagged"})
    order = data["row"].tolist()
    base = alt.Chart(data).properties(width=WIDTH, height=ROW_HEIGHT * len(data))
    color = alt.Color("marked:N", title=None, scale=alt.Scale(
        domain=["flagged", "not flagged"], range=[_FLAGGED, _PLAIN]))
    interval = base.mark_rule().encode(
        x=alt.X("metric_low:Q", title="metric (95% interval); tick: rest of the rows"),
        x2="metric_high:Q", y=_rows_axis("segment", order), color=color)
    point = base.mark_point(filled=True, size=40).encode(
        x="metric:Q", y=_rows_axis("segment", order), color=color,
        tooltip=["dimension:N", "value:N", "n:Q", "metric:Q", "rest_metric:Q"])
    rest = base.mark_tick(color="#212121", thickness=1).encode(
        x="rest_metric:Q", y=_rows_axis("segment", order))
    return alt.layer(interval, point, rest)


def _forest(frame: pd.DataFrame, shape: Shape) -> alt.LayerChart:
    overall = frame[frame["dimension"] == "(overall)"]
    estimable = frame["effect"].notna() & (frame["dimension"] != "(overall)")
    strata = frame[estimable].head(MAX_CATEGORIES).copy()
    strata["row"] = _label(strata, "dimension", "stratum")
    strata["marked"] = strata["flag"].fillna("").astype(str).map(
        lambda f: f if f else "no flag")
    standardised = (strata.dropna(subset=["standardised_effect"])
                    .drop_duplicates("dimension")[["dimension", "standardised_effect"]])
    standardised = standardised.assign(
        row=standardised["dimension"].astype(str) + " = (standardised)",
        effect=standardised["standardised_effect"], marked="standardised")
    data = pd.concat([strata, standardised], ignore_index=True)
    order = data.sort_values(["dimension", "row"], kind="stable")["row"].tolist()
    base = alt.Chart(data).properties(width=WIDTH, height=ROW_HEIGHT * len(data))
    color = alt.Color("marked:N", title=None)
    layers: list[alt.Chart] = [
        base.mark_rule().encode(x=alt.X("ci_low:Q", title="effect (95% interval)"),
                                x2="ci_high:Q", y=_rows_axis("stratum", order), color=color),
        base.mark_point(filled=True, size=40).encode(
            x="effect:Q", y=_rows_axis("stratum", order), color=color,
            shape=alt.Shape("marked:N", legend=None),
            tooltip=["dimension:N", "stratum:N", "effect:Q", "ci_low:Q", "ci_high:Q"]),
        alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color="#9e9e9e").encode(
            x="zero:Q"),
    ]
    if not overall.empty and not math.isnan(float(overall["effect"].iloc[0])):
        crude = pd.DataFrame({"crude": [float(overall["effect"].iloc[0])],
                              "label": ["crude effect"]})
        rule = alt.Chart(crude).mark_rule(color="#212121", strokeDash=[4, 3]).encode(
            x="crude:Q", tooltip=["label:N", "crude:Q"])
        text = alt.Chart(crude).mark_text(align="left", dx=3, dy=-4, y=0, fontSize=10).encode(
            x="crude:Q", text="label:N")
        layers.extend([rule, text])
    return alt.layer(*layers)


def _trend(frame: pd.DataFrame, shape: Shape) -> alt.LayerChart:
    data = frame[["period", "kind", "n", "metric", "ci_low", "ci_high", "fitted"]].copy()
    order = data["period"].astype(str).tolist()
    x = alt.X("period:O", sort=order, title=None, axis=alt.Axis(labelAngle=-45))
    base = alt.Chart(data).properties(width=WIDTH, height=220)
    kind = alt.Color("kind:N", title=None, scale=alt.Scale(
        domain=["observed", "projection"], range=[_PLAIN, "#ff8f00"]))
    band = base.mark_area(opacity=0.18).encode(x=x, y=alt.Y("ci_low:Q", title="metric"),
                                               y2="ci_high:Q", color=kind)
    observed = base.mark_line(point=True).encode(
        x=x, y="metric:Q", color=kind, tooltip=["period:N", "kind:N", "n:Q", "metric:Q"])
    fitted = base.mark_line(strokeDash=[4, 3], color="#212121").encode(x=x, y="fitted:Q")
    return alt.layer(band, observed, fitted)


def _lines(frame: pd.DataFrame, shape: Shape) -> alt.Chart:
    keep = [shape.x, *shape.y] + ([shape.color] if shape.color else [])
    data = frame[list(dict.fromkeys(keep))]
    x = alt.X(f"{_field(shape.x)}:T", title=shape.x)
    if len(shape.y) > 1:
        return (alt.Chart(data).transform_fold(list(shape.y), as_=["measure", "value"])
                .mark_line(point=True)
                .encode(x=x, y=alt.Y("value:Q", title=None), color="measure:N",
                        tooltip=[f"{_field(shape.x)}:T", "measure:N", "value:Q"])
                .properties(width=WIDTH, height=220))
    y = alt.Y(f"{_field(shape.y[0])}:Q", title=shape.y[0])
    encoding: dict[str, Any] = {"x": x, "y": y}
    if shape.color:
        encoding["color"] = alt.Color(f"{_field(shape.color)}:N", title=shape.color)
    return alt.Chart(data).mark_line(point=True).encode(**encoding).properties(
        width=WIDTH, height=220)


def _bars(frame: pd.DataFrame, shape: Shape) -> alt.Chart:
    order = frame[shape.x].astype(str).tolist()
    encoding: dict[str, Any] = {
        "y": alt.Y(f"{_field(shape.x)}:N", sort=order, title=shape.x,
                   axis=alt.Axis(labelLimit=220)),
        "x": alt.X(f"{_field(shape.y[0])}:Q", title=shape.y[0]),
        "tooltip": [f"{_field(shape.x)}:N", f"{_field(shape.y[0])}:Q"],
    }
    if shape.color:
        encoding["color"] = alt.Color(f"{_field(shape.color)}:N", title=shape.color)
    return alt.Chart(frame[list(dict.fromkeys(
        [shape.x, shape.y[0]] + ([shape.color] if shape.color else [])))]).mark_bar(
        color=_PLAIN).encode(**encoding).properties(width=WIDTH, height=ROW_HEIGHT * len(frame))


def _rate_bars(frame: pd.DataFrame, shape: Shape) -> alt.LayerChart:
    parts = []
    for rate, count in zip(shape.y, shape.counts, strict=True):
        part = pd.DataFrame({"category": frame[shape.x].astype(str), "series": rate,
                             "rate": pd.to_numeric(frame[rate], errors="coerce"),
                             "count": pd.to_numeric(frame[count], errors="coerce")})
        bounds = [_wilson(r, n) for r, n in zip(part["rate"], part["count"], strict=True)]
        part["low"] = [b[0] for b in bounds]
        part["high"] = [b[1] for b in bounds]
        parts.append(part)
    data = pd.concat(parts, ignore_index=True)
    order = frame[shape.x].astype(str).tolist()
    y = alt.Y("category:N", sort=order, title=shape.x, axis=alt.Axis(labelLimit=220))
    offset = alt.YOffset("series:N", sort=list(shape.y))
    several = len(shape.y) > 1
    base = alt.Chart(data).properties(width=WIDTH,
                                      height=ROW_HEIGHT * len(data) * (1.2 if several else 1))
    counts = ", ".join(shape.counts)
    title = (f"{shape.y[0]} (95% Wilson interval over {counts} rows)" if not several
             else f"rate (95% Wilson interval over {counts} rows)")
    bar_encoding: dict[str, Any] = {
        "y": y, "x": alt.X("rate:Q", title=title),
        "tooltip": ["category:N", "series:N", "rate:Q", "count:Q", "low:Q", "high:Q"]}
    rule_encoding: dict[str, Any] = {"y": y, "x": "low:Q", "x2": "high:Q"}
    if several:
        bar_encoding.update(yOffset=offset, color=alt.Color("series:N", title=None,
                                                            sort=list(shape.y)))
        rule_encoding["yOffset"] = offset
    bars = base.mark_bar(color=_PLAIN).encode(**bar_encoding)
    whiskers = base.mark_rule(color="#212121").encode(**rule_encoding)
    return alt.layer(bars, whiskers)


def _scatter(frame: pd.DataFrame, shape: Shape) -> alt.Chart:
    columns = [shape.x, shape.y[0]] + ([shape.color] if shape.color else [])
    encoding: dict[str, Any] = {
        "x": alt.X(f"{_field(shape.x)}:Q", title=shape.x, scale=alt.Scale(zero=False)),
        "y": alt.Y(f"{_field(shape.y[0])}:Q", title=shape.y[0], scale=alt.Scale(zero=False)),
    }
    if shape.color:
        encoding["color"] = alt.Color(f"{_field(shape.color)}:N", title=shape.color)
    return alt.Chart(frame[list(dict.fromkeys(columns))]).mark_point().encode(
        **encoding).properties(width=WIDTH, height=260)


def _wilson(rate: float, count: float) -> tuple[float | None, float | None]:
    if not (count and count > 0) or rate is None or math.isnan(rate):
        return None, None
    denominator = 1 + _Z95**2 / count
    centre = (rate + _Z95**2 / (2 * count)) / denominator
    half = _Z95 * math.sqrt(rate * (1 - rate) / count + _Z95**2 / (4 * count**2)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _field(name: str | None) -> str:
    """A column name as a Vega-Lite field (dots, brackets and colons escaped)."""
    text = str(name)
    for special in ("\\", ".", "[", "]", ":"):
        text = text.replace(special, "\\" + special)
    return text


_BUILDERS: dict[ChartKind, Callable[[pd.DataFrame, Shape], alt.TopLevelMixin]] = {
    ChartKind.SEGMENTS: _segments,
    ChartKind.FOREST: _forest,
    ChartKind.TREND: _trend,
    ChartKind.LINES: _lines,
    ChartKind.BARS: _bars,
    ChartKind.RATE_BARS: _rate_bars,
    ChartKind.SCATTER: _scatter,
}
