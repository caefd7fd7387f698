"""Static checker: is one SQL string a single, read-only statement that touches no files?

The check never looks for keywords in the text. It asks DuckDB's own parser:
``extract_statements`` gives the statement type, and ``json_serialize_sql`` gives the
parse tree of SELECT-like statements (SELECT, WITH, VALUES, TABLE, DESCRIBE, SHOW,
SUMMARIZE all parse as SELECT in DuckDB 2.0). The whole tree is walked and every part
must be allowed:

- query nodes: plain SELECT, set operations and CTEs only (a CTE body that is a
  DELETE/INSERT/UPDATE ... RETURNING parses as another node type and is refused);
- table references: catalog tables whose names do not look like files or URLs (so no
  replacement scans such as ``FROM 'x.parquet'``), subqueries, joins, VALUES, PIVOT,
  SHOW/DESCRIBE, and table functions from :data:`ALLOWED_TABLE_FUNCTIONS` only;
- scalar functions: anything except :data:`DENIED_SCALAR_FUNCTIONS`.

The names of the functions called and of the types used (every ``"class": "TYPE"`` node:
cast targets such as ``x::INET``/``CAST(x AS JSON)``/typed literals ``INET '1.2.3.4'``,
and nested ones inside ``STRUCT(a INET)``, ``MAP(K, V)``, ``T[]``/``T[3]``, ``UNION``)
are returned too, so that the runner can refuse names the database does not know
before DuckDB tries to auto-install an extension for them.

EXPLAIN [ANALYZE] is allowed when the statement it wraps passes; ``CALL f(...)`` is
rewritten to ``SELECT * FROM f(...)`` and checked as such; PRAGMA is allowed for the
names in :data:`ALLOWED_PRAGMAS` with at most one string argument. Every other statement
type (DML, DDL, ATTACH, COPY, SET, LOAD, ...) is refused.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from typing import NoReturn

import duckdb

from d2_notebook.errors import QueryFailedError, UnsafeSQLError

__all__ = [
    "ALLOWED_PRAGMAS",
    "ALLOWED_TABLE_FUNCTIONS",
    "DENIED_SCALAR_FUNCTIONS",
    "CheckedSQL",
    "analyze_sql",
    "check_sql",
]

ALLOWED_TABLE_FUNCTIONS: frozenset[str] = frozenset({
    "range", "generate_series", "unnest", "repeat", "json_each", "json_tree",
    "duckdb_tables", "duckdb_columns", "duckdb_views", "duckdb_schemas", "duckdb_databases",
    "duckdb_types", "duckdb_functions", "duckdb_constraints", "duckdb_indexes",
    "duckdb_sequences", "duckdb_keywords", "duckdb_dependencies",
    "pragma_table_info", "pragma_database_size", "pragma_version", "pragma_collations",
    "pragma_show", "pg_timezone_names", "icu_calendar_names",
})  # fmt: skip

DENIED_SCALAR_FUNCTIONS: frozenset[str] = frozenset({
    "getenv", "read_text", "read_blob", "nextval", "setval", "setseed", "write_log",
    "query", "query_table", "json_execute_serialized_sql", "current_setting_secret",
    "load_extension", "install_extension",
})  # fmt: skip

ALLOWED_PRAGMAS: frozenset[str] = frozenset({
    "table_info", "show", "show_tables", "show_tables_expanded", "show_databases",
    "database_list", "database_size", "version", "platform", "collations", "functions",
})  # fmt: skip

_JSON_STRUCTURE_FUNCTIONS = frozenset({
    "json_transform", "json_transform_strict", "from_json", "from_json_strict",
})  # fmt: skip
_QUERY_NODES = frozenset({"SELECT_NODE", "SET_OPERATION_NODE", "RECURSIVE_CTE_NODE", "CTE_NODE"})
_TABLE_REFS = frozenset({
    "BASE_TABLE", "TABLE_FUNCTION", "SUBQUERY", "JOIN", "EXPRESSION_LIST", "EMPTY",
    "EMPTY_FROM", "SHOW_REF", "PIVOT",
})  # fmt: skip
_FILE_LIKE = re.compile(r"[./\\:~*?$%]")
_PRAGMA = re.compile(r"PRAGMA\s+(\w+)\s*(?:\(\s*(?:'(?:[^']|'')*')?\s*\))?", re.I)
_EXPLAIN = re.compile(r"EXPLAIN(?:\s+ANALY[SZ]E)?\s+(.+)", re.I | re.S)
_CALL = re.compile(r"CALL\s+(.+)", re.I | re.S)
_RULE = (
    "only one read-only statement per call (SELECT, WITH, DESCRIBE, SHOW, SUMMARIZE, "
    "EXPLAIN or a read-only PRAGMA such as table_info) over tables already in the database"
)
_TYPE_REASONS = {
    "INSERT": "it writes data", "UPDATE": "it writes data", "DELETE": "it writes data",
    "CREATE": "it creates an object", "DROP": "it drops an object", "ALTER": "it alters an object",
    "COPY": "it copies data to or from a file", "EXPORT": "it exports the database to files",
    "ATTACH": "it attaches another database", "DETACH": "it detaches a database",
    "LOAD": "it installs or loads an extension", "SET": "it changes a setting",
    "VACUUM": "it rewrites storage", "TRANSACTION": "it controls transactions",
}  # fmt: skip

_parser_lock = threading.Lock()
_parser: duckdb.DuckDBPyConnection | None = None


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
    """

    sql: str
    kind: str
    functions: frozenset[str]
    types: frozenset[str] = frozenset()


