"""Segments flagged only because one outlier of their dimension sits in their rest.

segment_scan compares each segment with the rest of the population. When one value of a
dimension is far off (one agent's incidents take 31 days, the other four agents' 5), it
is in the rest of every other value, which it pulls towards itself: each of the four
then reads "lower than the rest" beyond chance, four flags for one fact. A real-model
hypothesizer read them as four findings about fast agents and spent a hypothesis to
learn that the four do not differ (InsightBench flag-6).

So, per dimension (not a 1:N membership, whose segments overlap), the flagged segment
that pulls the rest the most (rows times gap) is the *outlier*; each other flagged
segment of that dimension whose gap is the other way is compared again with the rest
without the outlier, by the scan's own test. One that then differs by less than a
material amount, or not beyond chance at the scan's level (its p at or above ``alpha``,
so it could not be flagged by any correction), or now the outlier's way (a value between
the outlier and a second one beyond the others), is *pulled*: it is not flagged, and the
outlier's flag names it with its figures without the outlier, so that nothing is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from d2_notebook.data.analysis.stats import Moments, compare, compare_proportions, is_material
from d2_notebook.data.analysis.text import figure

__all__ = ["Pulled", "pulled_line", "unflag_pulled"]

_NAMED = 5
"""Pulled segments an outlier's line names one by one; the others are counted."""


@dataclass(frozen=True)
class Pulled:
    """A segment flagged only against a rest holding the outlier: its value and metric,
    and its p-value against the rest without the outlier (``rest_metric``)."""

    value: str
    metric: float
    rest_metric: float
    p_value: float


def unflag_pulled(rows: list[dict[str, Any]], total: Moments, *, binary: bool,
                  pooled: float | None, alpha: float, scale: float,
                  min_rows: int, memberships: set[int]) -> None:
    """Unflag the pulled segments of ``rows`` (segment_scan's row records, flags set),
    marking them ``"pulled_away"``, and list them under their outlier's ``"pulled"`` key
    (see the module docstring).

    Args:
        rows: One record per segment, with its dimension index, value, moments, flag.
        total: The whole population's moments.
        binary: The metric is 0/1 (the scan's proportion test is used).
        pooled: The variance used for a group whose own is 0 (the scan's).
        alpha: The scan's false-discovery level.
        scale: The metric's scale, for materiality.
        min_rows: The fewest rows the rest without the outlier needs to be compared.
        memberships: Indexes of the 1:N membership dimensions, left alone.
    """
    by_dimension: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        row.setdefault("pulled", [])
        row.setdefault("pulled_away", False)
        if row["flagged"] and row["dimension_index"] not in memberships:
            by_dimension.setdefault(row["dimension_index"], []).append(row)
    for flagged in by_dimension.values():
        if len(flagged) < 2:
            continue
        outlier = max(flagged, key=lambda r: r["n"] * abs(r["difference"]))
        for row in flagged:
            if row is outlier or (row["difference"] > 0) == (outlier["difference"] > 0):
                continue
            rest = total - row["moments"] - outlier["moments"]
            if rest.n < min_rows:
                continue
            test = (compare_proportions(row["moments"], rest) if binary
                    else compare(row["moments"], rest, pooled_var=pooled))
            # the gap no longer beyond chance, or now the outlier's way: a value between
            # the outlier and a second one the other way reads off the rest either way
            flipped = (test.difference > 0) == (outlier["difference"] > 0)
            if flipped or test.p_value >= alpha or not is_material(test.difference, scale):
                row["flagged"], row["pulled_away"] = False, True
                outlier["pulled"].append(Pulled(row["value"], row["metric"], rest.mean,
                                                test.p_value))


def pulled_line(pulled: list[Pulled], value: str, higher: bool) -> str:
    """What an outlier's flag adds for the segments it pulled (empty without any):
    ``value`` is the outlier's, ``higher`` whether its metric is above its rest's."""
    if not pulled:
        return ""
    named = ", ".join(f"{p.value} {figure(p.metric)} vs {figure(p.rest_metric)} (p = "
                      f"{p.p_value:.2g})" for p in pulled[:_NAMED])
    more = f" and {len(pulled) - _NAMED} more" if len(pulled) > _NAMED else ""
    return (f"; other values read {'lower' if higher else 'higher'} than the rest only "
            f"because {value} is in it, so they are not flagged; against the rest without "
            f"it: {named}{more}")
