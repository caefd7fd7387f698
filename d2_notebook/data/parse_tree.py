"""DuckDB's own parse tree of one SELECT, for code that reads SQL rather than runs it.

The analysis tools read the pieces a model hands them (a FROM clause, a metric, a filter)
and the coverage map reads every evidence's SQL; both ask DuckDB's parser
(``json_serialize_sql``) instead of matching text. Parsing never touches the user's data:
it runs on a private in-memory connection with external access disabled.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import duckdb

from d2_notebook.errors import QueryFailedError

__all__ = ["column_names", "iter_nodes", "outer_nodes", "select_node", "serialize"]

_lock = threading.Lock()  # held only to create a thread's cursor
_parser: duckdb.DuckDBPyConnection | None = None
_local = threading.local()


def serialize(sql: str) -> dict:
    """The JSON parse tree of one SELECT statement.

    Each thread parses on its own cursor, so no process-wide lock is held while parsing.

    Raises:
        QueryFailedError: The text is not one parseable SELECT (DuckDB's message and a fix).
    """
    row = parser_cursor().execute("SELECT json_serialize_sql(?::VARCHAR)", [sql]).fetchall()
    tree = json.loads(row[0][0])
    if tree.get("error") or len(tree.get("statements", [])) != 1:
        raise QueryFailedError(
            f"cannot parse the SQL: {tree.get('error_message') or 'not one SELECT statement'}"
            "\nHint: check the syntax (DuckDB SQL dialect) and send one SELECT."
        )
    return tree


def parser_cursor() -> duckdb.DuckDBPyConnection:
    """This thread's cursor on a private in-memory database (no user data, no files,
    no extensions): the one place SQL is parsed without being run."""
    global _parser
    cursor = getattr(_local, "cursor", None)
    if cursor is None:
        with _lock:
            if _parser is None:
                _parser = duckdb.connect(config={
                    "enable_external_access": False, "autoinstall_known_extensions": False,
                    "autoload_known_extensions": False})
            cursor = _local.cursor = _parser.cursor()
    return cursor


def select_node(sql: str) -> dict:
    """The top query node of one SELECT statement (see :func:`serialize`)."""
    return serialize(sql)["statements"][0]["node"]


def iter_nodes(node: object) -> Iterator[dict]:
    """Every dict in a parse (sub)tree, depth first, the root included."""
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            yield item
            pending.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            pending.extend(reversed(item))


def column_names(node: object) -> set[str]:
    """The case-folded parts of every column reference in a parse (sub)tree (``t.name``
    gives ``t`` and ``name``)."""
    return {str(part).casefold() for item in iter_nodes(node)
            if item.get("class") == "COLUMN_REF" for part in item.get("column_names") or []}


def outer_nodes(node: object) -> Iterator[dict]:
    """Every dict of an expression's parse tree, depth first, the root included, but none
    inside a subquery's own SELECT (read in its own scope); the left operand of ``x IN
    (SELECT ...)`` is the expression's own and is included."""
    pending = [node]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(reversed(item))
        elif isinstance(item, dict):
            yield item
            if item.get("class") == "SUBQUERY":
                pending.append(item.get("child"))
            else:
                pending.extend(reversed(list(item.values())))
