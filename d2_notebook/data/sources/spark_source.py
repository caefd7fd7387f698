"""SparkSource: guarded, read-only Spark SQL over a ``pyspark.sql.SparkSession``.

Local (``local[2]``) and cluster sessions use the same API. Defence in depth, per query:

1. :func:`~d2_notebook.data.sqlglot_guard.check_statement` parses the statement as
   Spark SQL and refuses anything but one read-only query or ``DESCRIBE table``:
   no DDL, ``CACHE``, ``SET``, ``ADD JAR``, ``INSERT OVERWRITE DIRECTORY``,
   ``TRANSFORM ... USING``, ``reflect``/``java_method``, or file sources such as
   ``csv.`/path```; what runs is the SQL it regenerated. The session's catalog and
   configuration are therefore never changed.
2. The query's jobs run under a job group of their own, cancelled at the time limit
   and again every 0.25 s until the query returns (jobs a still-planning query submits
   later are cancelled too; on Spark Connect, an operation tag and ``interruptTag``),
   so a runaway query frees the cluster instead of running on after the caller gave up.
3. At most ``max_rows + 1`` rows are collected (``LIMIT`` on the DataFrame), and only
   after Spark measured them under ``max_bytes`` (the limited rows are cached for that
   and released after): a larger result is an error naming the cap, never a driver-sized
   collect. A truncated result is counted under the same job group and time limit.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from d2_notebook.data import sqlglot_guard
from d2_notebook.data.dialects import Dialect
from d2_notebook.data.keys import Relationship, parse_relationships
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import ColumnInfo, TableInfo, quote_ident
from d2_notebook.data.sources.base import ForeignKey, SourceInfo, SourceKind
from d2_notebook.data.sources.common import (
    MAX_RESULT_BYTES,
    CatalogSource,
    Deadline,
    normalize_frame,
    render_summary,
    result_too_large,
    valid_max_bytes,
    valid_max_rows,
    valid_timeout,
)
from d2_notebook.data.sqlglot_guard import StatementKind
from d2_notebook.errors import QueryFailedError, QueryTimeoutError

__all__ = ["SparkSource"]

_RECANCEL_S = 0.25


class SparkSource(CatalogSource):
    """Read-only, single-statement Spark SQL over a session the user owns.

    Args:
        spark: A ``pyspark.sql.SparkSession`` (classic or Spark Connect); it is never
            stopped by this class and its catalog and configuration are never changed.
        timeout_s: Default per-query time limit in seconds (> 0).
        max_rows: Default number of rows kept per result (>= 0).
        max_bytes: Most bytes of values (as text) one result may hold (> 0); a larger
            result is refused with :class:`~d2_notebook.errors.QueryFailedError`.
        relationships: Join edges to declare or veto where the inferred join graph is
            wrong (:class:`~d2_notebook.data.keys.Relationship`).
    """

    def __init__(self, spark: Any, *, timeout_s: float = 30.0, max_rows: int = 10_000,
                 max_bytes: int = MAX_RESULT_BYTES,
                 relationships: Sequence[str | Relationship] = ()) -> None:
        self.relationships = parse_relationships(list(relationships))
        self.timeout_s = valid_timeout(timeout_s)
        self.max_rows = valid_max_rows(max_rows)
        self.max_bytes = valid_max_bytes(max_bytes)
        self._spark = spark
        self._context = _spark_context(spark)
        master = self._context.master if self._context is not None else "spark-connect"
        self._info = SourceInfo(SourceKind.SPARK, Dialect.SPARK, master)
        self._groups: set[str] = set()
        self._groups_lock = threading.Lock()

    @property
    def dialect(self) -> Dialect:
        """Always ``Dialect.SPARK``."""
        return Dialect.SPARK

    @property
    def info(self) -> SourceInfo:
        """``spark`` with the session's master (``local[2]``, ``spark://...``)."""
        return self._info

    def close(self) -> None:
        """Nothing to release: the session is the user's."""

    # --- running queries --------------------------------------------------------------

    def run(self, sql: str, *, timeout_s: float | None = None,
            max_rows: int | None = None) -> QueryResult:
        """Check and run one read-only statement (see the module docstring).

        Raises:
            UnsafeSQLError: Refused before running (nothing ran).
            QueryFailedError: Spark rejected or failed it.
            QueryTimeoutError: It ran past the time limit and its jobs were cancelled.
        """
        limit, keep = self._limits(timeout_s, max_rows)
        checked = sqlglot_guard.check_statement(sql, Dialect.SPARK, timeout_s=limit)
        return self._execute(checked.sql, timeout_s=limit, max_rows=keep,
                             countable=checked.kind is StatementKind.QUERY)

    def cancel(self) -> None:
        """Cancel the jobs of every query running on this source now."""
        with self._groups_lock:
            groups = list(self._groups)
        for group in groups:
            self._stop(group)

    # --- schema -------------------------------------------------------------------------

    def schema_summary(self, n_samples: int = 3) -> str:
        """Every table and view of the catalog with columns and samples."""
        return render_summary(Dialect.SPARK,
                              [self._describe(i, n_samples) for i in self._catalog()], [])

    def foreign_keys(self) -> list[ForeignKey]:
        """Always empty: Spark's session catalog declares no foreign keys."""
        return []

    # --- internals ----------------------------------------------------------------------

    def _catalog(self) -> list[TableInfo]:
        """Tables of the current database and temp views, by name."""
        infos = []
        for table in self._spark.catalog.listTables():
            name = _spark_ident(table.name)
            if not table.isTemporary and table.namespace:
                name = ".".join(_spark_ident(p) for p in [*table.namespace, table.name])
            schema = self._spark.table(name).schema
            columns = tuple(ColumnInfo(f.name, f.dataType.simpleString().upper(), f.nullable)
                            for f in schema.fields)
            kind = "view" if table.isTemporary or table.tableType == "VIEW" else "table"
            infos.append(TableInfo(name, kind, None, columns, table.catalog or "",
                                   ".".join(table.namespace or []), table.name))
        return sorted(infos, key=lambda i: i.name)

    def _quote(self, name: str) -> str:
        return _spark_ident(name)

    def _execute(self, sql: str, *, timeout_s: float, max_rows: int,
                 countable: bool = False) -> QueryResult:
        group = f"d2-{uuid.uuid4().hex}"
        start = time.perf_counter()
        with self._groups_lock:
            self._groups.add(group)
        finished = threading.Event()
        deadline = Deadline(timeout_s, lambda: self._keep_stopping(group, finished))
        try:
            with self._tagged(group), deadline:
                frame, truncated, row_count = self._collect(sql, max_rows, countable)
            if deadline.fired:  # never return rows a cancellation may have cut short
                raise QueryTimeoutError(_timeout_message(timeout_s))
        except QueryTimeoutError:
            raise
        except Exception as exc:
            if not _is_spark_error(exc):
                raise
            if deadline.fired:
                raise QueryTimeoutError(_timeout_message(timeout_s)) from exc
            raise QueryFailedError(_with_hint(exc)) from exc
        finally:
            finished.set()
            with self._groups_lock:
                self._groups.discard(group)
        return QueryResult(sql, frame, row_count, truncated, time.perf_counter() - start)

    def _collect(self, sql: str, max_rows: int,
                 countable: bool) -> tuple[pd.DataFrame, bool, int | None]:
        frame_all = self._spark.sql(sql)
        limited = frame_all.limit(max_rows + 1).persist()
        try:
            if _result_bytes(limited) > self.max_bytes:
                raise QueryFailedError(result_too_large(self.max_bytes))
            frame = _local_times(_to_pandas(limited), self._session_time_zone())
        finally:
            limited.unpersist()
        truncated = len(frame) > max_rows
        row_count: int | None = len(frame)
        if truncated:
            frame = frame.iloc[:max_rows].reset_index(drop=True)
            row_count = int(frame_all.count()) if countable else None
        return normalize_frame(frame), truncated, row_count

    def _session_time_zone(self) -> str:
        try:
            return str(self._spark.conf.get("spark.sql.session.timeZone"))
        except Exception:
            return "UTC"

    def _tagged(self, group: str) -> _JobGroup:
        return _JobGroup(self._spark, self._context, group)

    def _keep_stopping(self, group: str, finished: threading.Event) -> None:
        """Cancel the group now and again until the query returns: cancelling reaches
        only jobs already submitted, and a query still being planned submits its jobs
        later (planning and code generation take seconds on a busy driver)."""

        def loop() -> None:
            while not finished.is_set():
                self._stop(group)
                finished.wait(_RECANCEL_S)

        threading.Thread(target=loop, name="d2-spark-cancel", daemon=True).start()

    def _stop(self, group: str) -> None:
        try:
            if self._context is not None:
                self._context.cancelJobGroup(group)
            else:
                self._spark.interruptTag(group)
        except Exception:
            pass


