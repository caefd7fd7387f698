"""Where a column's NULLs lie: exactly on the rows of some values of a category column.

"source_id VARCHAR (34% null)" reads like values missing here and there; when the NULLs
are exactly the rows whose ``category`` is Travel or Miscellaneous, that is a fact about
the data every reader needs (real-model agents each spent a query finding it). The
schema summary's profile (:func:`d2_notebook.data.schema.profiled`) asks this of every
column it shows as partly NULL, against the table's text columns without NULLs:

1. a screen of the table's first :data:`SCREEN_ROWS` rows keeps the columns with few
   values there (a near-unique column is no category, and grouping a large table by one
   would cost far more than the profile);
2. one scan groups the table by each kept column (``GROUP BY GROUPING SETS``) and counts
   each partly-NULL column's non-NULL rows per group.

A column is NULL exactly where a category takes some values when each of its groups is
all NULL or all non-NULL, both kinds occur, and the category repeats (at most
:data:`MAX_CATEGORY_VALUES` values, averaging at least :data:`MIN_ROWS_PER_VALUE` rows
each: in a table of a dozen rows a unique name "explains" any pattern). The SQL is plain
enough for DuckDB, PostgreSQL and Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from d2_notebook.errors import SQLError

Query = Callable[[str], pd.DataFrame]

MAX_CATEGORY_VALUES = 20
"""A column with more distinct values is no category to explain NULLs by."""
MIN_ROWS_PER_VALUE = 5
"""A category's values must average at least this many rows."""
MAX_VALUES_NAMED = 3
"""The most values a pattern names. It names the side with fewer values: those on the
NULL rows, or, when fewer, those on the others (``category is not 'Assets'``); with more
on both sides it is left out."""
MAX_COLUMNS = 16
"""Partly-NULL columns, and categories, tested in one table at most."""
MAX_ROWS = 5_000_000
"""Tables with more rows are not tested."""
SCREEN_ROWS = 10_000
"""The first rows in which a category must show few values before the whole table is
grouped by it."""


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

    At most two queries (the screen and the grouping); one that is refused, fails or
    times out gives no pattern (the summary shows the NULL share alone, as before).
    """
    partly_null = list(partly_null)[:MAX_COLUMNS]
    if not partly_null or not categories or rows > MAX_ROWS:
        return {}
    kept = _few_valued(query, ref, list(categories)[:MAX_COLUMNS], quote=quote, count=count)
    if not kept:
        return {}
    limit = MAX_CATEGORY_VALUES * len(kept)
    sets = ", ".join(f"({quote(c)})" for c in kept)
    counted = ", ".join(f"{count}({quote(x)}) AS d2_v{i}" for i, x in enumerate(partly_null))
    try:
        groups = query(f"SELECT {', '.join(quote(c) for c in kept)}, {count}(*) AS d2_in_group, "
                       f"{counted} FROM {ref} GROUP BY GROUPING SETS ({sets}) "
                       f"LIMIT {limit + 1}")
    except SQLError:
        return {}
    if len(groups) > limit:  # some category has more values than a category may
        return {}
    groups.columns = [*kept, "d2_in_group", *(f"d2_v{i}" for i in range(len(partly_null)))]
    found: dict[str, NullPattern] = {}
    for i, x in enumerate(partly_null):
        for category in kept:
            pattern = _pattern(groups, category, f"d2_v{i}", rows)
            if pattern is not None:
                found[x] = pattern
                break
    return found


def _pattern(groups: pd.DataFrame, category: str, non_null: str,
             rows: int) -> NullPattern | None:
    """The pattern ``category``'s groups (the rows where it is set: it has no NULLs, so
    the other grouping sets leave it NULL) show for one column, if any."""
    mine = groups[groups[category].notna()]
    values = len(mine)
    if not values or values > MAX_CATEGORY_VALUES or values * MIN_ROWS_PER_VALUE > rows:
        return None
    all_null = mine[non_null] == 0
    none_null = mine[non_null] == mine["d2_in_group"]
    if not (all_null | none_null).all() or not all_null.any() or not none_null.any():
        return None
    negated = int(none_null.sum()) < int(all_null.sum())  # name the side with fewer values
    named = sorted(str(v) for v in mine.loc[none_null if negated else all_null, category])
    return NullPattern(category, tuple(named), negated) if len(named) <= MAX_VALUES_NAMED \
        else None


def _few_valued(query: Query, ref: str, categories: list[str], *,
                quote: Callable[[str], str], count: str) -> list[str]:
    """The columns of ``categories`` with at most :data:`MAX_CATEGORY_VALUES` distinct
    values in the table's first :data:`SCREEN_ROWS` rows: counting the distinct values
    of a near-unique column over a whole large table cost ten times the profile itself
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
