"""What the non-DuckDB sources share: argument checks, frames shaped like DuckDB's,
the deadline timer, and the schema summary text.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import pandas as pd

from d2_notebook.data.dialects import Dialect
from d2_notebook.data.execution import Watchdog
from d2_notebook.data.schema import ColumnInfo, TableInfo, quote_ident
from d2_notebook.errors import QueryFailedError

__all__ = ["Deadline", "frame_from_rows", "render_summary", "resolve_table", "samples_of",
           "valid_max_rows", "valid_timeout"]

SAMPLE_ROWS = 100
_SAMPLE_CHARS = 30


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


def samples_of(series: pd.Series, n: int) -> tuple[str, ...]:
    """Up to ``n`` distinct non-null values as short text, in row order."""
    seen: list[str] = []
    for value in series.dropna().tolist():
        text = str(value)
        text = text if len(text) <= _SAMPLE_CHARS else text[: _SAMPLE_CHARS - 1] + "…"
        if text not in seen:
            seen.append(text)
        if len(seen) >= n:
            break
    return tuple(seen)


def with_samples(columns: list[ColumnInfo], head: pd.DataFrame | None,
                 n_samples: int) -> tuple[ColumnInfo, ...]:
    """``columns`` with sample values taken from the first rows ``head``."""
    if head is None or n_samples <= 0:
        return tuple(columns)
    out = []
    for position, column in enumerate(columns):
        values = head.iloc[:, position] if position < head.shape[1] else pd.Series([])
        out.append(ColumnInfo(column.name, column.type, column.nullable,
                              samples_of(values, n_samples)))
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


def render_summary(dialect: Dialect, tables: list[TableInfo], keys: Sequence[object]) -> str:
    """Described tables (and declared foreign keys) as stable text for a prompt."""
    lines = [f"{dialect.title} database: {len(tables)} tables/views. "
             "Columns: name TYPE e.g. samples. Write SQL in this dialect."]
    for info in tables:
        rows = "? rows" if info.row_count is None else f"{info.row_count} rows"
        lines.append(f"{info.name} ({info.kind}, {rows})")
        for col in info.columns:
            example = f" e.g. {' | '.join(col.samples)}" if col.samples else ""
            lines.append(f"  {quote_ident(col.name)} {col.type}{example}")
    if keys:
        lines.append("Foreign keys:")
        lines.extend(f"  {key}" for key in keys)
    return "\n".join(lines)
