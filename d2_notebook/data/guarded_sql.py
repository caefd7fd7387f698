"""GuardedSQL: run agent-written SQL read-only, capped and time-limited, on the user's data.

Concurrency strategy (DuckDB connection objects must not be shared across threads, and
a ``connection.cursor()`` does not see the parent's registered DataFrames or TEMP
tables):

- **User connection** (a ``DuckDBPyConnection`` passed in): every query runs on that very
  connection, serialized by one lock per connection object (shared by all GuardedSQL
  instances wrapping it). Queries therefore see everything the user sees, registered
  DataFrames and TEMP tables included. Safety comes from the static check
  (:func:`~d2_notebook.data.check_sql`) and the catalog check of views and macros; the
  only settings touched are ``autoinstall_known_extensions`` and
  ``autoload_known_extensions`` (global in DuckDB), switched off while a guarded query
  runs and restored to the user's values right after. Because DuckDB 2.0 refuses a new
  statement while a result is open, a query may fail if the user's own code holds an
  unfetched result on the same connection.
- **Path** (``str``/``PathLike``): we open the file ourselves with ``read_only=True``,
  ``enable_external_access=False`` and extension auto-install and auto-load off, and each
  query runs on its own ``cursor()``, so queries run in parallel; the database itself
  rejects writes and file access, a second line of defence behind the check.

Timeouts: a timer thread calls ``interrupt()`` on the connection/cursor running the
query; the timeout error is raised and the connection stays usable. No setting is
changed. Functions and types (casts such as ``x::INET``, typed literals, nested
``STRUCT``/``MAP``/list element types) that do not exist in the database are refused
before running, so DuckDB never auto-installs or auto-loads an extension on the agent's
behalf, and every view a statement reads and every database macro its calls may
resolve to is checked through its definition
(:class:`~d2_notebook.data.definitions.DefinitionCheck`): ``pg_settings`` is refused
because it wraps ``duckdb_settings()``, a database macro ``upper(x)`` defined as
``current_setting(...)`` because of its body, a table whose generated column calls
``getvariable(...)`` because of that column. Tables and views refused that way get no
samples or counts in the schema summary either. Results are capped in bytes as well as rows, and
errors DuckDB raises while running are reported without the values they quote
(:func:`~d2_notebook.data.execution.with_hint`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb
import pandas as pd

from d2_notebook.data import keys, schema
from d2_notebook.data.definitions import DefinitionCheck, Macro, read_macros
from d2_notebook.data.execution import (
    ResultTooLargeError,
    Watchdog,
    count_rows,
    extensions_off,
    fetch_capped,
    with_hint,
)
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import TableInfo
from d2_notebook.data.sql_guard import (
    CheckedSQL,
    FunctionName,
    TableName,
    UnclassifiedFunctionError,
    analyze_sql,
)
from d2_notebook.errors import QueryFailedError, QueryTimeoutError, UnsafeSQLError

__all__ = ["GuardedSQL"]

_LOCKS: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, threading.RLock] = (
    weakref.WeakKeyDictionary()
)
_LOCKS_GUARD = threading.Lock()
_INTERNAL_MAX_ROWS = 1_000_000


def _lock_for(con: duckdb.DuckDBPyConnection) -> threading.RLock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(con)
        if lock is None:
            lock = _LOCKS[con] = threading.RLock()
        return lock


class GuardedSQL:
    """Read-only, single-statement SQL over a DuckDB connection or database file.

    Args:
        source: The user's live connection (used as is, settings untouched) or a path to
            a DuckDB file (opened read-only with external access disabled).
        timeout_s: Default per-query time limit in seconds (> 0).
        max_rows: Default number of rows kept per result (>= 0).
        relationships: Join edges to declare or veto (``"orders.customer_id ->
            customers.id"``, ``"orders.id -/> customers.id"``) where the inferred join
            graph is wrong (:class:`~d2_notebook.data.keys.Relationship`).

    Raises:
        QueryFailedError: ``source`` is a path that cannot be opened read-only.
        TypeError: ``source`` is neither a connection nor a path.

    ``run`` and every helper are thread-safe; ``arun`` is the asyncio form.
    """

    def __init__(
        self,
        source: duckdb.DuckDBPyConnection | str | os.PathLike[str],
        *,
        timeout_s: float = 30.0,
        max_rows: int = 10_000,
        relationships: list[str] | None = None,
    ) -> None:
        self.timeout_s = _valid_timeout(timeout_s)
        self.relationships = keys.parse_relationships(relationships)
        self.max_rows = _valid_max_rows(max_rows)
        self._functions: frozenset[str] = frozenset()
        self._types: frozenset[str] = frozenset()
        self._cursor_lock = threading.Lock()
        self._definitions = DefinitionCheck()
        self._owned_macros: list[Macro] | None = None
        if isinstance(source, duckdb.DuckDBPyConnection):
            self._con, self._owned, self._lock = source, False, _lock_for(source)
        elif isinstance(source, str | os.PathLike):
            path = os.fspath(source)
            config = {"enable_external_access": False, "autoinstall_known_extensions": False,
                      "autoload_known_extensions": False, "python_enable_replacements": False}
            try:
                self._con = duckdb.connect(path, read_only=True, config=config)
            except duckdb.Error as exc:
                raise QueryFailedError(
                    f"cannot open DuckDB database {path!r} read-only: {exc}; check the path "
                    "or pass an open connection"
                ) from exc
            self._owned, self._lock = True, None
        else:
            raise TypeError(f"GuardedSQL needs a DuckDB connection or a path, not {source!r}")

    @property
    def owns_connection(self) -> bool:
        """True when GuardedSQL opened the database itself (from a path)."""
        return self._owned

    def close(self) -> None:
        """Close the connection if GuardedSQL opened it; a user connection is left open."""
        if self._owned:
            self._con.close()

    def __enter__(self) -> GuardedSQL:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- running queries ------------------------------------------------------------

    def run(
        self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None
    ) -> QueryResult:
        """Check and run one read-only statement.

        Args:
            sql: One statement written by an agent or a user.
            timeout_s: Time limit for this call (default: the instance's).
            max_rows: Rows kept for this call (default: the instance's). When more rows
                exist, ``truncated`` is set and ``row_count`` is computed with a
                ``count(*)`` inside the same time limit.

        Returns:
            The kept rows, true row count, truncation flag and duration.

        Raises:
            UnsafeSQLError: The statement was refused before running (nothing ran).
            QueryFailedError: DuckDB rejected or failed the statement.
            QueryTimeoutError: It ran past the time limit and was interrupted.
        """
        checked = self._analyze(sql)
        countable = checked.kind == "SELECT"
        return self._execute(
            checked.sql,
            timeout_s=_valid_timeout(self.timeout_s if timeout_s is None else timeout_s),
            max_rows=_valid_max_rows(self.max_rows if max_rows is None else max_rows),
            countable=countable,
            functions=checked.functions,
            types=checked.types,
            tables=checked.tables,
            calls=checked.calls,
            rewritten=checked.rewritten,
        )

    async def arun(
        self, sql: str, *, timeout_s: float | None = None, max_rows: int | None = None
    ) -> QueryResult:
        """Async form of :meth:`run`, executed in a worker thread (``asyncio.to_thread``)."""
        return await asyncio.to_thread(self.run, sql, timeout_s=timeout_s, max_rows=max_rows)

    # --- schema helpers ---------------------------------------------------------------

    def list_tables(self) -> list[TableInfo]:
        """Tables and views (incl. TEMP tables and registered DataFrames) with row counts.

        A view the SQL tool may not read (its definition would be refused) is listed
        with ``unreadable`` set and no row count.
        """
        infos = self._catalog()
        return [dataclasses.replace(i, row_count=schema.count_rows(self._query, i)) for i in infos]

    def describe(self, table: str, n_samples: int = 3) -> TableInfo:
        """Columns, types, row count and up to ``n_samples`` sample values per column
        (no samples and no count for an ``unreadable`` view).

        Raises:
            QueryFailedError: No such table or view (the message lists the names).
        """
        info = schema.resolve(self._catalog(), table)
        return schema.describe(self._query, info, n_samples)

    def sample(self, table: str, n: int = 5) -> QueryResult:
        """The first ``n`` rows of a table or view (insertion order).

        Raises:
            QueryFailedError: No such table or view.
            UnsafeSQLError: The view's definition would be refused.
        """
        info = schema.resolve(self._catalog(), table)
        if info.unreadable:
            raise UnsafeSQLError(f"SQL refused: {info.unreadable}")
        sql = f"SELECT * FROM {info.ref} LIMIT {int(n)}"
        return self._execute(sql, timeout_s=self.timeout_s, max_rows=max(int(n), 0))

    def schema_summary(self, n_samples: int = 3) -> str:
        """Compact text description of every table and view for an LLM prompt.

        Deterministic for unchanged data (ordered by name, samples from the first rows),
        so it can be prompt-cached. Names, types and samples are escaped (no control or
        line-separator character reaches the prompt), and views the SQL tool may not
        read show neither samples nor counts. Ends with the join graph: declared foreign
        keys, else keys inferred from shared column names and contained values
        (``data/keys.py``).
        """
        tables = [schema.describe(self._query, i, n_samples) for i in self._catalog()]
        return schema.summarize(tables, keys.join_graph(self._query, tables,
                                                              self.relationships).describe())

    def _catalog(self) -> list[TableInfo]:
        """The catalog, each table or view marked ``unreadable`` when the SQL tool may
        not read it (a view's definition or a table's generated column is refused)."""
        infos = schema.catalog(self._query)
        if not infos:
            return infos
        names = {i.ref: TableName(i.database, i.schema, i.table) for i in infos}
        with self._session() as con:
            refusals = self._definitions.refusals(con, list(names.values()),
                                                  macros=lambda: self._macros(con))
        return [dataclasses.replace(i, unreadable=refusals[names[i.ref]])
                if names[i.ref] in refusals else i for i in infos]

    # --- internals ----------------------------------------------------------------------

    def _analyze(self, sql: str) -> CheckedSQL:
        """The static check; names it does not know are retried as the database's macros
        (their definitions are checked before the statement runs)."""
        try:
            return analyze_sql(sql)
        except UnclassifiedFunctionError:
            with self._session() as con:
                names = frozenset(m.name for m in self._macros(con))
            if not names:
                raise
            return analyze_sql(sql, user_functions=names)

    def _macros(self, con: duckdb.DuckDBPyConnection) -> list[Macro]:
        """The database's macros; read once for a file opened read-only (they cannot
        change), on every call for the user's connection."""
        if not self._owned:
            return read_macros(con)
        with self._cursor_lock:
            if self._owned_macros is None:
                self._owned_macros = read_macros(con)
            return self._owned_macros

    def _query(self, sql: str) -> pd.DataFrame:
        """Run SQL we generated ourselves (catalog names quoted), unchecked."""
        return self._execute(sql, timeout_s=self.timeout_s, max_rows=_INTERNAL_MAX_ROWS).frame

    @contextmanager
    def _session(self) -> Iterator[duckdb.DuckDBPyConnection]:
        if self._lock is not None:
            with self._lock:
                yield self._con
            return
        with self._cursor_lock:
            cursor = self._con.cursor()
        try:
            yield cursor
        finally:
            cursor.close()

    def _execute(
        self,
        sql: str,
        *,
        timeout_s: float,
        max_rows: int,
        countable: bool = False,
        functions: frozenset[str] = frozenset(),
        types: frozenset[str] = frozenset(),
        tables: frozenset[TableName] = frozenset(),
        calls: frozenset[FunctionName] = frozenset(),
        rewritten: bool = False,
    ) -> QueryResult:
        with self._session() as con:
            start = time.perf_counter()
            watchdog = Watchdog(con, timeout_s)
            try:
                # the watchdog is disarmed before the settings are restored
                with extensions_off(con, user_connection=not self._owned), watchdog:
                    self._require_functions(con, functions)
                    self._require_types(con, types)
                    if tables or rewritten or any(not c.builtin for c in calls):
                        self._definitions.check(con, tables, calls,
                                                lambda: self._macros(con), rewritten=rewritten)
                    con.execute(sql)
                    frame, truncated = fetch_capped(con, max_rows)
                    row_count: int | None = len(frame)
                    if truncated:  # only then is the true count worth a second query
                        row_count = count_rows(con, _count_sql(sql, calls) if countable
                                               else None)
                if watchdog.fired:  # never return rows an interrupt may have cut short
                    raise duckdb.InterruptException("interrupted by the time limit")
            except (MemoryError, ResultTooLargeError) as exc:
                raise QueryFailedError(
                    f"the result is too large to keep ({exc}); select fewer or shorter "
                    "columns, aggregate, or add LIMIT") from None
            except duckdb.Error as exc:
                if watchdog.fired:
                    raise QueryTimeoutError(
                        f"query ran longer than {timeout_s:g} s and was stopped; narrow it "
                        "with WHERE/LIMIT or raise the timeout"
                    ) from exc
                raise QueryFailedError(with_hint(exc)) from exc
        return QueryResult(sql, frame, row_count, truncated, time.perf_counter() - start)

    def _require_functions(self, con: duckdb.DuckDBPyConnection, names: frozenset[str]) -> None:
        if names <= self._functions:
            return
        rows = con.execute("SELECT DISTINCT function_name FROM system.main.duckdb_functions()")
        self._functions = frozenset(str(r[0]).lower() for r in rows.fetchall())
        missing = sorted(names - self._functions)
        if missing:
            raise QueryFailedError(
                f"unknown function(s): {', '.join(missing)}. Check the name; functions of "
                "extensions that are not loaded are not available (the SQL tool never "
                "installs or loads extensions)."
            )

    def _require_types(self, con: duckdb.DuckDBPyConnection, names: frozenset[str]) -> None:
        if names <= self._types:
            return
        rows = con.execute("SELECT DISTINCT type_name FROM system.main.duckdb_types()")
        self._types = frozenset(str(r[0]).lower() for r in rows.fetchall())
        missing = sorted(names - self._types)
        if missing:
            raise QueryFailedError(
                f"unknown type(s): {', '.join(t.upper() for t in missing)}. Use a built-in "
                "type (VARCHAR, INTEGER, DOUBLE, DATE, TIMESTAMP, ...); types of extensions "
                "that are not loaded are not available (the SQL tool never installs or "
                "loads extensions)."
            )


def _count_sql(sql: str, calls: frozenset[FunctionName]) -> str:
    """``count(*)`` over an already checked SELECT (whose calls were resolved), checked
    again as a whole; DuckDB's own ``count_star``, which no macro can shadow."""
    wrapped = f"SELECT system.main.count_star() FROM (\n{sql}\n)"
    return analyze_sql(wrapped, user_functions=frozenset(c.name for c in calls)).sql


def _valid_timeout(timeout_s: float) -> float:
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s!r}")
    return float(timeout_s)


def _valid_max_rows(max_rows: int) -> int:
    if max_rows < 0:
        raise ValueError(f"max_rows must be >= 0, got {max_rows!r}")
    return int(max_rows)
