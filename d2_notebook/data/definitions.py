"""Views, macros and generated columns a statement reaches, resolved through their
definitions.

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
parameter defaults are not in the catalog at all: DuckDB folds them to constants when
the macro is created, from any expression (``token := getvariable('api_token')``), so a
call that leaves out a parameter is refused; a call passes every parameter.)
A macro that passes its parameters to a quadratic string distance (``levenshtein``) is
refused: the distance's inputs are checked where it is called
(:mod:`~d2_notebook.data.distance_inputs`), and through the macro a call could hand it a
string the query built.
A table's generated columns are computed when it is read, like a view: each generation
expression is checked as the body of a macro, and a table with a refused one is refused.

The catalog queries here call no function a database could shadow: every table
function is qualified as ``system.main.name``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import duckdb

from d2_notebook.data.distance_inputs import QUADRATIC_DISTANCES
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
               "macro_definition, parameters FROM system.main.duckdb_functions() "
               "WHERE NOT internal")
_Generated = tuple[str, str, str, str, str]  # database, schema, table, column, expression
_GENERATED_SQL = ("SELECT database_name, schema_name, table_name, column_name, "
                  "generation_expression FROM system.main.duckdb_columns() "
                  "WHERE is_generated AND NOT internal")


@dataclass(frozen=True)
class Macro:
    """A function of the database or connection that is not DuckDB's own.

    Attributes:
        database, schema, name: Where it lives (``name`` lower-cased).
        table: True for a table macro (or table function).
        definition: The macro's body; ``None`` for a function that is not a macro (a
            Python UDF registered on the connection), which cannot be checked.
        parameters: Its parameters' names, those with a default included (the catalog
            does not say which have one).
    """

    database: str
    schema: str
    name: str
    table: bool
    definition: str | None
    parameters: tuple[str, ...] = ()


def read_macros(con: duckdb.DuckDBPyConnection) -> list[Macro]:
    """Every non-internal function of the connection: the database's macros and the
    connection's registered functions."""
    return [Macro(str(db), str(schema), str(name).lower(), kind in ("table_macro", "table"),
                  None if kind not in ("macro", "table_macro") else str(body or ""),
                  tuple(str(p) for p in parameters or ()))
            for db, schema, name, kind, body, parameters in con.execute(_MACROS_SQL).fetchall()]


class DefinitionCheck:
    """The views and macros of one connection, for :meth:`check`.

    DuckDB's own (internal) views never change for a connection, and rendering their
    SQL costs milliseconds, so they are read once; the user's views, macros and
    generated columns are read on every check, so an object replaced since the last
    query is seen as it is now.
    """

    def __init__(self) -> None:
        self._system: dict[str, list[_View]] | None = None
        self._lock = threading.Lock()

    def check(self, con: duckdb.DuckDBPyConnection, tables: frozenset[TableName],
              calls: frozenset[FunctionName] = frozenset(),
              macros: Callable[[], list[Macro]] | None = None, *,
              rewritten: bool = False) -> None:
        """Refuse a statement that reaches a view, macro or generated column the guard
        would refuse.

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
            UnsafeSQLError: A view, macro or generated column it reaches runs something
                the SQL tool may not run, or a call leaves out a macro parameter (the
                message names the object).
        """
        calls = frozenset(c for c in calls if not c.builtin)
        if not tables and not calls and not rewritten:
            return
        resolution = self._resolution(con, macros)
        pending: list[TableName | FunctionName] = [*tables, *calls]
        if rewritten:  # DuckDB's own SQL: calls of any shape, so "arguments" is unknown
            pending.extend(FunctionName("", "", n) for n in resolution.macros()
                           if _builtin_name(n))
        resolution.resolve(pending)

    def refusals(self, con: duckdb.DuckDBPyConnection, names: list[TableName],
                 macros: Callable[[], list[Macro]] | None = None) -> dict[TableName, str]:
        """Why the SQL tool may not read each of ``names`` (those it may are left out).

        The catalog is read once for all names; each is resolved on its own, as a
        statement reading only that table or view would be.
        """
        resolution = self._resolution(con, macros)
        found: dict[TableName, str] = {}
        for name in names:
            try:
                resolution.fresh().resolve([name])
            except UnsafeSQLError as exc:
                found[name] = str(exc).removeprefix("SQL refused: ")
        return found

    def _resolution(self, con: duckdb.DuckDBPyConnection,
                    macros: Callable[[], list[Macro]] | None) -> _Resolution:
        with self._lock:
            if self._system is None:
                self._system = _by_name(con.execute(_VIEWS_SQL.format("")).fetchall())
        user = _by_name(con.execute(_VIEWS_SQL.format("NOT")).fetchall())
        return _Resolution(con, self._system, user,
                           (lambda: read_macros(con)) if macros is None else macros)


