"""Where a column's NULLs lie: exactly on the rows of some values of a category column.

"source_id VARCHAR (34% null)" reads like values missing here and there; when the NULLs
are exactly the rows whose ``category`` is Travel or Miscellaneous, that is a fact about
the data every reader needs (real-model agents each spent a query finding it). The
schema summary's profile (:func:`d2_notebook.data.schema.profiled`) asks this of every
column it shows as partly NULL, with one more aggregate query per table: for each pair of
such a column ``x`` and a text column ``c`` without NULLs, the distinct values of ``c``
on the rows where ``x`` is NULL and where it is not. When no value of ``c`` is on both
sides (and ``c`` has few values, so this is not true of any near-unique column), ``x`` is
NULL exactly where ``c`` takes the values on the NULL side; one small query then names
them. The SQL is plain enough for DuckDB, PostgreSQL and Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from d2_notebook.errors import SQLError

Query = Callable[[str], pd.DataFrame]

MAX_CATEGORY_VALUES = 20
"""A column with more distinct values is no category to explain NULLs by (on a column of
unique values every NULL pattern would trivially "follow" it)."""
MAX_VALUES_NAMED = 3
"""The most values a pattern names. It names the side with fewer values: those on the
NULL rows, or, when fewer, those on the others (``category is not Assets``); with more
on both sides it is left out."""
MAX_PAIRS = 64
"""Pairs of a partly-NULL column and a category tested in one table's query at most."""
MAX_ROWS = 5_000_000
"""Tables with more rows are not tested (the query counts distinct values per pair)."""
SCREEN_ROWS = 10_000
"""The first rows in which a category must show few values before the whole table's
distinct values are counted (:func:`_few_valued`)."""


@dataclass(frozen=True)
class NullPattern:
    """A column is NULL exactly on the rows where ``category`` takes ``values``
    (``negated``: on the rows where it takes none of them)."""

    category: str
    values: tuple[str, ...]
    negated: bool = False


def null_patterns(query: Query, ref: str, rows: int, partly_null: Sequence[str],
                  categories: Sequence[str], *, quote: Callable[[str], str],
                  count: str = "count") -> dict[str, NullPattern]:
    """For each column of ``partly_null``, the first column of ``categories`` (text, no
    NULLs, in table order) whose values split its NULL rows from the others, with those
    values; columns with no such category are left out.

    Args:
        query: Runs the SQL (the source's own, under its time limit and guard).
        ref: The table as the query names it (quoted).
        rows: The table's row count (tables above :data:`MAX_ROWS` are not tested).
        quote: Quotes a column name for the source's dialect.
        count: The ``count`` function to call (``system.main.count`` on DuckDB).

    A query that is refused, fails or times out gives no pattern (the summary shows the
    NULL share alone, as before).
    """
    if not partly_null or not categories or rows > MAX_ROWS:
        return {}
    categories = _few_valued(query, ref, categories, quote=quote, count=count)
    pairs = [(x, c) for x in partly_null for c in categories if c != x][:MAX_PAIRS]
    if not pairs:
        return {}
    aggregates = [f"{count}(DISTINCT {quote(c)}) AS d2_c{i}" for i, c in enumerate(categories)]
    for i, (x, c) in enumerate(pairs):
        aggregates.append(f"{count}(DISTINCT CASE WHEN {quote(x)} IS NULL THEN {quote(c)} END)"
                          f" AS d2_n{i}")
        aggregates.append(f"{count}(DISTINCT CASE WHEN {quote(x)} IS NOT NULL THEN "
                          f"{quote(c)} END) AS d2_v{i}")
    try:
        counts = query(f"SELECT {', '.join(aggregates)} FROM {ref}").iloc[0]
    except SQLError:
        return {}
    found: dict[str, NullPattern] = {}
    for i, (x, c) in enumerate(pairs):
        total = int(counts[f"d2_c{categories.index(c)}"])
        on_null, on_value = int(counts[f"d2_n{i}"]), int(counts[f"d2_v{i}"])
        if (x in found or total > MAX_CATEGORY_VALUES or not on_null or not on_value
                or on_null + on_value != total
                or min(on_null, on_value) > MAX_VALUES_NAMED):
            continue
        negated = on_value < on_null  # name the side with fewer values
        condition = "IS NOT NULL" if negated else "IS NULL"
        try:
            values = query(f"SELECT DISTINCT {quote(c)} AS v FROM {ref} WHERE {quote(x)} "
                           f"{condition} ORDER BY 1")["v"]
        except SQLError:
            continue
        found[x] = NullPattern(c, tuple(str(v) for v in values), negated)
    return found


def _few_valued(query: Query, ref: str, categories: Sequence[str], *,
                quote: Callable[[str], str], count: str) -> list[str]:
    """The columns of ``categories`` with at most :data:`MAX_CATEGORY_VALUES` distinct
    values in the table's first :data:`SCREEN_ROWS` rows: counting the distinct values
    of a near-unique column over a whole large table costs ten times the profile itself
    (measured: 4 M rows, 8.6 s against 0.8 s), and such a column is no category."""
    columns = ", ".join(quote(c) for c in categories)
    counts = ", ".join(f"{count}(DISTINCT {quote(c)}) AS d2_s{i}"
                       for i, c in enumerate(categories))
    try:
        head = query(f"SELECT {counts} FROM (SELECT {columns} FROM {ref} "
                     f"LIMIT {SCREEN_ROWS}) AS d2_head").iloc[0]
    except SQLError:
        return []
    return [c for i, c in enumerate(categories) if int(head[f"d2_s{i}"]) <= MAX_CATEGORY_VALUES]

