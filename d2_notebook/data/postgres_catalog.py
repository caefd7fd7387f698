"""The PostgreSQL guard's second half: what a checked statement resolves to in the catalog.

:func:`~d2_notebook.data.sqlglot_guard.check_statement` reads the text; this module asks
the server what the names in it are, in the transaction the statement will run in (same
role, same ``search_path``), before it runs:

- every relation: a system catalog or ``information_schema`` view must be in
  :data:`SYSTEM_RELATIONS` (settings, configuration files, other sessions and credentials
  are not), and of those the columns that show literals written in DDL
  (:data:`~d2_notebook.data.postgres_columns.REFUSED_COLUMNS`: defaults, CHECK clauses,
  view and index definitions, expression trees) are not read, by name, ``*`` or a
  whole-row reference (:func:`~d2_notebook.data.postgres_columns.column_refusal`, on the
  statement and on every definition checked for it); a user view is allowed only if its
  definition (``pg_get_viewdef``) passes the whole guard, recursively; a foreign table is
  refused (it reads another server or a file);
- every function name that a user-defined function carries (in any schema, so one that
  shadows a built-in is found too): only a plain ``LANGUAGE sql`` function whose body
  passes the whole guard runs; ``SECURITY DEFINER``, other languages, user aggregates and
  procedures are refused with their name;
- a name in none of the reviewed function tables and defined by no user is refused;
- an operator symbol the database defines itself (outside an extension) is refused where
  the statement writes it (its function would run unseen);
- functions that run without being called, where the database defines them: every type
  the statement writes (a cast's target, a column definition) is followed through arrays,
  domains, composite types and ranges, and refused when a cast to one of them or a domain
  constraint of one calls a function of the database's own (see
  :func:`~d2_notebook.data.postgres_implicit.user_function`);
  so are the argument and result types of the SQL functions it calls; a table with
  row-level security is refused when a policy that applies to reads calls such a function
  (or an operator of one, or uses such a type), and the relations a policy reads are
  checked like the statement's;
- a name after a dot (``p.full_name``, ``(p).full_name``) is held to the rules of a call
  of a user function of that name callable with one argument (attribute notation);
- and, after all these, what the database runs whatever the statement writes (implicit
  casts, operators, operator families and domain constraints calling functions of its
  own): :func:`~d2_notebook.data.postgres_implicit.check_database`.

The catalog queries are d2's own, fully schema-qualified, so the database's objects cannot
change what they read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NoReturn

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.postgres_columns import (
    REFUSED_COLUMNS,
    PartlyRefused,
    column_refusal,
    compared_name,
)
from d2_notebook.data.postgres_implicit import check_database, user_function
from d2_notebook.data.sqlglot_guard import GuardedStatement, check_statement
from d2_notebook.errors import UnsafeSQLError

__all__ = ["SYSTEM_RELATIONS", "check_catalog"]

def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


MAX_DEPTH = 8
"""How deep views over views and functions calling functions are followed."""

SYSTEM_RELATIONS = _names("""
pg_catalog.pg_aggregate pg_catalog.pg_am pg_catalog.pg_amop pg_catalog.pg_amproc
pg_catalog.pg_attribute pg_catalog.pg_cast pg_catalog.pg_class
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
user mappings, column defaults: ``pg_attrdef``'s expression trees hold the literals a
default was written with) — the planner's statistics too (``pg_stats``, ``pg_stats_ext``,
``pg_stats_ext_exprs``): their sampled values of the catalogs themselves (role settings,
function sources, password hashes) are the values this list keeps out; a model reads the
distribution of the data through the data. Some of their columns are refused:
:data:`~d2_notebook.data.postgres_columns.REFUSED_COLUMNS`."""

_SYSTEM_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")
_RELATION_SQL = (
    "SELECT c.oid, n.nspname, c.relname, c.relkind, "
    "CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'v' "
    "THEN pg_catalog.pg_get_viewdef(c.oid) END, c.relrowsecurity, "
    # the first foreign table among its partitions and inheritance children, at any depth
    "(WITH RECURSIVE below(oid) AS (SELECT i.inhrelid FROM pg_catalog.pg_inherits i "
    "WHERE i.inhparent OPERATOR(pg_catalog.=) c.oid UNION SELECT i.inhrelid "
    "FROM pg_catalog.pg_inherits i JOIN below b ON i.inhparent OPERATOR(pg_catalog.=) b.oid) "
    "SELECT b.oid::pg_catalog.regclass::pg_catalog.text FROM below b "
    "JOIN pg_catalog.pg_class f ON f.oid OPERATOR(pg_catalog.=) b.oid "
    "WHERE f.relkind OPERATOR(pg_catalog.=) 'f' ORDER BY 1 LIMIT 1) "
    "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
    "ON n.oid OPERATOR(pg_catalog.=) c.relnamespace "
    "WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(%(name)s)"
)
_FUNCTIONS_SQL = (
    "SELECT p.oid, n.nspname, p.proname, l.lanname, p.prosecdef, p.prokind, p.prosrc, "
    "p.proconfig IS NOT NULL, "
    "pg_catalog.to_jsonb(p) OPERATOR(pg_catalog.->>) 'prosqlbody' IS NOT NULL, "
    "pg_catalog.array_append(COALESCE(p.proallargtypes, p.proargtypes::pg_catalog.oid[]), "
    "p.prorettype)::pg_catalog.regtype[]::pg_catalog.text[], "
    # callable with one argument: what attribute notation (x.name reads as name(x)) calls
    "p.pronargs OPERATOR(pg_catalog.>=) 1 AND p.pronargs OPERATOR(pg_catalog.-) "
    "p.pronargdefaults OPERATOR(pg_catalog.<=) 1 "
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


def _depends_on(owner: str, owner_catalog: str, target_catalog: str) -> str:
    """SQL joining ``d`` (pg_depend) to the objects of ``target_catalog`` that the object
    ``owner`` (an oid column of ``owner_catalog``) depends on."""
    return (
        "JOIN pg_catalog.pg_depend d ON d.classid OPERATOR(pg_catalog.=) "
        f"'pg_catalog.{owner_catalog}'::pg_catalog.regclass "
        f"AND d.objid OPERATOR(pg_catalog.=) {owner} "
        "AND d.refclassid OPERATOR(pg_catalog.=) "
        f"'pg_catalog.{target_catalog}'::pg_catalog.regclass "
    )


_EQ = "OPERATOR(pg_catalog.=)"
_TYPES_SQL = (
    # every type the written ones reach: array elements, domains' base types and the types
    # their constraints use, composite types' attributes, ranges' subtypes
    "WITH RECURSIVE reach(written, oid) AS ("
    "SELECT w, pg_catalog.to_regtype(w)::pg_catalog.oid "
    "FROM pg_catalog.unnest(%(names)s::pg_catalog.text[]) AS w "
    "WHERE pg_catalog.to_regtype(w) IS NOT NULL "
    "UNION SELECT r.written, s.oid FROM reach r CROSS JOIN LATERAL ("
    f"SELECT t.typelem FROM pg_catalog.pg_type t WHERE t.oid {_EQ} r.oid "
    f"UNION ALL SELECT t.typbasetype FROM pg_catalog.pg_type t WHERE t.oid {_EQ} r.oid "
    "UNION ALL SELECT a.atttypid FROM pg_catalog.pg_type t JOIN pg_catalog.pg_attribute a "
    f"ON a.attrelid {_EQ} t.typrelid WHERE t.oid {_EQ} r.oid "
    "AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped "
    "UNION ALL SELECT g.rngsubtype FROM pg_catalog.pg_range g "
    f"WHERE g.rngtypid {_EQ} r.oid "
    "UNION ALL SELECT d.refobjid FROM pg_catalog.pg_constraint c "
    f"{_depends_on('c.oid', 'pg_constraint', 'pg_type')}WHERE c.contypid {_EQ} r.oid"
    ") AS s(oid) WHERE s.oid OPERATOR(pg_catalog.<>) 0), "
    # the functions they run: casts to them, their domain constraints' functions and the
    # functions of the operators those constraints use
    "runs(written, oid, via, detail, func) AS ("
    "SELECT r.written, r.oid, 'cast', pg_catalog.format_type(k.castsource, NULL), k.castfunc "
    f"FROM reach r JOIN pg_catalog.pg_cast k ON k.casttarget {_EQ} r.oid "
    "UNION ALL SELECT r.written, r.oid, 'constraint', c.conname::pg_catalog.text, d.refobjid "
    f"FROM reach r JOIN pg_catalog.pg_constraint c ON c.contypid {_EQ} r.oid "
    f"{_depends_on('c.oid', 'pg_constraint', 'pg_proc')}"
    "UNION ALL SELECT r.written, r.oid, 'constraint', c.conname::pg_catalog.text, "
    "o.oprcode::pg_catalog.oid "
    f"FROM reach r JOIN pg_catalog.pg_constraint c ON c.contypid {_EQ} r.oid "
    f"{_depends_on('c.oid', 'pg_constraint', 'pg_operator')}"
    f"JOIN pg_catalog.pg_operator o ON o.oid {_EQ} d.refobjid) "
    "SELECT x.written, tn.nspname, t.typname, x.via, x.detail, pn.nspname, p.proname "
    f"FROM runs x JOIN pg_catalog.pg_type t ON t.oid {_EQ} x.oid "
    f"JOIN pg_catalog.pg_namespace tn ON tn.oid {_EQ} t.typnamespace "
    f"JOIN pg_catalog.pg_proc p ON p.oid {_EQ} x.func "
    f"JOIN pg_catalog.pg_namespace pn ON pn.oid {_EQ} p.pronamespace "
    f"WHERE {user_function('x.func')} ORDER BY 1, 2, 3, 4, 5, 6, 7"
)
def _policy_depends_on(target: str, joins: str = "") -> str:
    """SQL: the ``target`` objects that the read policies of table ``%(oid)s`` depend on
    (``d.refobjid``), after ``joins``."""
    return (
        "FROM pg_catalog.pg_policy pol "
        f"{_depends_on('pol.oid', 'pg_policy', target)}{joins}"
        f"WHERE pol.polrelid {_EQ} %(oid)s::pg_catalog.oid "
        f"AND pol.polcmd {_EQ} ANY(ARRAY['r', '*']::pg_catalog.\"char\"[]) "
    )


_PROC = (f"JOIN pg_catalog.pg_proc p ON p.oid {_EQ} {{}} "
         f"JOIN pg_catalog.pg_namespace pn ON pn.oid {_EQ} p.pronamespace ")
_POLICIES_SQL = (
    # what the policies that apply to reads depend on: functions and operators of the
    # database's own, types (checked like written ones), other relations
    "SELECT pol.polname, 'function', pn.nspname, p.proname, '' "
    f"{_policy_depends_on('pg_proc', _PROC.format('d.refobjid'))}"
    f"AND {user_function('p.oid')} "
    "UNION ALL SELECT pol.polname, 'operator', pn.nspname, p.proname, o.oprname "
    + _policy_depends_on("pg_operator", f"JOIN pg_catalog.pg_operator o ON o.oid {_EQ} "
                         f"d.refobjid {_PROC.format('o.oprcode')}")
    + f"AND {user_function('p.oid')} "
    "UNION ALL SELECT pol.polname, 'type', '', '', "
    "d.refobjid::pg_catalog.regtype::pg_catalog.text "
    f"{_policy_depends_on('pg_type')}"
    "UNION ALL SELECT pol.polname, 'relation', '', '', "
    "d.refobjid::pg_catalog.regclass::pg_catalog.text "
    f"{_policy_depends_on('pg_class')}"
    "AND d.refobjid OPERATOR(pg_catalog.<>) pol.polrelid ORDER BY 1, 2, 3, 4, 5"
)
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
    partly_refused: dict[str, PartlyRefused] = field(default_factory=dict)


def check_catalog(connection: Any, statement: GuardedStatement, *, timeout_s: float) -> None:
    """Refuse ``statement`` unless every relation and function it names, and every function
    its types and tables run without being named (casts, domain constraints, row-level
    security policies), is allowed.

    Args:
        connection: A SQLAlchemy connection inside the transaction the statement will run
            in (``exec_driver_sql`` with named parameters).
        statement: What :func:`check_statement` returned for it (PostgreSQL).
        timeout_s: The query's time limit (passed to the checks of definitions).

    Raises:
        UnsafeSQLError: A relation, function, type or cast is refused; the message names
            it, why, and the fix.
    """
    _check(_Walk(connection, timeout_s, set()), statement, depth=0)
    check_database(connection)


def _check(walk: _Walk, statement: GuardedStatement, *, depth: int) -> None:
    if depth > MAX_DEPTH:
        _refuse(f"views or functions nest more than {MAX_DEPTH} levels deep",
                "query the tables directly")
    partly_refused: dict[tuple[str, ...], PartlyRefused] = {}
    for relation in sorted(statement.relations):
        system = _check_relation(walk, ".".join(relation), depth)
        if system in REFUSED_COLUMNS:
            if system not in walk.partly_refused:
                walk.partly_refused[system] = PartlyRefused.read(walk.connection, system)
            partly_refused[relation] = walk.partly_refused[system]
    refusal = column_refusal(statement.sql, partly_refused) if partly_refused else None
    if refusal is not None:
        _refuse(*refusal)
    _check_functions(walk, statement, depth)
    _check_operators(walk, statement)
    _check_types(walk, sorted(statement.types), "the statement casts to or declares",
                 "remove the cast to {written} or cast to a built-in type")


def _check_types(walk: _Walk, names: list[str], context: str, fix: str) -> None:
    """Refuse when a type in ``names`` (as SQL writes it: ``box2``, ``chk[]``) reaches —
    through array elements, domains, composite attributes and range subtypes — a cast to
    it or a domain constraint on it that runs a function of the database's own.

    ``context`` starts the reason (it is followed by "type <name>"); ``fix`` may use
    ``{written}``, the name as written.
    """
    if not names:
        return
    row = walk.connection.exec_driver_sql(_TYPES_SQL, {"names": names}).fetchone()
    if row is None:
        return
    written, type_schema, type_name, via, detail, schema, name = row
    reached = f"{type_schema}.{type_name}"
    how = (f"the cast from {detail} to {reached}" if via == "cast"
           else f"the constraint {detail} of domain {reached}")
    _refuse(f"{context} type {written}, which runs function {schema}.{name}() through "
            f"{how}; the guard does not check that function", fix.format(written=written))


def _check_relation(walk: _Walk, name: str, depth: int) -> str | None:
    """Refuse reading relation ``name`` (as written) unless it is allowed; returns its
    qualified name when it is a system relation (whose columns may be refused)."""
    row = walk.connection.exec_driver_sql(_RELATION_SQL, {"name": name}).fetchone()
    if row is None:  # a CTE's name, or no such relation (the server says which)
        return None
    oid, schema, relname, kind, definition, row_security, foreign_child = row
    qualified = f"{schema}.{relname}"
    if schema in _SYSTEM_SCHEMAS or schema.startswith("pg_toast"):
        if qualified not in SYSTEM_RELATIONS:
            _refuse(f"relation {qualified} is not readable: it is a system "
                    "relation outside d2's reviewed list (settings, configuration files, "
                    "roles, sessions, function sources and credentials are not readable)",
                    "query the data tables")
        return qualified
    if kind == "f":
        _refuse(f"{qualified} is a foreign table: it reads another server or "
                "a file", "query the local tables")
    if foreign_child is not None:
        _refuse(f"{qualified} reads the foreign table {foreign_child} (a partition or "
                "inheritance child, read with it): it reads another server or a file",
                "query its local partitions or children by name")
    if row_security and oid not in walk.seen:
        walk.seen.add(oid)
        _check_policies(walk, oid, qualified, depth)
    if kind != "v" or oid in walk.seen:
        return None
    walk.seen.add(oid)
    _check_definition(walk, f"view {qualified}", [str(definition)], depth)
    return None


def _check_policies(walk: _Walk, oid: int, qualified: str, depth: int) -> None:
    """Refuse reading table ``qualified`` (row-level security on) when a policy that
    applies to reads calls a function of the database's own or an operator of one, uses a
    type whose casts or constraints do, or reads a relation the guard refuses: the server
    runs the policy on every row read, whoever reads (a role that bypasses row-level
    security is refused too: the guard does not ask who it is)."""
    rows = walk.connection.exec_driver_sql(_POLICIES_SQL, {"oid": oid}).fetchall()
    fix = "query other tables (the table's owner can rewrite the policy with built-in " \
          "functions only)"
    label = f"table {qualified} has row-level security, and its policy"
    for policy, what, schema, name, detail in rows:
        if what == "function":
            _refuse(f"{label} {policy} calls function {schema}.{name}(), which the guard "
                    "does not check", fix)
        if what == "operator":
            _refuse(f"{label} {policy} uses operator {detail}, whose function "
                    f"{schema}.{name}() the guard does not check", fix)
    types = sorted({detail for _, what, _, _, detail in rows if what == "type"})
    _check_types(walk, types, f"{label} uses", fix)
    for policy, what, _, _, relation in rows:
        if what == "relation":
            try:
                system = _check_relation(walk, relation, depth + 1)
            except UnsafeSQLError as exc:
                _refuse(f"{label} {policy} reads {relation}, which is refused "
                        f"({_reason(exc)})", fix)
            if system in REFUSED_COLUMNS:
                _refuse(f"{label} {policy} reads {system}, some of whose columns show "
                        "literals written in DDL, and the guard does not see which "
                        "columns a policy reads", fix)


def _check_functions(walk: _Walk, statement: GuardedStatement, depth: int) -> None:
    """Check every user function the statement may call: by name, and by attribute
    notation (``x.name`` is ``name(x)`` when ``x`` has no column ``name``: a function of
    that name callable with one argument is held to the rules of a call). Names are
    looked up as the server reads them, clipped to 63 bytes."""
    called = {compared_name(ref.name) for ref in statement.function_refs}
    names = sorted(called | {compared_name(name) for name in statement.fields})
    defined: set[str] = set()
    if names:
        rows = walk.connection.exec_driver_sql(_FUNCTIONS_SQL, {"names": names}).fetchall()
        for (oid, schema, name, language, definer, kind, source, settings, atomic,
             types, one_argument) in rows:
            lowered = str(name).lower()
            defined.add(lowered)
            if lowered not in called and not one_argument:
                continue  # only a field name: attribute notation cannot call it
            if oid in walk.seen:
                continue
            walk.seen.add(oid)
            label = f"function {schema}.{name}()"
            if lowered not in called:
                label += f" (called by .{lowered}: PostgreSQL reads " \
                         f"x.{lowered} as {lowered}(x) where x has no such column)"
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
            _check_types(walk, sorted(set(types)), f"{label} takes or returns",
                         "remove it")
            body = walk.connection.exec_driver_sql(_SQL_BODY, {"oid": oid}).scalar() \
                if atomic else source
            _check_definition(walk, label, _body_statements(str(body or "")), depth)
    for ref in sorted(statement.function_refs, key=lambda r: (r.schema, r.name)):
        if ref.name in statement.unknown_functions \
                and compared_name(ref.name) not in defined:
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
            _refuse(f"{label} is refused: its definition is not allowed ({_reason(exc)})",
                    "query the tables it reads directly")


def _reason(exc: UnsafeSQLError) -> str:
    """The reason of a refusal, without its prefix and the rule that follows it."""
    return str(exc).removeprefix("SQL refused: ").split(". The SQL tool runs")[0]


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
