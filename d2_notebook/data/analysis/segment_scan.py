"""segment_scan: the segments whose metric deviates most from the rest, over every dimension.

Each segment (a value of a dimension, or membership "has <value>" of a 1:N attribute) is
compared with the rest of the population: difference of means, its 95% interval and a
two-sided z test; the segment's own metric gets a 95% interval too (Wilson's for a 0/1
metric, normal otherwise). The p-values of all segments are corrected together
(Benjamini–Hochberg) over the segments tested: those where both the segment and the rest
have at least the minimum support (adapted to the data unless given: see
:class:`~d2_notebook.data.analysis.common.Support`); the others carry no p or q and are
counted as "not tested". A segment is flagged when its q-value is below ``alpha`` and its
difference is material (:func:`~d2_notebook.data.analysis.stats.is_material`). Rows are
ranked by a sample-size aware score: the end of the interval nearest zero
(``|difference| - 1.96·SE``, floored at 0), so a large gap in a tiny group ranks below a
solid one in a large group. Segments of a dimension that restates the outcome (a
near-copy, a numeric copy, a column the outcome sets:
:func:`~d2_notebook.data.analysis.common.column_copies`) keep their rows but are not
flagged; the summary names the dimension once.

Four cases say one fact many times, and are named once instead:

- A constant segment: one that would be flagged, but whose metric is 0 on every one of
  its rows, or one value on every row of a column's missing value (variance 0 to floating tolerance,
  :func:`~d2_notebook.data.analysis.stats.is_constant`) while its rest varies —
  processing time 0 on every expense not processed yet. It is a placeholder or a value
  the segment sets, not a deviation to explain: it is not flagged (nor is a segment that
  is all the other rows, its complement), and the summary names it in a line of its own,
  with a where that leaves it out (``IS NOT NULL`` for a column's missing value, ``<>``
  for one plain value of a source column) so that a second scan ranks the rest, whose
  comparisons it otherwise weighs on. Only for a metric that is not 0/1: a rate of
  exactly 0 or 1 in a segment is a finding.
- Segments of different dimensions that are the same rows (equal count, sum and sum of
  squares: :func:`~d2_notebook.data.analysis.stats.same_moments`), or one all the other
  rows of another — the date parts of a column all at ``(missing)``, the month and month
  of year of a single year: the best ranked leads, and its flag and summary line name the
  others ("also ..."); the header's count leaves them out. Their rows stay in the frame,
  flagged as they are (each passes its test), but they raise no flag of their own, so
  that the flags count findings, not dimensions. For a metric of few values (a 0/1
  rate, a rating, a small count: at most
  :data:`~d2_notebook.data.analysis.common.FEW_VALUES`), whose moments are little more
  than counts, only date parts of one column that must be the same rows when their
  counts agree (its missing value; a month and its month of the year) are merged.
- A column recorded for one outcome only (a 0/1 metric): empty on every row of one
  outcome and filled on some rows of the other, as a processing date no declined line
  gets (:func:`~d2_notebook.data.analysis.segment_repeats.recorded_for_one_outcome`).
  Each of its filled values has a rate of exactly 0 or 1 and its missing value holds
  the whole outcome, by construction: none of its dimensions' segments is flagged, and
  the summary names the column once, with the counts and the check a reader makes (a
  cause that rules the outcome out looks the same).
- An outlier in the rest of every other value of its dimension: one agent's incidents
  take 31 days, and each of the other four reads "lower than the rest". The outliers
  are peeled off one at a time and the other flagged values compared again without
  them; those that then differ by no material amount beyond chance are not flagged, and
  the first outlier's flag names them with their figures; an outlier peeled off later
  keeps its flag with its figures without those before it
  (:mod:`~d2_notebook.data.analysis.segment_pull`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import pandas as pd

from d2_notebook.data.analysis.common import (
    DEFAULT_ALPHA,
    Prepared,
    Support,
    check_settings,
    column_copies,
    definition_lines,
    has_few_values,
    prepare,
    run_pass,
)
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool, Flag, FlagKind, capped
from d2_notebook.data.analysis.segment_pull import pulled_line, unflag_pulled, without_line
from d2_notebook.data.analysis.segment_repeats import (
    also_line,
    constant_line,
    recorded_for_one_outcome,
    same_row_groups,
    set_aside_constants,
)
from d2_notebook.data.analysis.stats import (
    MIN_SUPPORT_FLOOR,
    RELATIVE_TOLERANCE,
    Z95,
    Moments,
    OutcomeValue,
    benjamini_hochberg,
    compare,
    compare_proportions,
    determines_exactly,
    explained_share,
    is_binary,
    is_material,
    is_near_copy,
    metric_scale,
    wilson_interval,
)
from d2_notebook.data.analysis.text import (
    OneOutcomeColumn,
    describe_value,
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

__all__ = ["segment_scan"]

COLUMNS = ["dimension", "value", "n", "metric", "metric_low", "metric_high", "rest_n",
           "rest_metric", "difference",
           "ci_low", "ci_high", "p_value", "q_value", "score", "tested", "flagged"]

_WORK = ["dimension_index", "is_missing", "moments", "rest_moments", "set_aside", "pulled",
         "pulled_away", "without"]
"""Columns the call works with and drops: the dimension's index in the plan, whether the
value is the missing one (NULL), the segment's and its rest's moments, whether the
segment was set aside as constant (or the complement of a constant one), the segments it
pulled (:mod:`~d2_notebook.data.analysis.segment_pull`), whether it was pulled and its
comparison with a rest without the outlier side."""


def segment_scan(
    sql: GuardedSQL,
    *,
    source: str,
    metric: str,
    where: str | None = None,
    dimensions: list[str] | None = None,
    min_support: int | None = None,
    alpha: float = DEFAULT_ALPHA,
    max_levels: int = 30,
    top: int = 10,
) -> AnalysisResult:
    """Rank the segments of every candidate dimension by how far their metric deviates.

    Args:
        sql: The guarded connection; the generated statement runs through it.
        source: A table, or a FROM clause with joins and aliases.
        metric: One mean over rows, ``avg(<per-row expression>)`` (a rate: ``avg(CASE WHEN
            ... THEN 1 ELSE 0 END)``).
        where: Optional filter (one boolean expression over the source) on the population.
        dimensions: Dimension names or SQL expressions over the source; default every
            candidate reachable from the source by key.
        min_support: Fewest rows a segment (and its rest) needs to be tested; default
            adapted to the data (:class:`~d2_notebook.data.analysis.common.Support`).
        alpha: False-discovery level over all segments (Benjamini–Hochberg).
        max_levels: Most distinct values a column may have to be a dimension.
        top: Segments described in the summary.

    Returns:
        One row per segment (columns :data:`COLUMNS`), flagged first, then by score, and
        after them the segments the summary names apart (set aside, of dimensions that
        restate the metric, or the same rows as a leading flagged one), in that order;
        one flag per flagged segment, those of other dimensions that are its rows named
        in it.

    Raises:
        ValueError: A bad input or setting (the message says how to fix it).
        UnsafeSQLError: A piece of input is not read-only SQL.
        QueryFailedError: A piece does not bind (unknown column...) or the pass failed.
    """
    check_settings(min_support, alpha)
    sql = dialect_sql(sql)  # any source: its SQL is transpiled and guarded there
    prepared = prepare(sql, source=source, metric=metric, where=where, dimensions=dimensions,
                       max_levels=max_levels)
    scan = run_pass(sql, prepared)
    total = scan.total()
    support = Support.of(min_support, total.n, named=dimensions is not None)
    scale = metric_scale(total)
    pooled = total.var if total.var > 0 else None
    binary = is_binary(total)
    rows: list[dict] = []
    for (index, value), group in scan.moments.items():
        if index < 0:
            continue
        planned = prepared.plan.dimensions[index]
        rest = total - group
        if group.n == 0 or rest.n == 0:
            continue
        test = (compare_proportions(group, rest) if binary
                else compare(group, rest, pooled_var=pooled))
        low, high = (wilson_interval(group.s1, group.n) if binary
                     else (group.mean - Z95 * group.se, group.mean + Z95 * group.se))
        tested = group.n >= support.rows and rest.n >= support.rows
        rows.append({
            "dimension": planned.name, "value": describe_value(value), "n": int(group.n),
            "metric": group.mean, "metric_low": low, "metric_high": high,
            "rest_n": int(rest.n), "rest_metric": rest.mean,
            "difference": test.difference, "ci_low": test.low, "ci_high": test.high,
            "p_value": test.p_value if tested else math.nan,
            # the interval's end nearest 0 (Newcombe's interval of a rate is not symmetric)
            "score": max(0.0, test.low) if test.difference > 0 else max(0.0, -test.high),
            "tested": tested,
            "dimension_index": index, "is_missing": value is None, "moments": group,
            "rest_moments": rest, "set_aside": False,
        })
    exact, copies = _determining(scan.moments, prepared, total)
    restated = column_copies(sql, prepared, total, requested=dimensions is not None,
                             known={*exact, *copies})
    copies |= restated.numeric
    set_by_outcome = restated.set_by_outcome
    for row in rows:
        if row["dimension"] in exact:
            row["tested"], row["p_value"] = False, math.nan
    tested_rows = [r for r in rows if r["tested"]]
    for row, q in zip(tested_rows, benjamini_hochberg([r["p_value"] for r in tested_rows]),
                      strict=True):
        row["q_value"] = q
    for row in rows:
        row.setdefault("q_value", math.nan)
        row["material"] = is_material(row["difference"], scale)
        row["flagged"] = bool(row["tested"] and row["q_value"] < alpha and row["material"]
                              and row["dimension"] not in copies
                              and row["dimension"] not in set_by_outcome)
    constants = set_aside_constants(rows, total)
    one_outcome = ([] if dimensions is not None  # named dimensions are split as asked
                   else recorded_for_one_outcome(rows, total, prepared.plan, alpha=alpha,
                                                 known={*exact, *copies, *set_by_outcome}))
    unflag_pulled(rows, total, binary=binary, pooled=pooled, alpha=alpha, scale=scale,
                  min_rows=support.rows,
                  memberships={i for i, d in enumerate(prepared.plan.dimensions)
                               if d.membership})
    frame = pd.DataFrame(rows, columns=[*COLUMNS, "material", *_WORK]).astype(
        {"tested": bool, "flagged": bool, "material": bool, "is_missing": bool,
         "set_aside": bool, "pulled_away": bool})  # typed when no row was split
    frame = frame.sort_values(["flagged", "tested", "score", "n"], ascending=False,
                              kind="stable").reset_index(drop=True)
    plan = prepared.plan
    flagged_rows = list(frame[frame["flagged"]].itertuples())
    few = binary or (len(flagged_rows) > 1 and has_few_values(sql, prepared))
    findings = same_row_groups(flagged_rows, total, plan, few_values=few)
    added = [also_line(same, plan) + _pull_lines(lead, [row for row, _ in same])
             for lead, same in findings]
    flags = [Flag(FlagKind.SEGMENT, lead.dimension, _flag_text(lead, metric) + more)
             for (lead, _), more in zip(findings, added, strict=True)]
    # the summary's header names the metric
    flag_lines = [_flag_text(lead, None) + more
                  for (lead, _), more in zip(findings, added, strict=True)]
    immaterial = int((frame["tested"] & (frame["q_value"] < alpha) & ~frame["material"]).sum())
    missing = {index for index, value in scan.moments if index >= 0 and value is None}
    constants_said = constant_line(constants, prepared, missing) if constants else None
    repeated = sum(len(same) for _, same in findings)
    frame = _named_apart_last(frame, findings, {*exact, *copies, *set_by_outcome})
    summary = _summary(metric, total, frame[~frame["dimension"].isin(exact)], flag_lines,
                       prepared, support, alpha, top, immaterial, exact, copies,
                       set_by_outcome, constants_said, repeated, one_outcome)
    frame = frame.drop(columns=["material", *_WORK])
    return capped(AnalysisTool.SEGMENT_SCAN, scan.sql, frame, sql.max_rows, scan.duration_s,
                  summary, flags)


_KEPT_LAST = "rows are kept, last in the table"
"""Where the rows of a segment named apart are (:func:`_named_apart_last`)."""


def _named_apart_last(frame: pd.DataFrame, findings: list[tuple[Any, list[tuple[Any, bool]]]],
                      restating: set[str]) -> pd.DataFrame:
    """``frame`` (in rank order) with the rows the summary names apart moved after the
    others, keeping each part's order: segments set aside (a constant, a column recorded
    for one outcome), the segments of dimensions that restate the metric (``restating``),
    and the segments that are the same rows as a leading one. They stay in the result,
    but a preview's first rows are then the findings and the segments left to explain:
    a column recorded for one outcome used to fill the preview with its six date parts'
    identical missing-value rows. The segments an outlier pulled (named in its flag) come
    between the two."""
    repeats = {row.Index for _, same in findings for row, _ in same}
    apart = (frame["set_aside"] | frame["dimension"].isin(restating)
             | frame.index.isin(list(repeats)))
    pulled = frame["pulled_away"] & ~apart
    return pd.concat([frame[~apart & ~pulled], frame[pulled], frame[apart]]
                     ).reset_index(drop=True)


def _pull_lines(lead: Any, same: list[Any]) -> str:
    """A flag's lines from :mod:`~d2_notebook.data.analysis.segment_pull`: the values the
    segment's outliers pulled, or its own figures without the values left out before it;
    read from the first of the same rows that has them (the others are those rows again,
    under other names)."""
    for row in (lead, *same):
        if row.pulled:
            return pulled_line(row.pulled)
        if row.without is not None:
            return without_line(row.without)
    return ""


def _flag_text(row: object, metric: str | None) -> str:
    """A flagged segment's figures; with the metric's expression (a flag read on its own)
    or without it (a line of the summary, whose header names the metric)."""
    direction = "higher" if row.difference > 0 else "lower"
    named = f"{metric} = " if metric is not None else ""
    return (
        f"{segment_label(row.dimension, row.value)}: {named}{figure(row.metric)} "
        f"(n = {row.n}) vs {figure(row.rest_metric)} for the rest (n = {row.rest_n}), "
        f"{figure(abs(row.difference))} {direction} (95% CI of the difference "
        f"{interval(row.ci_low, row.ci_high)}, q = {row.q_value:.2g})"
    )


USUAL_LEVEL = 0.05
"""The significance level most readers know: a gap below it that the scan's stricter
level does not flag is named as such (a real judge read a single segment at p = 0.0034,
"not flagged at the 0.001 level", as a dismissal)."""


def _summary(metric: str, total: Moments, frame: pd.DataFrame, flags: list[str],
             prepared: Prepared, support: Support, alpha: float, top: int,
             immaterial: int, exact: list[str], copies: dict[str, float],
             set_by_outcome: dict[str, OutcomeValue], constants_said: str | None,
             repeated: int, one_outcome: list[OneOutcomeColumn]) -> str:
    tested = frame[frame["tested"]]
    n_dimensions = len(prepared.plan.dimensions)
    lines = [
        f"segment_scan of {metric} over {int(total.n)} rows (overall {figure(total.mean)}): "
        f"{len(tested)} of {len(frame)} segments of {n_dimensions} dimensions tested against "
        f"the rest ({support.describe()}).",
    ]
    rule = (f"false-discovery level {alpha:g}, a difference of at least "
            f"{RELATIVE_TOLERANCE:.0%} of the metric's scale")
    if flags:
        same = (f", besides {repeated} of other dimensions that are the same rows as one "
                "of them and named with it" if repeated else "")
        lines.append(f"FLAGGED SEGMENTS ({len(flags)}{same}; {rule}):")
        lines += [f"- {line}" for line in flags[:top]]
        if len(flags) > top:
            lines.append(f"- ... {len(flags) - top} more flagged segments in the rows")
    elif len(others := tested[~tested["dimension"].isin({*copies, *set_by_outcome})
                              & ~tested["set_aside"]]):
        other = " other" if constants_said or one_outcome else ""
        lines.append(f"No{other} tested segment deviates beyond chance by a material amount "
                     f"({rule}); the largest gaps among the tested:")
        shown = others.head(min(top, 5))
        for row in shown.itertuples():
            lines.append(f"- {segment_label(row.dimension, row.value)}: {figure(row.metric)} "
                         f"vs {figure(row.rest_metric)} (n = {row.n}, p = {row.p_value:.2g})")
        # "not flagged" read as "no signal"; a gap beyond chance but immaterial (q below
        # alpha) is said below, not here (a review found "its q is not below" beside 1e-83)
        if ((shown["p_value"] < USUAL_LEVEL) & ~(shown["q_value"] < alpha)).any():
            # at a scan level of 0.05 itself "the usual level, not this scan's" read as a
            # contradiction (a real-model collector, flag-8): the q-value is what differs
            level = (f"at the usual level, not at this scan's level {alpha:g} (strict "
                     "because many segments are tested at once)" if alpha < USUAL_LEVEL
                     else "on its own, not once corrected for the many segments tested at "
                     f"once (its q, the scan's measure, is not below {alpha:g})")
            lines.append(f"A gap above with p below {USUAL_LEVEL:g} is a signal {level}: test "
                         "it on its own (compare_within) before calling it noise.")
    elif len(tested):
        lines.append("No tested segment is flagged: those beyond chance restate the metric "
                     "(see below).")
    elif not n_dimensions:
        lines.append("No dimension was split (see below why).")
    elif not len(tested):
        lines.append("No segment was tested: none has enough rows (see below).")
    if constants_said:
        lines.append(constants_said)
    if copies:
        lines.append(near_copy_line(copies, "not flagged", f"its {_KEPT_LAST}"))
    if set_by_outcome:
        lines.append(outcome_set_line(set_by_outcome, "not flagged", f"its {_KEPT_LAST}"))
    if one_outcome:
        lines.append(one_outcome_line(one_outcome, "not flagged", f"their {_KEPT_LAST}"))
    if immaterial:
        lines.append(f"{immaterial} segment(s) differ beyond chance by less than "
                     f"{RELATIVE_TOLERANCE:.0%} of the metric's scale: not flagged.")
    untested = frame[~frame["tested"]]
    if len(untested):
        lines.append(untested_line(untested, support))
    lines += definition_lines(prepared.plan)
    if exact:
        lines.append(f"Not tested: {name_list(exact)} determine(s) the metric exactly (each "
                     "value has a single metric value): part of the metric's definition.")
    lines.append(f"Dimensions scanned: {name_list(list(dict.fromkeys(frame['dimension'])))}.")
    return "\n".join(lines)


def _determining(moments: dict, prepared: Prepared,
                 total: Moments) -> tuple[list[str], dict[str, float]]:
    """The (non-membership) dimensions that determine the metric exactly, and those that
    are near-copies of it (name -> the share of the metric's variance they explain)."""
    groups: dict[int, list[Moments]] = {}
    for (index, _), group in moments.items():
        if index >= 0 and not prepared.plan.dimensions[index].membership:
            groups.setdefault(index, []).append(group)
    exact, copies = [], {}
    for index, found in sorted(groups.items()):
        name = prepared.plan.dimensions[index].name
        if determines_exactly(found, total):
            exact.append(name)
        elif is_near_copy(found, total):
            copies[name] = explained_share(found, total)
    return exact, copies


def _why_untested(row: Any) -> str:
    """Which side of an untested segment was short: the segment itself or the rest."""
    small = "too small to test" if min(row.n, row.rest_n) < MIN_SUPPORT_FLOOR else "not tested"
    if row.rest_n < row.n:
        return f"{small}: the rest has n = {row.rest_n} (the segment n = {row.n})"
    return f"{small} (n = {row.n})"


_UNTESTED_LISTED = 8
"""Most dimensions an untested-segments line names (those with the largest segments)."""


def untested_line(untested: pd.DataFrame, support: Support) -> str:
    """The segments below the minimum support: counted by dimension (the name to give
    in ``dimensions`` to test them; the largest first, at most :data:`_UNTESTED_LISTED`),
    the named dimensions' segments by name."""
    if support.named:
        named = "; ".join(f"{segment_label(r.dimension, r.value)}: {_why_untested(r)}"
                          for r in untested.head(12).itertuples())
        more = f"; ... {len(untested) - 12} more" if len(untested) > 12 else ""
        return f"Not tested (fewer than {support.rows} rows): {named}{more}."
    by_dimension = untested.groupby("dimension", sort=True)["n"].agg(["count", "max"])
    by_dimension = by_dimension.sort_values("max", ascending=False, kind="stable")
    parts = ", ".join(f"{dimension}: {int(r['count'])} (largest n = {int(r['max'])})"
                      for dimension, r in by_dimension.head(_UNTESTED_LISTED).iterrows())
    if len(by_dimension) > _UNTESTED_LISTED:
        parts += f", and {len(by_dimension) - _UNTESTED_LISTED} more dimensions"
    return (f"Not tested (fewer than {support.rows} rows in the segment or the rest; no p or "
            f"q): {len(untested)} segments — {parts}. Name a dimension in dimensions to "
            f"test its values down to {MIN_SUPPORT_FLOOR} rows.")
