"""decompose: the change of a metric between two periods, split into per-segment shares.

The population is the rows whose ``period`` expression equals ``before`` or ``after``
(compared as text; default the earliest and the latest value). The overall change is
``Δ = M_after − M_before``. For each candidate dimension (a 1:N attribute value counts as
its own yes/no dimension) the rows of each period split into segments ``s`` with row
shares ``w0_s`` (before), ``w1_s`` (after) and metrics ``m0_s``, ``m1_s``; the symmetric
(Kitagawa) decomposition gives each segment

- a **rate part** ``(w0_s + w1_s)/2 · (m1_s − m0_s)``: its own metric moved,
- a **mix part** ``(w1_s − w0_s) · ((m0_s + m1_s)/2 − M̄)``: its share of the rows moved,
  weighed by how far its metric lies from the overall one (``M̄``, the mean of the two
  periods' overall metrics),

and a **contribution** (their sum). The mix part is centred on ``M̄`` so that it says
which way a segment moved the metric: a segment that grew with a metric below the
average pulls it down (a new segment of near-zero orders shows its dilution), one at the
average moves nothing. The row shares of a dimension change by zero in sum, so the
centring changes no dimension's total: over the segments of one dimension the
contributions add up to Δ exactly, and each segment's **share of the change** is
``contribution / Δ`` (negative: it worked against the change). A segment absent from one
period has its other period's metric there: its whole contribution is mix. Intervals are
95% normal intervals given the observed row shares (the counts are observed, not
estimated): the rate change's from the two periods' moments, the share's by the delta
method for ``c/Δ`` with the covariance of ``c`` and ``Δ``; the sampling error of ``M̄``
is left out (it enters with the weight ``|w1_s − w0_s|``, small next to the segment's
own).

A rate change that every segment of a dimension shares (the metric rose by the same amount
in each; the comparison is of absolute changes, so a rise by the same *percentage* over
segments at different levels still differs between them) localises nothing: each
segment's share then follows its row count. So each
segment's rate change is also compared with **the rest** of its dimension: the other
segments with rows in both periods (but the DRIVERs, see below), pooled with the same
weights as the rate part (their
mean row shares ``w̄_t = (w0_t + w1_t)/2``), ``R_s = Σ_{t≠s} w̄_t·(m1_t − m0_t) / Σ_{t≠s}
w̄_t`` (their rate parts over their rows: the rest's own shifts of mix do not enter), with
variance ``Σ (w̄_t / Σ w̄)² · Var(m1_t − m0_t)`` given the row shares. The difference
``(m1_s − m0_s) − R_s`` (independent rows, so the variances add) gets a 95% interval and a
two-sided p-value; these p-values form a Benjamini–Hochberg family of their own (the
segments tested, as below, that have a rest with at least the minimum support in each
period). A segment **stands out** when that q is below ``alpha`` and the difference is
material. A segment is flagged as a DRIVER when its rate change is beyond chance
(Benjamini–Hochberg across the segments tested, both periods with at least the minimum
support), it stands out from the rest in the direction it moved (it rose more than the
rest, or fell more: a segment that rose less than a rest carried by another segment's
rise holds no part of the change's location), and its contribution is material
(:func:`~d2_notebook.data.analysis.stats.is_material`); the two families each hold at
``alpha`` and a DRIVER needs both (an intersection–union test). The DRIVERs are found in
rounds: those of one round are left out of every rest in the next (unless nothing else is
left), until the DRIVERs are the segments left out. So a segment that rose above an
unchanged baseline is a DRIVER even when a larger rise elsewhere lifts the pooled rest
above it, and segments that share a common rise beside a local spike are none; the rounds
re-test on the same data, so their ``vs_rest_q`` is a little optimistic after the first
(it is exact when no DRIVER is found, as in an evenly spread change). A dimension of which no
segment stands out spreads the change evenly: the summary says so, since its shares then
follow row counts. The shares of different dimensions each add up to the whole change on
their own: they split the same change in different ways and never add up across
dimensions. When
Δ itself is not material, no share is computed: there is no change to share out. A
numeric column that restates the outcome (a numeric copy, a column the outcome sets:
:func:`~d2_notebook.data.analysis.common.column_copies`) is not split by, nor a column
recorded for one outcome only (:mod:`~d2_notebook.data.analysis.one_outcome`): their
segments would share out the change by outcome.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from d2_notebook.data.analysis.common import (
    DEFAULT_ALPHA,
    Pass,
    Prepared,
    Support,
    check_settings,
    column_copies,
    definition_lines,
    prepare,
    run_pass,
)
from d2_notebook.data.analysis.dimension_rest import (
    MIX_FLAGGED_NOTE,
    NO_REST,
    even_lines,
    flag_drivers,
)
from d2_notebook.data.analysis.inputs import literal
from d2_notebook.data.analysis.one_outcome import one_outcome_columns
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool, Flag, FlagKind, capped
from d2_notebook.data.analysis.stats import (
    Z95,
    Comparison,
    Moments,
    OutcomeValue,
    benjamini_hochberg,
    chi_square_independence,
    compare,
    is_material,
    metric_scale,
)
from d2_notebook.data.analysis.text import (
    MISSING,
    OneOutcomeColumn,
    figure,
    interval,
    name_list,
    near_copy_line,
    one_outcome_line,
    outcome_set_line,
    segment_label,
)
from d2_notebook.data.catalog_access import dialect_sql

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["OVERALL", "decompose"]

COLUMNS = ["dimension", "segment", "n_before", "n_after", "share_before", "share_after",
           "metric_before", "metric_after", "rate_change", "ci_low", "ci_high", "q_value",
           "rate_part", "mix_part", "contribution", "contribution_low", "contribution_high",
           "share_of_change", "share_low", "share_high", "rest_rate_change", "vs_rest",
           "vs_rest_low", "vs_rest_high", "vs_rest_q", "flagged"]
OVERALL = "(overall)"
"""The ``dimension`` of the first row: the whole change, with its interval."""
MIX_OF_ALL = "(mix of all segments)"
"""The ``segment`` of each dimension's mix row (after the overall row): its whole mix part
(the change its row shares' shift made), with its 95% interval and share of the change."""
MIN_OVERLAP = 0.1
"""Least overlap of a dimension's row shares in the two periods for it to be split: below it
the dimension tracks the period itself (a second date column); a large mix shift above it is
exactly what the mix part measures."""
DOMINANT_SHARE = 0.9
"""A segment holding this share of the rows in both periods makes its dimension nearly
one value: it is not ranked among the largest contributions (:func:`_dominated`)."""
_DIMENSIONS_SHOWN = 4
_SEGMENTS_SHOWN = 3


@dataclass(frozen=True)
class _Segment:
    """One segment of one dimension: its moments before and after."""

    dimension: str
    value: str
    before: Moments
    after: Moments


def decompose(
    sql: GuardedSQL,
    *,
    source: str,
    metric: str,
    period: str,
    before: str | float | None = None,
    after: str | float | None = None,
    where: str | None = None,
    dimensions: list[str] | None = None,
    min_support: int | None = None,
    alpha: float = DEFAULT_ALPHA,
    max_levels: int = 30,
) -> AnalysisResult:
    """Split the change of the metric from ``before`` to ``after`` into segment shares.

    Args:
        sql: The guarded connection; the generated statement runs through it.
        source: A table, or a FROM clause with joins and aliases.
        metric: One mean over rows, ``avg(<per-row expression>)``.
        period: A column expression over the source naming the period of a row (e.g.
            ``year(o.placed_on)``); compared with ``before`` and ``after`` as text.
        before: The earlier period's value; default the smallest value of ``period``.
        after: The later period's value; default the largest value of ``period``.
        where: Optional filter on the population (one boolean expression).
        dimensions: Dimension names or expressions; default every reachable candidate.
        min_support: Fewest rows a segment needs in each period for its rate change to be
            tested; default adapted to the data
            (:class:`~d2_notebook.data.analysis.common.Support`).
        alpha: False-discovery level of the rate-change tests (Benjamini–Hochberg).
        max_levels: Most distinct values a column may have to be a dimension.

    Returns:
        The overall change first (``dimension`` :data:`OVERALL`), then one row per
        (dimension, segment) (:data:`COLUMNS`), dimensions with the largest single share
        first and, within one, segments by the size of their contribution.

    Raises:
        ValueError: A bad input (e.g. a period value no row has: the values are listed).
        UnsafeSQLError / QueryFailedError: As :func:`segment_scan`.
    """
    check_settings(min_support, alpha)
    sql = dialect_sql(sql)  # any source: its SQL is transpiled and guarded there
    if not isinstance(period, str) or not period.strip():
        raise ValueError("period is required: a column expression over the source naming "
                         "each row's period, e.g. year(o.placed_on)")
    prepared = prepare(sql, source=source, metric=metric, where=where, dimensions=dimensions,
                       exclude={"period": period}, max_levels=max_levels)
    as_text = f"CAST(({period}) AS VARCHAR)"
    user_where = prepared.where
    before, after = _periods(sql, prepared, period, before, after)
    if before == after:
        raise ValueError(f"before and after are the same period ({before}); name two "
                         "different values of period")
    population = f"{as_text} IN ({literal(before)}, {literal(after)})"
    prepared = Prepared(prepared.catalog, prepared.source, prepared.value_sql,
                        f"({prepared.where}) AND {population}" if prepared.where
                        else population, prepared.plan)
    scan = run_pass(sql, prepared, extra=((
        f"CASE WHEN {as_text} = {literal(after)} THEN 1 ELSE 0 END", "__x"),), by=("__x",))
    first, last = scan.total(0), scan.total(1)
    if first.n == 0 or last.n == 0:
        _missing_period(sql, prepared.source.sql, user_where, period,
                        before if first.n == 0 else after)
    change = compare(last, first)
    scale = metric_scale(first + last)
    shared = is_material(change.difference, scale)
    support = Support.of(min_support, (first + last).n, named=dimensions is not None)
    pooled = (first + last).var or None
    rows = [_overall_row(first, last, change)]
    centre = (first.mean + last.mean) / 2
    segments, aligned = _overlapping(_segments(scan, prepared, first, last), first,
                                     last)
    # the outcome again: splitting by it would sort the rows by their outcome
    restated = column_copies(sql, prepared, first + last,
                             requested=dimensions is not None)
    one_outcome, left_empty = ([], set()) if dimensions is not None else one_outcome_columns(
        {s.dimension: s.before + s.after for s in segments if s.value == MISSING},
        prepared.plan, first + last, alpha, known=restated.names)
    segments = [s for s in segments if s.dimension not in {*restated.names, *left_empty}]
    for segment in segments:
        rows.append(_segment_row(segment, first, last, pooled, support, centre))
    if shared:
        _add_shares(rows[1:], change.difference)
    tested = [r for r in rows[1:] if r["tested"]]
    for row, q in zip(tested, benjamini_hochberg([r["p_value"] for r in tested]), strict=True):
        row["q_value"] = q
    for row in rows:
        row.setdefault("q_value", math.nan)
    flag_drivers(rows[1:], support, alpha, scale)
    for row in rows[:1]:
        row |= {"vs_rest_q": math.nan, "stands_out": False, "flagged": False}
    frame = _ranked(pd.DataFrame(rows))
    flags = [Flag(FlagKind.DRIVER, r.dimension, _driver_text(r, shared))
             for r in frame[frame["flagged"]].itertuples()]
    flags += _mix_flags(frame.iloc[1:], change.difference, shared, scale, alpha)
    mixed = {f.dimension for f in flags if f.kind is FlagKind.MIX_SHIFT}
    even = even_lines(frame.iloc[1:], mixed, scale) if shared else []
    summary = _summary(metric, period, before, after, first, last, change, shared, frame,
                       flags, support, alpha, prepared, aligned, restated.numeric,
                       restated.set_by_outcome, even, one_outcome)
    frame = _with_mix_rows(frame, change if shared else None, mixed, first.n, last.n)
    return capped(AnalysisTool.DECOMPOSE, scan.sql, frame[COLUMNS], sql.max_rows,
                  scan.duration_s, summary, flags)


def _periods(sql: GuardedSQL, prepared: Prepared, period: str, before: object,
             after: object) -> tuple[str, str]:
    """``before`` and ``after`` as text; the smallest and largest period when omitted."""
    for name, value in (("before", before), ("after", after)):
        if value is not None and (isinstance(value, bool) or not isinstance(
                value, str | int | float)):
            raise ValueError(f"{name} must be a value of period (text or a number), "
                             f"got {value!r}")
    if before is not None and after is not None:
        first, last = _as_stored(sql, prepared, period, _text(before), _text(after))
        return first, last
    condition = f" WHERE {prepared.where}" if prepared.where else ""
    found = sql.run(f"SELECT CAST(min({period}) AS VARCHAR), CAST(max({period}) AS VARCHAR) "
                    f"FROM {prepared.source.sql}{condition}", max_rows=1).frame.iloc[0]
    if found.isna().any():
        raise ValueError(f"period {period} has no value in the population: name a column "
                         "expression that is set on the rows")
    named = [_text(v) for v in (before, after) if v is not None]
    stored = iter(_as_stored(sql, prepared, period, *named))
    return (next(stored) if before is not None else str(found.iloc[0]),
            next(stored) if after is not None else str(found.iloc[1]))


def _as_stored(sql: GuardedSQL, prepared: Prepared, period: str,
               *values: str) -> tuple[str, ...]:
    """``values`` as the period's text gives them: a date named for a period that is a
    timestamp (``date_trunc`` of a date) is its midnight ("2024-01-01" →
    "2024-01-01 00:00:00"); any other value is kept (a missing one is reported later).
    One aggregate query for every value that looks like a date; none for the others."""
    dates = [v for v in values if len(v) == 10 and v[:4].isdigit()]
    if not dates:
        return values
    as_text = f"CAST(({period}) AS VARCHAR)"
    counts = ", ".join(f"count(*) FILTER (WHERE {as_text} = {literal(text)})"
                       for v in dates for text in (v, f"{v} 00:00:00"))
    condition = f" WHERE ({prepared.where})" if prepared.where else ""
    found = [int(n) for n in sql.run(f"SELECT {counts} FROM {prepared.source.sql}{condition}",
                                     max_rows=1).frame.iloc[0].tolist()]
    midnight = {v for i, v in enumerate(dates) if found[2 * i] == 0 and found[2 * i + 1] > 0}
    return tuple(f"{v} 00:00:00" if v in midnight else v for v in values)


def _text(value: str | float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _missing_period(sql: GuardedSQL, source: str, where: str | None, period: str,
                    value: str) -> None:
    condition = f" WHERE ({where})" if where else ""
    found = sql.run(f"SELECT DISTINCT CAST(({period}) AS VARCHAR) AS v FROM "
                    f"{source}{condition} ORDER BY v LIMIT 12",
                    max_rows=12).frame["v"].tolist()
    raise ValueError(f"no row has period {period} = {value!r}; its values include: "
                     f"{', '.join(str(v) for v in found) or '(none)'}")


def _segments(scan: Pass, prepared: Prepared, first: Moments, last: Moments) -> list[_Segment]:
    """Every dimension's segments with their moments in each period; a 1:N attribute
    value is a yes/no dimension of its own (its rows and the others')."""
    values = {index: {value: (early, late) for value, (late, early) in found.items()}
              for index, found in scan.split_by_flag().items()}
    segments = []
    for index, planned in enumerate(prepared.plan.dimensions):
        found = values.get(index, {})
        if planned.membership:
            for value, (m0, m1) in sorted(found.items()):
                name = f"{planned.name} = {value}"
                segments += [_Segment(name, "yes", m0, m1),
                             _Segment(name, "no", first - m0, last - m1)]
        else:
            segments += [_Segment(planned.name, v, m0, m1) for v, (m0, m1)
                         in sorted(found.items())]
    return segments


def _overlapping(segments: list[_Segment], first: Moments,
                 last: Moments) -> tuple[list[_Segment], list[str]]:
    """The segments of the dimensions whose values overlap the periods, and the names of
    those that do not: the overlap of a dimension's row shares in the two periods,
    ``Σ min(w0_s, w1_s)``, must be at least :data:`MIN_OVERLAP` (a second date column
    that tracks the period would "explain" any change)."""
    overlap: dict[str, float] = {}
    for segment in segments:
        overlap[segment.dimension] = overlap.get(segment.dimension, 0.0) + min(
            segment.before.n / first.n, segment.after.n / last.n)
    aligned = [name for name, shared in overlap.items() if shared < MIN_OVERLAP]
    return [s for s in segments if s.dimension not in aligned], aligned


def _overall_row(first: Moments, last: Moments, change: Comparison) -> dict:
    return {"dimension": OVERALL, "segment": "", "n_before": int(first.n),
            "n_after": int(last.n), "share_before": 1.0, "share_after": 1.0,
            "metric_before": first.mean, "metric_after": last.mean,
            "rate_change": change.difference, "ci_low": change.low, "ci_high": change.high,
            "p_value": change.p_value, "rate_part": math.nan, "mix_part": math.nan,
            "contribution": change.difference, "contribution_low": change.low,
            "contribution_high": change.high, "share_of_change": 1.0, "share_low": math.nan,
            "share_high": math.nan, "tested": False, **NO_REST}


def _segment_row(segment: _Segment, first: Moments, last: Moments, pooled: float | None,
                 support: Support, centre: float) -> dict:
    m0, m1 = segment.before, segment.after
    w0, w1 = m0.n / first.n, m1.n / last.n
    mean0 = m0.mean if m0.n else m1.mean
    mean1 = m1.mean if m1.n else m0.mean
    rate = (w0 + w1) / 2 * (mean1 - mean0)
    mix = (w1 - w0) * ((mean0 + mean1) / 2 - centre)
    contribution = rate + mix
    both = m0.n > 0 and m1.n > 0
    moved = compare(m1, m0, pooled_var=pooled) if both else None
    tested = both and min(m0.n, m1.n) >= support.rows

    def own(group: Moments) -> float:
        return group.var if group.var > 0 or pooled is None else pooled

    def variance(group: Moments, total: Moments) -> float:
        return (group.n / total.n) ** 2 * own(group) / group.n if group.n else 0.0
    # the variance of the segment's mean metric (m0 + m1)/2, and the covariance of its mix
    # part with its contribution (w1·m1 − w0·m0 − (w1 − w0)·M̄, M̄ held fixed)
    mean_var = (0.25 * (own(m0) / m0.n + own(m1) / m1.n) if both
                else own(m1 if m1.n else m0) / max(m1.n, m0.n, 1.0))
    mix_cov = ((w1 - w0) / 2 * (w1 * own(m1) / m1.n - w0 * own(m0) / m0.n) if both
               else (w1 - w0) * (w1 if m1.n else -w0) * mean_var)
    half = Z95 * math.sqrt(variance(m1, last) + variance(m0, first))
    return {"dimension": segment.dimension, "segment": segment.value,
            "n_before": int(m0.n), "n_after": int(m1.n), "share_before": w0,
            "share_after": w1, "metric_before": m0.mean, "metric_after": m1.mean,
            "rate_change": moved.difference if moved else math.nan,
            "ci_low": moved.low if moved else math.nan,
            "ci_high": moved.high if moved else math.nan,
            "p_value": moved.p_value if tested else math.nan,
            "rate_part": rate, "mix_part": mix, "contribution": contribution,
            "contribution_low": contribution - half, "contribution_high": contribution + half,
            "share_of_change": math.nan, "share_low": math.nan, "share_high": math.nan,
            "tested": tested, "variance": variance(m1, last) + variance(m0, first),
            "mix_variance": (w1 - w0) ** 2 * mean_var, "mix_covariance": mix_cov,
            "mix_distance": (mean0 + mean1) / 2 - centre, "mean_before": mean0,
            "mean_after": mean1, "weight": (w0 + w1) / 2 if both else 0.0,
            "rate_variance": moved.se ** 2 if moved else math.nan, **NO_REST}


def _add_shares(rows: list[dict], delta: float) -> None:
    """Each segment's ``contribution / Δ`` and its 95% interval: the delta method for
    ``c/Δ`` given the row shares, where ``Δ`` is the sum of the contributions of the
    segment's dimension (so ``Cov(c, Δ) = Var(c)``). A segment with rows in one period
    only gets none (NaN): its contribution is all mix against the overall metric, no clean
    share of the change (see :func:`_one_period`)."""
    totals: dict[str, float] = {}
    for row in rows:
        totals[row["dimension"]] = totals.get(row["dimension"], 0.0) + row["variance"]
    for row in rows:
        if _one_period(row["n_before"], row["n_after"]):
            continue
        share = row["contribution"] / delta
        var_c, var_delta = row["variance"], totals[row["dimension"]]
        var_share = max(0.0, var_c - 2 * share * var_c + share * share * var_delta) / delta ** 2
        half = Z95 * math.sqrt(var_share)
        row["share_of_change"], row["share_low"], row["share_high"] = (share, share - half,
                                                                       share + half)


def _one_period(n_before: Any, n_after: Any) -> Any:
    """A segment with rows in one of the two periods only (new, or gone): a bool for
    counts, a boolean Series for columns of counts."""
    return (n_before == 0) | (n_after == 0)


def _with_mix_rows(frame: pd.DataFrame, change: Comparison | None, mixed: set[str],
                   n_before: float, n_after: float) -> pd.DataFrame:
    """``frame`` with a :data:`MIX_OF_ALL` row per dimension right after the overall row
    (so a long table cut for preview keeps them): the sum of its segments' mix parts, its
    95% interval and, when the change is shared out (``change``), its share of the change
    by the delta method, so a verdict can cite a dimension's mix shift from a row.

    Unlike a segment's interval, the mix row's does not hold the row shares fixed: their
    shift is what it measures. Its variance adds to the segments' mean metrics' the
    multinomial variance of the shares in each period, ``(Σ w·d² − (Σ w·d)²) / n`` with
    ``d`` a segment's distance from the overall metric (``M̄`` held fixed), so a mix that
    moved within chance gets an interval holding zero."""
    mix_rows = []
    for dimension, group in frame.iloc[1:].groupby("dimension", sort=False):
        d = group["mix_distance"].to_numpy(dtype=float)
        w0 = group["share_before"].to_numpy(dtype=float)
        w1 = group["share_after"].to_numpy(dtype=float)
        m0 = group["mean_before"].to_numpy(dtype=float)
        m1 = group["mean_after"].to_numpy(dtype=float)
        mix = float(group["mix_part"].sum())
        var_mix = (float(group["mix_variance"].sum())
                   + _multinomial_covariance(w1, d, d, n_after)
                   + _multinomial_covariance(w0, d, d, n_before))
        half = Z95 * math.sqrt(var_mix)
        row = {"dimension": dimension, "segment": MIX_OF_ALL,
               "n_before": int(group["n_before"].sum()), "n_after": int(group["n_after"].sum()),
               "mix_part": mix, "contribution": mix, "contribution_low": mix - half,
               "contribution_high": mix + half, "flagged": dimension in mixed}
        if change is not None:
            delta = change.difference
            var_delta = ((change.high - change.low) / (2 * Z95)) ** 2
            cov = (float(group["mix_covariance"].sum())
                   + _multinomial_covariance(w1, d, m1, n_after)
                   + _multinomial_covariance(w0, d, m0, n_before))
            share = mix / delta
            var_share = max(0.0, var_mix - 2 * share * cov + share * share * var_delta)
            width = Z95 * math.sqrt(var_share) / abs(delta)
            row |= {"share_of_change": share, "share_low": share - width,
                    "share_high": share + width}
        mix_rows.append(row)
    if not mix_rows:
        return frame
    return pd.concat([frame.iloc[:1], pd.DataFrame(mix_rows), frame.iloc[1:]],
                     ignore_index=True)


def _multinomial_covariance(w: np.ndarray, x: np.ndarray, y: np.ndarray, n: float) -> float:
    """The covariance of ``Σ w·x`` and ``Σ w·y`` when the shares ``w`` are the observed
    shares of ``n`` rows (a multinomial sample); 0 for no rows."""
    return float((w * x * y).sum() - (w * x).sum() * (w * y).sum()) / n if n else 0.0


def _ranked(frame: pd.DataFrame) -> pd.DataFrame:
    """The overall row, then dimensions by their largest |share| (|contribution| when no
    share), segments within each by |contribution|."""
    body = frame.iloc[1:].copy()
    body["_size"] = body["contribution"].abs()
    body["_dim"] = body.groupby("dimension")["_size"].transform("max")
    body = body.sort_values(["_dim", "dimension", "_size"], ascending=[False, True, False],
                            kind="stable").drop(columns=["_size", "_dim"])
    return pd.concat([frame.iloc[:1], body], ignore_index=True)


def _dominated(body: pd.DataFrame, delta: float,
               mixed: set[str]) -> dict[str, tuple[str, float, float]]:
    """The dimensions one segment of which holds :data:`DOMINANT_SHARE` of the rows in
    both periods and carries about the whole change ``delta`` (within a fifth), with that
    segment and its two row shares. Such a segment's contribution is about the whole
    change for any cause (a real-model judge read "year(closed_at) 2023: 101%" ranked
    first as a finding). A dimension with a DRIVER or a MIX SHIFT (``mixed``), or whose
    small segments carry the change (new test orders diluting the mean), stays ranked."""
    ranked = mixed | set(body.loc[body["flagged"].astype(bool), "dimension"])
    dominated: dict[str, tuple[str, float, float]] = {}
    for row in body.itertuples():
        if (row.share_before >= DOMINANT_SHARE and row.share_after >= DOMINANT_SHARE
                and 0.8 <= row.contribution / delta <= 1.2 and row.dimension not in ranked):
            dominated[row.dimension] = (str(row.segment), row.share_before, row.share_after)
    return dominated


def _driver_text(row: object, shared: bool) -> str:
    share = (f"explains {_percent(row.share_of_change)} of the change (95% CI "
             f"{_percent(row.share_low)} to {_percent(row.share_high)}); " if shared else "")
    return (f"DRIVER {segment_label(row.dimension, row.segment)}: {share}its metric "
            f"{figure(row.metric_before)} -> {figure(row.metric_after)} (rate change "
            f"{figure(row.rate_change)}, 95% CI {interval(row.ci_low, row.ci_high)},"
            f" q = {row.q_value:.2g}); share of rows {_percent(row.share_before)} -> "
            f"{_percent(row.share_after)}; rate part {figure(row.rate_part)}, mix part "
            f"{figure(row.mix_part)}; the rest of {row.dimension}: rate change "
            f"{figure(row.rest_rate_change)}, difference {figure(row.vs_rest)} (95% CI "
            f"{interval(row.vs_rest_low, row.vs_rest_high)}, q = "
            f"{row.vs_rest_q:.2g})")


def _mix_flags(body: pd.DataFrame, delta: float, shared: bool, scale: float,
               alpha: float) -> list[Flag]:
    """MIX SHIFT per dimension: its row shares differ between the periods (chi-square,
    Benjamini–Hochberg over dimensions) and its summed mix part is material."""
    groups = list(body.groupby("dimension", sort=False))
    p_values = [chi_square_independence([[r.n_before, r.n_after] for r in g.itertuples()])
                for _, g in groups]
    flags = []
    for (dimension, group), q in zip(groups, benjamini_hochberg(p_values), strict=True):
        mix = float(group["mix_part"].sum())
        if q < alpha and is_material(mix, scale):
            share = f" ({_percent(mix / delta)} of the change)" if shared else ""
            moved = "; ".join(f"{r.segment} {_percent(r.share_before)} -> "
                              f"{_percent(r.share_after)}"
                              for r in group.head(_SEGMENTS_SHOWN).itertuples())
            flags.append(Flag(FlagKind.MIX_SHIFT, dimension, (
                f"MIX SHIFT by {dimension}: its segments' share of the rows moved (q = "
                f"{q:.2g}: {moved}), which accounts for {figure(mix)}{share}")))
    return flags


def _percent(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.0%}"


def _summary(metric: str, period: str, before: str, after: str, first: Moments,
             last: Moments, change: Comparison, shared: bool, frame: pd.DataFrame,
             flags: list[Flag], support: Support, alpha: float, prepared: Prepared,
             aligned: list[str], copies: dict[str, float],
             set_by_outcome: dict[str, OutcomeValue], even: list[str],
             one_outcome: list[OneOutcomeColumn]) -> str:
    body = frame.iloc[1:]
    n_dimensions = body["dimension"].nunique()
    lines = [
        f"decompose of {metric} by {period}: {before} (n = {int(first.n)}, "
        f"{figure(first.mean)}) -> {after} (n = {int(last.n)}, {figure(last.mean)}): change "
        f"{figure(change.difference)} (95% CI {interval(change.low, change.high)}), "
        f"split over the segments of {n_dimensions} dimensions.",
        "Method: per segment, rate part = mean row share x change of its metric; mix part = "
        "change of its row share x (its mean metric - the overall mean metric), so a segment "
        "that grew below the average pulls the metric down; contribution = rate + mix; over "
        "one dimension's segments the contributions add up to the change; the rows after the "
        f"first, '{MIX_OF_ALL}', give each dimension's whole mix part with a 95% interval. "
        "Share of the "
        "change = "
        "contribution / change (negative: against it). 95% intervals given the row shares.",
        "Each dimension's shares add up to the whole change on their own: shares of "
        "different dimensions split the same change in different ways and must not be "
        "added across dimensions.",
    ]
    if shared and change.low <= 0 <= change.high:
        lines.append("The change itself is not beyond chance (its interval holds 0): its "
                     "shares are as uncertain as the change.")
    if not shared:
        lines.append("The change is not material (under 1% of the metric's scale): no share "
                     "is computed; the contributions are in the rows.")
    if flags:
        lines.append(f"FLAGGED ({len(flags)}; DRIVER: a segment's rate change beyond chance at "
                     f"false-discovery level {alpha:g}, and beyond the rate change of the rest "
                     "of its dimension (its other segments but the DRIVERs, by their mean row "
                     "shares) in the direction it moved, with a contribution of at least 1% "
                     "of the metric's scale; MIX SHIFT: a dimension's row shares moved beyond "
                     "chance with a material mix part):")
        lines += [f"- {f.text}" for f in flags[:8]]
        if len(flags) > 8:
            lines.append(f"- ... {len(flags) - 8} more in the rows")
    else:
        lines.append("No segment's rate change is beyond chance and beyond its rest's with a "
                     "material contribution, and no dimension's mix shifted materially beyond "
                     "chance.")
    # a dimension whose mix shift is flagged keeps its own line: its shares are no mere
    # row counts (a review found it merged into "their shares follow row counts")
    merged = [line for line in even[_DIMENSIONS_SHOWN - 1:] if MIX_FLAGGED_NOTE not in line]
    if len(merged) > 1:
        named = [line.split(": the change is spread evenly", 1)[0]  # a name may hold ":"
                 for line in merged]
        even = [*(line for line in even if line not in merged),
                f"Also spread evenly over their segments (none differs from the rest's beyond "
                f"chance; their shares follow row counts and localise nothing): "
                f"{name_list(named)}."]
    lines += even
    dominated = _dominated(body, change.difference, {
        f.dimension for f in flags if f.kind is FlagKind.MIX_SHIFT}) if shared else {}
    ranked = [d for d in dict.fromkeys(body["dimension"]) if d not in dominated]
    if ranked:
        lines.append("Largest contributions by dimension (rate part + mix part):")
    for dimension in ranked[:_DIMENSIONS_SHOWN]:
        rows = body[body["dimension"] == dimension].head(_SEGMENTS_SHOWN)
        parts = "; ".join(
            f"{r.segment}: {figure(r.contribution)}"
            + ((" (one period only: no share)" if _one_period(r.n_before, r.n_after)
                else f" ({_percent(r.share_of_change)})") if shared else "")
            + f" = rate {figure(r.rate_part)} + mix {figure(r.mix_part)}"
            for r in rows.itertuples())
        mix = body.loc[body["dimension"] == dimension, "mix_part"].sum()
        of_change = f" ({_percent(mix / change.difference)})" if shared else ""
        lines.append(f"- {dimension}: {parts}; mix over all its segments "
                     f"{figure(mix)}{of_change}")
    if dominated:
        lines.append("Not ranked, nearly one value in both periods (one segment holds "
                     f"{DOMINANT_SHARE:.0%} or more of the rows in each, so its contribution "
                     "is most of the change whatever happened and localises nothing): "
                     + "; ".join(f"{name} ({segment}: {_percent(before)} and "
                                 f"{_percent(after)} of the rows)"
                                 for name, (segment, before, after) in dominated.items())
                     + ".")
    untested = body[~body["tested"].astype(bool)]
    if len(untested):
        lines.append(f"Rate change not tested (fewer than {support.rows} rows in a period; "
                     f"{support.describe()}): {len(untested)} segment(s), e.g. "
                     + ", ".join(f"{segment_label(r.dimension, r.segment)} (n = "
                                 f"{r.n_before} / {r.n_after})"
                                 for r in untested.head(5).itertuples()) + ".")
    lines += definition_lines(prepared.plan)
    one_sided = body[_one_period(body["n_before"], body["n_after"])]
    one_sided = one_sided.reindex(one_sided["contribution"].abs().sort_values(
        ascending=False, kind="stable").index)
    if len(one_sided):
        named = ", ".join(
            f"{segment_label(r.dimension, r.segment)} ({'new' if r.n_before == 0 else 'gone'}"
            f", contribution {figure(r.contribution)})"
            for r in one_sided.head(_SEGMENTS_SHOWN).itertuples())
        more = f" and {len(one_sided) - _SEGMENTS_SHOWN} more" if len(
            one_sided) > _SEGMENTS_SHOWN else ""
        lines.append(f"In one period only: {named}{more}. Their contribution is all mix, "
                     "measured against the overall metric: it mixes what their rows are "
                     "(their product, customer ...) with the change they stand for, so it "
                     "is no clean size of that change and they get no share of it "
                     "(share_of_change empty); compare like rows across the "
                     "periods (compare_within within the other dimensions) to size it.")
    if copies:
        lines.append(near_copy_line(copies, "not split by",
                                    "its segments would share out the change by outcome"))
    if set_by_outcome:
        lines.append(outcome_set_line(set_by_outcome, "not split by",
                                      "its segments would share out the change by outcome"))
    if one_outcome:
        lines.append(one_outcome_line(one_outcome, "not split by",
                                      "its segments would share out the change by outcome"))
    if aligned:
        lines.append(f"Not split by {name_list(aligned)}: aligned with the period (its row shares "
                     f"in the two periods overlap by less than {MIN_OVERLAP:.0%}), so it would "
                     "restate the change, not explain it.")
    lines.append(f"Dimensions split: {name_list(list(dict.fromkeys(body['dimension'])))}.")
    return "\n".join(lines)
