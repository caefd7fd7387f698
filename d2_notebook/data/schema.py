"""Schema exploration: tables and views with row counts, columns with sample values.

The functions here build their own SQL from catalog names (quoted identifiers) and run
it through a ``query`` callable supplied by :class:`~d2_notebook.data.GuardedSQL`, so
they share its locking and timeout. Output is deterministic: ordered by name, samples
taken from the first rows in insertion order.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd

from d2_notebook.data.fencing import escape_text, fence
from d2_notebook.errors import QueryFailedError

__all__ = ["ColumnInfo", "TableInfo", "catalog", "describe", "prompt_ident", "quote_ident",
           "samples_of", "summarize"]

Query = Callable[[str], pd.DataFrame]

_SIMPLE = re.compile(r"[a-z_][a-z0-9_]*")
_SAMPLE_ROWS = 100
_SAMPLE_CHARS = 30
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
    """One column: name, DuckDB type, nullability and a few sample values (as text)."""

    name: str
    type: str
    nullable: bool = True
    samples: tuple[str, ...] = ()


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
            it may. Such a table or view gets no samples and no count.
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
    """Quote an identifier for DuckDB unless it is plain lower-case."""
    if _SIMPLE.fullmatch(name):
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
    """Exact row count of a table or view, or ``None`` if counting failed (or the view
    is unreadable)."""
    if info.unreadable:
        return None
    try:
        return int(query(f"SELECT system.main.count_star() FROM {info.ref}").iat[0, 0])
    except QueryFailedError:
        return None


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
    """Return ``info`` with its row count and columns (with up to ``n_samples`` values)."""
    cols = query(
        "SELECT column_name, data_type, is_nullable FROM system.main.duckdb_columns() "
        f"WHERE database_name = {_lit(info.database)} AND schema_name = {_lit(info.schema)} "
        f"AND table_name = {_lit(info.table)} ORDER BY column_index"
    )
    readable = n_samples > 0 and not info.unreadable
    head = query(f"SELECT * FROM {info.ref} LIMIT {_SAMPLE_ROWS}") if readable else None
    columns = []
    for position, row in enumerate(cols.itertuples(index=False)):
        samples: tuple[str, ...] = ()
        if head is not None and position < len(head.columns):
            samples = samples_of(head.iloc[:, position], n_samples)
        column = ColumnInfo(
            str(row.column_name), str(row.data_type), bool(row.is_nullable), samples
        )
        columns.append(column)
    return replace(info, row_count=count_rows(query, info), columns=tuple(columns))


def summarize(tables: list[TableInfo], joins: str = "",
              label: str = "database schema") -> str:
    """Render described tables as compact, stable text for an LLM prompt.

    Names, types and samples are escaped (:func:`~d2_notebook.data.fencing.escape_text`)
    and the whole text is one data block fenced under ``label``.

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
            samples = " | ".join(escape_text(s) for s in col.samples)
            example = f" e.g. {samples}" if samples else ""
            lines.append(f"  {prompt_ident(col.name)} {escape_text(col.type)}{example}")
    if joins:
        lines.extend(escape_text(line) for line in joins.splitlines())
    return fence(label, "\n".join(lines))


def samples_of(series: pd.Series, n: int) -> tuple[str, ...]:
    """Up to ``n`` distinct non-null values as short text (at most 30 characters, longer
    ones cut with ``…``), in row order."""
    seen: list[str] = []
    for value in series.dropna().tolist():
        text = str(value)
        text = text if len(text) <= _SAMPLE_CHARS else text[: _SAMPLE_CHARS - 1] + "…"
        if text not in seen:
            seen.append(text)
        if len(seen) >= n:
            break
    return tuple(seen)


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
