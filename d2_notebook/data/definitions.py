"""Views and macros a statement reaches, resolved through their definitions.

The static check sees only names. A name may denote a view of the system catalog
(``pg_settings`` wraps ``duckdb_settings()``), one of the user's own views wrapping
``read_text(...)``, or a macro of the database that shadows an allowed function: a
database file can define ``upper(x)`` or ``s2.md5(x)`` as ``current_setting(...)``, or
a table macro ``range(n)``, and DuckDB resolves a plain ``upper('a')`` to it. Before a
statement runs, every view it may name and every database macro its calls may resolve
to are looked up in the connection's catalog and their definitions checked like agent
SQL, recursively (a view calling a macro reading a view ...). A name matches every
object it could denote (any schema for a bare table name; any schema for every function
name, since ``t.col.upper()`` is the method-call form of ``upper(t.col)``), so a refusal
may be conservative, never lax; a call qualified as ``system.main.name`` is DuckDB's own
and matches none.
SHOW, DESCRIBE, SUMMARIZE and PRAGMA are rewritten by DuckDB into SQL that calls
built-in functions by plain name (``min``, ``first``, ``duckdb_tables`` ...), so for
them every database macro named like a built-in function is checked. (A macro's
parameter defaults are not in its definition, but DuckDB folds them to constants when
the macro is created, so they cannot read anything at run time.)

The catalog queries here call no function a database could shadow: every table
function is qualified as ``system.main.name``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from d2_notebook.data.function_policy import FunctionUse, Refusal, classify
from d2_notebook.data.sql_guard import (
    CheckedSQL,
    FunctionName,
    TableName,
    check_macro_definition,
    check_view_definition,
)
from d2_notebook.errors import UnsafeSQLError

__all__ = ["DefinitionCheck", "Macro", "read_macros"]

_View = tuple[str, str, str, str, bool]  # database, schema, name, sql, registered
_VIEWS_SQL = ("SELECT database_name, schema_name, view_name, sql, temporary AND NOT internal "
              "FROM system.main.duckdb_views() WHERE {} internal")
_TABLES_SQL = "SELECT database_name, schema_name, table_name FROM system.main.duckdb_tables()"
_MACROS_SQL = ("SELECT database_name, schema_name, function_name, function_type, "
               "macro_definition FROM system.main.duckdb_functions() WHERE NOT internal")


@dataclass(frozen=True)
class Macro:
    """A function of the database or connection that is not DuckDB's own.

    Attributes:
        database, schema, name: Where it lives (``name`` lower-cased).
        table: True for a table macro (or table function).
        definition: The macro's body; ``None`` for a function that is not a macro (a
            Python UDF registered on the connection), which cannot be checked.
    """

    database: str
    schema: str
    name: str
    table: bool
    definition: str | None


def read_macros(con: duckdb.DuckDBPyConnection) -> list[Macro]:
    """Every non-internal function of the connection: the database's macros and the
    connection's registered functions."""
    return [Macro(str(db), str(schema), str(name).lower(), kind in ("table_macro", "table"),
                  None if kind not in ("macro", "table_macro") else str(body or ""))
            for db, schema, name, kind, body in con.execute(_MACROS_SQL).fetchall()]


