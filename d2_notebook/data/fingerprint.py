"""Data fingerprints: has a table changed since an earlier look, without re-running the
queries that read it?

A table's fingerprint is its row count and an order-insensitive sum of a hash of every
row, computed by one aggregate query run through the source's guard. Any inserted,
deleted or edited row changes it (up to hash collisions). :func:`tables_read` names the
tables a statement reads (common table expressions are not tables), so a caller can
fingerprint exactly what a result rests on.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
import sqlglot
from sqlglot import exp

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.sources import SQLSource
from d2_notebook.errors import D2Error

__all__ = ["FINGERPRINT_DIALECTS", "fingerprint_tables", "table_fingerprint", "tables_read"]

_ROW_HASH_SUM: dict[Dialect, str] = {
    Dialect.DUCKDB: "CAST(sum(hash(t)) AS VARCHAR)",
    Dialect.POSTGRES: "CAST(sum(CAST(CAST(('x' || substr(md5(CAST(t AS text)), 1, 15)) "
                      "AS bit(60)) AS bigint)) AS text)",
    Dialect.SPARK: "CAST(sum(CAST(xxhash64(*) AS DECIMAL(38, 0))) AS STRING)",
    Dialect.DATABRICKS: "CAST(sum(CAST(xxhash64(*) AS DECIMAL(38, 0))) AS STRING)",
}
FINGERPRINT_DIALECTS: frozenset[Dialect] = frozenset(_ROW_HASH_SUM)
"""Dialects whose tables can be fingerprinted (others are never called unchanged)."""


def tables_read(sql: str, dialect: Dialect) -> frozenset[str] | None:
    """The tables (as written, lower-cased, schema-qualified if written so) that ``sql``
    reads; None when the statement cannot be parsed or reads no table."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect.value)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError, ValueError):
        return None
    if tree is None:
        return None
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    names = set()
    for table in tree.find_all(exp.Table):
        if not table.name:
            return None  # a table function (read_csv(...), range(...)): not a table
        parts = [p for p in (table.catalog, table.db, table.name) if p]
        name = ".".join(parts).lower()
        if len(parts) == 1 and name in ctes:
            continue
        names.add(name)
    return frozenset(names) or None


def table_fingerprint(source: SQLSource, table: str) -> str | None:
    """``"<rows>:<hash sum>"`` of ``table`` now, or None when the source's dialect has
    no fingerprint or the query fails (an unknown table, a refused function)."""
    expression = _ROW_HASH_SUM.get(source.dialect)
    if expression is None:
        return None
    quoted = ".".join(exp.to_identifier(part).sql(dialect=source.dialect.value)
                      for part in table.split("."))
    sql = f"SELECT count(*) AS row_count, {expression} AS row_hash_sum FROM {quoted} AS t"
    try:
        result = source.run(sql, max_rows=1)
    except (D2Error, ValueError):
        return None
    if result.frame.empty:
        return None
    rows, total = result.frame.iloc[0, 0], result.frame.iloc[0, 1]
    return f"{int(rows)}:{'empty' if pd.isna(total) else total}"


def fingerprint_tables(source: SQLSource, tables: Iterable[str]) -> dict[str, str]:
    """The fingerprint of each table that has one (see :func:`table_fingerprint`)."""
    found = {}
    for table in sorted(set(tables)):
        fingerprint = table_fingerprint(source, table)
        if fingerprint is not None:
            found[table] = fingerprint
    return found
