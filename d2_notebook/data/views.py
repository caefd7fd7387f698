"""Views a statement reads, resolved through their definitions.

The static check sees only names; a name may denote a view of the system catalog
(``pg_settings`` wraps ``duckdb_settings()``) or one of the user's own views wrapping
``read_text(...)``. Before a statement runs, every view it may name is looked up in the
connection's catalog and its definition checked like agent SQL, recursively.
"""

from __future__ import annotations

import threading

import duckdb

from d2_notebook.data.sql_guard import CheckedSQL, TableName, check_view_definition
from d2_notebook.errors import UnsafeSQLError

__all__ = ["ViewCatalog", "check_views"]


_View = tuple[str, str, str, str, bool]  # database, schema, name, sql, registered
_VIEWS_SQL = ("SELECT database_name, schema_name, view_name, sql, temporary AND NOT internal "
              "FROM duckdb_views() WHERE {} internal")


class ViewCatalog:
    """The views of one connection, for :meth:`check`.

    DuckDB's own (internal) views never change for a connection, and rendering their
    SQL costs milliseconds, so they are read once; the user's views are read on every
    check, so a view replaced since the last query is seen as it is now.
    """

    def __init__(self) -> None:
        self._system: dict[str, list[_View]] | None = None
        self._lock = threading.Lock()

    def check(self, con: duckdb.DuckDBPyConnection, tables: frozenset[TableName]) -> None:
        """Refuse a statement that reads a view whose definition the guard would refuse.

        Every view the statement may name is resolved, the system catalog's
        (``pg_settings`` wraps ``duckdb_settings()``) and the user's alike, and so are
        the views those views read. A name matches each view it could denote (any schema
        for a bare name), so a refusal may be conservative, never lax.

        Raises:
            UnsafeSQLError: A view it reads wraps something the SQL tool may not run.
        """
        if not tables:
            return
        with self._lock:
            if self._system is None:
                self._system = _by_name(con.execute(_VIEWS_SQL.format("")).fetchall())
        user = _by_name(con.execute(_VIEWS_SQL.format("NOT")).fetchall())
        pending, seen = list(tables), set()
        while pending:
            wanted = pending.pop()
            key_name = wanted.name.lower()
            for view in (*self._system.get(key_name, ()), *user.get(key_name, ())):
                database, schema_name, name = view[:3]
                key = (database, schema_name, name)
                if key in seen or not _may_denote(wanted, database, schema_name):
                    continue
                seen.add(key)
                pending.extend(_checked(view).tables)


def check_views(con: duckdb.DuckDBPyConnection, tables: frozenset[TableName]) -> None:
    """:meth:`ViewCatalog.check` without a cache (reads every view each time)."""
    ViewCatalog().check(con, tables)


def _by_name(rows: list[_View]) -> dict[str, list[_View]]:
    views: dict[str, list[_View]] = {}
    for row in rows:
        views.setdefault(row[2].lower(), []).append(tuple(row))  # type: ignore[arg-type]
    return views


def _checked(view: _View) -> CheckedSQL:
    _, schema_name, name, sql, registered = view
    try:
        return check_view_definition(sql or "", registered=bool(registered))
    except UnsafeSQLError as exc:
        reason = str(exc).removeprefix("SQL refused: ").split(". The SQL tool")[0]
        raise UnsafeSQLError(
            f"SQL refused: view {schema_name}.{name} reads what the SQL tool may not "
            f"({reason}). Query the underlying tables instead.") from None


def _may_denote(wanted: TableName, database: str, schema_name: str) -> bool:
    """Whether a name as written could resolve to a view in ``database.schema_name``."""
    same = str.casefold
    if wanted.catalog:
        return same(wanted.catalog) == same(database) and same(wanted.schema) == same(schema_name)
    if wanted.schema:
        return same(wanted.schema) in (same(schema_name), same(database))
    return True
