"""Why the SQL guard refuses each statement type, and what to do instead.

One entry per :class:`duckdb.StatementType` the guard does not run, so every refusal
says why in the user's terms ("it writes data"), never "type MULTI".
"""

from __future__ import annotations

import re

__all__ = ["refusal_for_type"]

_SELECT_INSTEAD = "rewrite it as a SELECT over the existing tables"
_REASONS: dict[str, tuple[str, str]] = {
    "INSERT": ("it writes data", _SELECT_INSTEAD),
    "UPDATE": ("it writes data", _SELECT_INSTEAD),
    "DELETE": ("it writes data (DELETE and TRUNCATE remove rows)", _SELECT_INSTEAD),
    "MERGE_INTO": ("it writes data (MERGE INTO)", _SELECT_INSTEAD),
    "CREATE": ("it creates an object (table, view, macro, type, secret, ...)",
               "use a CTE (WITH name AS (...)) instead of creating objects"),
    "CREATE_FUNC": ("it creates a function or macro", "write the expression inline"),
    "DROP": ("it drops an object (or deallocates a prepared statement)", _SELECT_INSTEAD),
    "ALTER": ("it alters an object", _SELECT_INSTEAD),
    "COPY": ("it copies data to or from a file", "query the tables directly"),
    "COPY_DATABASE": ("it copies a whole database (COPY FROM DATABASE)",
                      "query the tables directly"),
    "EXPORT": ("it exports the database to files", "query the tables directly"),
    "ATTACH": ("it attaches another database", "query the databases already attached"),
    "DETACH": ("it detaches a database", _SELECT_INSTEAD),
    "LOAD": ("it installs or loads an extension", "use DuckDB's built-in functions"),
    "EXTENSION": ("it installs, updates or loads extensions", "use DuckDB's built-in functions"),
    "SET": ("it changes a setting, a variable or the current schema (SET, RESET, USE)",
            "qualify names (schema.table) instead of USE; settings are not changed"),
    "VARIABLE_SET": ("it sets a variable", "write the value inline or in a CTE"),
    "VACUUM": ("it rewrites storage or statistics (VACUUM, ANALYZE)", _SELECT_INSTEAD),
    "ANALYZE": ("it rewrites statistics", _SELECT_INSTEAD),
    "TRANSACTION": ("it controls transactions", "send the SELECT alone"),
    "PREPARE": ("it prepares a statement", "send the statement itself"),
    "EXECUTE": ("it executes a prepared statement", "send the statement itself"),
    "MULTI": ("a PIVOT without an IN list first creates a type from the data (it is several "
              "statements)", "list the pivot values: PIVOT t ON col IN ('a', 'b') USING ..."),
    "RELATION": ("it is an internal relation statement", _SELECT_INSTEAD),
    "LOGICAL_PLAN": ("it is an internal plan statement", _SELECT_INSTEAD),
    "INVALID": ("DuckDB could not type the statement", _SELECT_INSTEAD),
}
_COPY_DATABASE = re.compile(r"COPY\s+FROM\s+DATABASE\b", re.I)


def refusal_for_type(kind: str, text: str) -> tuple[str, str]:
    """``(reason, fix)`` for a statement of type ``kind`` (its normalized ``text``)."""
    if kind == "PRAGMA" and _COPY_DATABASE.match(text):
        return _REASONS["COPY_DATABASE"]
    if kind == "PRAGMA":
        return ("it is a PRAGMA in a form the checker cannot verify",
                "write PRAGMA name or PRAGMA name('arg') with a read-only pragma")
    return _REASONS.get(kind, (f"statements of type {kind} are not allowed", _SELECT_INSTEAD))
