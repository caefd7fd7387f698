"""Dates a text or a result holds, as day numbers, so "19 days before the murder" can be
checked: the claim check takes a number followed by "days" as found when it is the span
between two dates the text reads.

Dates are read where evidence and texts hold them:

- date and timestamp columns;
- ISO dates in text cells and texts (``2018-01-15``, a time after it ignored);
- integers written as ``YYYYMMDD`` (``20180115``: how many databases store a date);
- dates written out in texts ("Jan 15, 2018", "Jan.15, 2018", "15 January 2018").
"""

from __future__ import annotations

import re
from datetime import date

import numpy as np
import pandas as pd

from d2_notebook.data.plain_cells import plain_frame

_EPOCH = date(1970, 1, 1).toordinal()
_FIRST_YEAR, _LAST_YEAR = 1900, 2100
_MONTHS = {name: number for number, names in enumerate(
    (("jan", "january"), ("feb", "february"), ("mar", "march"), ("apr", "april"),
     ("may",), ("jun", "june"), ("jul", "july"), ("aug", "august"),
     ("sep", "sept", "september"), ("oct", "october"), ("nov", "november"),
     ("dec", "december")), start=1) for name in names}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ISO = re.compile(r"(?<![\d-])(\d{4})-(\d{2})-(\d{2})(?!\d)")
_COMPACT = re.compile(r"(?<!\d)(?<!\d\.)((?:19|20)\d{2})(\d{2})(\d{2})(?!\d|\.\d)")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s*(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b",
                             re.IGNORECASE)
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b",
                             re.IGNORECASE)
_DAYS_AFTER = re.compile(r"\s*(?:calendar\s+)?days?\b", re.IGNORECASE)


def day_number(year: int, month: int, day: int) -> int | None:
    """Days since 1970-01-01 of a valid date between 1900 and 2100, else None."""
    if not _FIRST_YEAR <= year <= _LAST_YEAR:
        return None
    try:
        return date(year, month, day).toordinal() - _EPOCH
    except ValueError:
        return None


def days_in_text(text: str) -> np.ndarray:
    """Every date written in ``text`` (ISO, ``YYYYMMDD``, or with a month name), as
    day numbers."""
    found: list[int | None] = []
    for pattern in (_ISO, _COMPACT):
        found += [day_number(int(y), int(m), int(d)) for y, m, d in pattern.findall(text)]
    found += [day_number(int(y), _MONTHS[m.lower()], int(d))
              for m, d, y in _MONTH_DAY_YEAR.findall(text)]
    found += [day_number(int(y), _MONTHS[m.lower()], int(d))
              for d, m, y in _DAY_MONTH_YEAR.findall(text)]
    return np.array(sorted({d for d in found if d is not None}), dtype=float)


def days_in_frame(frame: pd.DataFrame) -> np.ndarray:
    """Every date the rows of ``frame`` hold, as day numbers: date columns, ISO dates in
    text cells, and whole numbers that read as ``YYYYMMDD``."""
    found: list[np.ndarray] = []
    frame = plain_frame(frame)
    for name in frame.columns:
        column = frame[name].dropna()
        if column.empty or pd.api.types.is_bool_dtype(column):
            continue
        if pd.api.types.is_datetime64_any_dtype(column):
            found.append(row_days(column))
        elif pd.api.types.is_integer_dtype(column):
            found.append(_compact_dates(column.to_numpy(dtype=np.int64)))
        elif not pd.api.types.is_numeric_dtype(column):  # text (or dates as objects)
            found.append(days_in_text(" ".join(str(v) for v in column)))
    return np.unique(np.concatenate(found)) if found else np.empty(0)


def row_days(column: pd.Series) -> np.ndarray:
    """Each row's day number of a date or timestamp column (NaN where it is missing)."""
    stamps = column.dt.tz_localize(None) if column.dt.tz is not None else column
    days = stamps.to_numpy(dtype="datetime64[D]")
    return np.where(np.isnat(days), np.nan, days.astype(np.int64).astype(float))


def spans(days: np.ndarray, others: np.ndarray) -> np.ndarray:
    """The number of days between each date of ``days`` and each of ``days`` or
    ``others`` (both directions give the same, positive span)."""
    if days.size == 0:
        return np.empty(0)
    every = np.unique(np.concatenate([days, others]))
    return np.unique(np.abs(days[:, None] - every[None, :]).ravel())


def says_days(text: str, end: int) -> bool:
    """Whether the number ending at ``end`` in ``text`` counts days ("19 days")."""
    return _DAYS_AFTER.match(text, end) is not None


def _compact_dates(values: np.ndarray) -> np.ndarray:
    candidates = values[(values >= _FIRST_YEAR * 10_000 + 101)
                        & (values <= _LAST_YEAR * 10_000 + 1231)]
    days = [day_number(int(v) // 10_000, int(v) // 100 % 100, int(v) % 100)
            for v in np.unique(candidates)]
    return np.array([d for d in days if d is not None], dtype=float)
