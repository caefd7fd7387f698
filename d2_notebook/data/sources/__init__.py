"""Data sources behind one interface: DuckDB, SQLAlchemy engines, Spark sessions.

:func:`open_source` turns whatever the user handed over into a
:class:`~d2_notebook.data.sources.base.SQLSource`:

- a DuckDB connection, a path to a DuckDB file, or a ``GuardedSQL`` -> DuckDB;
- a CSV or Parquet file, or a folder of them -> DuckDB in memory, one table per file
  (:mod:`.files`);
- a SQLAlchemy URL (``postgresql+psycopg://...``; any ``dialect+driver://`` text) or
  an ``Engine`` -> :class:`SQLAlchemySource` (PostgreSQL tested; other backends get
  the same guard, "not tested here");
- a ``pyspark.sql.SparkSession`` -> :class:`SparkSource`;
- an object that already is a source -> itself.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import duckdb

from d2_notebook.data.guarded_sql import GuardedSQL
from d2_notebook.data.keys import Relationship, parse_relationships
from d2_notebook.data.sources.base import ForeignKey, SourceInfo, SourceKind, SQLSource
from d2_notebook.data.sources.duckdb_source import DuckDBSource
from d2_notebook.data.sources.files import is_data_files, open_data_files

__all__ = ["RELATIONSHIPS_ON_A_MADE_SOURCE", "DuckDBSource", "ForeignKey", "SQLSource",
           "SourceInfo", "SourceKind", "is_made_source", "is_source_input", "open_source"]

_URL = re.compile(r"^[a-z][a-z0-9+._-]*://", re.I)


def open_source(source: Any, *, timeout_s: float = 30.0, max_rows: int = 10_000,
                relationships: Sequence[str | Relationship] = ()) -> SQLSource:
    """The right :class:`SQLSource` for ``source`` (see the module docstring).

    Args:
        source: A connection, path, URL, engine, Spark session or source.
        timeout_s: Default per-query time limit of a new source.
        max_rows: Default rows kept per result of a new source.
        relationships: Join edges a new source declares or vetoes where the inferred join
            graph is wrong (``"orders.customer_id -> customers.id"``, ``"!a.id -> b.id"``;
            :class:`~d2_notebook.data.keys.Relationship`).

    Raises:
        TypeError: ``source`` is none of the accepted kinds (the message lists them).
        ValueError: A URL whose backend has no SQL guard; ``relationships`` with a source
            or GuardedSQL that was already made (declare them on it instead); a
            relationship that is not understood.
        QueryFailedError: The database cannot be opened.
    """
    limits: dict[str, Any] = {"timeout_s": timeout_s, "max_rows": max_rows,
                              "relationships": tuple(parse_relationships(list(relationships)))}
    if relationships and is_made_source(source):
        raise ValueError(RELATIONSHIPS_ON_A_MADE_SOURCE)
    if isinstance(source, DuckDBSource) or _is_source(source):
        return source
    if isinstance(source, GuardedSQL | duckdb.DuckDBPyConnection):
        return DuckDBSource(source, **limits)
    if isinstance(source, str) and _URL.match(source) and not source.startswith("file:"):
        from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource

        return SQLAlchemySource(source, **limits)
    if isinstance(source, str | os.PathLike):
        if is_data_files(source):
            return open_data_files(source, **limits)
        return DuckDBSource(source, **limits)
    if _is_engine(source):
        from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource

        return SQLAlchemySource(source, **limits)
    if _is_spark(source):
        from d2_notebook.data.sources.spark_source import SparkSource

        return SparkSource(source, **limits)
    raise TypeError(
        f"cannot investigate a {type(source).__name__}: pass a DuckDB connection or file "
        "path, a SQLAlchemy URL or Engine (postgresql+psycopg://user@host/db), or a "
        "pyspark.sql.SparkSession"
    )


RELATIONSHIPS_ON_A_MADE_SOURCE = (
    "this source was made already and keeps its own join edges: declare the relationships "
    "when you make it (GuardedSQL(con, relationships=[...])), or pass the connection, "
    "file or URL itself")
"""Why relationships cannot be given with a source that is already made."""


def is_made_source(value: object) -> bool:
    """Whether ``value`` is a source (or GuardedSQL) already made, with its own settings."""
    return isinstance(value, GuardedSQL | DuckDBSource) or _is_source(value)


def is_source_input(value: object) -> bool:
    """Whether :func:`open_source` accepts ``value`` (without opening anything)."""
    return (isinstance(value, GuardedSQL | duckdb.DuckDBPyConnection | DuckDBSource)
            or _is_source(value) or _is_engine(value) or _is_spark(value))


def _is_source(value: object) -> bool:
    return type(value).__name__ in ("SQLAlchemySource", "SparkSource") and isinstance(
        value, SQLSource)


def _is_engine(value: object) -> bool:
    return any(c.__module__.startswith("sqlalchemy") and c.__name__ == "Engine"
               for c in type(value).__mro__)


def _is_spark(value: object) -> bool:
    return any(c.__module__.startswith("pyspark.sql") and c.__name__ == "SparkSession"
               for c in type(value).__mro__)
