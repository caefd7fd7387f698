"""Periods where many rows have no metric value yet: a trend over finished rows only.

A duration such as ``date_diff('day', opened_at, closed_at)`` is empty while a case is
open, and ``avg`` skips it (a filter ``closed_at IS NOT NULL`` does the same). Where the
last periods hold many open cases, their mean covers only the cases that closed quickly:
December read 3.9 days against 9.6 elsewhere because one slow agent's December incidents
were all still open, and two real-model hypothesizers and a collector took it for a
finding before a later query showed the censoring (InsightBench flag-6).

:func:`unset_note` counts, per period of the trend's grain, the rows of the population
and those whose metric value is set, with the population's filter but without its
conjuncts that only require a metric column to be set (they are what hides the open
rows), and names the fitted periods whose share of rows without a value stands out from
the other fitted periods' (:func:`_stands_out`), and the periods after the fit with rows
without one (the slow agent's open December and January). The note says what it means
only if the empty values are unfinished rows: a value empty by design reads otherwise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sqlglot import exp, parse_one
from sqlglot.errors import ParseError, TokenError

from d2_notebook.data.analysis.inputs import metric_columns, optional_where
from d2_notebook.errors import SQLError

if TYPE_CHECKING:
    from d2_notebook.data.analysis.common import Prepared
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["unset_note"]

SHARE_OVER_USUAL = 2.0
"""How many times the other periods' share of rows without a value a period's must be
(or a quarter of its rows above it)."""
MIN_UNSET_SHARE = 0.1
"""The least share of a period's rows without a value that is named."""
_NAMED = 3
"""Periods named at most (the latest)."""
_MAX_PERIODS = 1_000_000
"""Periods counted at most, as many as the trend's own pass groups (a count cut short
gives no note)."""


def unset_note(sql: GuardedSQL, prepared: Prepared, where: str | None, time: str,
               grain: str, label: Callable[[pd.Timestamp], str],
               fitted: set[pd.Timestamp]) -> str | None:
    """The summary line naming the periods with many rows whose metric value is not set
    (see the module docstring), or None when there are none or the count fails.

    Args:
        sql: The guarded connection (the tool's own).
        prepared: The trend's prepared metric and source.
        where: The caller's filter, as given (a leading ``WHERE`` is dropped).
        time: The time expression.
        grain: The trend's grain (a ``date_trunc`` part).
        label: Writes a period's start as the trend's rows do.
        fitted: The starts of the periods the trend fit (others are not compared).
    """
    condition = _without_set_checks(optional_where(where), prepared)
    filtered = f" WHERE {condition}" if condition else ""
    try:
        result = sql.run(
            f"SELECT date_trunc('{grain}', ({time})::TIMESTAMP) AS d2_period, count(*) AS "
            f"d2_rows, count({prepared.value_sql}) AS d2_set FROM {prepared.source.sql}"
            f"{filtered} GROUP BY 1", max_rows=_MAX_PERIODS)
    except (SQLError, ValueError):
        return None
    if result.truncated or not fitted:
        return None
    counts = result.frame.dropna(subset=["d2_period"])
    counts = counts.assign(d2_period=pd.to_datetime(counts["d2_period"]),
                           d2_unset=counts["d2_rows"] - counts["d2_set"])
    after = counts[(counts["d2_period"] > max(fitted)) & (counts["d2_unset"] > 0)]
    counts = counts[counts["d2_period"].isin(fitted)]
    high = counts[_stands_out(counts)]
    parts = []
    if not high.empty:
        rows, unset = int(counts["d2_rows"].sum()), int(counts["d2_unset"].sum())
        named = [f"{label(r.d2_period)} ({r.d2_unset} of {r.d2_rows} rows)"
                 for r in high.sort_values("d2_period").tail(_NAMED).itertuples()]
        more = f" and {len(high) - _NAMED} earlier period(s)" if len(high) > _NAMED else ""
        parts.append(f"its value is empty (left out of the means) on many rows of "
                     f"{', '.join(named)}{more}, against {unset / rows:.0%} of the rows of "
                     "all the periods fitted")
    if not after.empty:
        named = [f"{label(r.d2_period)} ({r.d2_set} of {r.d2_rows} rows set)"
                 for r in after.sort_values("d2_period").head(_NAMED).itertuples()]
        more = f" and {len(after) - _NAMED} later period(s)" if len(after) > _NAMED else ""
        parts.append(f"the fit ends before {', '.join(named)}{more}")
    if not parts:
        return None
    return (f"METRIC NOT SET: {'; '.join(parts)}. If these are rows not finished yet (a case "
            "still open), those periods are measured on the finished rows only, or not at "
            "all, and a duration reads short there: compare them on a measure every row has "
            "(the share still open, the age of the open ones) before reading a change there.")


def _stands_out(counts: pd.DataFrame) -> pd.Series:
    """Which fitted periods' share of rows without a value stands out from the other
    fitted periods': at least :data:`MIN_UNSET_SHARE`, that much above theirs, and
    :data:`SHARE_OVER_USUAL` times it or a quarter of the rows above it (when most rows
    are empty everywhere no period can be twice the rest). One pass over the periods: the
    others' share is the totals' less each period's own."""
    rows, unset = counts["d2_rows"], counts["d2_unset"]
    share = unset / rows.where(rows > 0)
    rest_rows = rows.sum() - rows
    others = ((unset.sum() - unset) / rest_rows.where(rest_rows > 0)).fillna(0.0)
    return ((unset > 0) & (share >= MIN_UNSET_SHARE) & (share - others >= MIN_UNSET_SHARE)
            & (share >= np.minimum(SHARE_OVER_USUAL * others, others + 0.25)))


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    """The top-level AND terms of a condition, inside any parentheses around them."""
    node = node.unnest()
    if isinstance(node, exp.And):
        return [*_conjuncts(node.left), *_conjuncts(node.right)]
    return [node]


def _requires_set(node: exp.Expression) -> exp.Expression | None:
    """The expression ``node`` requires to be set (``X IS NOT NULL``, ``NOT (X IS NULL)``),
    or None."""
    if isinstance(node, exp.Not):
        inner = node.this.unnest()
        if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
            return inner.this
    return None


def _without_set_checks(where: str | None, prepared: Prepared) -> str | None:
    """``where`` without its top-level conjuncts ``X IS NOT NULL`` whose columns are all
    the metric's: they keep only the rows whose value is set. ``where`` as given when it
    does not parse here."""
    if not where:
        return None
    try:
        tree = parse_one(f"SELECT 1 WHERE {where}", read="duckdb").args["where"].this
    except (ParseError, TokenError, KeyError, AttributeError):
        return where
    measured = metric_columns(prepared.value_sql, prepared.source)
    kept = []
    for conjunct in _conjuncts(tree):
        required = _requires_set(conjunct)
        if required is not None:
            checked = metric_columns(required.sql(dialect="duckdb"), prepared.source)
            if checked and checked <= measured:
                continue
        kept.append(conjunct.sql(dialect="duckdb"))
    return " AND ".join(f"({c})" for c in kept) or None
