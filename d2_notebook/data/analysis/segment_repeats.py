"""Segments of a scan that say one fact many times, named once (:func:`segment_scan`'s
summary and flags).

- A constant segment: its metric is one value on every one of its rows while its rest
  varies (a placeholder 0 on every expense not processed yet): not a deviation, set aside
  with its complement and named in one line with a where that leaves it out.
- Segments of different dimensions that are the same rows (or one all the other rows of
  another): the best ranked leads and names the others.
- A column recorded for one outcome only (a 0/1 metric): empty on every row of one
  outcome, filled on some of the other's, so every filled value has a rate of exactly 0
  or 1 and its missing value holds the whole outcome: set aside and named in one line.

See :mod:`~d2_notebook.data.analysis.segment_scan` for the rules.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from d2_notebook.data.analysis.one_outcome import one_outcome_columns
from d2_notebook.data.analysis.stats import (
    Moments,
    is_binary,
    is_constant,
    same_moments,
)
from d2_notebook.data.analysis.text import MISSING, OneOutcomeColumn, figure, segment_label
from d2_notebook.data.dimensions import DatePart, DimensionKind
from d2_notebook.data.schema import quote_ident

if TYPE_CHECKING:
    from d2_notebook.data.analysis.common import Prepared
    from d2_notebook.data.analysis.plan import Plan

__all__ = ["Constant", "also_line", "constant_line", "recorded_for_one_outcome",
           "same_row_groups", "set_aside_constants"]

CONSTANTS_NAMED = 6
"""Most constant segments the summary names one by one."""


@dataclass(frozen=True)
class Constant:
    """Segments whose metric is one value on every row: the same rows reached through one
    or more dimensions (``same``, the first leading), and the segments that are all the
    other rows (``complements``)."""

    same: list[dict]
    complements: list[dict]


def set_aside_constants(rows: list[dict], total: Moments) -> list[Constant]:
    """The segments that would be flagged but whose metric is one value on every row
    (the rest varying), grouped by the rows they cover, largest first, with the flagged
    segments that are their complement (all the other rows); these stop being flagged.

    Only a constant 0, or any constant on a column's missing value, is set aside: that is
    how a placeholder looks (a duration of 0 for what has not ended). Another constant (a
    product rated 1 by every buyer) is a finding and stays flagged. A 0/1 metric has
    none: its rate of exactly 0 or 1 in a segment is a finding, and a column its outcome
    sets is named apart (:func:`~d2_notebook.data.analysis.common.column_copies`).
    """
    if is_binary(total):
        return []
    candidates = [r for r in rows if r["flagged"]]
    constant = sorted((r for r in candidates if is_constant(r["moments"], total)
                       and (r["is_missing"] or abs(r["metric"]) <= 1e-12)
                       and not is_constant(r["rest_moments"], total)),
                      key=lambda r: (-r["n"], -r["score"]))
    found: list[Constant] = []
    for row in constant:
        same = next((c for c in found if c.same[0]["dimension"] != row["dimension"]
                     and same_moments(row["moments"], c.same[0]["moments"], total)), None)
        if same is None:
            found.append(Constant([row], []))
        else:
            same.same.append(row)
    chosen = {id(row) for row in constant}
    for row in candidates:
        if id(row) in chosen:
            continue
        rest_of = next((c for c in found
                        if same_moments(row["moments"], c.same[0]["rest_moments"], total)), None)
        if rest_of is not None:
            rest_of.complements.append(row)
    for cluster in found:
        for row in [*cluster.same, *cluster.complements]:
            row["flagged"], row["set_aside"] = False, True
    return found


def same_row_groups(flagged: list[Any], total: Moments, plan: Plan, *,
                    few_values: bool) -> list[tuple[Any, list[tuple[Any, bool]]]]:
    """The flagged rows (in rank order) grouped by the rows their segments cover: each
    group's first row leads, followed by the rows of other dimensions whose segment is the
    same rows (False) or all the other rows (True), judged by equal moments
    (:func:`~d2_notebook.data.analysis.stats.same_moments`). For a metric of few values
    (``few_values``: a 0/1 rate, a rating, a small count), whose moments are little more
    than counts, equal moments of different rows are a real chance: only date parts of one
    column that must be the same rows when their counts agree are grouped
    (:func:`_may_be_same_rows`)."""
    groups: list[tuple[Any, list[tuple[Any, bool]]]] = []
    for row in flagged:
        for lead, same in groups:
            if lead.dimension == row.dimension or any(m.dimension == row.dimension
                                                      for m, _ in same):
                continue
            if few_values:
                if (_may_be_same_rows(lead, row, plan)
                        and same_moments(row.moments, lead.moments, total)):
                    same.append((row, False))
                    break
                continue
            if same_moments(row.moments, lead.moments, total):
                same.append((row, False))
                break
            if same_moments(row.moments, lead.rest_moments, total):
                same.append((row, True))
                break
        else:
            groups.append((row, []))
    return groups


def _may_be_same_rows(a: Any, b: Any, plan: Plan) -> bool:
    """Whether two segments of date parts of one column hold the same rows wherever
    their counts agree: both the column's missing value, or a month and the month of
    the year it falls in (data of a single year)."""
    first, second = (plan.dimensions[r.dimension_index].dimension for r in (a, b))
    if (first is None or second is None or first.part is None or second.part is None
            or first.column_name != second.column_name):
        return False
    if a.is_missing or b.is_missing:
        return bool(a.is_missing and b.is_missing)
    values = {first.part: a.value, second.part: b.value}
    return (set(values) == {DatePart.MONTH, DatePart.MONTH_OF_YEAR}
            and values[DatePart.MONTH][-2:].lstrip("0") == values[DatePart.MONTH_OF_YEAR])


def _get(row: Any, name: str) -> Any:
    """A field of a row, a dict (while rows are built) or a frame's named tuple."""
    return row[name] if isinstance(row, dict) else getattr(row, name)


