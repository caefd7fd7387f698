"""The rest of a dimension: whether a segment's change stands out from its siblings'.

:func:`~d2_notebook.data.analysis.decompose.decompose` splits a change over the segments
of each dimension. A rate change every segment shares (the metric rose by the same amount
in each) localises nothing: each segment's share then follows its row count. This module
compares each segment's rate change with **the rest** of its dimension (the other
segments with rows in both periods, but the DRIVERs found so far, pooled by their mean
row shares), flags the DRIVERs in rounds, and writes the line that says a change is
spread evenly over a dimension. The method is stated in ``decompose``'s module docstring.

The rows are ``decompose``'s segment rows (dicts) with ``dimension``, ``weight`` (mean row
share, 0 for a segment in one period), ``rate_change``, ``rate_variance``, ``n_before``,
``n_after``, ``tested``, ``q_value`` and ``contribution`` set.
"""

from __future__ import annotations

import math
from collections import Counter

import pandas as pd

from d2_notebook.data.analysis.common import Support
from d2_notebook.data.analysis.stats import benjamini_hochberg, is_material, normal_comparison
from d2_notebook.data.analysis.text import figure

__all__ = ["NO_REST", "even_lines", "flag_drivers"]

NO_REST = {"rest_rate_change": math.nan, "vs_rest": math.nan, "vs_rest_low": math.nan,
           "vs_rest_high": math.nan, "vs_rest_p": math.nan, "rest_tested": False}
"""The rest-of-dimension columns of a row that has no rest to compare with."""


def flag_drivers(rows: list[dict], support: Support, alpha: float, scale: float) -> None:
    """Set ``vs_rest_q``, ``stands_out`` and ``flagged`` (DRIVER) on the segment rows
    (their ``q_value`` set), in rounds: each round compares every segment with its rest
    (:func:`_add_rest`), corrects the family (Benjamini–Hochberg) and flags; the next
    round sets the DRIVERs found aside from every rest, until the DRIVERs are those set
    aside (at most one round more than the widest dimension has segments; the last round
    stands if they never settle). So a segment that rose above an unchanged baseline is a
    DRIVER even when a larger rise elsewhere lifts the pooled rest above it, while
    segments that share a common rise under a local spike stay no DRIVER."""
    aside: set[int] = set()
    widest = max(Counter(row["dimension"] for row in rows).values(), default=0)
    for _ in range(widest + 1):
        _add_rest(rows, support, aside)
        against = [r for r in rows if r["rest_tested"]]
        q_values = iter(benjamini_hochberg([r["vs_rest_p"] for r in against]))
        for row in rows:
            row["vs_rest_q"] = next(q_values) if row["rest_tested"] else math.nan
            row["stands_out"] = _stands_out(row, alpha, scale)
            row["flagged"] = bool(row["tested"] and row["q_value"] < alpha
                                  and row["stands_out"]
                                  and row["vs_rest"] * row["rate_change"] > 0
                                  and is_material(row["contribution"], scale))
        found = {i for i, row in enumerate(rows) if row["flagged"]}
        if found == aside:
            return
        aside = found


def _add_rest(rows: list[dict], support: Support, aside: set[int]) -> None:
    """Set each segment row's comparison with the rest of its dimension (module
    docstring): ``rest_rate_change`` (its other two-period segments' rate changes averaged
    by their mean row shares, leaving out the rows indexed in ``aside``, the DRIVERs
    found so far, unless nothing else is left), ``vs_rest`` (its rate change minus the
    rest's) with its 95% interval, and ``vs_rest_p``. A segment with rows in one period
    only, or whose dimension has no other segment with rows in both periods, gets NaN.
    ``rest_tested`` is whether the p-value enters the family: the segment is tested
    (minimum support in each period) and so is its rest (its rows, in each period)."""
    groups: dict[str, list[tuple[int, dict]]] = {}
    for index, row in enumerate(rows):
        groups.setdefault(row["dimension"], []).append((index, row))
    for group in groups.values():
        paired = [(i, r) for i, r in group if r["weight"] > 0]
        for index, row in group:
            row |= NO_REST
            if row["weight"] <= 0:
                continue
            others = ([r for i, r in paired if i != index and i not in aside]
                      or [r for i, r in paired if i != index])
            weight = sum(r["weight"] for r in others)
            if not others or weight <= 0:
                continue
            rest = sum(r["weight"] * r["rate_change"] for r in others) / weight
            rest_var = sum(r["weight"] ** 2 * r["rate_variance"] for r in others) / weight ** 2
            against = normal_comparison(row["rate_change"] - rest,
                                        math.sqrt(row["rate_variance"] + rest_var))
            supported = (sum(r["n_before"] for r in others) >= support.rows
                         and sum(r["n_after"] for r in others) >= support.rows)
            row |= {"rest_rate_change": rest, "vs_rest": against.difference,
                    "vs_rest_low": against.low, "vs_rest_high": against.high,
                    "vs_rest_p": against.p_value,
                    "rest_tested": bool(row["tested"] and supported)}


def _stands_out(row: dict, alpha: float, scale: float) -> bool:
    """Whether a row's rate change differs from its rest's beyond chance (its q in the
    rest family under ``alpha``) by a material amount, either way."""
    return bool(row["rest_tested"] and row["vs_rest_q"] < alpha
                and is_material(row["vs_rest"], scale))


EVEN_NOTE = "its shares follow row counts and localise nothing"
"""How :func:`even_lines` ends the line of a dimension over which the change is spread
evenly (and no mix shift is flagged)."""
MIX_FLAGGED_NOTE = ("its rate parts follow row counts and localise nothing (its mix shift is "
                    "flagged above)")
"""How it ends the line of such a dimension whose mix shift is flagged."""


def even_lines(body: pd.DataFrame, mixed: set[str], scale: float) -> list[str]:
    """One line per dimension over which the change is spread evenly: at least two of
    its segments were compared with their rest, none stands out, and its rate parts add
    up to a material part of the change (a dimension whose rate moved nowhere localises
    nothing to spread). Its shares then follow its segments' row counts; a dimension with
    a MIX SHIFT flag keeps that finding for its mix part."""
    lines = []
    for dimension, group in body.groupby("dimension", sort=False):
        compared = group[group["rest_tested"].astype(bool)]
        if (len(compared) < 2 or compared["stands_out"].astype(bool).any()
                or not is_material(float(group["rate_part"].sum()), scale)):
            continue
        low, high = (figure(compared["rate_change"].min()),
                     figure(compared["rate_change"].max()))
        changes = f"rate change {low} in each" if low == high else f"rate changes {low} to {high}"
        follows = MIX_FLAGGED_NOTE if dimension in mixed else EVEN_NOTE
        lines.append(f"{dimension}: the change is spread evenly over its segments "
                     f"({changes}; none differs from the rest's beyond chance); {follows}.")
    return lines
