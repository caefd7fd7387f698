"""The PostgreSQL guard's second half: what a checked statement resolves to in the catalog.

:func:`~d2_notebook.data.sqlglot_guard.check_statement` reads the text; this module asks
the server what the names in it are, in the transaction the statement will run in (same
role, same ``search_path``), before it runs:

- every relation: a system catalog or ``information_schema`` view must be in
  :data:`SYSTEM_RELATIONS` (settings, configuration files, other sessions and credentials
  are not); a user view is allowed only if its definition (``pg_get_viewdef``) passes the
  whole guard, recursively; a foreign table is refused (it reads another server or a file);
- every function name that a user-defined function carries (in any schema, so one that
  shadows a built-in is found too): only a plain ``LANGUAGE sql`` function whose body
  passes the whole guard runs; ``SECURITY DEFINER``, other languages, user aggregates and
  procedures are refused with their name;
- a name in none of the reviewed function tables and defined by no user is refused;
- an operator symbol the database defines itself (outside an extension) is refused where
  the statement writes it (its function would run unseen).

The catalog queries are d2's own, fully schema-qualified, so the database's objects cannot
change what they read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, NoReturn

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.sqlglot_guard import GuardedStatement, check_statement
from d2_notebook.errors import UnsafeSQLError

__all__ = ["SYSTEM_RELATIONS", "check_catalog"]

def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


MAX_DEPTH = 8
"""How deep views over views and functions calling functions are followed."""

SYSTEM_RELATIONS = _names("""
pg_catalog.pg_aggregate pg_catalog.pg_am pg_catalog.pg_amop pg_catalog.pg_amproc
pg_catalog.pg_attrdef pg_catalog.pg_attribute pg_catalog.pg_cast pg_catalog.pg_class
pg_catalog.pg_collation pg_catalog.pg_constraint pg_catalog.pg_conversion
pg_catalog.pg_database pg_catalog.pg_depend pg_catalog.pg_description pg_catalog.pg_enum
pg_catalog.pg_extension pg_catalog.pg_index pg_catalog.pg_indexes pg_catalog.pg_inherits
pg_catalog.pg_language pg_catalog.pg_matviews pg_catalog.pg_namespace pg_catalog.pg_opclass
pg_catalog.pg_operator pg_catalog.pg_opfamily pg_catalog.pg_partitioned_table
pg_catalog.pg_range pg_catalog.pg_sequence pg_catalog.pg_sequences pg_catalog.pg_tables
pg_catalog.pg_tablespace
pg_catalog.pg_timezone_abbrevs pg_catalog.pg_timezone_names pg_catalog.pg_type
pg_catalog.pg_views
information_schema.check_constraints information_schema.column_privileges
information_schema.columns information_schema.constraint_column_usage
information_schema.constraint_table_usage information_schema.domains
information_schema.element_types information_schema.key_column_usage
information_schema.referential_constraints information_schema.schemata
information_schema.sequences information_schema.table_constraints
information_schema.table_privileges information_schema.tables
information_schema.view_column_usage information_schema.view_table_usage
information_schema.views
""")
"""System relations a query may read: the structure of the database (tables, columns,
types, keys, views). Every other one in ``pg_catalog``, ``information_schema`` or
``pg_toast`` is refused (settings, configuration files, roles, sessions, function sources,
user mappings) — the planner's statistics too (``pg_stats``, ``pg_stats_ext``,
``pg_stats_ext_exprs``): their sampled values of the catalogs themselves (role settings,
function sources, password hashes) are the values this list keeps out; a model reads the
distribution of the data through the data."""

_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")
_RELATION_SQL = (
    "SELECT c.oid, n.nspname, c.relname, c.relkind, "
    "CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'v' "
    "THEN pg_catalog.pg_get_viewdef(c.oid) END "
    "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
    "ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
    "WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(%(name)s)"
)
_FUNCTIONS_SQL = (
    "SELECT p.oid, n.nspname, p.proname, l.lanname, p.prosecdef, p.prokind, p.prosrc, "
    "p.proconfig IS NOT NULL, "
    "pg_catalog.to_jsonb(p) OPERATOR(pg_catalog.->>) 'prosqlbody' IS NOT NULL "
    "FROM pg_catalog.pg_proc p "
    "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) p.pronamespace "
    "JOIN pg_catalog.pg_language l ON l.oid OPERATOR(pg_catalog.=) p.prolang "
    "WHERE pg_catalog.lower(p.proname::pg_catalog.text) OPERATOR(pg_catalog.=) "
    "ANY(%(names)s::pg_catalog.text[]) "
    "AND n.nspname OPERATOR(pg_catalog.<>) ALL(ARRAY['pg_catalog', 'information_schema']) "
    "ORDER BY n.nspname, p.proname, p.oid"
)
_OPERATORS_SQL = (
    "SELECT n.nspname, o.oprname, o.oprcode::pg_catalog.text "
    "FROM pg_catalog.pg_operator o "
    "JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) o.oprnamespace "
    "WHERE n.nspname OPERATOR(pg_catalog.<>) ALL(ARRAY['pg_catalog', 'information_schema']) "
    "AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d "
    "WHERE d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_operator'::pg_catalog.regclass "
    "AND d.objid OPERATOR(pg_catalog.=) o.oid AND d.deptype OPERATOR(pg_catalog.=) 'e') "
    "ORDER BY 1, 2"
)
_SQL_BODY = "SELECT pg_catalog.pg_get_function_sqlbody(%(oid)s::pg_catalog.oid)"
_KINDS = {"a": "an aggregate", "w": "a window function", "p": "a procedure"}
_ATOMIC = re.compile(r"^\s*BEGIN\s+ATOMIC\s*(.*?)\s*END\s*;?\s*$", re.I | re.S)
_RETURN = re.compile(r"^\s*RETURN\s+(.*?);?\s*$", re.I | re.S)


@dataclass
class _Walk:
    """One statement's catalog check: objects already checked, and how deep we are."""

    connection: Any
    timeout_s: float
    seen: set[int]
    operators: list[tuple[str, str, str]] | None = None


