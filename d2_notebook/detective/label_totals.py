"""Totals over the rows a number's own noun names, for the claim check.

"The team has 34 analysts [E1]" over a result with the rows Analyst/junior 25 and
Analyst/senior 9: no cell holds 34, but the rows whose ``role`` is Analyst add up to it.
:class:`LabelTotals` finds such a figure only in that shape, where a false match is
unlikely (two independent reviews found false passes in looser rules: labels further
off, several labels of one column read together, rates summed):

- the labels must follow the number directly, as its noun: "34 analysts", "78 senior
  managers" (labels of several columns in a row all hold: senior *and* manager; of
  labels of one column, the longest that matches: "senior manager", not "manager");
- only count columns are added up (whole, non-negative numbers, and no name that marks
  a statistic, a date part or an id); when a word right after the labels names a count
  column ("34 analysts' hours"), only that one;
- a label is a whole word (a hyphen joins words), singular or plural, of three letters
  or more, and never a common word ("other", "none", "total");
- an analysis tool's result is never summed this way (its rows repeat figures per
  stratum): :func:`~d2_notebook.detective.claim_check.check_claims` builds none for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["LabelTotals"]

MAX_LABELS = 50
"""A text column with more distinct labels than this (names, ids) is not used: a total
over an arbitrary group of many matches almost any figure."""

MAX_LABEL_WORDS = 3
"""The most words a label may have."""

COMMON_WORDS = frozenset({
    "all", "any", "both", "false", "none", "null", "n/a", "no", "other", "others", "rest",
    "total", "true", "unknown", "yes", "more", "less", "new", "old", "per", "days",
    "hours", "times", "rows", "percent", "points"})
"""Words that follow a number as ordinary prose, so that they name no rows."""

NOT_COUNTS = frozenset({
    "avg", "average", "mean", "median", "rate", "ratio", "share", "pct", "percent",
    "percentage", "proportion", "min", "max", "std", "stddev", "score", "id", "year",
    "years", "quarter", "month", "months", "week", "weeks", "day", "days", "hour", "hours",
    "rank", "index", "age", "length", "duration", "tenure"})
"""Words of a column's name that mark it as no count even when its values are whole
numbers (an average of whole days, a year, an age, an id): such columns are never summed."""

_WORD = re.compile(r"[\w'/-]+")


@dataclass(frozen=True)
class _Column:
    """One text column: each usable label as its words (lower case), with its rows."""

    labels: dict[tuple[str, ...], np.ndarray]


@dataclass(frozen=True)
class LabelTotals:
    """A result's count columns (with their names' words) and the rows each label of its
    text columns holds."""

    counts: np.ndarray
    """Rows x count columns."""
    count_words: tuple[frozenset[str], ...]
    columns: tuple[_Column, ...]

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> LabelTotals | None:
        """The count columns and labelled text columns of ``frame``; None when it has no
        count column or no usable text column."""
        counts, words = [], []
        for position in range(frame.shape[1]):
            column = frame.iloc[:, position]
            values = _as_counts(column)
            if values is not None:
                counts.append(values)
                words.append(frozenset(_name_words(column.name)))
        columns = [c for p in range(frame.shape[1]) if (c := _labelled(frame.iloc[:, p]))]
        if not counts or not columns:
            return None
        return cls(np.column_stack(counts), tuple(words), tuple(columns))

    def following(self, after: str) -> np.ndarray:
        """Totals over the rows the labels at the start of ``after`` (the text right
        after a number) name, of each count column or of the one a word right after the
        labels names; empty when no label starts it, or when the rows are fewer than two
        or all of them (one row's cells and the column totals are matched already)."""
        words = [w.lower() for w in _WORD.findall(after[:200])]
        rows = np.ones(len(self.counts), dtype=bool)
        used: set[int] = set()
        at = 0
        while at < len(words):
            found = self._label_at(words, at, used)
            if found is None:
                break
            index, size, mask = found
            used.add(index)
            rows &= mask
            at += size
        if not used or not 2 <= rows.sum() < len(rows):
            return np.empty(0)
        named = [i for i, name in enumerate(self.count_words)
                 if at < len(words) and _same_stem(words[at], name)]
        totals = self.counts[rows].sum(axis=0)
        return totals[named] if named else totals

    def _label_at(self, words: list[str], at: int,
                  used: set[int]) -> tuple[int, int, np.ndarray] | None:
        """The longest label of a column not ``used`` yet that starts at ``words[at]``:
        the column's index, the label's length in words and its rows."""
        for size in range(MAX_LABEL_WORDS, 0, -1):
            if at + size > len(words):
                continue
            phrase = (*words[at:at + size - 1], _singular(words[at + size - 1]))
            for index, column in enumerate(self.columns):
                if index in used:
                    continue
                for label, mask in column.labels.items():
                    if len(label) == size and _matches(phrase, label):
                        return index, size, mask
        return None


def _matches(phrase: tuple[str, ...], label: tuple[str, ...]) -> bool:
    """Whether the words of ``phrase`` (its last one made singular) are the label's."""
    return phrase[:-1] == label[:-1] and phrase[-1] in (label[-1], _singular(label[-1]))


def _singular(word: str) -> str:
    """A plural's singular by the usual English endings ("pharmacies" -> "pharmacy")."""
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ses", "xes", "ches", "shes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith("ss") and len(word) > 3:
        return word[:-1]
    return word


def _same_stem(word: str, name_words: frozenset[str]) -> bool:
    """Whether ``word`` names a column whose name has these words (a shared start of
    five letters or more: "readmissions" and "readmitted")."""
    stem = word[:5]
    return len(stem) == 5 and any(w.startswith(stem) for w in name_words)


def _name_words(name: object) -> list[str]:
    return [w for w in re.split(r"[^a-z]+", str(name).lower()) if w]


def _as_counts(column: pd.Series) -> np.ndarray | None:
    """The column as floats when it holds whole non-negative numbers only (NaN as 0) and
    its name marks no statistic, date part, age or id (:data:`NOT_COUNTS`)."""
    if pd.api.types.is_bool_dtype(column) or not pd.api.types.is_numeric_dtype(column):
        return None
    if NOT_COUNTS & set(_name_words(column.name)):
        return None
    values = pd.to_numeric(column, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    present = values[~np.isnan(values)]
    if not len(present) or not np.isfinite(present).all() or (present < 0).any() \
            or (present != np.round(present)).any():
        return None
    return np.nan_to_num(values, nan=0.0)


def _labelled(column: pd.Series) -> _Column | None:
    """A text column's usable labels (as words), each with its rows; None when it has
    none or too many."""
    if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column) \
            or pd.api.types.is_datetime64_any_dtype(column):
        return None
    texts = np.array([v.strip().lower() if isinstance(v, str) else "" for v in column],
                     dtype=object)
    labels: dict[tuple[str, ...], np.ndarray] = {}
    for text in dict.fromkeys(texts):
        words = tuple(w.lower() for w in _WORD.findall(text))
        if (not words or len(words) > MAX_LABEL_WORDS or " ".join(words) != text
                or sum(ch.isalpha() for ch in text) < 3 or text in COMMON_WORDS):
            continue
        labels[words] = texts == text
        if len(labels) > MAX_LABELS:
            return None
    return _Column(labels) if labels else None
