"""Totals over the rows a report's words name, for the claim check.

"The team has 34 analysts [E1]" over a result with the rows Analyst/junior 25 and
Analyst/senior 9: no cell holds 34, but the rows whose ``role`` is Analyst add up to it.
:class:`LabelTotals` finds such a figure, and only where a false match is unlikely:

- only count columns are added up (whole, non-negative numbers: a head count, a number
  of orders; never a column whose name marks a statistic, a date part or an id); rates,
  means and intervals are never summed ("35.2%" is no sum of three monthly rates);
- the labels must stand within :data:`NEAR_WORDS` words of the number, in its sentence;
  labels of several text columns there all hold ("junior engineers" is the rows that
  are both junior and engineers, never all juniors);
- a label is a whole word (a hyphen joins words: "non-senior" does not name "senior"),
  singular or plural, and never a common word ("other", "none", "total");
- an analysis tool's result is never summed this way (its rows repeat figures per
  stratum): the caller does not build one for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["NEAR_WORDS", "LabelTotals", "words_near"]

NEAR_WORDS = 4
"""How many words on each side of a number may name the rows it totals."""

MAX_LABELS = 50
"""A text column with more distinct labels than this (names, ids) is not used: a total
over an arbitrary group of many matches almost any figure."""

COMMON_WORDS = frozenset({
    "all", "any", "both", "false", "none", "null", "n/a", "no", "other", "others", "rest",
    "total", "true", "unknown", "yes"})
"""Labels that ordinary prose uses as words, so that a sentence naming them names no rows."""


@dataclass(frozen=True)
class _Column:
    """One text column: each usable label's rows, and the pattern that finds the label."""

    labels: tuple[tuple[re.Pattern[str], np.ndarray], ...]


@dataclass(frozen=True)
class LabelTotals:
    """A result's count columns, and the rows each label of its text columns holds."""

    counts: np.ndarray
    """Rows x count columns."""
    columns: tuple[_Column, ...]

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> LabelTotals | None:
        """The count columns and labelled text columns of ``frame``; None when it has no
        count column or no usable text column."""
        counts = [_as_counts(frame[name]) for name in frame.columns]
        counts = [c for c in counts if c is not None]
        columns = [c for name in frame.columns if (c := _labelled(frame[name])) is not None]
        if not counts or not columns:
            return None
        return cls(np.column_stack(counts), tuple(columns))

    def named(self, near: str) -> np.ndarray:
        """Each count column's total over the rows holding every label ``near`` names (of
        one column's labels, any), when those are two rows or more but not all rows (one
        row's cells and the column totals are matched already); empty otherwise."""
        text = near.lower()
        rows = np.ones(len(self.counts), dtype=bool)
        named_any = False
        for column in self.columns:
            found = [mask for pattern, mask in column.labels if pattern.search(text)]
            if found:
                named_any = True
                rows &= np.logical_or.reduce(found)
        if not named_any or not 2 <= rows.sum() < len(rows):
            return np.empty(0)
        return self.counts[rows].sum(axis=0)


def words_near(text: str, start: int, end: int, sentence: tuple[int, int]) -> str:
    """Up to :data:`NEAR_WORDS` words before ``text[start:end]`` and after it, within the
    ``sentence`` span."""
    before = text[sentence[0]:start].split()[-NEAR_WORDS:]
    after = text[end:sentence[1]].split()[:NEAR_WORDS]
    return " ".join([*before, *after])


NOT_COUNTS = frozenset({
    "avg", "average", "mean", "median", "rate", "ratio", "share", "pct", "percent",
    "percentage", "proportion", "min", "max", "std", "stddev", "score", "id", "year",
    "quarter", "month", "week", "day", "hour", "rank", "index"})
"""Words of a column's name that mark it as no count even when its values are whole
numbers (an average of whole days, a year, an id): such columns are never summed."""


def _as_counts(column: pd.Series) -> np.ndarray | None:
    """The column as floats when it holds whole non-negative numbers only (NaN as 0) and
    its name marks no statistic, date part or id (:data:`NOT_COUNTS`)."""
    if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
        return None
    if NOT_COUNTS & set(re.split(r"[^a-z]+", str(column.name).lower())):
        return None
    values = column.to_numpy(dtype=float, na_value=np.nan)
    present = values[~np.isnan(values)]
    if not len(present) or (present < 0).any() or (present != np.round(present)).any():
        return None
    return np.nan_to_num(values, nan=0.0)


def _labelled(column: pd.Series) -> _Column | None:
    """A text column's usable labels, each with its rows; None when it has none or too
    many."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column) \
            or pd.api.types.is_datetime64_any_dtype(column):
        return None
    labels = np.array([str(v).strip().lower() if pd.notna(v) else "" for v in column],
                      dtype=object)
    distinct = [label for label in dict.fromkeys(labels)
                if sum(ch.isalpha() for ch in label) >= 3 and label not in COMMON_WORDS]
    if not distinct or len(distinct) > MAX_LABELS:
        return None
    return _Column(tuple((_pattern(label), labels == label) for label in distinct))


def _pattern(label: str) -> re.Pattern[str]:
    """The label as a whole word (hyphens join words), singular or plural ("s", "es",
    "y" -> "ies")."""
    forms = [re.escape(label) + "(?:e?s)?"]
    if label.endswith("y"):
        forms.append(re.escape(label[:-1]) + "ies")
    return re.compile(rf"(?<![\w-])(?:{'|'.join(forms)})(?![\w-])")