def check_catalog(connection: Any, statement: GuardedStatement, *, timeout_s: float) -> None:
    """Refuse ``statement`` unless every relation and function it names is allowed.

    Args:
        connection: A SQLAlchemy connection inside the transaction the statement will run
            in (``exec_driver_sql`` with named parameters).
        statement: What :func:`check_statement` returned for it (PostgreSQL).
        timeout_s: The query's time limit (passed to the checks of definitions).

    Raises:
        UnsafeSQLError: A relation or function is refused; the message names it and why.
    """
    _check(_Walk(connection, timeout_s, set()), statement, depth=0)


def _check(walk: _Walk, statement: GuardedStatement, *, depth: int) -> None:
    if depth > MAX_DEPTH:
        _refuse(f"views or functions nest more than {MAX_DEPTH} levels deep",
                "query the tables directly")
    for relation in sorted(statement.relations):
        _check_relation(walk, ".".join(relation), depth)
    _check_functions(walk, statement, depth)
    _check_operators(walk, statement)


def _check_relation(walk: _Walk, name: str, depth: int) -> None:
    row = walk.connection.exec_driver_sql(_RELATION_SQL, {"name": name}).fetchone()
    if row is None:  # a CTE's name, or no such relation (the server says which)
        return
    oid, schema, relname, kind, definition = row
    qualified = f"{schema}.{relname}"
    if schema in _SYSTEM_SCHEMAS or schema.startswith("pg_toast"):
        if qualified not in SYSTEM_RELATIONS:
            _refuse(f"relation {qualified} is not readable: it is a system "
                    "relation outside d2's reviewed list (settings, configuration files, "
                    "roles, sessions, function sources and credentials are not readable)",
                    "query the data tables")
        return
    if kind == "f":
        _refuse(f"{qualified} is a foreign table: it reads another server or "
                "a file", "query the local tables")
    if kind != "v" or oid in walk.seen:
        return
    walk.seen.add(oid)
    _check_definition(walk, f"view {qualified}", [str(definition)], depth)


