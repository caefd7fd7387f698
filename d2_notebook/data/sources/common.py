"""What the non-DuckDB sources share: argument checks, frames shaped like DuckDB's,
the deadline timer, the schema reading built on a catalog (:class:`CatalogSource`), and
the schema summary text.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import replace
from decimal import Decimal
from typing import Any, Self

import pandas as pd

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.execution import Watchdog
from d2_notebook.data.fencing import escape_text
from d2_notebook.data.results import QueryResult
from d2_notebook.data.schema import (
    ColumnInfo,
    TableInfo,
    profile_note,
    profiled,
    quote_ident,
    shown_samples,
    with_samples_from,
)
from d2_notebook.errors import QueryFailedError, QueryTimeoutError, UnsafeSQLError

__all__ = ["MAX_RESULT_BYTES", "ByteBudget", "CatalogSource", "Deadline", "frame_from_rows",
           "render_summary", "resolve_table", "valid_max_bytes", "valid_max_rows",
           "valid_timeout"]

SAMPLE_ROWS = 100
MAX_RESULT_BYTES = 64 * 1024 * 1024
"""Default cap on the bytes of values in one result (64 MiB): far above what an evidence
table needs, far below what would strain the notebook's memory."""


def valid_timeout(timeout_s: float) -> float:
    """``timeout_s`` as a float, or ValueError naming the rule (> 0)."""
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0 seconds, got {timeout_s!r}")
    return float(timeout_s)


def valid_max_rows(max_rows: int) -> int:
    """``max_rows`` as an int, or ValueError naming the rule (>= 0)."""
    if max_rows < 0:
        raise ValueError(f"max_rows must be >= 0, got {max_rows!r}")
    return int(max_rows)


def valid_max_bytes(max_bytes: int) -> int:
    """``max_bytes`` as an int, or ValueError naming the rule (> 0)."""
    if not max_bytes > 0:
        raise ValueError(f"max_bytes must be > 0, got {max_bytes!r}")
    return int(max_bytes)


