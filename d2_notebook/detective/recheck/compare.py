"""Comparing a stored result with the same query's result now: same, or what changed.

Rows are compared as a multiset (order does not matter) after normalising each cell: a
missing value is one value whatever its spelling (None, NaN, NaT, pd.NA), a number is
compared to nine significant digits (so 0.1 + 0.2 equals 0.3, and an integer column read
back as float equals itself), a time by its ISO text, a list, struct, map or blob by its
text (a fresh DuckDB list is a NumPy array, its stored copy a list). A changed result is described
compactly: the row counts, rows added and removed, and a few key numbers before -> after
(rows matched by their columns that hold neither numbers nor booleans).
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pandas as pd

from d2_notebook.nested_values import is_nested, nested_text

__all__ = ["MAX_CHANGES_SHOWN", "Comparison", "compare_results", "normalise_cell"]

MAX_CHANGES_SHOWN = 4
"""Key numbers a diff names (the rest are counted)."""
_DIGITS = 9


@dataclass(frozen=True)
class Comparison:
    """The outcome of comparing two results.

    Attributes:
        same: True when both hold the same rows (in any order) and row count.
        detail: What changed, in a line (empty when ``same``).
    """

    same: bool
    detail: str


def normalise_cell(value: Any) -> Any:
    """A cell in the form results are compared in (see the module docstring)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Number):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return str(value)
        if math.isnan(number):
            return None
        return float(f"{number:.{_DIGITS}g}")
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if is_nested(value):  # a fresh DuckDB list is an array, its stored copy a list
        return nested_text(value)
    return str(value)


def compare_results(old: pd.DataFrame, old_count: int, new: pd.DataFrame,
                    new_count: int) -> Comparison:
    """Compare a stored result (``old``: its stored rows, ``old_count`` the query's true
    row count) with a fresh one.

    When the stored result was cut (fewer stored rows than ``old_count``), only as many
    of the new rows are compared, with the true counts.
    """
    old_columns = [str(c) for c in old.columns]
    new_columns = [str(c) for c in new.columns]
    if old_columns != new_columns:
        return Comparison(False, f"columns {', '.join(old_columns)} -> {', '.join(new_columns)}")
    compared = new.head(len(old)) if len(old) < old_count else new
    before, after = _rows(old), _rows(compared)
    if before == after and old_count == new_count:
        return Comparison(True, "")
    parts = [f"rows {old_count:,} -> {new_count:,}"] if old_count != new_count else []
    added, removed = after - before, before - after
    if added or removed:
        parts.append(f"{sum(added.values())} row(s) added, {sum(removed.values())} removed")
    parts.extend(_changed_numbers(old, compared))
    return Comparison(False, "; ".join(parts) or "rows differ")


def _rows(frame: pd.DataFrame) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(normalise_cell(v) for v in row)
                   for row in frame.itertuples(index=False, name=None))


def _changed_numbers(old: pd.DataFrame, new: pd.DataFrame) -> list[str]:
    """``metric[key] before -> after`` for rows whose key (their cells that are not numbers
    or booleans) is in both results once, and whose numbers or flags differ."""
    numeric = [c for c in old.columns if pd.api.types.is_numeric_dtype(old[c])]
    keys = [c for c in old.columns if c not in numeric]  # text, times: what a row is about
    if not numeric:
        return []
    before, after = _by_key(old, keys), _by_key(new, keys)
    changes = []
    for column in numeric:  # the result's leading measures first
        for key, row in before.items():
            other = after.get(key)
            if other is None:
                continue
            a, b = normalise_cell(row[column]), normalise_cell(other[column])
            if a != b:
                label = f"{column}[{', '.join(map(str, key))}]" if keys else str(column)
                changes.append(f"{label} {_number(a)} -> {_number(b)}")
    shown = changes[:MAX_CHANGES_SHOWN]
    if len(changes) > len(shown):
        shown.append(f"{len(changes) - len(shown)} more value(s) changed")
    return shown


def _by_key(frame: pd.DataFrame, keys: list[str]) -> dict[tuple[Any, ...], pd.Series]:
    if not keys:
        return {(): frame.iloc[0]} if len(frame) == 1 else {}
    counted = Counter(tuple(normalise_cell(v) for v in row)
                      for row in frame[keys].itertuples(index=False, name=None))
    found = {}
    for _, row in frame.iterrows():
        key = tuple(normalise_cell(row[k]) for k in keys)
        if counted[key] == 1:
            found[key] = row
    return found


def _number(value: Any) -> str:
    return "missing" if value is None else f"{value:.4g}" if isinstance(value, float) \
        else str(value)
