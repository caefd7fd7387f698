"""Turning what a user typed in a magic line into the objects ``investigate()`` takes.

Every failure is an IPython ``UsageError`` whose message names the fix: no traceback
wall. Nothing here runs SQL or calls a model.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import duckdb
from IPython.core.error import UsageError

from d2_notebook.data import GuardedSQL, is_source_input
from d2_notebook.data.sources.files import path_source_problem
from d2_notebook.errors import D2Error
from d2_notebook.llm import get_model


def resolve_database(namespace: Mapping[str, Any], name: str | None,
                     db_path: str | None) -> Any:
    """The source named ``name`` in the user's namespace (a DuckDB connection, a
    SQLAlchemy engine or URL string, a SparkSession, a source), or ``db_path``: a DuckDB
    file or a SQLAlchemy URL (opened read-only later by the data layer)."""
    if name and db_path:
        raise UsageError("name a connection or pass --db PATH, not both")
    if db_path and "://" in db_path:
        return db_path
    if db_path:
        problem = path_source_problem(db_path)
        if problem is not None:
            raise UsageError(f"{problem}; or name a connection instead: "
                             "%%investigate con ...")
        return str(Path(db_path).expanduser())
    if not name:
        known = connection_names(namespace)
        hint = f" (e.g. {known[0]})" if known else ""
        raise UsageError("name the DuckDB connection to investigate as the first argument"
                         f"{hint}, or pass --db PATH")
    if name not in namespace:
        raise UsageError(f"no variable {name!r} in this notebook{did_you_mean(name, namespace)}"
                         " (a connection is made with con = duckdb.connect(...))")
    value = namespace[name]
    if isinstance(value, str) and "://" in value:
        return value  # a SQLAlchemy URL held in a variable
    if not (isinstance(value, duckdb.DuckDBPyConnection | GuardedSQL) or is_source_input(value)):
        raise UsageError(f"{name!r} is a {type(value).__name__}, not a DuckDB connection, "
                         "SQLAlchemy engine or SparkSession; pass a duckdb.connect(...) "
                         "object or --db PATH")
    return value


def connection_names(namespace: Mapping[str, Any]) -> list[str]:
    """Names in the namespace that hold a DuckDB connection."""
    return sorted(k for k, v in namespace.items()
                  if not k.startswith("_") and isinstance(v, duckdb.DuckDBPyConnection))


def did_you_mean(name: str, namespace: Mapping[str, Any]) -> str:
    """``"; did you mean 'con'?"`` from the connections (else all names), or ``""``."""
    candidates = connection_names(namespace) or [k for k in namespace if not k.startswith("_")]
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.5)
    if not close:
        known = connection_names(namespace)
        return f" (DuckDB connections here: {', '.join(known)})" if known else ""
    return "; did you mean " + " or ".join(repr(c) for c in close) + "?"


def resolve_model(namespace: Mapping[str, Any], name: str | None) -> Any:
    """A model object: the user's own (``--model my_model`` naming an object with a
    ``request`` method), or one built from a name (``anthropic:...``; None uses the
    configured default).

    Raises:
        UsageError: the name is unknown or the provider is not configured (the model
            layer's message, which names the fix).
    """
    if name and name.isidentifier() and name in namespace:
        value = namespace[name]
        if callable(getattr(value, "request", None)):
            return value
        if isinstance(value, str):
            name = value
        else:
            raise UsageError(f"{name!r} is a {type(value).__name__}, not a model; pass a "
                             "model name like anthropic:claude-sonnet-4-6 or an object "
                             "with a request() method")
    try:
        return get_model(name)
    except D2Error as exc:
        raise UsageError(str(exc)) from None


def investigation_options(collectors: int | None, max_depth: int | None,
                          budget_usd: float | None, max_calls: int | None,
                          max_seconds: float | None, variant: str | None) -> dict[str, Any]:
    """The ``InvestigationSettings`` fields the user set (None means "default")."""
    pairs = (("collectors", collectors), ("max_depth", max_depth), ("max_usd", budget_usd),
             ("max_calls", max_calls), ("max_seconds", max_seconds), ("variant", variant))
    for name, value in pairs:
        if isinstance(value, int | float) and not isinstance(value, bool) and value <= 0:
            raise UsageError(f"{name.replace('_', '-')} must be positive, got {value}")
    return {name: value for name, value in pairs if value is not None}
