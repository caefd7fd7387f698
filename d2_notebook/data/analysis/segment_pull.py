"""Segments flagged only because outliers of their dimension sit in their rest.

segment_scan compares each segment with the rest of the population. When one value of a
dimension is far off (one agent's incidents take 31 days, the other four agents' 5), it
is in the rest of every other value, which it pulls towards itself: each of the four
then reads "lower than the rest" beyond chance, four flags for one fact. A real-model
hypothesizer read them as four findings about fast agents and spent a hypothesis to
learn that the four do not differ (InsightBench flag-6).

So, per dimension (not a 1:N membership, whose segments overlap) with two or more flagged
values, the outliers are peeled off one at a time:

1. the first is the flagged value farthest from its rest (the largest gap);
2. every other flagged value is compared again, by the scan's own test, with the rest
   without the values left out so far;
3. while some still differ by a material amount beyond chance (p below ``alpha``), the
   one farthest from that reduced rest's mean is left out too (a second slow agent, or a
   fast one beside a slow one) and step 2 runs again.

The values left out after the first keep their flags, with their figures against the
rest without the values left out before them (their gap against the whole rest was
inflated, or reversed: a value between the outlier and the others). The values that no
longer differ are *pulled*: not flagged, and named in the first outlier's flag with their
figures against the final reduced rest, so that nothing is lost. A value whose reduced
rest has too few rows keeps its flag as the scan gave it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from d2_notebook.data.analysis.stats import Moments, compare, compare_proportions, is_material
from d2_notebook.data.analysis.text import figure

__all__ = ["Recompared", "pulled_line", "unflag_pulled", "without_line"]

_NAMED = 5
"""Pulled values an outlier's line names one by one; the others are counted."""


@dataclass(frozen=True)
class Recompared:
    """A flagged value compared again with a rest without some values: its value and
    metric, the values left out (``without``), that rest's metric and the p-value."""

    value: str
    metric: float
    without: tuple[str, ...]
    rest_metric: float
    p_value: float


def unflag_pulled(rows: list[dict[str, Any]], total: Moments, *, binary: bool,
                  pooled: float | None, alpha: float, scale: float,
                  min_rows: int, memberships: set[int]) -> None:
    """Peel each dimension's outliers off (see the module docstring): unflag the pulled
    values of ``rows`` (segment_scan's row records, flags set), marking them
    ``"pulled_away"`` and listing them under the first outlier's ``"pulled"`` key; a value
    left out after the first gets its comparison under its own ``"without"`` key.

    Args:
        rows: One record per segment, with its dimension index, value, moments, flag.
        total: The whole population's moments.
        binary: The metric is 0/1 (the scan's proportion test is used).
        pooled: The variance used for a group whose own is 0 (the scan's).
        alpha: The scan's false-discovery level.
        scale: The metric's scale, for materiality.
        min_rows: The fewest rows a reduced rest needs for a value to be compared with it.
        memberships: Indexes of the 1:N membership dimensions, left alone.
    """
    by_dimension: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        row.update(pulled=[], pulled_away=False, without=None)
        if row["flagged"] and row["dimension_index"] not in memberships:
            by_dimension.setdefault(row["dimension_index"], []).append(row)
    for flagged in by_dimension.values():
        if len(flagged) < 2:
            continue
        left_out = [max(flagged, key=lambda r: abs(r["difference"]))]
        while True:
            reduced = total - sum((r["moments"] for r in left_out[1:]), left_out[0]["moments"])
            without = tuple(r["value"] for r in left_out)
            compared = []  # (row, its comparison with the reduced rest, whether it differs)
            for row in flagged:
                rest = reduced - row["moments"]
                if any(row is out for out in left_out) or rest.n < min_rows:
                    continue
                test = (compare_proportions(row["moments"], rest) if binary
                        else compare(row["moments"], rest, pooled_var=pooled))
                compared.append((row, Recompared(row["value"], row["metric"], without,
                                                 rest.mean, test.p_value),
                                 test.p_value < alpha and is_material(test.difference, scale)))
            differing = [(row, found) for row, found, differs in compared if differs]
            if not differing:
                break
            row, found = max(differing, key=lambda d: abs(d[0]["metric"] - reduced.mean))
            row["without"] = found
            left_out.append(row)
        outlier = left_out[0]
        for row, found, _ in compared:
            row["flagged"], row["pulled_away"] = False, True
            outlier["pulled"].append(found)


def _names(values: tuple[str, ...]) -> str:
    """``"Fred"``, ``"Fred and George"``, ``"Fred, George and Ann"``."""
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"


def pulled_line(pulled: list[Recompared]) -> str:
    """What the first outlier's flag adds for the values it and the others left out
    pulled (empty without any)."""
    if not pulled:
        return ""
    without = pulled[0].without
    named = ", ".join(f"{p.value} {figure(p.metric)} vs {figure(p.rest_metric)} (p = "
                      f"{p.p_value:.2g})" for p in pulled[:_NAMED])
    more = f" and {len(pulled) - _NAMED} more" if len(pulled) > _NAMED else ""
    return (f"; other values read off the rest only because {_names(without)} "
            f"{'is' if len(without) == 1 else 'are'} in it, so they are not flagged; "
            f"against the rest without {'it' if len(without) == 1 else 'them'}: "
            f"{named}{more}")


def without_line(found: Recompared | None) -> str:
    """What the flag of a value left out after the first outlier adds: its comparison
    with the rest without the values left out before it (empty when it has none)."""
    if found is None:
        return ""
    direction = "higher" if found.metric > found.rest_metric else "lower"
    return (f"; against the rest without {_names(found.without)}: {figure(found.metric)} vs "
            f"{figure(found.rest_metric)}, {direction} (p = {found.p_value:.2g})")
