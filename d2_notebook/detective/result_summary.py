"""A stored query result, told to a model that weighs it without querying.

Small results are shown whole. A large one is summarised instead of cut: statistics
of every column, the rows that carry the claim made about it (rows whose cells hold a
number or a name that the readings, the verdicts or the hypothesis state), and its
head and tail. Cells are never cut: a transcript or a note is shown whole, as a
record under its row, so a clue at its end still reaches the judge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np
import pandas as pd

from d2_notebook.data.plain_cells import plain_frame
from d2_notebook.data.results import text_table
from d2_notebook.detective.date_spans import days_in_text, row_days
from d2_notebook.detective.report_numbers import (
    NumberKind,
    ReportNumber,
    find_numbers,
    match_mask,
)

LONG_CELL = 120
"""Cells longer than this are shown as records under their row, not in the table."""
COMMON_SHARE = 0.1
"""A number or name found in more than this share of the rows tells no row apart."""
_WORD = re.compile(r"[^\W\d_][\w-]{2,}")
_COMMON = frozenset({"the", "and", "for", "with", "from", "that", "this", "than", "those",
    "these", "into", "over", "under", "not", "are", "was", "were", "has", "have", "had", "its",
    "their", "per", "all", "any", "each", "more", "less", "most", "least", "only", "rate",
    "rates", "count", "counts", "group", "groups", "higher", "lower", "same", "other",
    "between", "within", "without", "evidence", "supports", "contradicts", "hypothesis",
    "result", "results", "row", "rows", "value", "values"})


def column_statistics(frame: pd.DataFrame, *, top: int = 5) -> list[str]:
    """One line per column: its kind and what its values are (over the given rows)."""
    frame = plain_frame(frame)
    return [line for name in frame.columns for line, _ in [_column_summary(frame[name], top)]]


def statistic_values(frame: pd.DataFrame, *, top: int = 5) -> list[float]:
    """Every figure :func:`column_statistics` states of ``frame`` (medians, means,
    distinct, missing and most-common counts, ...), plus its row count: a figure a model
    quotes from a summarised result is the rows' own, as much as a cell is."""
    frame = plain_frame(frame)
    figures = [float(len(frame))]
    for name in frame.columns:
        figures += _column_summary(frame[name], top)[1]
    return figures


def _column_summary(column: pd.Series, top: int) -> tuple[str, list[float]]:
    """The statistics line of one column and the figures it states."""
    name = column.name
    missing = int(column.isna().sum())
    gaps = f"; {missing} missing" if missing else ""
    values = column.dropna()
    figures = [float(missing)] if missing else []
    if values.empty:
        return f"  {name}: all missing", figures
    if pd.api.types.is_bool_dtype(column):
        true, false = int(values.astype(bool).sum()), int((~values.astype(bool)).sum())
        return f"  {name} (true/false): {true} true, {false} false{gaps}", [
            *figures, float(true), float(false)]
    distinct = values.nunique()
    figures.append(float(distinct))
    if pd.api.types.is_numeric_dtype(column):
        numbers = values.astype(float)
        stats = [numbers.min(), numbers.median(), numbers.mean(), numbers.max()]
        return (f"  {name} (number): min {_num(stats[0])}, median {_num(stats[1])}, mean "
                f"{_num(stats[2])}, max {_num(stats[3])}, {distinct} distinct{gaps}",
                [*figures, *(float(v) for v in stats)])
    if pd.api.types.is_datetime64_any_dtype(column):
        return (f"  {name} (time): from {values.min()} to {values.max()}, "
                f"{distinct} distinct{gaps}", figures)
    texts = values.astype(str)
    longest = int(texts.str.len().max())
    if longest > LONG_CELL:
        return (f"  {name} (text): {distinct} distinct, up to {longest} characters{gaps}",
                [*figures, float(longest)])
    counts = texts.value_counts().head(top)
    common = ", ".join(f"{v} ({c})" for v, c in counts.items())
    return (f"  {name} (text): {distinct} distinct; most common: {common}{gaps}",
            [*figures, *(float(c) for c in counts)])


