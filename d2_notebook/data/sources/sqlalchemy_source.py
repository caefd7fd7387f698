"""SQLAlchemySource: guarded, read-only SQL over any SQLAlchemy engine.

Tested on PostgreSQL (``postgresql+psycopg://``); every other backend that SQLAlchemy
and sqlglot both know (Trino, Snowflake, BigQuery, MySQL ...) gets the same guard and
caps, "not tested here".

Defence in depth, per query:

1. :func:`~d2_notebook.data.sqlglot_guard.check_statement` parses the statement in the
   engine's dialect and refuses anything but one read-only query; what runs is the SQL
   it regenerated.
2. On PostgreSQL the statement runs in a ``READ ONLY`` transaction with
   ``statement_timeout`` set to the time limit and ``standard_conforming_strings`` on
   (``SET LOCAL``: nothing outlives the transaction; a backslash in a string literal is
   then a plain character, as the guard read it), which is rolled back after the query
   whatever happened — so even a function that writes, or a check that let something
   through, changes nothing. Before the statement runs, the catalog check
   (:mod:`~d2_notebook.data.postgres_catalog`) resolves its relations and functions in
   that transaction: views and SQL functions of the database are checked through their
   definitions, system relations outside the reviewed list are refused.
3. A deadline cancels the query from the client at the time limit (``cancel()`` of the
   DB-API connection), rows are fetched through a server-side cursor in chunks and capped
   at ``max_rows`` and at ``max_bytes`` (a result past the byte cap is an error naming
   it), and a truncated result is counted in the same transaction.
4. A PostgreSQL statement is prepared (``PREPARE``: parsed, names bound, views expanded,
   nothing run) before it runs. An error there is a compile error of the statement's own
   text and keeps its message, detail and hint (unknown column, "Perhaps you meant ...").
   Every error raised after it — while planning, executing or fetching, whatever its
   SQLSTATE (``'x'::regproc`` fails with class 42 at run time) — may quote values the
   query computed from anything it reached: only its primary message reaches the caller,
   each line cut at its first quote; no DETAIL or CONTEXT line.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine

from d2_notebook.data import sqlglot_guard
from d2_notebook.data.catalog_access import KeyConstraint
from d2_notebook.data.dialects import Dialect
from d2_notebook.data.execution import hide_quoted
from d2_notebook.data.keys import Relationship, parse_relationships
from d2_notebook.data.postgres_catalog import check_catalog
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import ColumnInfo, TableInfo
from d2_notebook.data.sources.base import ForeignKey, SourceInfo, SourceKind
from d2_notebook.data.sources.common import (
    MAX_RESULT_BYTES,
    ByteBudget,
    CatalogSource,
    Deadline,
    frame_from_rows,
    render_summary,
    valid_max_bytes,
    valid_max_rows,
    valid_timeout,
)
from d2_notebook.data.sqlglot_guard import GuardedStatement, StatementKind
from d2_notebook.errors import QueryFailedError, QueryTimeoutError

__all__ = ["SQLAlchemySource", "redact_url"]

_SYSTEM_SCHEMAS = frozenset({"information_schema", "pg_catalog", "pg_toast", "mysql",
                             "performance_schema", "sys"})
_SECRET_PARAMS = ("password", "secret", "token", "key", "credential")
_QUERY_CANCELED = "57014"
_READ_ONLY_VIOLATION = "25006"
_CHUNK_ROWS = 200
_PREPARED = "d2_checked"


class _CompileError(Exception):
    """The server refused to prepare the statement: an error of its own text."""

    def __init__(self, error: sa.exc.DBAPIError) -> None:
        super().__init__(str(error))
        self.error = error


def redact_url(url: URL) -> str:
    """``url`` without its password and without query parameters that hold secrets."""
    query = {k: v for k, v in url.query.items()
             if not any(s in k.lower() for s in _SECRET_PARAMS)}
    bare = URL.create(url.drivername, url.username, None, url.host, url.port, url.database,
                      query)
    return bare.render_as_string(hide_password=False)


class SQLAlchemySource(CatalogSource):
    """Read-only, single-statement SQL over a SQLAlchemy engine or URL.

    Args:
        source: An engine (used as is, never disposed) or a URL string/object
            (``postgresql+psycopg://user:pw@host/db``; its engine is disposed by
            :meth:`close`).
        timeout_s: Default per-query time limit in seconds (> 0).
        max_rows: Default number of rows kept per result (>= 0).
        max_bytes: Most bytes of values one result may hold (> 0); a larger result is
            refused with :class:`~d2_notebook.errors.QueryFailedError`.
        relationships: Join edges to declare or veto where the inferred join graph is
            wrong (:class:`~d2_notebook.data.keys.Relationship`).

    Raises:
        ValueError: The backend has no sqlglot dialect, or it is DuckDB (pass the
            DuckDB connection or file instead).
        QueryFailedError: The URL cannot make an engine (a driver is missing ...).
    """

    def __init__(self, source: Engine | URL | str, *, timeout_s: float = 30.0,
                 max_rows: int = 10_000, max_bytes: int = MAX_RESULT_BYTES,
                 relationships: Sequence[str | Relationship] = ()) -> None:
        self.relationships = parse_relationships(list(relationships))
        self.timeout_s = valid_timeout(timeout_s)
        self.max_rows = valid_max_rows(max_rows)
        self.max_bytes = valid_max_bytes(max_bytes)
        if isinstance(source, Engine):
            self._engine, self._owned = source, False
        else:
            try:
                # No pre-ping: it costs a round trip per query; a connection the server
                # dropped fails one query and is invalidated (see _rollback).
                self._engine = sa.create_engine(source, pool_recycle=1800)
            except (sa.exc.ArgumentError, ImportError, sa.exc.NoSuchModuleError) as exc:
                raise QueryFailedError(
                    f"cannot open {source!s}: {exc}; check the URL "
                    "(dialect+driver://user@host/db) and that the driver is installed"
                ) from exc
            self._owned = True
        self._dialect = Dialect.from_sqlalchemy(self._engine.dialect.name)
        if self._dialect is Dialect.DUCKDB:
            raise ValueError("pass the DuckDB connection or file itself, not a SQLAlchemy "
                             "engine over it")
        self._info = SourceInfo(SourceKind.SQLALCHEMY, self._dialect,
                                redact_url(self._engine.url))
        self._running: set[Any] = set()
        self._cancelled: set[int] = set()
        self._running_lock = threading.Lock()

    @property
    def dialect(self) -> Dialect:
        """The engine's dialect (PostgreSQL: ``Dialect.POSTGRES``)."""
        return self._dialect

    @property
    def info(self) -> SourceInfo:
        """Kind, dialect and the URL without password."""
        return self._info

    @property
    def engine(self) -> Engine:
        """The engine queries run on."""
        return self._engine

    def close(self) -> None:
        """Dispose the engine if this source created it from a URL."""
        if self._owned:
            self._engine.dispose()

    # --- running queries --------------------------------------------------------------

    def run(self, sql: str, *, timeout_s: float | None = None,
            max_rows: int | None = None) -> QueryResult:
        """Check and run one read-only statement (see the module docstring).

        Raises:
            UnsafeSQLError: Refused before running (nothing ran).
            QueryFailedError: The database rejected or failed it.
            QueryTimeoutError: It ran past the time limit and was cancelled.
        """
        limit, keep = self._limits(timeout_s, max_rows)
        checked = sqlglot_guard.check_statement(sql, self._dialect, timeout_s=limit)
        count_sql = None
        if checked.kind is StatementKind.QUERY:
            count_sql = f"SELECT count(*) FROM (\n{checked.sql}\n) AS d2_counted"
        return self._execute(checked.sql, timeout_s=limit, max_rows=keep, count_sql=count_sql,
                             checked=checked)

    def cancel(self) -> None:
        """Cancel every query running on this source now."""
        with self._running_lock:
            running = list(self._running)
            self._cancelled.update(id(d) for d in running)
        for dbapi in running:
            _cancel(dbapi)

    # --- schema -------------------------------------------------------------------------

    def schema_summary(self, n_samples: int = 3) -> str:
        """Every table and view with columns, samples and the declared foreign keys."""
        tables = [self._describe(i, n_samples) for i in self._catalog()]
        return render_summary(self._dialect, tables, self.foreign_keys())

    def foreign_keys(self) -> list[ForeignKey]:
        """Foreign keys from the catalog (PostgreSQL: ``pg_constraint``)."""
        inspector = sa.inspect(self._engine)
        keys = []
        for info in self._catalog():
            if info.kind != "table":
                continue
            for fk in inspector.get_foreign_keys(info.table, schema=info.schema or None):
                target = self._sql_name(fk.get("referred_schema") or info.schema,
                                        fk["referred_table"])
                keys.append(ForeignKey(info.name, tuple(fk["constrained_columns"]), target,
                                       tuple(fk["referred_columns"])))
        return sorted(keys, key=str)

    def key_constraints(self) -> list[KeyConstraint]:
        """Primary, unique and foreign keys of every table, as the analysis tools' key
        inference reads them (``duckdb_constraints()``'s shape)."""
        inspector = sa.inspect(self._engine)
        by_coordinates = {(i.schema, i.table): i for i in self._catalog()}
        keys: list[KeyConstraint] = []
        for (schema, table), info in sorted(by_coordinates.items()):
            if info.kind != "table":
                continue
            primary = inspector.get_pk_constraint(table, schema=schema or None)
            if primary.get("constrained_columns"):
                keys.append(KeyConstraint("", schema, table, "PRIMARY KEY",
                                          tuple(primary["constrained_columns"])))
            keys.extend(KeyConstraint("", schema, table, "UNIQUE", tuple(u["column_names"]))
                        for u in inspector.get_unique_constraints(table, schema=schema or None))
            for fk in inspector.get_foreign_keys(table, schema=schema or None):
                keys.append(KeyConstraint("", schema, table, "FOREIGN KEY",
                                          tuple(fk["constrained_columns"]),
                                          str(fk["referred_table"]),
                                          tuple(fk["referred_columns"])))
        return keys

    # --- internals ----------------------------------------------------------------------

    def _catalog(self) -> list[TableInfo]:
        """Tables and views of every non-system schema, default schema's first."""
        inspector = sa.inspect(self._engine)
        infos = []
        for schema in sorted(inspector.get_schema_names()):
            if schema in _SYSTEM_SCHEMAS or schema.startswith("pg_"):
                continue
            for kind, names in (("table", inspector.get_table_names(schema=schema)),
                                ("view", inspector.get_view_names(schema=schema))):
                for name in names:
                    columns = [ColumnInfo(str(c["name"]), str(c["type"]),
                                          bool(c.get("nullable", True)))
                               for c in inspector.get_columns(name, schema=schema)]
                    infos.append(TableInfo(self._sql_name(schema, name), kind, None,
                                           tuple(columns), "", schema, name))
        return sorted(infos, key=lambda i: (i.name.count("."), i.name))

    def _sql_name(self, schema: str | None, table: str) -> str:
        default = sa.inspect(self._engine).default_schema_name
        parts = [table] if not schema or schema == default else [schema, table]
        return ".".join(self._quote(p) for p in parts)

    def _quote(self, name: str) -> str:
        preparer = self._engine.dialect.identifier_preparer
        return preparer.quote(name)

    def _session_setup(self, timeout_s: float) -> list[str]:
        if self._dialect in (Dialect.POSTGRES, Dialect.REDSHIFT):  # one round trip
            return ["SET TRANSACTION READ ONLY; "
                    f"SET LOCAL statement_timeout = {max(1, round(timeout_s * 1000))}; "
                    "SET LOCAL standard_conforming_strings = on"]
        return []

    def _execute(self, sql: str, *, timeout_s: float, max_rows: int,
                 count_sql: str | None = None,
                 checked: GuardedStatement | None = None) -> QueryResult:
        start = time.perf_counter()
        with self._engine.connect() as conn:
            dbapi = conn.connection.dbapi_connection
            deadline = Deadline(timeout_s, lambda: _cancel(dbapi))
            with self._running_lock:
                self._running.add(dbapi)
            try:
                with deadline:
                    columns, rows, truncated, row_count = self._fetch(
                        conn, sql, timeout_s, max_rows, count_sql, checked)
                if deadline.fired:  # never return rows a cancel may have cut short
                    raise QueryTimeoutError(_timeout_message(timeout_s))
            except (sa.exc.DBAPIError, _CompileError) as caught:
                compile_time = isinstance(caught, _CompileError)
                exc = caught.error if isinstance(caught, _CompileError) else caught
                if id(dbapi) in self._cancelled and not deadline.fired:
                    raise QueryFailedError("the query was cancelled (SQLSource.cancel)") \
                        from exc
                if deadline.fired or _sqlstate(exc) == _QUERY_CANCELED:
                    raise QueryTimeoutError(_timeout_message(timeout_s)) from exc
                raise QueryFailedError(_with_hint(exc, self._dialect, compile_time)) from exc
            finally:
                with self._running_lock:
                    self._running.discard(dbapi)
                    self._cancelled.discard(id(dbapi))
                _rollback(conn)
        frame = frame_from_rows(columns, rows)
        return QueryResult(sql, frame, row_count, truncated, time.perf_counter() - start)

    def _fetch(self, conn: Connection, sql: str, timeout_s: float, max_rows: int,
               count_sql: str | None, checked: GuardedStatement | None,
               ) -> tuple[list[str], list[Any], bool, int | None]:
        for statement in self._session_setup(timeout_s):
            conn.exec_driver_sql(statement)
        if checked is not None and self._dialect is Dialect.POSTGRES:
            check_catalog(conn, checked, timeout_s=timeout_s)
            _prepare(conn, sql)
        streaming = conn.execution_options(stream_results=True, max_row_buffer=_CHUNK_ROWS)
        result = streaming.exec_driver_sql(_escape_percent(sql, conn))
        try:
            columns = list(result.keys()) if result.returns_rows else []
            rows = self._capped_rows(result, max_rows + 1) if columns else []
        finally:
            result.close()
        truncated = len(rows) > max_rows
        rows = rows[:max_rows]
        row_count: int | None = len(rows)
        if truncated:  # only then is the true count worth a second query
            row_count = None
            if count_sql is not None:
                counted = conn.exec_driver_sql(_escape_percent(count_sql, conn))
                row_count = int(counted.scalar_one())
        return columns, rows, truncated, row_count


    def _capped_rows(self, result: Any, limit: int) -> list[tuple[Any, ...]]:
        """Up to ``limit`` rows, fetched in chunks while their bytes stay under the cap."""
        budget = ByteBudget(self.max_bytes)
        rows: list[tuple[Any, ...]] = []
        while len(rows) < limit:
            chunk = result.fetchmany(min(_CHUNK_ROWS, limit - len(rows)))
            if not chunk:
                break
            for row in chunk:
                budget.add(row)
                rows.append(tuple(row))
        return rows