class _JobGroup:
    """Run the ``with`` block's Spark jobs under job group (or operation tag) ``group``."""

    def __init__(self, spark: Any, context: Any, group: str) -> None:
        self._spark, self._context, self._group = spark, context, group

    def __enter__(self) -> _JobGroup:
        if self._context is not None:
            self._context.setJobGroup(self._group, "d2_notebook guarded query",
                                      interruptOnCancel=True)
        else:
            self._spark.addTag(self._group)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._context is not None:
            self._context.setLocalProperty("spark.jobGroup.id", None)
            self._context.setLocalProperty("spark.job.description", None)
        else:
            self._spark.removeTag(self._group)


def _spark_context(spark: Any) -> Any:
    """The session's SparkContext, or None on Spark Connect (which has none)."""
    try:
        return spark.sparkContext
    except Exception:
        return None


def _to_pandas(frame: Any) -> pd.DataFrame:
    to_arrow: Callable[[], Any] | None = getattr(frame, "toArrow", None)
    if callable(to_arrow):
        return to_arrow().to_pandas()
    return frame.toPandas()


def _local_times(frame: pd.DataFrame, time_zone: str) -> pd.DataFrame:
    """Spark's ``TIMESTAMP`` (an instant, zone-aware in Arrow) as the session's wall-clock
    time without zone, as Spark shows it and as DuckDB's ``TIMESTAMP`` reads."""
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        if isinstance(column.dtype, pd.DatetimeTZDtype):
            frame.isetitem(position, column.dt.tz_convert(time_zone).dt.tz_localize(None))
    return frame