def claim_rows(frame: pd.DataFrame, claims: Iterable[str], limit: int, *,
               common_share: float = COMMON_SHARE) -> list[int]:
    """Positions of the rows that carry the claims, the strongest first, at most ``limit``.

    A row carries a claim when a cell holds a number or a date the claim texts state (at
    the precision they state it; these weigh double) or a name they mention (a short text
    cell the texts contain as words, or one of whose words they use). A number or name
    found in more than ``common_share`` (:data:`COMMON_SHARE`) of the rows of a larger
    result tells no row apart and is not counted; rows already known to be about the
    claims (one dimension's strata of an analysis result, on each of which its
    standardised effect repeats) pass 1, so that every match counts.
    """
    text = "\n".join(claims)
    phrases = _phrases(text.lower())
    numbers = [n for n in find_numbers(text) if n.kind is NumberKind.QUANTITY]
    words = {w.lower() for w in _WORD.findall(text)} - _COMMON
    dates = days_in_text(text)
    if frame.empty or limit < 1 or not (numbers or words or dates.size):
        return []
    frame = plain_frame(frame)
    masks: list[tuple[int, np.ndarray]] = []
    for name in frame.columns:
        column = frame[name]
        if pd.api.types.is_datetime64_any_dtype(column):  # a date the texts write
            if dates.size:
                masks.append((2, np.isin(row_days(column), dates)))
            continue
        if pd.api.types.is_bool_dtype(column):
            continue
        if pd.api.types.is_numeric_dtype(column):
            masks += [(2, mask) for _, mask in _number_masks(column, numbers)]
            continue
        cells = column.astype(str).str.lower()
        unique = pd.Series(cells.unique(), dtype="string[pyarrow]")
        unique = unique[unique.str.len() <= LONG_CELL]
        spaced = (unique.str.replace(r"[^\w.]+", " ", regex=True)
                  .str.replace(r"\.( |$)", " ", regex=True).str.strip())
        whole = unique[spaced.isin(phrases) & (unique.str.len() >= 3)]
        pattern = "|".join(re.escape(w) for w in sorted(words))
        named = spaced.str.contains(rf"(?:^| )(?:{pattern})(?: |$)", regex=True) if words \
            else pd.Series(False, index=spaced.index)
        by_word = unique[named.fillna(False).astype(bool)]
        masks += [(1, cells.isin(whole).to_numpy()), (1, cells.isin(by_word).to_numpy())]
    telling = [weight * m for weight, m in masks
               if m.any() and (len(frame) <= 20 or m.mean() <= common_share)]
    if not telling:
        return []
    score = np.sum(telling, axis=0)
    strongest = np.argsort(-score, kind="stable")
    return [int(i) for i in strongest[:limit] if score[i] > 0]


