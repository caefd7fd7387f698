"""The interface every data source implements, and what a source says about itself.

The detective, the notebook and the CLI speak to a :class:`SQLSource` only: DuckDB
(:class:`~d2_notebook.data.GuardedSQL`), any SQLAlchemy engine (PostgreSQL tested), or
a Spark session. Each runs one guarded, read-only, capped and time-limited statement
per call and returns a :class:`~d2_notebook.data.QueryResult`, refusing with
:class:`~d2_notebook.errors.UnsafeSQLError` exactly as ``GuardedSQL.run`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import TableInfo

__all__ = ["ForeignKey", "SQLSource", "SourceInfo", "SourceKind"]


class SourceKind(StrEnum):
    """Which implementation serves a source."""

    DUCKDB = "duckdb"
    SQLALCHEMY = "sqlalchemy"
    SPARK = "spark"


@dataclass(frozen=True)
class SourceInfo:
    """Where an investigation's data lives, safe to store and show (no password).

    Attributes:
        kind: The implementation.
        dialect: The SQL dialect its statements are written in.
        url: A redacted locator: a SQLAlchemy URL without password or secret query
            parameters, a DuckDB path (or ``:memory:``/``connection``), a Spark master.
    """

    kind: SourceKind
    dialect: Dialect
    url: str

    def to_dict(self) -> dict[str, str]:
        """Plain JSON form, as stored with an investigation on the board."""
        return {"kind": self.kind.value, "dialect": self.dialect.value, "url": self.url}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SourceInfo:
        """Rebuild the form :meth:`to_dict` stored.

        Raises:
            ValueError: An unknown kind or dialect.
        """
        return cls(SourceKind(data["kind"]), Dialect(data["dialect"]), str(data.get("url", "")))

    def describe(self) -> str:
        """One line for messages: ``PostgreSQL (postgresql+psycopg://ana@db/shop)``."""
        return f"{self.dialect.title} ({self.url})" if self.url else self.dialect.title


@dataclass(frozen=True)
class ForeignKey:
    """A declared foreign key read from a source's catalog.

    Attributes:
        table: The referencing table (its SQL name).
        columns: The referencing columns, in key order.
        ref_table: The referenced table.
        ref_columns: The referenced columns, in key order.
    """

    table: str
    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]

    def __str__(self) -> str:
        return (f"{self.table}({', '.join(self.columns)}) -> "
                f"{self.ref_table}({', '.join(self.ref_columns)})")


@runtime_checkable
class SQLSource(Protocol):
    """Guarded, read-only SQL over one database. Every method is thread-safe.

    ``run`` checks one statement in :attr:`dialect`, runs it within ``timeout_s``
    keeping at most ``max_rows`` rows, and returns a :class:`QueryResult`; it raises
    ``UnsafeSQLError`` (refused, nothing ran), ``QueryFailedError`` or
    ``QueryTimeoutError``.
    """

    timeout_s: float
    max_rows: int

    @property
    def dialect(self) -> Dialect:
        """The dialect statements must be written in."""
        ...

    @property
    def info(self) -> SourceInfo:
        """Kind, dialect and redacted URL (what the board records)."""
        ...

    def run(self, sql: str, *, timeout_s: float | None = None,
            max_rows: int | None = None) -> QueryResult:
        """Check and run one read-only statement."""
        ...

    async def arun(self, sql: str, *, timeout_s: float | None = None,
                   max_rows: int | None = None) -> QueryResult:
        """Async form of :meth:`run` (in a worker thread)."""
        ...

    def list_tables(self) -> list[TableInfo]:
        """Tables and views with row counts, ordered by name."""
        ...

    def describe(self, table: str, n_samples: int = 3) -> TableInfo:
        """Columns, types, row count and sample values of one table."""
        ...

    def sample(self, table: str, n: int = 5) -> QueryResult:
        """The first ``n`` rows of a table."""
        ...

    def schema_summary(self, n_samples: int = 3) -> str:
        """Deterministic text description of every table for a prompt."""
        ...

    def foreign_keys(self) -> list[ForeignKey]:
        """Foreign keys declared in the catalog (empty where the catalog has none)."""
        ...

    def cancel(self) -> None:
        """Stop every query running on this source now (each raises QueryTimeoutError
        or QueryFailedError in its caller)."""
        ...

    def close(self) -> None:
        """Release what the source opened itself; a user's object is left open."""
        ...