def _check_functions(walk: _Walk, statement: GuardedStatement, depth: int) -> None:
    names = sorted({ref.name for ref in statement.function_refs})
    defined: set[str] = set()
    if names:
        rows = walk.connection.exec_driver_sql(_FUNCTIONS_SQL, {"names": names}).fetchall()
        for oid, schema, name, language, definer, kind, source, settings, atomic in rows:
            defined.add(str(name).lower())
            if oid in walk.seen:
                continue
            walk.seen.add(oid)
            label = f"function {schema}.{name}()"
            if kind in _KINDS:
                _refuse(f"{label} is {_KINDS[kind]} defined in the database, "
                        "whose support functions the guard does not check", "remove it")
            if definer:
                _refuse(f"{label} is SECURITY DEFINER: it runs with its "
                        "owner's privileges", "remove it")
            if settings:
                _refuse(f"{label} changes settings when it runs (SET in its "
                        "definition)", "remove it")
            if language != "sql":
                _refuse(f"{label} is written in {language}, whose body the "
                        "guard cannot check", "remove it or rewrite it as SQL")
            body = walk.connection.exec_driver_sql(_SQL_BODY, {"oid": oid}).scalar() \
                if atomic else source
            _check_definition(walk, label, _body_statements(str(body or "")), depth)
    for ref in sorted(statement.function_refs, key=lambda r: (r.schema, r.name)):
        if ref.name in statement.unknown_functions and ref.name not in defined:
            _refuse(f"function {ref.name}() is not allowed: it is not in d2's "
                    "reviewed PostgreSQL function table and the database defines no "
                    "function of that name", "remove it or check the name")


def _check_operators(walk: _Walk, statement: GuardedStatement) -> None:
    """Refuse a statement that writes an operator symbol the database defines itself
    (outside extensions): its function runs unseen. Looked up once per statement."""
    if walk.operators is None:
        walk.operators = [tuple(r) for r in
                          walk.connection.exec_driver_sql(_OPERATORS_SQL).fetchall()]
    for schema, symbol, function in walk.operators:
        if symbol in statement.sql:
            _refuse(f"the database defines operator {schema}.{symbol} (function {function}), "
                    "whose function the guard does not check, and the statement writes "
                    f"{symbol}", "rewrite it without that operator")


def _check_definition(walk: _Walk, label: str, statements: list[str], depth: int) -> None:
    if not statements:
        _refuse(f"{label} has no body the guard can read", "remove it")
    for text in statements:
        try:
            inner = check_statement(text, Dialect.POSTGRES, timeout_s=walk.timeout_s)
            _check(walk, inner, depth=depth + 1)
        except UnsafeSQLError as exc:
            reason = str(exc).removeprefix("SQL refused: ").split(". The SQL tool runs")[0]
            _refuse(f"{label} is refused: its definition is not allowed ({reason})",
                    "query the tables it reads directly")


def _body_statements(body: str) -> list[str]:
    """The statements of a SQL function's body (``BEGIN ATOMIC ... END``, ``RETURN expr``
    and the classic string body alike), as SELECT statements the guard can check."""
    atomic = _ATOMIC.match(body)
    text = atomic.group(1) if atomic else body
    returned = _RETURN.match(text)
    if returned:
        return [f"SELECT {returned.group(1)}"]
    return [p.strip() for p in _split_statements(text) if p.strip()]


def _split_statements(text: str) -> list[str]:
    import sqlglot
    from sqlglot.errors import ParseError, TokenError

    try:
        trees = sqlglot.parse(text, read=Dialect.POSTGRES.value)
    except (ParseError, TokenError):
        return [text]  # the guard refuses it with the parse error
    return [t.sql(dialect=Dialect.POSTGRES.value) for t in trees if t is not None] or [text]


def _refuse(reason: str, fix: str) -> NoReturn:
    raise UnsafeSQLError(f"SQL refused: {reason}. The SQL tool runs only one read-only query "
                         f"per call over the tables already in the database; {fix}.")
