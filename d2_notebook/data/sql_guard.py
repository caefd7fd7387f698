"""Static checker: is one SQL string a single, read-only statement that touches no files?

The check never looks for keywords in the text. It asks DuckDB's own parser:
``extract_statements`` gives the statement type, and ``json_serialize_sql`` gives the
parse tree of SELECT-like statements (SELECT, WITH, VALUES, TABLE, DESCRIBE, SHOW,
SUMMARIZE all parse as SELECT in DuckDB 2.0). The whole tree is walked (iteratively,
so no statement can exhaust the stack; trees deeper than :data:`MAX_TREE_DEPTH` are
refused with the limit named) and every part must be allowed:

- query nodes: plain SELECT, set operations and CTEs only (a CTE body that is a
  DELETE/INSERT/UPDATE ... RETURNING parses as another node type and is refused);
- table references: catalog tables whose names do not look like files or URLs (so no
  replacement scans such as ``FROM 'x.parquet'``), subqueries, joins, VALUES, PIVOT,
  DESCRIBE/SUMMARIZE of a query or table, ``SHOW TABLES``/``SHOW ALL TABLES``/``SHOW
  DATABASES``/``SHOW SCHEMAS``, and table functions the allowlist admits. ``SHOW
  name`` is refused: DuckDB describes a table of that name if one exists and otherwise
  reads the *setting* of that name (``SHOW temp_directory``); ``DESCRIBE name`` always
  means the table. ``SHOW VARIABLES`` reads variables and is refused;
- functions: only those :mod:`~d2_notebook.data.function_policy` allows; every other
  one (SQL-text, file, setting, log, side-effect functions, and any name the reviewed
  table does not know) is refused with the reason. Builders of large values
  (``range`` as a list, ``repeat``, ``list_resize``, ``lpad``) need constant sizes within
  :mod:`~d2_notebook.data.builder_limits`, and ``error()`` takes a string literal only
  (its message would otherwise echo computed values).

Before anything parses it, the statement's size is measured from its tokens
(:mod:`~d2_notebook.data.statement_bounds`): length, nesting, list items, CTEs and CASE
branches, each refused with its limit named. Parsing runs on a per-thread cursor of a
private in-memory database, so no process-wide lock is held while a statement parses.

The names of the functions called, of the types used (every ``"class": "TYPE"`` node:
casts, typed literals and nested element/field types) and of the tables and views read
are returned too, so that the runner can refuse names the database does not know
before DuckDB tries to auto-install an extension for them, and check the definitions
of the views the statement reads (:func:`check_view_definition`) and of the database's
macros its calls may resolve to (:func:`check_macro_definition`).

EXPLAIN [ANALYZE] is allowed when the statement it wraps passes; ``CALL f(...)`` is
rewritten to ``SELECT * FROM f(...)`` and checked as such; PRAGMA is allowed for the
pragmas the allowlist admits, with at most one string argument. Every other statement
type is refused with a reason (:mod:`~d2_notebook.data.statement_reasons`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NoReturn

import duckdb

from d2_notebook.data.builder_limits import (
    BUILDER_LIMITS,
    builder_size,
    check_builder,
    check_statement,
)
from d2_notebook.data.function_policy import FunctionUse, Refusal, classify
from d2_notebook.data.keyword_hint import keyword_hint
from d2_notebook.data.parse_tree import parser_cursor
from d2_notebook.data.statement_bounds import measure
from d2_notebook.data.statement_reasons import refusal_for_type
from d2_notebook.errors import QueryFailedError, UnsafeSQLError

__all__ = ["MAX_TREE_DEPTH", "CheckedSQL", "FunctionName", "TableName",
           "UnclassifiedFunctionError", "analyze_sql", "check_macro_definition", "check_sql",
           "check_view_definition"]

MAX_TREE_DEPTH = 500
"""Deepest parse tree (JSON nesting levels) checked; about 160 chained terms such as
``a + b + ...`` or 100 nested subqueries. Deeper statements are refused."""

_AGGREGATE_BY_NAME = frozenset({
    "aggregate", "list_aggr", "list_aggregate", "array_aggr", "array_aggregate",
})  # fmt: skip
_ERROR_MESSAGE_ARGUMENT = {"error": 0, "assert_true": 1}  # name: position of its message
_REGISTERED_SCANS = frozenset({"pandas_scan", "arrow_scan", "python_arrow_scan"})
_JSON_STRUCTURE_FUNCTIONS = frozenset({
    "json_transform", "json_transform_strict", "from_json", "from_json_strict",
})  # fmt: skip
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
_TABLE_REFS = frozenset({
    "BASE_TABLE", "TABLE_FUNCTION", "SUBQUERY", "JOIN", "EXPRESSION_LIST", "EMPTY",
    "EMPTY_FROM", "SHOW_REF", "PIVOT",
})  # fmt: skip
# A path character anywhere, or a URI scheme ("s3:", "md:") at the start: a name DuckDB
# could read as a file or URL (a replacement scan) rather than a table.
_FILE_LIKE = re.compile(r"[./\\~*?$%]|^\s*[A-Za-z][\w+-]*:")
_PRAGMA = re.compile(r"PRAGMA\s+(\w+)\s*(\(\s*(?:'(?:[^']|'')*')?\s*\))?", re.I)
_PRAGMA_NAME = re.compile(r"PRAGMA\s+(\w+)", re.I)
_EXPLAIN = re.compile(r"EXPLAIN(?:\s+ANALY[SZ]E)?\s+(.+)", re.I | re.S)
_CALL = re.compile(r"CALL\s+(.+)", re.I | re.S)
# SHOW of these special names lists the catalog; every other special name (VARIABLES)
# reads state.
_SHOW_CATALOG = frozenset({'"tables"', "__show_tables_expanded", '"databases"', '"schemas"'})
_RULE = (
    "only one read-only statement per call (SELECT, WITH, DESCRIBE, SHOW TABLES, SUMMARIZE, "
    "EXPLAIN or a read-only PRAGMA such as table_info) over tables already in the database"
)



class UnclassifiedFunctionError(UnsafeSQLError):
    """A call to a name the reviewed function table does not know: refused, unless the
    database defines a macro of that name whose definition passes (the runner retries
    with the database's macro names, :func:`analyze_sql`'s ``user_functions``)."""


@dataclass(frozen=True)
class TableName:
    """A table or view a statement reads, as written (parts it left out are empty)."""

    catalog: str
    schema: str
    name: str


@dataclass(frozen=True)
class FunctionName:
    """A function a statement calls, as written (parts it left out are empty).

    Attributes:
        catalog: ``system`` in ``system.main.lower(x)``, else usually empty.
        schema: ``s2`` in ``s2.md5(x)``.
        name: Lower-cased function name.
        table: True for a table function (in FROM).
        arguments: How many arguments the call passes, positional and named (a star
            such as ``*``, ``COLUMNS(...)`` or ``*COLUMNS(...)``, which may expand to no
            argument, counts none); ``None`` when unknown. A database
            macro given fewer than its parameters would use a default.
    """

    catalog: str
    schema: str
    name: str
    table: bool = False
    arguments: int | None = None

    @property
    def builtin(self) -> bool:
        """True when the call names DuckDB's own catalog (``system.main.name``), which no
        macro of the database can shadow."""
        return self.catalog.lower() == "system"


@dataclass(frozen=True)
class CheckedSQL:
    """A statement that passed the check.

    Attributes:
        sql: The statement to run: comments and trailing semicolons removed (and
            ``CALL f(x)`` rewritten to ``SELECT * FROM f(x)``).
        kind: ``"SELECT"``, ``"EXPLAIN"`` or ``"PRAGMA"``.
        functions: Lower-cased names of every function the statement calls.
        types: Lower-cased names of every type the statement names (casts, typed
            literals and the element/field types nested in them).
        tables: Every table or view name the statement reads (to resolve views).
        calls: Every function call as written, qualifiers kept (to resolve macros).
        rewritten: True when DuckDB rewrites the statement into SQL of its own that
            calls built-in functions by plain name (SHOW, DESCRIBE, SUMMARIZE, PRAGMA):
            a database macro shadowing any built-in name may run.
    """

    sql: str
    kind: str
    functions: frozenset[str]
    types: frozenset[str] = frozenset()
    tables: frozenset[TableName] = frozenset()
    calls: frozenset[FunctionName] = frozenset()
    rewritten: bool = False


def check_sql(sql: str) -> str:
    """Return the normalized single read-only statement, or refuse it.

    Raises:
        UnsafeSQLError: More or fewer than one statement, a write, a setting change, a
            file or network access, or anything the checker cannot verify.
        QueryFailedError: The text does not parse (DuckDB's message plus a hint).
    """
    return analyze_sql(sql).sql


def analyze_sql(sql: str, *, user_functions: frozenset[str] = frozenset()) -> CheckedSQL:
    """Like :func:`check_sql`, but also return the statement kind, functions, types,
    tables and calls.

    Args:
        sql: The statement.
        user_functions: Lower-cased names of the database's own macros and functions.
            A call to one of these that the reviewed table does not know is let through
            here; the runner checks the macro's definition against the catalog
            (:mod:`~d2_notebook.data.definitions`).
    """
    return _analyze(sql, registered_scans=False, user_functions=user_functions)


@lru_cache(maxsize=512)
def check_view_definition(create_sql: str, *, registered: bool = False,
                          user_functions: frozenset[str] = frozenset()) -> CheckedSQL:
    """Check the query of a view from its ``CREATE VIEW ... AS <query>`` text.

    Args:
        create_sql: The ``sql`` column of ``duckdb_views()``.
        registered: True for a temporary view of the user's own connection, which may
            scan a registered DataFrame or Arrow table (``pandas_scan()``).
        user_functions: As for :func:`analyze_sql`.

    Raises:
        UnsafeSQLError: The view's query would be refused, or the text is not a view.
    """
    query = _view_query(create_sql)
    if query is None:
        _refuse("a view's definition could not be read", "query the tables it reads directly")
    return _analyze(query, registered_scans=registered, user_functions=user_functions)


@lru_cache(maxsize=512)
def check_macro_definition(definition: str, *, table: bool,
                           user_functions: frozenset[str] = frozenset()) -> CheckedSQL:
    """Check the body of a database macro (``duckdb_functions().macro_definition``).

    Args:
        definition: The macro's expression, or its query for a table macro.
        table: True for a table macro.
        user_functions: As for :func:`analyze_sql`.

    Raises:
        UnsafeSQLError: The body would be refused as agent SQL.
    """
    return _analyze(definition if table else f"SELECT {definition}", registered_scans=False,
                    user_functions=user_functions)


def _analyze(sql: str, *, registered_scans: bool,
             user_functions: frozenset[str] = frozenset()) -> CheckedSQL:
    if not isinstance(sql, str) or not sql.strip():
        _refuse("the statement is empty", "send one SELECT statement")
    exceeded = measure(sql)
    if exceeded is not None:
        _refuse(exceeded.reason, exceeded.fix)
    statements = _extract(sql)
    if len(statements) != 1:
        _refuse(
            f"got {len(statements)} statements",
            "send statements one call at a time, without ';' between them",
        )
    kind = _statement_type(statements[0])
    text = _normalize(statements[0].query)
    if kind == "SELECT":
        return _check_tree(text, registered_scans, user_functions)
    if kind == "EXPLAIN":
        match = _EXPLAIN.fullmatch(text)
        inner = analyze_sql(match.group(1), user_functions=user_functions) if match else None
        if inner is None or inner.kind != "SELECT":
            _refuse("EXPLAIN may only wrap a SELECT", "EXPLAIN the SELECT alone")
        return CheckedSQL(text, "EXPLAIN", inner.functions, inner.types, inner.tables,
                          inner.calls, inner.rewritten)
    if kind == "PRAGMA" and _PRAGMA_NAME.match(text):
        return _check_pragma(text)
    if kind == "CALL":
        match = _CALL.fullmatch(text)
        if not match:
            _refuse("CHECKPOINT writes the database file", "query tables with SELECT")
        inner = analyze_sql(f"SELECT * FROM {match.group(1)}", user_functions=user_functions)
        if inner.kind != "SELECT":
            _refuse("CALL may only call a read-only table function", "use SELECT")
        return inner
    reason, fix = refusal_for_type(kind, text)
    _refuse(reason, fix)


def _check_pragma(text: str) -> CheckedSQL:
    name = _PRAGMA_NAME.match(text).group(1).lower()  # type: ignore[union-attr]
    refusal = classify(name, FunctionUse.PRAGMA)
    if refusal is not None:
        _refuse(f"PRAGMA {name} is refused because {refusal.value}",
                "use a read-only PRAGMA such as table_info('t'), show_tables or version")
    match = _PRAGMA.fullmatch(text)
    if not match or "=" in text:
        _refuse(f"PRAGMA {name} takes at most one string argument here (no assignment)",
                f"write PRAGMA {name} or PRAGMA {name}('name')")
    return CheckedSQL(text, "PRAGMA", frozenset(), rewritten=True)


def _refuse(reason: str, fix: str) -> NoReturn:
    raise UnsafeSQLError(_refusal_text(reason, fix))


def _refusal_text(reason: str, fix: str) -> str:
    return f"SQL refused: {reason}. The SQL tool runs {_RULE}; {fix}."


def _extract(sql: str) -> list:
    try:
        return list(parser_cursor().extract_statements(sql))
    except duckdb.ParserException as exc:
        if "depth" in str(exc):
            _refuse("the statement nests too deeply: DuckDB's parser stops at "
                    "1000 levels of nested expressions",
                    "split long chains of terms or nested subqueries into CTEs or "
                    "several queries")
        hint = keyword_hint(str(exc)) or ("check the syntax (DuckDB SQL dialect) and send "
                                          "one statement")
        raise QueryFailedError(f"{exc}\nHint: {hint}.") from exc
    except (duckdb.Error, ValueError, RecursionError) as exc:
        _refuse(f"the statement could not be classified ({exc})", "use a plain SELECT")


def _statement_type(statement: object) -> str:
    """The statement type's name; DuckDB types the Python API does not know refused."""
    try:
        return str(statement.type.name)  # type: ignore[attr-defined]
    except ValueError as exc:  # e.g. UPDATE EXTENSIONS: "29 is not a valid StatementType"
        _refuse(f"it is a statement type the checker does not know ({exc})",
                "rewrite it as a SELECT over the existing tables")


def _normalize(text: str) -> str:
    """Remove comments (via DuckDB's tokenizer) and trailing semicolons."""
    tokens = duckdb.tokenize(text)
    pieces: list[str] = []
    for i, (start, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        pieces.append(" " if kind == duckdb.token_type.comment else text[start:end])
    return "".join(pieces).strip().rstrip(";").strip()


def _view_query(create_sql: str) -> str | None:
    """The query after the first top-level ``AS`` of a ``CREATE ... VIEW`` text."""
    text = create_sql.strip().rstrip(";")
    depth = 0
    tokens = duckdb.tokenize(text)
    for i, (start, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        word = text[start:end].strip()
        if kind == duckdb.token_type.operator:
            depth += word.count("(") - word.count(")")
        elif kind == duckdb.token_type.keyword and depth == 0 and word.upper() == "AS":
            return text[end:].strip() or None
    return None


def _serialize(text: str) -> dict:
    row = parser_cursor().execute("SELECT json_serialize_sql(?::VARCHAR)", [text])
    document = row.fetchall()[0][0]
    depth = _json_depth(document)
    if depth > MAX_TREE_DEPTH:
        _refuse(
            f"the statement nests too deeply: its parse tree is {depth} levels deep and the "
            f"limit is {MAX_TREE_DEPTH}",
            "split long chains of terms or nested subqueries into CTEs or several queries",
        )
    tree = json.loads(document)
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        _refuse(f"the statement could not be verified ({tree.get('error_message')})", "simplify it")
    return tree


def _json_depth(document: str) -> int:
    """Deepest nesting of ``[``/``{`` in a JSON text (strings skipped), without recursion."""
    depth = deepest = 0
    for piece in re.sub(r'"(?:[^"\\]|\\.)*"', '""', document):
        if piece in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif piece in "]}":
            depth -= 1
    return deepest


def _check_tree(text: str, registered_scans: bool,
                user_functions: frozenset[str] = frozenset()) -> CheckedSQL:
    functions: set[str] = set()
    types: set[str] = set()
    tables: set[TableName] = set()
    calls: set[FunctionName] = set()
    rewritten = False
    built = [1]  # product of every builder's size in the statement
    tree = _serialize(text)
    pending: list[object] = [tree]
    while pending:  # iterative: a deep tree cannot exhaust the stack
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        children = node
        if "class" in node:
            _check_expression(node, functions, types, calls, user_functions, built)
        elif "modifiers" in node and node.get("type") not in _QUERY_NODES:
            _refuse(f"a {node.get('type')} inside the query would change data", "use SELECT only")
        elif "alias" in node and "sample" in node:
            _check_table_ref(node, tables, calls, registered_scans, user_functions)
            rewritten = rewritten or node.get("type") == "SHOW_REF"
            if node.get("type") == "TABLE_FUNCTION":  # its call is checked as a table use
                function = node.get("function") or {}
                children = {**node, "function": None, "arguments": function.get("arguments")}
        pending.extend(v for v in children.values() if isinstance(v, dict | list))
    _check_statement_size(tree)
    return CheckedSQL(text, "SELECT", frozenset(functions), frozenset(types), frozenset(tables),
                      frozenset(calls), rewritten)


def _call_of(function: dict, *, table: bool) -> FunctionName:
    arguments = [a.get("expression") or {} for a in function.get("arguments") or []
                 if isinstance(a, dict)]
    return FunctionName(str(function.get("catalog") or ""), str(function.get("schema") or ""),
                        str(function.get("function_name", "")).lower(), table,
                        sum(1 for a in arguments
                            if a.get("class") != "STAR" and a.get("type") != "OPERATOR_UNPACK"))


def _check_expression(node: dict, functions: set[str], types: set[str],
                      calls: set[FunctionName], user_functions: frozenset[str],
                      built: list[int]) -> None:
    if node["class"] == "TYPE" and node.get("type_name"):
        types.add(str(node["type_name"]).lower())
    if node["class"] == "PARAMETER":
        # Nothing binds parameters here: DuckDB would fill $name from the connection's
        # SET VARIABLE values (which getvariable() is refused for reading).
        _refuse("it has a parameter ($name, $1 or ?): nothing binds it here, and DuckDB "
                "fills a $name from the connection's variables",
                "write the value into the query as a literal")
    name = node.get("function_name")
    if not isinstance(name, str):
        return
    name = name.lower()
    functions.add(name)
    calls.add(_call_of(node, table=False))
    _refuse_function(name, FunctionUse.EXPRESSION, user_functions)
    arguments = node.get("arguments") or []
    _check_size(name, arguments, table=False)
    built[0] *= builder_size(name, arguments, table=False)
    if built[0] > BUILDER_LIMITS.list_elements:
        _refuse(f"the list and string builders of the statement (range, repeat, lpad, ...) "
                f"make {built[0]:,} elements per row together (their sizes multiply) and the "
                f"limit is {BUILDER_LIMITS.list_elements:,}",
                "use smaller sizes or FROM range(...) as a table")
    message = _ERROR_MESSAGE_ARGUMENT.get(name)
    if (message is not None and len(arguments) > message
            and _string_argument(arguments, message) is None):
        _refuse(f"{name}() may only raise a string literal (its message would echo computed "
                "values)", f"write {name}(...) with a constant message")
    if name in _JSON_STRUCTURE_FUNCTIONS:
        types.update(_structure_types(name, arguments))
    if name in _AGGREGATE_BY_NAME:
        calls.add(FunctionName("", "", _check_named_aggregate(name, arguments)))


def _check_statement_size(tree: dict) -> None:
    problem = check_statement(tree)
    if problem is not None:
        _refuse(*problem)


def _check_size(name: str, arguments: list, *, table: bool) -> None:
    problem = check_builder(name, arguments, table=table)
    if problem is not None:
        _refuse(*problem)


def _refuse_function(name: str, use: FunctionUse,
                     user_functions: frozenset[str] = frozenset()) -> None:
    refusal = classify(name, use)
    if refusal is None or (refusal is Refusal.UNCLASSIFIED and name in user_functions):
        return
    where = "table function" if use is FunctionUse.TABLE else "function"
    if refusal is Refusal.UNCLASSIFIED:
        raise UnclassifiedFunctionError(_refusal_text(
            f"{where} {name}() is refused because {refusal.value}",
            "use a built-in function of DuckDB's core"))
    _refuse(f"{where} {name}() is refused because {refusal.value}",
            "remove it; query the database's tables")


def _string_argument(arguments: list, position: int) -> str | None:
    if len(arguments) <= position or not isinstance(arguments[position], dict):
        return None
    expression = arguments[position].get("expression") or {}
    literal = expression.get("literal") or {}
    if expression.get("class") != "CONSTANT" or literal.get("kind") != "STRING":
        return None
    return str(literal.get("text", ""))


def _check_named_aggregate(name: str, arguments: list) -> str:
    """``list_aggr(l, 'sum')`` names a function by string: it must be a literal, allowed.
    Returns the lower-cased name (resolved against the database's macros too)."""
    named = _string_argument(arguments, 1)
    if named is None:
        _refuse(f"the function name given to {name}() must be a string literal",
                f"write e.g. {name}(l, 'sum')")
    _refuse_function(named.lower(), FunctionUse.EXPRESSION)
    return named.lower()


def _structure_types(name: str, arguments: list) -> set[str]:
    """Type names inside the JSON structure argument of ``from_json`` and friends."""
    if len(arguments) < 2:
        return set()
    text = _string_argument(arguments, 1)
    try:
        if text is None:
            raise ValueError("not a string literal")
        structure = json.loads(text)
    except (ValueError, RecursionError):
        _refuse(
            f"the structure argument of {name}() must be a JSON string literal",
            "write the structure inline, e.g. '{\"a\": \"VARCHAR\"}'",
        )
    leaves: list[str] = []
    pending = [structure]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            leaves.append(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    types: set[str] = set()
    for leaf in leaves:
        types.update(_check_tree(f"SELECT NULL::{leaf}", False).types)
    return types


def _check_table_ref(ref: dict, tables: set[TableName], calls: set[FunctionName],
                     registered_scans: bool, user_functions: frozenset[str]) -> None:
    kind = ref.get("type")
    if kind not in _TABLE_REFS:
        _refuse(f"table reference of kind {kind} cannot be verified", "select from tables")
    if kind == "BASE_TABLE":
        for key in ("table_name", "schema_name", "catalog_name"):
            name = ref.get(key) or ""
            if _FILE_LIKE.search(name):
                _refuse(
                    f"'{name}' looks like a file or URL; files and the network are not reachable",
                    "query the tables listed by SHOW TABLES",
                )
        tables.add(TableName(str(ref.get("catalog_name") or ""),
                             str(ref.get("schema_name") or ""), str(ref.get("table_name") or "")))
    elif kind == "SHOW_REF":
        _check_show(ref, tables)
    elif kind == "TABLE_FUNCTION":
        function = ref.get("function") or {}
        name = str(function.get("function_name", "")).lower()
        if function.get("class") != "FUNCTION" or not name:
            _refuse("a table function written as an expression cannot be verified",
                    "call a table function by its name")
        if registered_scans and name in _REGISTERED_SCANS and not function.get("arguments"):
            return  # the user's registered DataFrame or Arrow table
        _refuse_function(name, FunctionUse.TABLE, user_functions)
        calls.add(_call_of(function, table=True))
        _check_size(name, function.get("arguments") or [], table=True)


def _check_show(ref: dict, tables: set[TableName]) -> None:
    """SHOW/DESCRIBE/SUMMARIZE: only of a query (checked as a child) or a catalog listing.

    ``SHOW name`` without a query is what DuckDB binds as "the table ``name`` if one
    exists, else the setting ``name``"; the guard cannot know which, so it is refused.
    """
    show_type = ref.get("show_type")
    name = str(ref.get("table_name") or "")
    if show_type == "SHOW_SPECIAL":
        if name.lower() not in _SHOW_CATALOG:
            _refuse(f"SHOW {name.strip(chr(34)).upper()} reads variables or settings, not "
                    "the catalog", "use SHOW TABLES, SHOW ALL TABLES or DESCRIBE table")
        return
    if show_type == "SHOW_FROM":  # SHOW TABLES FROM [catalog.]schema: a catalog listing
        return
    if ref.get("query") is None:
        _refuse(f"SHOW {name} reads the setting of that name when no such table exists",
                f"write DESCRIBE {name} to see a table's columns")
    if _FILE_LIKE.search(name):
        _refuse(f"'{name}' looks like a file or URL", "DESCRIBE a table instead")