def _escape_percent(sql: str, conn: Connection) -> str:
    """Double ``%`` for drivers whose paramstyle reads it (psycopg, mysqlclient)."""
    if conn.dialect.paramstyle in ("format", "pyformat"):
        return sql.replace("%", "%%")
    return sql


def _prepare(conn: Connection, sql: str) -> None:
    """Prepare ``sql`` on PostgreSQL and drop it again: parse and bind without running.

    Raises:
        _CompileError: The server refused it (its error is about the statement's text).
    """
    try:
        conn.exec_driver_sql(_escape_percent(f"PREPARE {_PREPARED} AS\n{sql}", conn))
    except sa.exc.DBAPIError as exc:
        raise _CompileError(exc) from exc
    conn.exec_driver_sql(f"DEALLOCATE {_PREPARED}")


def _cancel(dbapi: Any) -> None:
    cancel = getattr(dbapi, "cancel", None)
    if callable(cancel):
        with contextlib.suppress(Exception):
            cancel()


def _rollback(conn: Connection) -> None:
    try:
        conn.rollback()
    except sa.exc.DBAPIError:
        conn.invalidate()  # a broken connection is dropped from the pool


def _sqlstate(exc: sa.exc.DBAPIError) -> str | None:
    orig = exc.orig
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)


def _timeout_message(timeout_s: float) -> str:
    return (f"query ran longer than {timeout_s:g} s and was stopped; narrow it with "
            "WHERE/LIMIT or raise the timeout")