def value_bytes(value: object) -> int:
    """About how many bytes ``value`` holds as result data (text and binary by length)."""
    if value is None:
        return 1
    if isinstance(value, str | bytes | bytearray | memoryview):
        return len(value)
    if isinstance(value, int | float | Decimal | bool | dt.date | dt.time | dt.timedelta):
        return 16
    if isinstance(value, dict):
        return sum(value_bytes(k) + value_bytes(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(value_bytes(v) for v in value)
    return len(str(value))


class ByteBudget:
    """A running count of a result's bytes that fails as soon as it passes ``max_bytes``.

    Raises (from :meth:`add`):
        QueryFailedError: The result holds more than ``max_bytes``; the message names the
            cap and the fix.
    """

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0

    def add(self, row: Sequence[Any]) -> None:
        """Count one row."""
        self.used += sum(value_bytes(v) for v in row)
        if self.used > self.max_bytes:
            raise QueryFailedError(result_too_large(self.max_bytes))


def result_too_large(max_bytes: int) -> str:
    """The message of a result past the byte cap."""
    return (f"the result is larger than the {max_bytes / 2**20:g} MiB cap on one result "
            f"(max_bytes={max_bytes}) and was not kept; select fewer or narrower columns, "
            "aggregate, or add LIMIT")


class _Stopper:
    """Adapts a stop callback to the ``interrupt()`` that :class:`Watchdog` calls."""

    def __init__(self, stop: Callable[[], None]) -> None:
        self.interrupt = stop


class Deadline:
    """Call ``stop`` once if the ``with`` block still runs after ``timeout_s`` seconds.

    Built on the data layer's :class:`~d2_notebook.data.execution.Watchdog` (one shared
    deadline thread, no thread per query); ``fired`` tells whether it stopped the block.
    """

    def __init__(self, timeout_s: float, stop: Callable[[], None]) -> None:
        self._watchdog = Watchdog(_Stopper(stop), timeout_s)  # type: ignore[arg-type]

    @property
    def fired(self) -> bool:
        """True when the time limit passed and ``stop`` was called."""
        return self._watchdog.fired

    def __enter__(self) -> Deadline:
        self._watchdog.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._watchdog.__exit__(*exc_info)


def frame_from_rows(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> pd.DataFrame:
    """A DataFrame typed the way DuckDB's would be: decimals as floats, dates and
    timestamps as ``datetime64``, so previews, stored evidence and the policies'
    readings are the same whatever the source."""
    frame = pd.DataFrame.from_records(list(rows), columns=list(columns))
    return normalize_frame(frame)


def normalize_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """Convert object columns that hold only decimals or only dates (and nulls)."""
    for position in range(frame.shape[1]):
        column = frame.iloc[:, position]
        if column.dtype != object:
            continue
        values = column.dropna()
        if values.empty:
            continue
        if all(isinstance(v, Decimal) for v in values):
            frame.isetitem(position, column.astype("float64"))
        elif all(isinstance(v, dt.date) for v in values):
            has_zone = any(getattr(v, "tzinfo", None) is not None for v in values)
            if not has_zone:
                frame.isetitem(position, pd.to_datetime(column))
    return frame


def with_samples(columns: list[ColumnInfo], head: pd.DataFrame | None,
                 n_samples: int) -> tuple[ColumnInfo, ...]:
    """``columns`` with sample values taken from the first rows ``head`` (their profile
    counts kept)."""
    if head is None or n_samples <= 0:
        return tuple(columns)
    out = []
    for position, column in enumerate(columns):
        values = head.iloc[:, position] if position < head.shape[1] else pd.Series([])
        out.append(with_samples_from(column, values, n_samples))
    return tuple(out)


def resolve_table(infos: list[TableInfo], table: str) -> TableInfo:
    """Find a table by its SQL name or bare name (case-insensitive).

    Raises:
        QueryFailedError: No such table; the message lists the available names.
    """
    wanted = table.strip().lower()
    for info in infos:
        if wanted in (info.name.lower(), info.table.lower(), info.ref.lower(),
                      f"{info.schema}.{info.table}".lower()):
            return info
    names = ", ".join(i.name for i in infos) or "(none)"
    raise QueryFailedError(f"no table or view named {table!r}; available: {names}")


def refusal_reason(error: UnsafeSQLError) -> str:
    """The reason part of a guard refusal (``SQL refused: <reason>. The SQL tool ...``)."""
    return str(error).removeprefix("SQL refused: ").split(". The SQL tool runs")[0]


def render_summary(dialect: Dialect, tables: list[TableInfo], keys: Sequence[object]) -> str:
    """Described tables (and declared foreign keys) as stable text for a prompt, names,
    types and samples escaped (:func:`~d2_notebook.data.fencing.escape_text`: a value
    holding a line break cannot forge a line), as on DuckDB; a column
    with notable NULL or zero shares ends with its
    :func:`~d2_notebook.data.schema.profile_note`, as on DuckDB."""
    lines = [f"{dialect.title} database: {len(tables)} tables/views. "
             "Columns: name TYPE e.g. samples. Write SQL in this dialect."]
    for info in tables:
        rows = "? rows" if info.row_count is None else f"{info.row_count} rows"
        if info.unreadable:
            rows = "not readable by the SQL tool: its definition is refused"
        lines.append(f"{escape_text(info.name)} ({info.kind}, {rows})")
        for col in info.columns:
            samples = " | ".join(escape_text(s) for s in shown_samples(col))
            example = f" e.g. {samples}" if samples else ""
            lines.append(f"  {escape_text(quote_ident(col.name))} {escape_text(col.type)}"
                         f"{example}{profile_note(col, info.row_count)}")
    if keys:
        lines.append("Foreign keys:")
        lines.extend(f"  {key}" for key in keys)
    return "\n".join(lines)


class CatalogSource:
    """Query defaults and schema reading shared by sources that read their own catalog.

    A subclass sets ``timeout_s`` and ``max_rows`` (validated defaults), implements
    ``run`` (checked SQL), ``close``, ``_catalog`` (every table and view with its
    columns, no counts or samples, sorted), ``_quote`` (a column name quoted for the
    dialect) and ``_execute`` (run SQL as given, under a time limit, keeping at most
    ``max_rows`` rows); this class builds listing, description (with the column profile
    of :func:`~d2_notebook.data.schema.profiled`), sampling and the async form on them.
    """

    timeout_s: float
    max_rows: int

    def run(self, sql: str, *, timeout_s: float | None = None,
            max_rows: int | None = None) -> QueryResult:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def _catalog(self) -> list[TableInfo]:
        raise NotImplementedError

    def _execute(self, sql: str, *, timeout_s: float, max_rows: int) -> QueryResult:
        raise NotImplementedError

    def _quote(self, name: str) -> str:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _limits(self, timeout_s: float | None, max_rows: int | None) -> tuple[float, int]:
        """A call's time limit and row cap: the given ones checked, else the defaults.

        Raises:
            ValueError: ``timeout_s`` is not > 0 or ``max_rows`` is < 0.
        """
        limit = valid_timeout(self.timeout_s if timeout_s is None else timeout_s)
        return limit, valid_max_rows(self.max_rows if max_rows is None else max_rows)

    async def arun(self, sql: str, *, timeout_s: float | None = None,
                   max_rows: int | None = None) -> QueryResult:
        """Async form of :meth:`run`, executed in a worker thread."""
        return await asyncio.to_thread(self.run, sql, timeout_s=timeout_s, max_rows=max_rows)

    def list_tables(self) -> list[TableInfo]:
        """Every table and view of the catalog, with row counts (None if counting failed
        or ran past the time limit)."""
        return [self._counted(i) for i in self._catalog()]

    def describe(self, table: str, n_samples: int = 3) -> TableInfo:
        """Columns, types, row count and sample values of one table or view.

        Raises:
            QueryFailedError: No such table (the message lists the names).
        """
        return self._describe(resolve_table(self._catalog(), table), n_samples)

    def sample(self, table: str, n: int = 5) -> QueryResult:
        """The first ``n`` rows of a table or view.

        Raises:
            QueryFailedError: No such table (the message lists the names).
        """
        info = resolve_table(self._catalog(), table)
        return self.run(f"SELECT * FROM {info.name} LIMIT {int(n)}", max_rows=max(int(n), 0))

    def _counted(self, info: TableInfo) -> TableInfo:
        """``info`` with its row count; a view the guard refuses is marked unreadable
        (with the reason) and never run, so its rows reach no prompt."""
        try:
            count: int | None = int(self._query(f"SELECT count(*) FROM {info.name}").iat[0, 0])
        except UnsafeSQLError as exc:
            return replace(info, row_count=None, unreadable=refusal_reason(exc))
        except (QueryFailedError, QueryTimeoutError):
            count = None
        return replace(info, row_count=count)

    def _describe(self, info: TableInfo, n_samples: int) -> TableInfo:
        """``info`` with its row count, column profile and samples. The profile query runs
        through the guard like the count it replaces; when it is refused, fails or times
        out, the table is counted alone (a refused view is marked unreadable there) and
        shown without a profile."""
        counted = profiled(self._query, info, info.name, quote=self._quote)
        if counted is None:
            counted = self._counted(info)
        head = None
        if n_samples > 0 and not counted.unreadable:
            head = self._query(f"SELECT * FROM {info.name} LIMIT {SAMPLE_ROWS}")
        return replace(counted, columns=with_samples(list(counted.columns), head, n_samples))

    def _query(self, sql: str) -> pd.DataFrame:
        """Run SQL we generated ourselves (quoted catalog names) through the guard: the
        database's views are held to the same rules as an agent's query."""
        return self.run(sql, max_rows=1_000_000).frame
