"""Segments flagged only because one outlier of their dimension sits in their rest.

segment_scan compares each segment with the rest of the population. When one value of a
dimension is far off (one agent's incidents take 31 days, the other four agents' 5), it
is in the rest of every other value, which it pulls towards itself: each of the four
then reads "lower than the rest" beyond chance, four flags for one fact. A real-model
hypothesizer read them as four findings about fast agents and spent a hypothesis to
learn that the four do not differ (InsightBench flag-6).

So, per dimension (not a 1:N membership, whose segments overlap), the flagged segment
that pulls the rest the most (rows times gap) names the *outlier side*: it and every other
flagged value whose gap goes its way (two slow agents). Each flagged value whose gap is the
other way is compared again, by the scan's own test, with the rest without the outlier
side and without the value that pulls most on its own side (unless it is that value: a
second outlier the other way would pull the middle values' rest too):

- one that then differs by less than a material amount, or not beyond chance at the
  scan's level (its p at or above ``alpha``, so it could not be flagged by any
  correction), is *pulled*: it is not flagged, and the outlier's flag names it with its
  figures, so that nothing is lost;
- one that still differs keeps its flag, which adds those figures: its gap against the
  whole rest was inflated, or, when it now goes the outlier's way, reversed.

No rule of this kind is right for every mix of outliers; the figures are always given,
with the values left out of the rest they were compared with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from d2_notebook.data.analysis.stats import Moments, compare, compare_proportions, is_material
from d2_notebook.data.analysis.text import figure

__all__ = ["Pulled", "pulled_line", "unflag_pulled", "without_line"]

_NAMED = 5
"""Pulled segments an outlier's line names one by one; the others are counted."""


@dataclass(frozen=True)
class Pulled:
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
    """Unflag the pulled segments of ``rows`` (segment_scan's row records, flags set),
    marking them ``"pulled_away"`` and listing them under the outlier's ``"pulled"`` key
    (its side's values under ``"pull_side"``);
    a flagged value on the other side that still differs gets its comparison under its
    own ``"without"`` key (see the module docstring).

    Args:
        rows: One record per segment, with its dimension index, value, moments, flag.
        total: The whole population's moments.
        binary: The metric is 0/1 (the scan's proportion test is used).
        pooled: The variance used for a group whose own is 0 (the scan's).
        alpha: The scan's false-discovery level.
        scale: The metric's scale, for materiality.
        min_rows: The fewest rows the rest a value is compared with again needs.
        memberships: Indexes of the 1:N membership dimensions, left alone.
    """
    by_dimension: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        row.update(pulled=[], pull_side=(), pulled_away=False, without=None)
        if row["flagged"] and row["dimension_index"] not in memberships:
            by_dimension.setdefault(row["dimension_index"], []).append(row)
    for flagged in by_dimension.values():
        outlier = max(flagged, key=_pull)
        up = outlier["difference"] > 0
        side = [r for r in flagged if (r["difference"] > 0) == up]
        others = [r for r in flagged if (r["difference"] > 0) != up]
        if not others:
            continue
        anchor = max(others, key=_pull)
        for row in others:
            left_out = side if row is anchor else [*side, anchor]
            rest = total - row["moments"] - sum((r["moments"] for r in left_out[1:]),
                                                 left_out[0]["moments"])
            if rest.n < min_rows:
                continue
            test = (compare_proportions(row["moments"], rest) if binary
                    else compare(row["moments"], rest, pooled_var=pooled))
            found = Pulled(row["value"], row["metric"], tuple(r["value"] for r in left_out),
                           rest.mean, test.p_value)
            if test.p_value >= alpha or not is_material(test.difference, scale):
                row["flagged"], row["pulled_away"] = False, True
                outlier["pulled"].append(found)
                outlier["pull_side"] = tuple(r["value"] for r in side)
            else:
                row["without"] = found


def _pull(row: dict[str, Any]) -> float:
    """How far a value moves its rest's mean: its rows times its gap."""
    return row["n"] * abs(row["difference"])


def _names(values: tuple[str, ...]) -> str:
    """``"Fred"``, ``"Fred and George"``, ``"Fred, George and Ann"``."""
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"


def pulled_line(pulled: list[Pulled], side: tuple[str, ...], higher: bool) -> str:
    """What an outlier's flag adds for the values it pulled (empty without any), grouped
    by the values left out of their rest; ``side``: the outlier side's values,
    ``higher``: the outlier is above its rest."""
    if not pulled:
        return ""
    groups: dict[tuple[str, ...], list[Pulled]] = {}
    for found in pulled[:_NAMED]:
        groups.setdefault(found.without, []).append(found)
    named = "; ".join(
        f"without {_names(without)}: " + ", ".join(
            f"{p.value} {figure(p.metric)} vs {figure(p.rest_metric)} (p = {p.p_value:.2g})"
            for p in found)
        for without, found in groups.items())
    more = f"; and {len(pulled) - _NAMED} more" if len(pulled) > _NAMED else ""
    return (f"; other values read {'lower' if higher else 'higher'} than the rest only "
            f"because {_names(side)} {'is' if len(side) == 1 else 'are'} in it, so they are "
            f"not flagged; against the rest {named}{more}")


def without_line(found: Pulled | None) -> str:
    """What a kept flag on the other side adds: its comparison with the rest without the
    outlier side (empty when it has none)."""
    if found is None:
        return ""
    direction = "higher" if found.metric > found.rest_metric else "lower"
    return (f"; against the rest without {_names(found.without)}: {figure(found.metric)} vs "
            f"{figure(found.rest_metric)}, {direction} (p = {found.p_value:.2g})")