def _result_bytes(frame: Any) -> int:
    """The bytes of ``frame``'s values written as text, summed by Spark (not collected)."""
    from pyspark.sql import functions as F

    width = len(frame.columns)
    if width == 0:
        return 0
    renamed = frame.toDF(*[f"c{i}" for i in range(width)])  # duplicate names stay apart
    sizes = [F.coalesce(F.octet_length(F.col(f"c{i}").cast("string")), F.lit(0))
             for i in range(width)]
    total = sizes[0]
    for size in sizes[1:]:
        total = total + size
    value = renamed.agg(F.sum(total.cast("long"))).collect()[0][0]
    return int(value or 0)


def _spark_ident(name: str) -> str:
    plain = quote_ident(name)
    return plain if plain == name else "`" + name.replace("`", "``") + "`"


def _is_spark_error(exc: Exception) -> bool:
    module = type(exc).__module__
    return module.startswith(("pyspark", "py4j"))


def _timeout_message(timeout_s: float) -> str:
    return (f"query ran longer than {timeout_s:g} s and its Spark jobs were cancelled; "
            "narrow it with WHERE/LIMIT or raise the timeout")


def _with_hint(exc: Exception) -> str:
    text = str(exc).strip().split("\n\nJVM stacktrace:")[0]
    if "TABLE_OR_VIEW_NOT_FOUND" in text:
        hint = "list_tables() shows the tables and views"
    elif "UNRESOLVED_COLUMN" in text:
        hint = "describe_table shows the columns"
    elif "PARSE_SYNTAX_ERROR" in text:
        hint = "check the syntax (Spark SQL dialect)"
    else:
        hint = "fix the statement and retry; describe_table shows columns and types"
    return f"{text[:2000]}\nHint: {hint}."
