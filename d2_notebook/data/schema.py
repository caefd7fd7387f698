"""Schema exploration: tables and views with row counts, columns with sample values and
a compact profile (how many rows are NULL, and for numbers how many are exactly 0).

The functions here build their own SQL from catalog names (quoted identifiers) and run
it through a ``query`` callable supplied by :class:`~d2_notebook.data.GuardedSQL`, so
they share its locking and timeout. Output is deterministic: ordered by name, samples
taken from the first rows in insertion order, profiles from exact counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime, time

import pandas as pd

from d2_notebook.data.fencing import escape_text, fence
from d2_notebook.data.null_pattern import NullPattern, null_patterns
from d2_notebook.data.time_order import TIME_TYPE, OutOfOrder, out_of_order
from d2_notebook.errors import QueryFailedError, QueryTimeoutError, SQLError

__all__ = ["NEGATIVE_PERCENT_SHOWN", "NULL_PERCENT_SHOWN", "ZERO_PERCENT_SHOWN", "ColumnInfo",
           "TableInfo", "catalog", "describe", "profile_note", "profiled", "prompt_ident",
           "quote_ident", "shown_samples", "summarize", "with_samples_from"]

Query = Callable[[str], pd.DataFrame]

_SIMPLE = re.compile(r"[a-z_][a-z0-9_]*")
_KEYWORD_NAMES = """
all analyse analyze and anti any array as asc asof asymmetric at authorization
binary both by case cast check collate collation column columns concurrently
constraint create cross default deferrable desc describe distinct do else end except
false fetch for foreign freeze from full generated glob group having ilike in
initially inner intersect into is isnull join lambda lateral leading left like limit
map natural not notnull null offset on only or order outer overlaps pivot
pivot_longer pivot_wider placing positional primary qualify references returning
right select semi show similar some struct summarize symmetric table tablesample
then to trailing true try_cast tuple union unique unpack unpivot using variadic
verbose when where window with
"""
_KEYWORDS = frozenset(_KEYWORD_NAMES.split())
"""DuckDB's keywords that may not name a column unquoted (``duckdb_keywords()``,
categories ``reserved`` and ``type_function``): ``count(order)`` does not parse, and
``count(null)`` would silently count a literal."""
_SAMPLE_ROWS = 100
_SAMPLE_CHARS = 30
_NUMERIC_TYPE = re.compile(r"(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|INT[248]|REAL|FLOAT[48]?"
                           r"|DOUBLE( PRECISION)?|DECIMAL|NUMERIC)(\(.*\))?", re.IGNORECASE)
"""Numeric type names of DuckDB, PostgreSQL (as SQLAlchemy writes them) and Spark."""
_TEXT_TYPE = re.compile(r"(VARCHAR|TEXT|STRING|BPCHAR|N?CHAR(ACTER)?( VARYING)?)(\(.*\))?"
                        r"( COLLATE .*)?", re.IGNORECASE)
"""Text type names of the same: a text column's profile gives its least and greatest
value, for a column whose first rows hold a single value (a table sorted by it)."""

NULL_PERCENT_SHOWN = 1
"""A column's NULL rows are shown from this percentage of its table's rows up: below it,
a few missing values barely move an average or a count."""

ZERO_PERCENT_SHOWN = 10
"""A numeric column's rows equal to 0 are shown from this percentage of its table's rows
up. Zero is a common true value (a discount, a count), so a lower bar would flag most
amount columns; a tenth of the rows or more is often a placeholder (not processed yet,
not measured) that an average silently includes."""
NEGATIVE_PERCENT_SHOWN = 1
"""A numeric column's rows below 0 are shown from this percentage of its table's rows up:
a duration, count or amount below 0 is often an error or a placeholder (an end date
before its start) that an average silently includes, and in a signed column the share of
negatives is what its first samples do not tell."""
_CATALOG_SQL = """
SELECT database_name, schema_name, table_name AS name, 'table' AS kind, temporary
FROM system.main.duckdb_tables() WHERE NOT internal
UNION ALL
SELECT database_name, schema_name, view_name, 'view', temporary
FROM system.main.duckdb_views() WHERE NOT internal
ORDER BY temporary, database_name, schema_name, name
"""


@dataclass(frozen=True)
class ColumnInfo:
    """One column: name, DuckDB type, nullability and a few sample values (as text).

    ``null_count`` (rows that are NULL), ``zero_count`` (rows equal to 0) and
    ``negative_count`` (rows below 0; both numeric columns only), ``least`` and
    ``greatest`` (a text column's first and last value in sort order) come from the
    table's profile (:func:`profiled`); ``None`` when not profiled. ``null_pattern``:
    the category whose values hold exactly this column's NULL rows, when one does
    (:mod:`d2_notebook.data.null_pattern`). ``out_of_order``: the date or time columns
    this one is usually after but in some rows before (:mod:`d2_notebook.data.time_order`).
    """

    name: str
    type: str
    nullable: bool = True
    samples: tuple[str, ...] = ()
    null_count: int | None = None
    zero_count: int | None = None
    negative_count: int | None = None
    least: str | None = None
    greatest: str | None = None
    null_pattern: NullPattern | None = None
    out_of_order: tuple[OutOfOrder, ...] = ()
    few_values: bool = False
    """The first rows repeat at most :data:`FEW_VALUES_SHOWN` values: ``samples`` are
    all of them (a rarer value may lie beyond those rows)."""


@dataclass(frozen=True)
class TableInfo:
    """A table or view the user's connection can see.

    Attributes:
        name: How to write it in SQL: bare (quoted if needed) when it is in the default
            database's or the temp ``main`` schema, else qualified.
        kind: ``"table"`` or ``"view"`` (registered DataFrames are temporary views).
        row_count: Exact ``count(*)``; ``None`` when not computed or when it failed.
        columns: Filled by :func:`describe`, empty in listings.
        database, schema, table: The catalog coordinates.
        unreadable: Why the SQL tool may not read this view or table (the view's
            definition or a generated column of the table would be refused); empty when
            it may. Such a table or view gets no samples, no count and no profile.
    """

    name: str
    kind: str
    row_count: int | None = None
    columns: tuple[ColumnInfo, ...] = ()
    database: str = ""
    schema: str = ""
    table: str = ""
    unreadable: str = ""

    @property
    def ref(self) -> str:
        """The fully qualified, quoted reference used in generated SQL (coordinates a
        source does not have, such as a database name on PostgreSQL, are left out)."""
        return ".".join(quote_ident(p) for p in (self.database, self.schema, self.table) if p)


def quote_ident(name: str) -> str:
    """Quote an identifier for DuckDB unless it is plain lower-case and not a keyword."""
    if _SIMPLE.fullmatch(name) and name not in _KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def prompt_ident(name: str) -> str:
    """An identifier as SQL writes it (quoted if needed), escaped for a prompt: a name
    holding a newline shows as ``"a\\nb"``, never as two lines."""
    return escape_text(quote_ident(name))


def catalog(query: Query) -> list[TableInfo]:
    """List user tables and views (no row counts, no columns), ordered by name."""
    current = str(query("SELECT system.main.current_database()").iat[0, 0])
    infos = []
    for row in query(_CATALOG_SQL).itertuples(index=False):
        db, schema, table = str(row.database_name), str(row.schema_name), str(row.name)
        if db in (current, "temp") and schema == "main":
            name = quote_ident(table)
        elif db in (current, "temp"):
            name = f"{quote_ident(schema)}.{quote_ident(table)}"
        else:
            name = ".".join(quote_ident(p) for p in (db, schema, table))
        infos.append(TableInfo(name, str(row.kind), None, (), db, schema, table))
    return infos


def count_rows(query: Query, info: TableInfo) -> int | None:
    """Exact row count of a table or view, or ``None`` if counting failed, ran past the
    time limit (or the view is unreadable)."""
    if info.unreadable:
        return None
    try:
        return int(query(f"SELECT system.main.count_star() FROM {info.ref}").iat[0, 0])
    except (QueryFailedError, QueryTimeoutError):
        return None


def profiled(query: Query, info: TableInfo, ref: str, *,
             quote: Callable[[str], str] = quote_ident, count: str = "count") -> TableInfo | None:
    """``info`` with its row count and each column's NULL count (for a numeric column,
    its counts of rows equal to 0 and below 0; for a text column, its least and greatest
    value), from one aggregate query: one scan of the table; then the NULL patterns
    (:mod:`~d2_notebook.data.null_pattern`) and, with two or more date or time columns, the
    rows out of their usual order (:mod:`~d2_notebook.data.time_order`: one more scan).

    Every source uses it (the SQL is plain enough for each dialect); each passes its own
    quoting and, on DuckDB, the ``system.main`` count no database macro can shadow.

    Args:
        query: Runs the SQL (the source's own, under its time limit and guard).
        info: The table with its columns (their order is the profile's).
        ref: The table as the query names it (quoted).
        quote: Quotes a column name for the source's dialect.
        count: The ``count`` function to call (``system.main.count`` on DuckDB).

    Returns:
        The profiled table, or ``None`` when the table is unreadable or the query was
        refused, failed or ran past the time limit (the caller counts rows as before and
        shows the table without a profile).
    """
    if info.unreadable:
        return None
    aggregates = [f"{count}(*) AS d2_rows"]
    for position, column in enumerate(info.columns):
        name = quote(column.name)
        aggregates.append(f"{count}({name}) AS d2_n{position}")
        if _NUMERIC_TYPE.fullmatch(column.type.strip()):
            aggregates.append(f"{count}(CASE WHEN {name} = 0 THEN 1 END) AS d2_z{position}")
            aggregates.append(f"{count}(CASE WHEN {name} < 0 THEN 1 END) AS d2_m{position}")
        elif _TEXT_TYPE.fullmatch(column.type.strip()):
            aggregates.append(f"min({name}) AS d2_lo{position}")
            aggregates.append(f"max({name}) AS d2_hi{position}")
    try:
        frame = query(f"SELECT {', '.join(aggregates)} FROM {ref}")
    except SQLError:
        return None
    counts = frame.iloc[0]
    rows = int(counts["d2_rows"])
    columns = []
    for position, column in enumerate(info.columns):
        zeros, negatives = counts.get(f"d2_z{position}"), counts.get(f"d2_m{position}")
        least, greatest = counts.get(f"d2_lo{position}"), counts.get(f"d2_hi{position}")
        columns.append(replace(column, null_count=rows - int(counts[f"d2_n{position}"]),
                               zero_count=None if zeros is None else int(zeros),
                               negative_count=None if negatives is None else int(negatives),
                               least=None if pd.isna(least) else str(least),
                               greatest=None if pd.isna(greatest) else str(greatest)))
    partly_null = [c.name for c in columns if c.null_count and c.null_count < rows
                   and 100 * c.null_count >= NULL_PERCENT_SHOWN * rows]
    categories = [c.name for c in columns
                  if c.null_count == 0 and _TEXT_TYPE.fullmatch(c.type.strip())]
    patterns = null_patterns(query, ref, rows, partly_null, categories, quote=quote,
                             count=count)
    times = [(c.name, c.type) for c in columns if TIME_TYPE.fullmatch(c.type.strip())]
    orders = out_of_order(query, ref, rows, times, quote=quote, count=count)
    columns = [replace(c, null_pattern=patterns.get(c.name), out_of_order=orders.get(c.name, ()))
               for c in columns]
    return replace(info, row_count=rows, columns=tuple(columns))


def profile_note(column: ColumnInfo, rows: int | None) -> str:
    """The column's profile as the summary shows it after the samples: ``" (73% null)"``,
    ``" (0 in 40% of rows)"``, ``" (below 0 in 39% of rows)"``, ``" (all null)"``, those
    that apply joined by commas, or ``""`` when no share reaches its threshold
    (:data:`NULL_PERCENT_SHOWN`, :data:`ZERO_PERCENT_SHOWN`,
    :data:`NEGATIVE_PERCENT_SHOWN`) or the table was not profiled; a text column holding
    a single value says so (``" (one value in every row)"``): its one sample would
    otherwise read like the first of many (a real model never grouped by such a column,
    whose first 100 rows all held ``Computer`` of seven categories). A date or time
    column out of its usual order with another says in how many rows
    (``" (earlier than opened_at in 50 of the 478 rows with both set)"``)."""
    if not rows:
        return ""
    notes = []
    nulls, zeros = column.null_count or 0, column.zero_count or 0
    negatives = column.negative_count or 0
    if 100 * nulls >= NULL_PERCENT_SHOWN * rows:
        notes.append("all null" if nulls >= rows else f"{_percent(nulls, rows)}% null"
                     + _null_where(column.null_pattern))
    if zeros and 100 * zeros >= ZERO_PERCENT_SHOWN * rows:
        notes.append("all 0" if zeros >= rows else f"0 in {_percent(zeros, rows)}% of rows")
    if negatives and 100 * negatives >= NEGATIVE_PERCENT_SHOWN * rows:
        notes.append("all below 0" if negatives >= rows
                     else f"below 0 in {_percent(negatives, rows)}% of rows")
    if column.least is not None and column.least == column.greatest:
        notes.append("one value in every row" if not nulls else "one value where not null")
    notes.extend(f"earlier than {prompt_ident(o.other)} in {o.rows} of the {o.both} rows "
                 "with both set" for o in column.out_of_order)
    return f" ({', '.join(notes)})" if notes else ""


def _null_where(pattern: NullPattern | None) -> str:
    """``": exactly where category is 'Misc' or 'Travel'"`` (the values quoted as SQL
    writes them, escaped and cut like samples: they are data), or ``""`` without a
    pattern."""
    if pattern is None:
        return ""
    values = [_lit(escape_text(_sample_text(v))) for v in pattern.values]
    if len(values) == 1:
        said = f"is not {values[0]}" if pattern.negated else f"is {values[0]}"
    elif len(values) == 2:
        said = (f"is neither {values[0]} nor {values[1]}" if pattern.negated
                else f"is {values[0]} or {values[1]}")
    else:
        said = f"is {'none' if pattern.negated else 'one'} of {', '.join(values)}"
    return f": exactly where {prompt_ident(pattern.category)} {said}"


def _percent(part: int, whole: int) -> int:
    """``part`` of ``whole`` in whole percent, half up, kept within 1..99 so that a share
    that is neither none nor all never reads "0%" or "100%"."""
    return min(max((200 * part + whole) // (2 * whole), 1), 99)


def resolve(infos: list[TableInfo], table: str) -> TableInfo:
    """Find a table by its SQL name or bare name (case-insensitive).

    Raises:
        QueryFailedError: No such table; the message lists the available names.
    """
    wanted = table.strip().lower()
    for info in infos:
        if wanted in (info.name.lower(), info.table.lower(), info.ref.lower()):
            return info
    names = ", ".join(i.name for i in infos) or "(none)"
    raise QueryFailedError(f"no table or view named {table!r}; available: {names}")


def describe(query: Query, info: TableInfo, n_samples: int = 3) -> TableInfo:
    """Return ``info`` with its row count and columns (with up to ``n_samples`` values and
    the profile of :func:`profiled`; a table whose profile failed is counted alone)."""
    cols = query(
        "SELECT column_name, data_type, is_nullable FROM system.main.duckdb_columns() "
        f"WHERE database_name = {_lit(info.database)} AND schema_name = {_lit(info.schema)} "
        f"AND table_name = {_lit(info.table)} ORDER BY column_index"
    )
    readable = n_samples > 0 and not info.unreadable
    head = query(f"SELECT * FROM {info.ref} LIMIT {_SAMPLE_ROWS}") if readable else None
    columns = []
    for position, row in enumerate(cols.itertuples(index=False)):
        column = ColumnInfo(str(row.column_name), str(row.data_type), bool(row.is_nullable))
        if head is not None and position < len(head.columns):
            column = with_samples_from(column, head.iloc[:, position], n_samples)
        columns.append(column)
    described = replace(info, columns=tuple(columns))
    profile = profiled(query, described, info.ref, count="system.main.count")
    if profile is not None:
        return profile
    return replace(described, row_count=count_rows(query, info))


def summarize(tables: list[TableInfo], joins: str = "",
              label: str = "database schema") -> str:
    """Render described tables as compact, stable text for an LLM prompt.

    Names, types and samples are escaped (:func:`~d2_notebook.data.fencing.escape_text`)
    and the whole text is one data block fenced under ``label``. A column with notable
    NULL or zero shares ends with its :func:`profile_note`.

    Args:
        tables: Described tables (columns and row counts).
        joins: The join graph as text (:meth:`~d2_notebook.data.keys.JoinGraph.describe`),
            appended after the tables when not empty.
        label: The data block's name.
    """
    lines = [f"DuckDB database: {len(tables)} tables/views. Columns: name TYPE e.g. samples."]
    for info in tables:
        rows = "? rows" if info.row_count is None else f"{info.row_count} rows"
        if info.unreadable:
            rows = "not readable by the SQL tool: " + (
                "its definition is refused" if info.kind == "view"
                else "a generated column's expression is refused")
        lines.append(f"{escape_text(info.name)} ({info.kind}, {rows})")
        for col in info.columns:
            samples = " | ".join(escape_text(s) for s in shown_samples(col))
            example = f" e.g. {samples}" if samples else ""
            lines.append(f"  {prompt_ident(col.name)} {escape_text(col.type)}{example}"
                         f"{profile_note(col, info.row_count)}")
    if joins:
        lines.extend(escape_text(line) for line in joins.splitlines())
    return fence(label, "\n".join(lines))


def shown_samples(column: ColumnInfo, n: int = 3) -> tuple[str, ...]:
    """The samples a summary shows: the first rows' values, then, while fewer than ``n``
    or when they are a column's few values, the text column's least and greatest value
    from the profile (the first rows of a table sorted by the column hold one value of
    many; a value rarer than the first rows show is often one of these)."""
    shown = list(column.samples)
    for value in (column.least, column.greatest):
        if value is None or (len(shown) >= n and not column.few_values):
            continue
        text = _sample_text(value)
        if text not in shown:
            shown.append(text)
    return tuple(shown)


FEW_VALUES_SHOWN = 6
"""A column whose sampled rows hold at most this many distinct values, each on
:data:`_REPEATS` rows or more on average, shows every one of them, not ``n_samples``:
"priority e.g. Medium | High | Low" hid the Critical goals from a real-model agent."""
_REPEATS = 4


def with_samples_from(column: ColumnInfo, series: pd.Series, n: int) -> ColumnInfo:
    """``column`` with samples from ``series`` (its values in the table's first rows):
    up to ``n`` distinct non-null values as short text (at most 30 characters, longer
    ones cut with ``…``), in row order; every distinct value, and ``few_values`` set,
    when the rows repeat at most :data:`FEW_VALUES_SHOWN` values. A ``DATE`` column's
    midnight values read as dates ("2022-03-09"), not as the timestamps pandas holds them
    as (an agent took "2022-03-09 00:00:00" for a timestamp); a time of day is kept."""
    values = series.dropna().tolist()
    if column.type.upper() == "DATE":
        values = [v.date().isoformat() if isinstance(v, datetime) and v.time() == time()
                  else v for v in values]
    distinct = list(dict.fromkeys(_sample_text(str(value)) for value in values))
    few = n > 0 and len(distinct) <= FEW_VALUES_SHOWN and len(values) >= _REPEATS * len(distinct)
    return replace(column, samples=tuple(distinct if few else distinct[:n]), few_values=few)


def _sample_text(text: str) -> str:
    """``text`` as a sample shows it: at most :data:`_SAMPLE_CHARS` characters, a longer
    one cut with ``…``."""
    return text if len(text) <= _SAMPLE_CHARS else text[: _SAMPLE_CHARS - 1] + "…"


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