class DefinitionCheck:
    """The views and macros of one connection, for :meth:`check`.

    DuckDB's own (internal) views never change for a connection, and rendering their
    SQL costs milliseconds, so they are read once; the user's views and macros are read
    on every check, so an object replaced since the last query is seen as it is now.
    """

    def __init__(self) -> None:
        self._system: dict[str, list[_View]] | None = None
        self._lock = threading.Lock()

    def check(self, con: duckdb.DuckDBPyConnection, tables: frozenset[TableName],
              calls: frozenset[FunctionName] = frozenset(),
              macros: Callable[[], list[Macro]] | None = None, *,
              rewritten: bool = False) -> None:
        """Refuse a statement that reaches a view or macro the guard would refuse.

        Args:
            con: The connection the statement will run on.
            tables: The table and view names it reads.
            calls: The function calls it makes.
            macros: Gives the connection's macros (default :func:`read_macros`); called
                only when a call or a view is to be resolved (reading them costs a
                scan of every function DuckDB knows).
            rewritten: The statement is one DuckDB rewrites into its own SQL
                (:attr:`~d2_notebook.data.sql_guard.CheckedSQL.rewritten`).

        Raises:
            UnsafeSQLError: A view or macro it reaches wraps something the SQL tool may
                not run (the message names the object).
        """
        calls = frozenset(c for c in calls if not c.builtin)
        if not tables and not calls and not rewritten:
            return
        with self._lock:
            if self._system is None:
                self._system = _by_name(con.execute(_VIEWS_SQL.format("")).fetchall())
        user = _by_name(con.execute(_VIEWS_SQL.format("NOT")).fetchall())
        found_macros: dict[str, list[Macro]] | None = None

        def by_name() -> dict[str, list[Macro]]:
            nonlocal found_macros
            if found_macros is None:
                found_macros = {}
                for macro in read_macros(con) if macros is None else macros():
                    found_macros.setdefault(macro.name, []).append(macro)
            return found_macros

        objects: list[tuple[str, str, str]] | None = None
        pending: list[TableName | FunctionName] = [*tables, *calls]
        if rewritten:
            pending.extend(FunctionName("", "", n) for n in by_name() if _builtin_name(n))
        seen: set[tuple[str, ...]] = set()
        while pending:
            wanted = pending.pop()
            if isinstance(wanted, FunctionName):
                for macro in by_name().get(wanted.name, ()):
                    key = ("macro", macro.database, macro.schema, macro.name,
                           macro.definition or "")
                    if key in seen:  # any schema: x.y.f() may be f(x.y), a method call
                        continue
                    seen.add(key)
                    found = _checked_macro(macro, frozenset(by_name()))
                    pending.extend((*found.tables, *(c for c in found.calls if not c.builtin)))
                continue
            if wanted.catalog or wanted.schema:
                if objects is None:  # the views are read above: only the tables here
                    objects = [*con.execute(_TABLES_SQL).fetchall(),
                               *(view[:3] for views in (self._system, user)
                                 for named in views.values() for view in named)]
                _require_object(wanted, objects)
            for view in (*self._system.get(wanted.name.lower(), ()),
                         *user.get(wanted.name.lower(), ())):
                database, schema_name, name = view[:3]
                key = ("view", database, schema_name, name)
                if key in seen or not _may_denote(wanted.catalog, wanted.schema, database,
                                                  schema_name):
                    continue
                seen.add(key)
                found = _checked_view(view, frozenset(by_name()))
                pending.extend((*found.tables, *(c for c in found.calls if not c.builtin)))


def _require_object(wanted: TableName, objects: list[tuple[str, str, str]]) -> None:
    """Refuse a qualified name that is no table or view of the connection: DuckDB would
    read ``planted.csv`` or ``other.db`` (no such schema or catalog) as a file path."""
    same = str.casefold
    if any(same(wanted.name) == same(str(name)) and _may_denote(wanted.catalog, wanted.schema,
                                                                str(database), str(schema))
           for database, schema, name in objects):
        return
    written = ".".join(part for part in (wanted.catalog, wanted.schema, wanted.name) if part)
    raise UnsafeSQLError(
        f"SQL refused: {written} is no table or view of the database (a dotted name that is "
        "none DuckDB reads as a file, and files are not reachable). Query the tables "
        "listed by SHOW TABLES, qualified as they are listed.")


def _builtin_name(name: str) -> bool:
    """Whether DuckDB itself has a function of this name (the reviewed table knows it)."""
    return any(classify(name, use) is not Refusal.UNCLASSIFIED for use in FunctionUse)


def _by_name(rows: list[_View]) -> dict[str, list[_View]]:
    views: dict[str, list[_View]] = {}
    for row in rows:
        views.setdefault(row[2].lower(), []).append(tuple(row))  # type: ignore[arg-type]
    return views


def _reason(exc: UnsafeSQLError) -> str:
    return str(exc).removeprefix("SQL refused: ").split(". The SQL tool")[0]


def _checked_view(view: _View, macros: frozenset[str]) -> CheckedSQL:
    _, schema_name, name, sql, registered = view
    try:
        return check_view_definition(sql or "", registered=bool(registered),
                                     user_functions=macros)
    except UnsafeSQLError as exc:
        raise UnsafeSQLError(
            f"SQL refused: view {schema_name}.{name} reads what the SQL tool may not "
            f"({_reason(exc)}). Query the underlying tables instead.") from None


def _checked_macro(macro: Macro, macros: frozenset[str]) -> CheckedSQL:
    kind = "table macro" if macro.table else "macro"
    where = f"{macro.schema}.{macro.name}"
    if macro.definition is None:
        raise UnsafeSQLError(
            f"SQL refused: function {where} is registered on the connection (not a macro), "
            "so its code cannot be checked. Call DuckDB's own function as "
            f"system.main.{macro.name}(...) or remove the registered one.")
    try:
        return check_macro_definition(macro.definition, table=macro.table,
                                      user_functions=macros)
    except UnsafeSQLError as exc:
        raise UnsafeSQLError(
            f"SQL refused: the database's {kind} {where} runs what the SQL tool may not "
            f"({_reason(exc)}). Call DuckDB's own function as system.main.{macro.name}(...) "
            "or write the expression inline.") from None


def _may_denote(catalog: str, schema: str, database: str, schema_name: str) -> bool:
    """Whether a name as written could resolve to an object in ``database.schema_name``."""
    same = str.casefold
    if catalog:
        return same(catalog) == same(database) and (not schema or same(schema) == same(schema_name))
    if schema:
        return same(schema) in (same(schema_name), same(database))
    return True