def check_sql(sql: str) -> str:
    """Return the normalized single read-only statement, or refuse it.

    Raises:
        UnsafeSQLError: More or fewer than one statement, a write, a setting change, a
            file or network access, or anything the checker cannot verify.
        QueryFailedError: The text does not parse (DuckDB's message plus a hint).
    """
    return analyze_sql(sql).sql


def analyze_sql(sql: str) -> CheckedSQL:
    """Like :func:`check_sql`, but also return the statement kind and its functions."""
    if not isinstance(sql, str) or not sql.strip():
        _refuse("the statement is empty", "send one SELECT statement")
    statements = _extract(sql)
    if len(statements) != 1:
        _refuse(
            f"got {len(statements)} statements",
            "send statements one call at a time, without ';' between them",
        )
    kind = statements[0].type.name
    text = _normalize(statements[0].query)
    if kind == "SELECT":
        functions, types = _check_tree(text)
        return CheckedSQL(text, "SELECT", functions, types)
    if kind == "EXPLAIN":
        match = _EXPLAIN.fullmatch(text)
        inner = analyze_sql(match.group(1)) if match else None
        if inner is None or inner.kind != "SELECT":
            _refuse("EXPLAIN may only wrap a SELECT", "EXPLAIN the SELECT alone")
        return CheckedSQL(text, "EXPLAIN", inner.functions, inner.types)
    if kind == "PRAGMA":
        match = _PRAGMA.fullmatch(text)
        if not match or match.group(1).lower() not in ALLOWED_PRAGMAS:
            _refuse(
                "only read-only PRAGMAs with at most one string argument are allowed",
                f"use one of: {', '.join(sorted(ALLOWED_PRAGMAS))}",
            )
        return CheckedSQL(text, "PRAGMA", frozenset())
    if kind == "CALL":
        match = _CALL.fullmatch(text)
        if not match:
            _refuse("it is a maintenance command (e.g. CHECKPOINT)", "query tables with SELECT")
        inner = analyze_sql(f"SELECT * FROM {match.group(1)}")
        if inner.kind != "SELECT":
            _refuse("CALL may only call a read-only table function", "use SELECT")
        return inner
    reason = _TYPE_REASONS.get(kind, f"statements of type {kind} are not allowed")
    _refuse(reason, "rewrite it as a SELECT over the existing tables")


def _refuse(reason: str, fix: str) -> NoReturn:
    raise UnsafeSQLError(f"SQL refused: {reason}. The SQL tool runs {_RULE}; {fix}.")