def covering_rows(frame: pd.DataFrame, claims: Iterable[str], limit: int, *,
                  about: Iterable[int] = (),
                  common_share: float = COMMON_SHARE) -> list[int]:
    """Positions of the fewest rows (at most ``limit``) that show every number the
    ``claims`` state, in the order they were picked.

    Rows are picked greedily: each one shows the most numbers not yet shown, so that a
    verdict quoting six figures spread over six strata is shown its six rows before a
    row repeating a figure already shown. ``about`` are the rows known to be about the
    claims (an analysis result's overall row, the strata of the dimension a verdict
    names, the rows carrying its names), most telling first: a number they hold is
    sought in them alone, every match counting (a standardised effect repeats on every
    stratum of its dimension, and other dimensions' rows may hold it by rounding), and
    ties go to the first of them, then to the earlier row. Elsewhere a number found in
    more than ``common_share`` of the rows of a result over 20 rows tells no row apart
    and is not sought, as in :func:`claim_rows`. Names and dates are not sought: the
    caller adds :func:`claim_rows`' strongest rows after these.
    """
    numbers = [n for n in find_numbers("\n".join(claims)) if n.kind is NumberKind.QUANTITY]
    if frame.empty or limit < 1 or not numbers:
        return []
    about = [p for p in dict.fromkeys(about) if 0 <= p < len(frame)]
    frame = plain_frame(frame)
    held = np.zeros((len(numbers), len(frame)), dtype=bool)  # number x row
    for name in frame.columns:
        column = frame[name]
        if not pd.api.types.is_bool_dtype(column) and pd.api.types.is_numeric_dtype(column):
            for index, mask in _number_masks(column, numbers):
                held[index] |= mask
    known = np.zeros(len(frame), dtype=bool)
    known[about] = True
    sought = []
    for mask in held:
        if (mask & known).any():
            sought.append(mask & known)
        elif mask.any() and (len(frame) <= 20 or mask.mean() <= common_share):
            sought.append(mask)
    unseen = np.array(sought, dtype=bool).reshape(len(sought), len(frame))
    rank = np.full(len(frame), len(frame), dtype=int)  # tie order: the known rows first
    rank[about[::-1]] = np.arange(len(about))[::-1]
    picked: list[int] = []
    while len(unseen) and len(picked) < limit:
        gain = unseen.sum(axis=0)
        best = np.flatnonzero(gain == gain.max())  # gain.max() >= 1: each number has a row
        row = int(best[np.argmin(rank[best])])  # argmin keeps the earlier row on a tie
        picked.append(row)
        unseen = unseen[~unseen[:, row]]
    return picked


def _number_masks(column: pd.Series,
                  numbers: list[ReportNumber]) -> Iterable[tuple[int, np.ndarray]]:
    """For each of ``numbers`` (by index) the rows of a numeric ``column`` holding it at
    the precision it is written."""
    values = column.to_numpy(dtype=float, na_value=np.nan)
    for index, number in enumerate(numbers):
        yield index, match_mask(number, values)


def _phrases(text: str, longest: int = 8) -> set[str]:
    """Every run of up to ``longest`` consecutive words of ``text``, space-joined (a
    cell the text names is one of them)."""
    words = re.sub(r"\.( |$)", " ", re.sub(r"[^\w.]+", " ", text)).split()
    return {" ".join(words[i:i + n]) for n in range(1, longest + 1)
            for i in range(len(words) - n + 1)}


def render_rows(frame: pd.DataFrame, positions: list[int] | None = None) -> str:
    """Rows of ``frame`` as text: a table, with any long cell whole beneath its row.

    ``positions`` (0-based) selects rows and numbers them (a "row" column, 1-based;
    "row #" when the result has a column named row);
    None shows every row unnumbered.
    """
    if not len(frame.columns):
        return "(no columns)"
    frame = plain_frame(frame)
    shown = frame if positions is None else frame.iloc[positions]
    if positions is not None:
        label = _numbering_label(frame)
        shown = shown.assign(**{label: [p + 1 for p in positions]})
        shown = shown[[label, *frame.columns]]
    long_columns = [c for c in shown.columns if shown[c].dtype == object
                    and shown[c].astype(str).str.len().max() > LONG_CELL]
    table, _ = text_table(shown.drop(columns=long_columns), max_colwidth=10**9)
    if not long_columns:
        return "\n".join(table)
    lines = [table[0]] if table[0] else []
    for number, (line, (_, row)) in enumerate(zip(table[1:], shown.iterrows(), strict=True), 1):
        lines.append(line or f"record {number}:")
        lines.extend(f"    {column}: {_cell(row[column])}" for column in long_columns)
    return "\n".join(lines)


def _numbering_label(frame: pd.DataFrame) -> str:
    """The name of the column numbering shown rows: ``row``, unless the result has a
    column of that name (then ``row #``, ``row ##``, ...)."""
    label = "row"
    while label in frame.columns:
        label += " #" if label == "row" else "#"
    return label


def _cell(value: object) -> str:
    if value is None or (isinstance(value, float) and value != value) or value is pd.NA:
        return "NULL"
    return str(value)


def _num(value: float) -> str:
    if abs(value) >= 1e12 or (value and abs(value) < 1e-4):
        return f"{value:.4g}"
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"
