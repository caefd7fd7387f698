"""segment_scan: the segments whose metric deviates most from the rest, over every dimension.

Each segment (a value of a dimension, or membership "has <value>" of a 1:N attribute) is
compared with the rest of the population: difference of means, its 95% interval and a
two-sided z test; the segment's own metric gets a 95% interval too (Wilson's for a 0/1
metric, normal otherwise). The p-values of all segments are corrected together
(Benjamini–Hochberg); a segment is flagged when its q-value is below ``alpha`` and both
it and the rest have at least ``min_support`` rows. Rows are ranked by a sample-size
aware score: the end of the interval nearest zero (``|difference| - 1.96·SE``, floored at
0), so a large gap in a tiny group ranks below a solid one in a large group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from d2_notebook.data.analysis.common import DEFAULT_ALPHA, check_settings, prepare, run_pass
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool, Flag, FlagKind, capped
from d2_notebook.data.analysis.stats import (
    Z95,
    Moments,
    benjamini_hochberg,
    compare,
    wilson_interval,
)
from d2_notebook.data.analysis.text import describe_value, figure, segment_label
from d2_notebook.data.catalog_access import dialect_sql

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["segment_scan"]

COLUMNS = ["dimension", "value", "n", "metric", "metric_low", "metric_high", "rest_n",
           "rest_metric", "difference",
           "ci_low", "ci_high", "p_value", "q_value", "score", "flagged"]


def segment_scan(
    sql: GuardedSQL,
    *,
    source: str,
    metric: str,
    where: str | None = None,
    dimensions: list[str] | None = None,
    min_support: int = 30,
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
        min_support: Fewest rows a segment (and its rest) needs to be flagged.
        alpha: False-discovery level over all segments (Benjamini–Hochberg).
        max_levels: Most distinct values a column may have to be a dimension.
        top: Segments described in the summary.

    Returns:
        One row per segment (columns :data:`COLUMNS`), flagged first, then by score.

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
    pooled = total.var if total.var > 0 else None
    binary = total.n > 0 and abs(total.s2 - total.s1) <= 1e-9 * max(1.0, total.s1)
    rows: list[dict] = []
    for (index, value), group in scan.moments.items():
        if index < 0:
            continue
        planned = prepared.plan.dimensions[index]
        rest = total - group
        if group.n == 0 or rest.n == 0:
            continue
        test = compare(group, rest, pooled_var=pooled)
        low, high = (wilson_interval(group.s1, group.n) if binary
                     else (group.mean - Z95 * group.se, group.mean + Z95 * group.se))
        rows.append({
            "dimension": planned.name, "value": describe_value(value), "n": int(group.n),
            "metric": group.mean, "metric_low": low, "metric_high": high,
            "rest_n": int(rest.n), "rest_metric": rest.mean,
            "difference": test.difference, "ci_low": test.low, "ci_high": test.high,
            "p_value": test.p_value,
            "score": max(0.0, abs(test.difference) - Z95 * test.se),
            "supported": group.n >= min_support and rest.n >= min_support,
        })
    q_values = benjamini_hochberg([r["p_value"] if r["supported"] else 1.0 for r in rows])
    for row, q in zip(rows, q_values, strict=True):
        row["q_value"] = q
        row["flagged"] = bool(row.pop("supported") and q < alpha)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["_supported"] = (frame["n"] >= min_support) & (frame["rest_n"] >= min_support)
    frame = frame.sort_values(["flagged", "_supported", "score", "n"], ascending=False,
                              kind="stable").drop(columns="_supported").reset_index(drop=True)
    flags = [
        Flag(FlagKind.SEGMENT, r.dimension, _flag_text(r, metric))
        for r in frame[frame["flagged"]].itertuples()
    ]
    summary = _summary(metric, total, frame, flags, len(prepared.plan.dimensions), min_support,
                       alpha, top)
    return capped(AnalysisTool.SEGMENT_SCAN, scan.sql, frame, sql.max_rows, scan.duration_s,
                  summary, flags)


def _flag_text(row: object, metric: str) -> str:
    direction = "higher" if row.difference > 0 else "lower"
    return (
        f"{segment_label(row.dimension, row.value)}: {metric} = {figure(row.metric)} "
        f"(n = {row.n}) vs {figure(row.rest_metric)} for the rest (n = {row.rest_n}), "
        f"{figure(abs(row.difference))} {direction} (95% CI of the difference "
        f"{figure(row.ci_low)} to {figure(row.ci_high)}, q = {row.q_value:.2g})"
    )


def _summary(metric: str, total: Moments, frame: pd.DataFrame, flags: list[Flag],
             n_dimensions: int, min_support: int, alpha: float, top: int) -> str:
    head = (
        f"segment_scan of {metric} over {int(total.n)} rows (overall {figure(total.mean)}): "
        f"{len(frame)} segments of {n_dimensions} dimensions compared with the rest."
    )
    if flags:
        lines = [head, f"FLAGGED SEGMENTS ({len(flags)}; false-discovery level {alpha:g}, "
                       f"at least {min_support} rows):"]
        lines += [f"- {f.text}" for f in flags[:top]]
        if len(flags) > top:
            lines.append(f"- ... {len(flags) - top} more flagged segments in the rows")
    else:
        lines = [head, f"No segment deviates beyond chance (false-discovery level {alpha:g}, "
                       f"at least {min_support} rows); the largest gaps:"]
        for row in frame.head(min(top, 5)).itertuples():
            lines.append(f"- {segment_label(row.dimension, row.value)}: {figure(row.metric)} "
                         f"vs {figure(row.rest_metric)} (n = {row.n}, p = {row.p_value:.2g})")
    dimensions = ", ".join(dict.fromkeys(frame["dimension"]))
    lines.append(f"Dimensions scanned: {dimensions or '(none)'}.")
    return "\n".join(lines)