def _parser_connection() -> duckdb.DuckDBPyConnection:
    global _parser
    if _parser is None:
        _parser = duckdb.connect(config={"enable_external_access": False})
    return _parser


def _extract(sql: str) -> list:
    with _parser_lock:
        try:
            return list(_parser_connection().extract_statements(sql))
        except duckdb.ParserException as exc:
            raise QueryFailedError(
                f"{exc}\nHint: check the syntax (DuckDB SQL dialect) and send one statement."
            ) from exc
        except (duckdb.Error, ValueError) as exc:
            _refuse(f"the statement could not be classified ({exc})", "use a plain SELECT")


def _normalize(text: str) -> str:
    """Remove comments (via DuckDB's tokenizer) and trailing semicolons."""
    tokens = duckdb.tokenize(text)
    pieces: list[str] = []
    for i, (start, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(text)
        pieces.append(" " if kind == duckdb.token_type.comment else text[start:end])
    return "".join(pieces).strip().rstrip(";").strip()


def _serialize(text: str) -> dict:
    with _parser_lock:
        row = _parser_connection().execute("SELECT json_serialize_sql(?::VARCHAR)", [text])
        tree = json.loads(row.fetchall()[0][0])
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        _refuse(f"the statement could not be verified ({tree.get('error_message')})", "simplify it")
    return tree


def _check_tree(text: str) -> tuple[frozenset[str], frozenset[str]]:
    functions: set[str] = set()
    types: set[str] = set()
    _walk(_serialize(text), functions, types)
    return frozenset(functions), frozenset(types)


def _walk(node: object, functions: set[str], types: set[str]) -> None:
    if isinstance(node, list):
        for item in node:
            _walk(item, functions, types)
        return
    if not isinstance(node, dict):
        return
    if "class" in node:
        if node["class"] == "TYPE" and node.get("type_name"):
            types.add(str(node["type_name"]).lower())
        if isinstance(node.get("function_name"), str):
            name = node["function_name"].lower()
            functions.add(name)
            if name in DENIED_SCALAR_FUNCTIONS or name.startswith("__internal"):
                _refuse(f"function {name}() reads files, settings or state", "remove it")
            if name in _JSON_STRUCTURE_FUNCTIONS:
                types.update(_structure_types(name, node.get("arguments") or []))
    elif "modifiers" in node and node.get("type") not in _QUERY_NODES:
        _refuse(f"a {node.get('type')} inside the query would change data", "use SELECT only")
    elif "alias" in node and "sample" in node:
        _check_table_ref(node)
    for value in node.values():
        _walk(value, functions, types)


def _structure_types(name: str, arguments: list) -> set[str]:
    """Type names inside the JSON structure argument of ``from_json`` and friends."""
    if len(arguments) < 2:
        return set()
    argument = arguments[1].get("expression") if isinstance(arguments[1], dict) else None
    literal = (argument or {}).get("literal") or {}
    try:
        if (argument or {}).get("class") != "CONSTANT" or literal.get("kind") != "STRING":
            raise ValueError("not a string literal")
        structure = json.loads(literal.get("text", ""))
    except ValueError:
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
        _walk(_serialize(f"SELECT NULL::{leaf}"), set(), types)
    return types


def _check_table_ref(ref: dict) -> None:
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
    elif kind == "SHOW_REF" and _FILE_LIKE.search(ref.get("table_name") or ""):
        _refuse(f"'{ref['table_name']}' looks like a file or URL", "DESCRIBE a table instead")
    elif kind == "TABLE_FUNCTION":
        function = ref.get("function") or {}
        name = str(function.get("function_name", "")).lower()
        if function.get("class") != "FUNCTION" or name not in ALLOWED_TABLE_FUNCTIONS:
            _refuse(
                f"table function {name or '?'}() is not allowed (it may read files, run SQL "
                "text or change state)",
                f"use tables, or one of: {', '.join(sorted(ALLOWED_TABLE_FUNCTIONS))}",
            )