def _error_text(exc: sa.exc.DBAPIError, dialect: Dialect, compile_time: bool) -> str:
    """The database's message as the agent may see it.

    On PostgreSQL, an error raised while the statement was prepared (``compile_time``)
    is about its own text: its primary message, detail and hint are kept. Any later error
    may quote values the query computed from anything it reached, in its message and,
    unquoted, in its DETAIL and CONTEXT lines: only the primary message is kept, cut at
    its first quote (:func:`~d2_notebook.data.execution.hide_quoted`). Errors of other
    backends (which this source cannot tell apart) keep their text.
    """
    text = str(exc.orig).strip()
    if dialect is not Dialect.POSTGRES:
        return text
    diag = getattr(exc.orig, "diag", None)
    primary = str(getattr(diag, "message_primary", None) or text.split("\n", 1)[0]).strip()
    if not compile_time:
        return hide_quoted(primary)
    extra = [f"{label}: {value}" for label, value in (
        ("DETAIL", getattr(diag, "message_detail", None)),
        ("HINT", getattr(diag, "message_hint", None))) if value]
    return "\n".join([primary, *extra])


def _with_hint(exc: sa.exc.DBAPIError, dialect: Dialect, compile_time: bool) -> str:
    text = _error_text(exc, dialect, compile_time)
    state = _sqlstate(exc) or ""
    if state == _READ_ONLY_VIOLATION:
        hint = "the database refused a write: queries run in a read-only transaction"
    elif state == "42P01" or ("does not exist" in text and "relation" in text):
        hint = "list_tables() shows the tables"
    elif state == "42703" or "column" in text.lower():
        hint = "describe_table shows the columns"
    elif state == "42501" or "permission" in text.lower():
        hint = "the database user may not read this; query the tables you can read"
    elif state.startswith("42"):
        hint = f"check the syntax ({dialect.title} SQL dialect)"
    else:
        hint = "fix the statement and retry; describe_table shows columns and types"
    return f"{text}\nHint: {hint}."
