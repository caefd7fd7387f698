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
rows), and names the periods whose share of rows without a value is at least
:data:`SHARE_OVER_USUAL` times the share over all periods and at least
:data:`MIN_UNSET_SHARE`, and the periods after the fit whose rows all have none (the slow
agent's open December and January).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pandas as pd
from sqlglot import exp, parse_one
from sqlglot.errors import ParseError, TokenError

from d2_notebook.data.analysis.inputs import metric_columns
from d2_notebook.errors import QueryFailedError, SQLError

if TYPE_CHECKING:
    from d2_notebook.data.analysis.common import Prepared
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["unset_note"]

SHARE_OVER_USUAL = 2.0
"""How many times the overall share of rows without a value a period's share must be."""
MIN_UNSET_SHARE = 0.1
"""The least share of a period's rows without a value that is named."""
_NAMED = 3
"""Periods named at most (the latest)."""


def unset_note(sql: GuardedSQL, prepared: Prepared, where: str | None, time: str,
               grain: str, label: Callable[[pd.Timestamp], str],
               fitted: set[pd.Timestamp]) -> str | None:
    """The summary line naming the periods with many rows whose metric value is not set
    (see the module docstring), or None when there are none or the count fails.

    Args:
        sql: The guarded connection (the tool's own).
        prepared: The trend's prepared metric and source.
        where: The caller's filter, as given.
        time: The time expression.
        grain: The trend's grain (a ``date_trunc`` part).
        label: Writes a period's start as the trend's rows do.
        fitted: The starts of the periods the trend fit (others are not named).
    """
    condition = _without_set_checks(where, prepared)
    value = prepared.value_sql
    filtered = f" WHERE {condition}" if condition else ""
    try:
        counts = sql.run(
            f"SELECT date_trunc('{grain}', ({time})::TIMESTAMP) AS d2_period, count(*) AS "
            f"d2_rows, count({value}) AS d2_set FROM {prepared.source.sql}{filtered} "
            f"GROUP BY 1", max_rows=10_000).frame
    except (SQLError, QueryFailedError, ValueError):
        return None
    counts = counts.dropna(subset=["d2_period"])
    counts["d2_period"] = pd.to_datetime(counts["d2_period"])
    after = counts[(counts["d2_period"] > max(fitted)) & (counts["d2_set"] == 0)]
    counts = counts[counts["d2_period"].isin(fitted)]
    rows, unset = int(counts["d2_rows"].sum()), int((counts["d2_rows"] - counts["d2_set"]).sum())
    usual = unset / rows if rows else 0.0
    share = (counts["d2_rows"] - counts["d2_set"]) / counts["d2_rows"]
    high = counts[(share >= max(SHARE_OVER_USUAL * usual, MIN_UNSET_SHARE))
                  & (counts["d2_rows"] > counts["d2_set"])].sort_values("d2_period")
    parts = []
    if not high.empty:
        named = [f"{label(r.d2_period)} ({r.d2_rows - r.d2_set} of {r.d2_rows} rows)"
                 for r in high.tail(_NAMED).itertuples()]
        more = f" and {len(high) - _NAMED} earlier period(s)" if len(high) > _NAMED else ""
        parts.append(f"its value is empty (left out of the means) on many rows of "
                     f"{', '.join(named)}{more}, against {usual:.0%} over all periods")
    if not after.empty:
        named = [f"{label(r.d2_period)} ({r.d2_rows} rows)"
                 for r in after.sort_values("d2_period").head(_NAMED).itertuples()]
        more = f" and {len(after) - _NAMED} later period(s)" if len(after) > _NAMED else ""
        parts.append(f"the fit ends before {', '.join(named)}{more}, whose rows all have "
                     "no value yet")
    if not parts:
        return None
    return (f"METRIC NOT SET: {'; '.join(parts)}. Those periods are measured on the rows "
            "already set only, or not at all (a duration on the cases already closed reads "
            "short where many are still open): compare them on a measure every row has (the "
            "share still open, the age of the open ones) before reading a change there.")


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
    for conjunct in tree.flatten() if isinstance(tree, exp.And) else [tree]:
        inner = conjunct.this if isinstance(conjunct, exp.Paren) else conjunct
        if (isinstance(inner, exp.Not) and isinstance(inner.this, exp.Is)
                and isinstance(inner.this.expression, exp.Null)):
            checked = metric_columns(inner.this.this.sql(dialect="duckdb"), prepared.source)
            if checked and checked <= measured:
                continue
        kept.append(conjunct.sql(dialect="duckdb"))
    return " AND ".join(f"({c})" for c in kept) or None