class _Resolution:
    """One check's walk over the objects a statement reaches (catalog read lazily)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, system: dict[str, list[_View]],
                 user: dict[str, list[_View]], macros: Callable[[], list[Macro]]) -> None:
        self._con, self._system, self._user, self._read_macros = con, system, user, macros
        self._macros: dict[str, list[Macro]] | None = None
        self._objects: list[tuple[str, str, str]] | None = None
        self._generated: dict[str, list[_Generated]] | None = None
        self._seen: set[tuple[str, ...]] = set()

    def fresh(self) -> _Resolution:
        """The same catalog, nothing seen yet."""
        again = _Resolution(self._con, self._system, self._user, self._read_macros)
        again._macros, again._objects = self._macros, self._objects
        again._generated = self._generated
        return again

    def macros(self) -> dict[str, list[Macro]]:
        """The connection's macros by lower-cased name."""
        if self._macros is None:
            self._macros = {}
            for macro in self._read_macros():
                self._macros.setdefault(macro.name, []).append(macro)
        return self._macros

    def resolve(self, pending: list[TableName | FunctionName]) -> None:
        """Check every object the names may denote, and what their definitions reach."""
        while pending:
            wanted = pending.pop()
            if isinstance(wanted, FunctionName):
                pending.extend(self._function(wanted))
            else:
                pending.extend(self._table(wanted))

    def _function(self, wanted: FunctionName) -> list[TableName | FunctionName]:
        reached: list[TableName | FunctionName] = []
        for macro in self.macros().get(wanted.name, ()):
            _require_arguments(wanted, macro)
            key = ("macro", macro.database, macro.schema, macro.name, macro.definition or "")
            if key in self._seen:  # any schema: x.y.f() may be f(x.y), a method call
                continue
            self._seen.add(key)
            found = _checked_macro(macro, frozenset(self.macros()))
            reached.extend((*found.tables, *(c for c in found.calls if not c.builtin)))
        return reached

    def _table(self, wanted: TableName) -> list[TableName | FunctionName]:
        if wanted.catalog or wanted.schema:
            if self._objects is None:  # the views are read already: only the tables here
                self._objects = [*self._con.execute(_TABLES_SQL).fetchall(),
                                 *(view[:3] for views in (self._system, self._user)
                                   for named in views.values() for view in named)]
            _require_object(wanted, self._objects)
        reached: list[TableName | FunctionName] = []
        for view in (*self._system.get(wanted.name.lower(), ()),
                     *self._user.get(wanted.name.lower(), ())):
            database, schema_name, name = view[:3]
            key = ("view", database, schema_name, name)
            if key in self._seen or not _may_denote(wanted.catalog, wanted.schema, database,
                                                    schema_name):
                continue
            self._seen.add(key)
            found = _checked_view(view, frozenset(self.macros()))
            reached.extend((*found.tables, *(c for c in found.calls if not c.builtin)))
        if self._generated is None:
            self._generated = {}
            for row in self._con.execute(_GENERATED_SQL).fetchall():
                self._generated.setdefault(str(row[2]).lower(), []).append(
                    tuple(str(v) for v in row))  # type: ignore[arg-type]
        for column in self._generated.get(wanted.name.lower(), ()):
            database, schema_name, table, name, expression = column
            key = ("column", database, schema_name, table, name)
            if key in self._seen or not _may_denote(wanted.catalog, wanted.schema, database,
                                                    schema_name):
                continue
            self._seen.add(key)
            try:  # resolved here, so that a refusal anywhere below names the column
                found = check_macro_definition(expression, table=False,
                                               user_functions=frozenset(self.macros()))
                self.resolve([*found.tables, *(c for c in found.calls if not c.builtin)])
            except UnsafeSQLError as exc:
                raise UnsafeSQLError(
                    f"SQL refused: table {schema_name}.{table} has a generated column {name} "
                    f"that runs what the SQL tool may not ({_reason(exc)}), so the table "
                    "cannot be read (SELECT * computes every column). Ask for a view over "
                    f"its other columns, or a copy of the table without {name}.") from None
        return reached


def _require_arguments(call: FunctionName, macro: Macro) -> None:
    """Refuse a call that may leave out a parameter of ``macro`` (one overload of the
    name it calls): the parameter would take its default, which DuckDB folded from any
    expression when the macro was created (``token := getvariable('api_token')``) and
    keeps out of the catalog, so it cannot be checked. A call passes when it gives at
    least as many arguments (positional or named) as the macro has parameters."""
    if not macro.parameters or (call.arguments is not None
                                and call.arguments >= len(macro.parameters)):
        return
    given = ("arguments the SQL tool cannot count (DuckDB's own SQL for SHOW, DESCRIBE or "
             "SUMMARIZE calls it)" if call.arguments is None else f"{call.arguments} argument(s)")
    signature = f"{macro.name}({', '.join(macro.parameters)})"
    raise UnsafeSQLError(
        f"SQL refused: the call of {macro.schema}.{macro.name} passes {given} "
        f"and the database's macro {signature} has {len(macro.parameters)} parameter(s); a "
        "parameter left out takes its default value, which the SQL tool cannot check "
        f"(DuckDB keeps it out of the catalog). Pass every parameter explicitly, e.g. "
        f"{macro.name}({', '.join(f'{p} := ...' for p in macro.parameters)}).")


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
        checked = check_macro_definition(macro.definition, table=macro.table,
                                         user_functions=macros)
    except UnsafeSQLError as exc:
        raise UnsafeSQLError(
            f"SQL refused: the database's {kind} {where} runs what the SQL tool may not "
            f"({_reason(exc)}). Call DuckDB's own function as system.main.{macro.name}(...) "
            "or write the expression inline.") from None
    distances = sorted({c.name for c in checked.calls if c.name in QUADRATIC_DISTANCES})
    if distances and macro.parameters:  # its arguments reach the distance unseen
        raise UnsafeSQLError(
            f"SQL refused: the database's {kind} {where} passes its arguments to "
            f"{distances[0]}(), whose inputs the SQL tool checks only where it is called "
            f"directly (a string the query built would make it run unbounded). Call "
            f"{distances[0]}() directly on columns of the database's tables.")
    return checked


def _may_denote(catalog: str, schema: str, database: str, schema_name: str) -> bool:
    """Whether a name as written could resolve to an object in ``database.schema_name``."""
    same = str.casefold
    if catalog:
        return same(catalog) == same(database) and (not schema or same(schema) == same(schema_name))
    if schema:
        return same(schema) in (same(schema_name), same(database))
    return True
