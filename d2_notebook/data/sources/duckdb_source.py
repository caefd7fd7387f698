"""DuckDBSource: today's :class:`~d2_notebook.data.GuardedSQL` behind the SQLSource interface.

Behaviour is GuardedSQL's, unchanged: DuckDB's own parser-based guard, the user's
connection used as is or a file opened read-only, the same caps and timeouts. This
class only adds what the interface asks beyond it: the dialect, the source's
description, foreign keys from ``duckdb_constraints()`` and ``cancel``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import duckdb

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.guarded_sql import GuardedSQL
from d2_notebook.data.keys import Relationship
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import TableInfo
from d2_notebook.data.sources.base import ForeignKey, SourceInfo, SourceKind

__all__ = ["DuckDBSource"]

_KEYS_SQL = (
    "SELECT table_name, constraint_column_names, referenced_table, "
    "referenced_column_names FROM system.main.duckdb_constraints() "
    "WHERE constraint_type = 'FOREIGN KEY' "
    "ORDER BY table_name, constraint_index"
)


class DuckDBSource:
    """A DuckDB connection or file as an :class:`~d2_notebook.data.SQLSource`.

    Args:
        source: A DuckDB connection, a path, or an existing :class:`GuardedSQL` (whose
            settings are kept).
        timeout_s, max_rows: Defaults for a new GuardedSQL (ignored for an existing one).
        relationships: Join edges to declare or veto, for a new GuardedSQL (an existing
            one keeps its own; passing both is refused).

    Raises:
        ValueError: ``relationships`` with an existing GuardedSQL, or one not understood.
    """

    def __init__(self, source: GuardedSQL | duckdb.DuckDBPyConnection | str | os.PathLike[str],
                 *, timeout_s: float = 30.0, max_rows: int = 10_000,
                 relationships: Sequence[str | Relationship] = ()) -> None:
        if isinstance(source, GuardedSQL):
            if relationships:
                raise ValueError("declare the relationships on the GuardedSQL itself "
                                 "(GuardedSQL(con, relationships=[...])), or pass the "
                                 "connection instead of the GuardedSQL")
            self._guarded, self._owned = source, False
        else:
            self._guarded, self._owned = GuardedSQL(source, timeout_s=timeout_s,
                                                    max_rows=max_rows,
                                                    relationships=list(relationships)), True
        url = os.fspath(source) if isinstance(source, str | os.PathLike) else "connection"
        self._info = SourceInfo(SourceKind.DUCKDB, Dialect.DUCKDB, url)

    @property
    def guarded(self) -> GuardedSQL:
        """The GuardedSQL doing the work."""
        return self._guarded

    @property
    def relationships(self) -> tuple:
        """The join edges the user declared or vetoed (GuardedSQL's)."""
        return self._guarded.relationships

    @property
    def timeout_s(self) -> float:
        """Default per-query time limit (GuardedSQL's)."""
        return self._guarded.timeout_s

    @timeout_s.setter
    def timeout_s(self, value: float) -> None:
        self._guarded.timeout_s = value

    @property
    def max_rows(self) -> int:
        """Default rows kept per result (GuardedSQL's)."""
        return self._guarded.max_rows

    @max_rows.setter
    def max_rows(self, value: int) -> None:
        self._guarded.max_rows = value

    @property
    def dialect(self) -> Dialect:
        """Always ``Dialect.DUCKDB``."""
        return Dialect.DUCKDB

    @property
    def info(self) -> SourceInfo:
        """``duckdb`` with the file path, or ``connection`` for a live connection."""
        return self._info

    def run(self, sql: str, *, timeout_s: float | None = None,
            max_rows: int | None = None) -> QueryResult:
        """:meth:`GuardedSQL.run`."""
        return self._guarded.run(sql, timeout_s=timeout_s, max_rows=max_rows)

    async def arun(self, sql: str, *, timeout_s: float | None = None,
                   max_rows: int | None = None) -> QueryResult:
        """:meth:`GuardedSQL.arun`."""
        return await self._guarded.arun(sql, timeout_s=timeout_s, max_rows=max_rows)

    def list_tables(self) -> list[TableInfo]:
        """:meth:`GuardedSQL.list_tables`."""
        return self._guarded.list_tables()

    def describe(self, table: str, n_samples: int = 3) -> TableInfo:
        """:meth:`GuardedSQL.describe`."""
        return self._guarded.describe(table, n_samples)

    def sample(self, table: str, n: int = 5) -> QueryResult:
        """:meth:`GuardedSQL.sample`."""
        return self._guarded.sample(table, n)

    def schema_summary(self, n_samples: int = 3) -> str:
        """:meth:`GuardedSQL.schema_summary` (unchanged text)."""
        return self._guarded.schema_summary(n_samples)

    def foreign_keys(self) -> list[ForeignKey]:
        """Foreign keys declared in the database (``duckdb_constraints()``)."""
        frame = self._guarded.run(_KEYS_SQL, max_rows=100_000).frame
        return [ForeignKey(str(r[0]), tuple(r[1]), str(r[2]), tuple(r[3]))
                for r in frame.itertuples(index=False, name=None)]

    def cancel(self) -> None:
        """Interrupt the query running on the connection, if any."""
        cancel: Any = getattr(self._guarded, "cancel", None)
        if callable(cancel):  # a GuardedSQL that offers it
            cancel()
            return
        self._guarded._con.interrupt()

    def close(self) -> None:
        """Close what this source opened (a GuardedSQL passed in is left open)."""
        if self._owned:
            self._guarded.close()

    def __enter__(self) -> DuckDBSource:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
