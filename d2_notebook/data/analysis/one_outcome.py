"""Columns recorded for one outcome only, found from each dimension's missing value.

A date or code filled only at a later step of one outcome of a 0/1 metric (the
processing date no declined expense gets) restates the outcome: each of its filled
values has a rate of exactly 0 or 1 and its missing value holds the whole outcome, by
construction (:func:`~d2_notebook.data.analysis.stats.outcome_left_empty`). segment_scan
does not flag its segments, compare_within does not hold it fixed as a confounder, and
decompose does not split by it; each names it once
(:func:`~d2_notebook.data.analysis.text.one_outcome_line`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING

from d2_notebook.data.analysis.stats import Moments, outcome_left_empty
from d2_notebook.data.analysis.text import OneOutcomeColumn

if TYPE_CHECKING:
    from d2_notebook.data.analysis.plan import Plan

__all__ = ["one_outcome_columns"]


def one_outcome_columns(missing: Mapping[str, Moments], plan: Plan, total: Moments,
                        alpha: float, *, known: Collection[str] = ()
                        ) -> tuple[list[OneOutcomeColumn], set[str]]:
    """The columns recorded for one outcome only, and the dimensions that read them.

    Args:
        missing: Dimension name -> the moments of its missing-value group (over both arms
            or periods), for the dimensions that have one.
        plan: The dimensions' plan (their columns; 1:N memberships are skipped: their
            missing value is "has a child with no value", whose rest holds the rows with
            no child at all).
        total: The population's moments.
        alpha: The level the "beyond chance" test is held to.
        known: Dimensions already named as restating the metric, not considered again.

    Returns:
        One entry per column (its date parts' dimensions together), named by the column,
        and the names of every dimension reading one of them.
    """
    planned = {p.name: p for p in plan.dimensions}
    columns: dict[str, OneOutcomeColumn] = {}
    names: set[str] = set()
    for name, moments in missing.items():
        dimension = planned.get(name)
        if dimension is None or dimension.membership or name in known:
            continue
        outcome = outcome_left_empty(moments, total, alpha)
        if outcome is None:
            continue
        names.add(name)
        column = dimension.dimension.column_name if dimension.dimension is not None else name
        columns.setdefault(column, OneOutcomeColumn.of(column, outcome, moments, total))
    return list(columns.values()), names
