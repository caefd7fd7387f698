"""What shape a stored result has, and so which chart (if any) shows it.

The analysis tools' results are recognised by their columns (each tool writes a fixed set,
see ``d2_notebook.data.analysis``). A plain SQL result is read by its column types, with
these rules, in order:

1. Fewer than two rows, or more than :data:`MAX_CATEGORIES` rows for a category chart:
   no chart (an id lookup, a long listing).
2. A time column and at least one measure: **lines** (the measures over time; a category
   with at most :data:`MAX_SERIES` values colours the lines).
3. One category and rates with their counts (a measure whose values all lie in [0, 1]
   beside a count column: the only two, or pairs named alike such as ``rate_drug`` and
   ``n_drug``): **rate bars** with 95% Wilson intervals, one colour per pair.
4. One category and at least one measure: **bars** of the first measure.
5. Exactly two measures and no category: a **scatter** plot.
6. Anything else (free text, several categories and no measure): no chart.

A *measure* is a numeric column that is not an identifier (a name ending in ``id`` or
``key``); a *category* is a text or boolean column whose values are short (free text is
neither). A collector may name the columns it wants (:class:`ChartHint`); the rules fill
in the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

import pandas as pd

__all__ = ["MAX_CATEGORIES", "MAX_SERIES", "ChartHint", "ChartKind", "Shape", "shape_of"]

MAX_CATEGORIES = 40
"""Most bars (or forest rows, or segments) one chart shows."""
MAX_SERIES = 8
"""Most lines one time chart colours apart."""
_FREE_TEXT_CHARS = 40
"""A text column whose values average more characters than this is free text."""
_IDENTIFIER = re.compile(r"(^|_)(id|key)$|id$", re.IGNORECASE)
_COUNT = re.compile(r"^(n|count|cnt|rows|total|num_.*|n_.*|.*_count|.*_n)$", re.IGNORECASE)

SEGMENT_SCAN_COLUMNS = frozenset({"dimension", "value", "n", "metric", "metric_low",
                                  "metric_high", "rest_metric", "flagged"})
COMPARE_WITHIN_COLUMNS = frozenset({"dimension", "stratum", "effect", "ci_low", "ci_high",
                                    "standardised_effect", "flag"})
TREND_COLUMNS = frozenset({"period", "kind", "metric", "ci_low", "ci_high", "fitted"})


class ChartKind(Enum):
    """The charts an evidence can carry."""

    SEGMENTS = "segments"
    """``segment_scan``: each segment's metric with its interval against the rest's level."""
    FOREST = "forest"
    """``compare_within``: the effect per stratum with intervals, crude and standardised."""
    TREND = "trend"
    """``trend``: the series, its fitted line and the labelled projection."""
    LINES = "lines"
    RATE_BARS = "rate_bars"
    BARS = "bars"
    SCATTER = "scatter"


@dataclass(frozen=True)
class ChartHint:
    """The columns a collector asks for; ``None`` leaves the choice to the rules.

    Attributes:
        x: The column along the x axis (the category or time).
        y: The measure.
        color: A category that colours the marks.
    """

    x: str | None = None
    y: str | None = None
    color: str | None = None


@dataclass(frozen=True)
class Shape:
    """The chart a result calls for, and the columns each channel shows.

    Attributes:
        kind: Which chart.
        x: The category, time or first measure column.
        y: The measure columns (one for bars and scatter, one or more for lines).
        color: A category that colours the marks, if any.
        counts: The count column of each rate in ``y`` (rate bars only).
    """

    kind: ChartKind
    x: str | None = None
    y: tuple[str, ...] = ()
    color: str | None = None
    counts: tuple[str, ...] = ()


def shape_of(frame: pd.DataFrame, hint: ChartHint | None = None) -> Shape | None:
    """The chart for ``frame`` by the module's rules, or None where no chart helps.

    Args:
        frame: A stored evidence result.
        hint: Columns a collector asked for; names not in ``frame`` are ignored.
    """
    columns = set(map(str, frame.columns))
    if len(frame) < 2:
        return None
    if columns >= SEGMENT_SCAN_COLUMNS:
        return Shape(ChartKind.SEGMENTS, x="value", y=("metric",), color="dimension")
    if columns >= COMPARE_WITHIN_COLUMNS:
        return Shape(ChartKind.FOREST, x="stratum", y=("effect",), color="dimension")
    if columns >= TREND_COLUMNS:
        return Shape(ChartKind.TREND, x="period", y=("metric",), color="kind")
    return _plain_shape(frame, hint or ChartHint())


def _plain_shape(frame: pd.DataFrame, hint: ChartHint) -> Shape | None:
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        return None
    times = [c for c in names if _is_time(frame[c])]
    measures = [c for c in names if c not in times and _is_measure(frame[c])]
    categories = [c for c in names if c not in times and c not in measures
                  and _is_category(frame[c])]
    x = hint.x if hint.x in names else None
    y = hint.y if hint.y in measures else None
    color = hint.color if hint.color in categories else None
    if x in times or (x is None and times):
        x = x or times[0]
        ys = (y,) if y else tuple(m for m in measures)[:MAX_SERIES]
        if not ys:
            return None
        if color is None and len(ys) == 1:
            color = next((c for c in categories
                          if frame[c].nunique(dropna=False) <= MAX_SERIES), None)
        return Shape(ChartKind.LINES, x=x, y=ys, color=color)
    if x in categories or (x is None and len(categories) == 1 and measures):
        x = x or categories[0]
        if len(frame) > MAX_CATEGORIES or not measures:
            return None
        pairs = _rate_count_pairs(frame, measures)
        if y is not None:
            pairs = [p for p in pairs if p[0] == y]
        if pairs:
            return Shape(ChartKind.RATE_BARS, x=x, y=tuple(r for r, _ in pairs),
                         counts=tuple(c for _, c in pairs))
        return Shape(ChartKind.BARS, x=x, y=(y or measures[0],), color=color)
    if not categories and len(measures) == 2 and x in (None, *measures):
        first = x or measures[0]
        second = y if y and y != first else next(m for m in measures if m != first)
        return Shape(ChartKind.SCATTER, x=first, y=(second,), color=color)
    return None


def _rate_count_pairs(frame: pd.DataFrame, measures: list[str]) -> list[tuple[str, str]]:
    """Each rate with the count it is a share of: ``rate_x`` with ``n_x`` (the names'
    last parts agree), or the only rate with the only count."""
    rates = [m for m in measures if _is_rate(frame[m])]
    counts = [m for m in measures if m not in rates and _is_count(frame[m], m)]
    if len(rates) == 1 and len(counts) == 1:
        return [(rates[0], counts[0])]
    pairs = []
    for rate in rates:
        suffix = _suffix(rate)
        match = [c for c in counts if suffix is not None and _suffix(c) == suffix]
        if len(match) == 1:
            pairs.append((rate, match[0]))
    return pairs[:MAX_SERIES]


def _suffix(name: str) -> str | None:
    parts = name.lower().rsplit("_", 1)
    return parts[1] if len(parts) == 2 and parts[1] else None


def _is_time(series: pd.Series) -> bool:
    return (pd.api.types.is_datetime64_any_dtype(series)
            or (series.dtype == object and not series.dropna().empty
                and all(hasattr(v, "isoformat") for v in series.dropna())))


def _is_measure(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
            and not _IDENTIFIER.search(str(series.name)))


def _is_category(series: pd.Series) -> bool:
    if pd.api.types.is_bool_dtype(series):
        return True
    values = series.dropna()
    if not (pd.api.types.is_string_dtype(series) or series.dtype == object):
        return False
    if not all(isinstance(v, str) for v in values):
        return False
    return values.empty or values.str.len().mean() <= _FREE_TEXT_CHARS


def _is_rate(series: pd.Series) -> bool:
    values = pd.to_numeric(series, errors="coerce").dropna()
    return not values.empty and bool(((values >= 0) & (values <= 1)).all())


def _is_count(series: pd.Series, name: str) -> bool:
    values = pd.to_numeric(series, errors="coerce").dropna()
    whole = not values.empty and bool((values >= 0).all() and (values % 1 == 0).all())
    return whole and bool(_COUNT.match(name))
