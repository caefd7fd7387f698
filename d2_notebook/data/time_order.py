"""Date and time columns out of their usual order in some rows.

``closed_at TIMESTAMP`` beside ``opened_at TIMESTAMP`` reads as an end after its start.
When 50 of 478 closed incidents close before they open, every duration averaged over
them is off, and nothing in the columns' samples or NULL shares shows it: a real-model
agent found it only through a sanity query of its own, and warned that an analyst
trusting the schema summary would have averaged the negative durations in (InsightBench
flag-6). The schema summary's profile (:func:`d2_notebook.data.schema.profiled`) asks this
of every table with two or more date or time columns, in one scan: per pair of them, the
rows where the first is before the second, after it, and the rows where both are set.

A column is *usually after* another when, of the rows where their values differ, at
least :data:`USUAL_ORDER_SHARE` have it later; the rows where it is nevertheless before
are named when they are at least :data:`MIN_PERCENT_SHOWN` percent of the rows where both
are set: ``closed_at TIMESTAMP ... (earlier than opened_at in 50 of the 478 rows with both
set)``. A date is compared with a timestamp by date. Of a wide table, the first
:data:`MAX_COLUMNS` date and timestamp columns are compared. The summary states the
fact, not a judgement: which timestamp is wrong, or whether the order is a rule at all,
the data cannot say. The SQL is plain enough for DuckDB, PostgreSQL and Spark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

from d2_notebook.errors import SQLError

Query = Callable[[str], pd.DataFrame]

USUAL_ORDER_SHARE = 0.8
"""Share of the rows whose two values differ that must have one order for it to count as
the usual one (a start and its end; not two dates that fall either way)."""
MIN_PERCENT_SHOWN = 1
"""The rows against the usual order are shown from this percentage of the rows with both
set up (a single bad row among thousands barely moves an average)."""
MAX_COLUMNS = 6
"""Date or time columns compared in one table at most (in table order): 15 pairs."""
MAX_ROWS = 5_000_000
"""Tables with more rows are not compared."""

TIME_TYPE = re.compile(r"(DATE|DATETIME|TIMESTAMP\w*)(\s*\(\d+\))?( WITH(OUT)? TIME ZONE)?",
                       re.IGNORECASE)
"""Date and timestamp type names of DuckDB, PostgreSQL (as SQLAlchemy writes them) and
Spark (a time of day alone, ``TIME``, is no point in time and is not compared)."""
_DATE_TYPE = re.compile(r"DATE", re.IGNORECASE)


@dataclass(frozen=True)
class OutOfOrder:
    """A column is before ``other`` in ``rows`` of the ``both`` rows where both are set,
    though it is after ``other`` in most rows where the two differ."""

    other: str
    rows: int
    both: int


def out_of_order(query: Query, ref: str, rows: int, time_columns: Sequence[tuple[str, str]],
                 *, quote: Callable[[str], str], count: str = "count"
                 ) -> dict[str, tuple[OutOfOrder, ...]]:
    """For each of ``time_columns`` (the table's date and timestamp columns as ``(name,
    type)``, in table order) the columns it is usually after but in some rows before (see
    the module docstring); columns with none are left out. A pair with a ``DATE`` is
    compared by date (a ticket resolved at 14:00 on its due date is not after it).

    Args:
        query: Runs the SQL (the source's own, under its time limit and guard).
        ref: The table as the query names it (quoted).
        rows: The table's row count (tables above :data:`MAX_ROWS` are not compared).
        quote: Quotes a column name for the source's dialect.
        count: The ``count`` function to call (``system.main.count`` on DuckDB).

    One query; when it is refused, fails or times out there is no finding (the summary
    shows the columns as before).
    """
    columns = list(time_columns)[:MAX_COLUMNS]
    pairs = list(combinations(range(len(columns)), 2))
    if not pairs or rows > MAX_ROWS:
        return {}
    aggregates = []
    for i, j in pairs:
        (a, a_type), (b, b_type) = columns[i], columns[j]
        a, b = quote(a), quote(b)
        if _DATE_TYPE.fullmatch(a_type.strip()) or _DATE_TYPE.fullmatch(b_type.strip()):
            a, b = f"CAST({a} AS DATE)", f"CAST({b} AS DATE)"
        aggregates += [f"{count}(CASE WHEN {a} < {b} THEN 1 END) AS d2_lt{i}_{j}",
                       f"{count}(CASE WHEN {a} > {b} THEN 1 END) AS d2_gt{i}_{j}",
                       f"{count}(CASE WHEN {a} IS NOT NULL AND {b} IS NOT NULL THEN 1 END)"
                       f" AS d2_both{i}_{j}"]
    try:
        counts = query(f"SELECT {', '.join(aggregates)} FROM {ref}").iloc[0]
    except SQLError:
        return {}
    found: dict[str, list[OutOfOrder]] = {}
    for i, j in pairs:
        before, after = int(counts[f"d2_lt{i}_{j}"]), int(counts[f"d2_gt{i}_{j}"])
        both = int(counts[f"d2_both{i}_{j}"])
        # column i usually before column j: j is out of order where it is before i
        for later, earlier, against in ((j, i, after), (i, j, before)):
            usual = before + after - against
            if (against and usual >= USUAL_ORDER_SHARE * (before + after)
                    and 100 * against >= MIN_PERCENT_SHOWN * both):
                found.setdefault(columns[later][0], []).append(
                    OutOfOrder(columns[earlier][0], against, both))
    return {column: tuple(notes) for column, notes in found.items()}