def _named(rows: list[Any], plan: Plan) -> list[tuple[str, str | None]]:
    """Segments by name, with the column when the name stands for the missing value of
    two or more date parts of one column, written once (``month/hour(t.d) = (missing)``)."""
    parts: dict[str, list[str]] = {}
    order: list[str] = []
    for row in rows:
        dimension = plan.dimensions[_get(row, "dimension_index")].dimension
        if (_get(row, "is_missing") and dimension is not None
                and dimension.part is not None):
            if dimension.column_name not in parts:
                order.append(dimension.column_name)
            parts.setdefault(dimension.column_name, []).append(dimension.part.value)
        else:
            order.append(segment_label(_get(row, "dimension"), _get(row, "value")))
    named: list[tuple[str, str | None]] = []
    for name in order:
        if name not in parts:
            named.append((name, None))
        elif len(parts[name]) == 1:
            named.append((segment_label(f"{parts[name][0]}({name})", MISSING), None))
        else:
            named.append((segment_label(f"{'/'.join(parts[name])}({name})", MISSING), name))
    return named


def _names(rows: list[Any], plan: Plan) -> str:
    """:func:`_named`, as one text."""
    return ", ".join(name for name, _ in _named(rows, plan))


def also_line(same: list[tuple[Any, bool]], plan: Plan) -> str:
    """What a flagged segment's line adds for the segments of other dimensions that are
    its rows (or all the other rows), named once with it instead of flagged again."""
    text = ""
    if rows := [row for row, complement in same if not complement]:
        text += f"; also {_names(rows, plan)} (the same rows)"
    if rows := [row for row, complement in same if complement]:
        text += f"; also {_names(rows, plan)} (all the other rows: the same split)"
    return text


def constant_line(constants: list[Constant], prepared: Prepared, missing: set[int]) -> str:
    """The summary line naming the constant segments, with a filter that leaves the
    largest out where one can be written plainly."""
    plan = prepared.plan
    named = []
    for cluster in constants[:CONSTANTS_NAMED]:
        lead = cluster.same[0]
        text = (f"{_cluster_name(cluster.same, plan)}: {figure(lead['metric'])} on all "
                f"{lead['n']} rows")
        if cluster.complements:
            text += (f" (its complement {_names(cluster.complements, plan)}, the other "
                     f"{lead['rest_n']} rows, is not flagged either)")
        named.append(text)
    if len(constants) > CONSTANTS_NAMED:
        named.append(f"... {len(constants) - CONSTANTS_NAMED} more (metric_low = "
                     "metric_high in their rows)")
    condition = next((c for row in constants[0].same
                      if (c := _leave_out(row, prepared, missing)) is not None), None)
    if condition is None:
        advice = "scan again with a where that leaves these rows out to rank the rest"
    else:
        where = f"({prepared.where}) AND {condition}" if prepared.where else condition
        advice = (f"scan again with a where that leaves them out (e.g. where {where}) to "
                  "rank the rest")
    return ("Constant segments, not flagged (the metric is the same value on every row: a "
            "placeholder or a value set by the segment, not a deviation): "
            f"{'; '.join(named)}. Other segments are compared with a rest that holds these "
            f"rows; {advice}.")


def _cluster_name(rows: list[dict], plan: Plan) -> str:
    """A constant segment by name (the column itself when it is the missing value of two
    or more of the column's date parts), the others that are the same rows after "also"."""
    (head, column), *others = _named(rows, plan)
    if column is not None:
        head = f"{segment_label(column, MISSING)} (the segments {head})"
    return head + (f" (also {', '.join(name for name, _ in others)})" if others else "")


def _leave_out(row: dict, prepared: Prepared, missing: set[int]) -> str | None:
    """A condition that leaves a constant segment's rows out, when its dimension is a
    column of a source table and the segment its missing value (``IS NOT NULL``) or one
    plain value (``<>``, or ``IS DISTINCT FROM`` where the column has missing values, so
    that they stay); None otherwise (a bin, a date part's value, a 1:N attribute...)."""
    planned = prepared.plan.dimensions[row["dimension_index"]]
    dimension = planned.dimension
    if dimension is None or planned.membership:
        return None
    alias = prepared.source.alias_of(dimension.table)
    if alias is None:
        return None
    ref = f"{alias}.{quote_ident(dimension.column)}"
    if row["is_missing"]:
        return f"{ref} IS NOT NULL"
    if dimension.kind is not DimensionKind.VALUES or dimension.part is not None:
        return None
    literal = "'" + row["value"].replace("'", "''") + "'"
    unequal = "IS DISTINCT FROM" if row["dimension_index"] in missing else "<>"
    return f"{ref} {unequal} {literal}"


def recorded_for_one_outcome(rows: list[dict], total: Moments, plan: Plan, *,
                             known: Collection[str], alpha: float) -> list[OneOutcomeColumn]:
    """The columns recorded for one outcome only
    (:func:`~d2_notebook.data.analysis.one_outcome.one_outcome_columns`), among the
    dimensions with a flagged segment (``known``: dimensions already named as restating
    the metric): every segment of a dimension reading one stops being flagged (its rows
    are kept)."""
    flagged = {row["dimension"] for row in rows if row["flagged"]}
    missing = {row["dimension"]: row["moments"] for row in rows
               if row["is_missing"] and row["dimension"] in flagged}
    columns, dimensions = one_outcome_columns(missing, plan, total, alpha, known=known)
    for row in rows:
        if row["dimension"] in dimensions:
            row["flagged"], row["set_aside"] = False, True
    return columns
