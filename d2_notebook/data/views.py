"""Views a statement reads, resolved through their definitions.

The static check sees only names; a name may denote a view of the system catalog
(``pg_settings`` wraps ``duckdb_settings()``) or one of the user's own views wrapping
``read_text(...)``. Before a statement runs, every view it may name is looked up in the
connection's catalog and its definition checked like agent SQL, recursively.
"""

from __future__ import annotations

import duckdb

from d2_notebook.data.sql_guard import TableName, check_view_definition
from d2_notebook.errors import UnsafeSQLError

__all__ = ["check_views"]


def check_views(con: duckdb.DuckDBPyConnection, tables: frozenset[TableName]) -> None:
    """Refuse a statement that reads a view whose definition the guard would refuse.

    Every view the statement may name is resolved, the system catalog's (``pg_settings``
    wraps ``duckdb_settings()``) and the user's alike, and so are the views those views
    read. A name matches each view it could denote (any schema for a bare name), so a
    refusal may be conservative, never lax.

    Raises:
        UnsafeSQLError: A view it reads wraps something the SQL tool may not run.
    """
    if not tables:
        return
    views: dict[str, list[tuple[str, str, str, str, bool]]] = {}
    rows = con.execute("SELECT database_name, schema_name, view_name, sql, "
                       "temporary AND NOT internal FROM duckdb_views()").fetchall()
    for database, schema_name, name, sql, registered in rows:
        views.setdefault(name.lower(), []).append((database, schema_name, name, sql, registered))
    pending, seen = list(tables), set()
    while pending:
        wanted = pending.pop()
        for database, schema_name, name, sql, registered in views.get(wanted.name.lower(), []):
            key = (database, schema_name, name)
            if key in seen or not _may_denote(wanted, database, schema_name):
                continue
            seen.add(key)
            try:
                inner = check_view_definition(sql or "", registered=bool(registered))
            except UnsafeSQLError as exc:
                raise UnsafeSQLError(
                    f"SQL refused: view {schema_name}.{name} reads what the SQL tool may not "
                    f"({str(exc).removeprefix('SQL refused: ').split('. The SQL tool')[0]}). "
                    "Query the underlying tables instead.") from None
            pending.extend(inner.tables)


def _may_denote(wanted: TableName, database: str, schema_name: str) -> bool:
    """Whether a name as written could resolve to a view in ``database.schema_name``."""
    same = str.casefold
    if wanted.catalog:
        return same(wanted.catalog) == same(database) and same(wanted.schema) == same(schema_name)
    if wanted.schema:
        return same(wanted.schema) in (same(schema_name), same(database))
    return True
