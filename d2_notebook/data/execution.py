"""Low-level execution helpers for GuardedSQL: timeout watchdog, capped fetch, hints."""

from __future__ import annotations

import math
import threading

import duckdb
import pandas as pd

__all__ = ["Watchdog", "count_rows", "fetch_capped", "with_hint"]

_VECTOR_ROWS = 2048


class Watchdog:
    """Interrupt ``con`` if the ``with`` block is still running after ``timeout_s``."""

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self.fired = False
        self._con = con
        self._done = False
        self._state = threading.Lock()
        self._timer = threading.Timer(timeout_s, self._fire)
        self._timer.daemon = True

    def _fire(self) -> None:
        with self._state:
            if not self._done:
                self.fired = True
                self._con.interrupt()

    def __enter__(self) -> Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._state:
            self._done = True
        self._timer.cancel()


def fetch_capped(con: duckdb.DuckDBPyConnection, max_rows: int) -> tuple[pd.DataFrame, bool]:
    """Fetch at most ``max_rows + 1`` rows of the open result as a DataFrame."""
    vectors = max(1, math.ceil((max_rows + 1) / _VECTOR_ROWS))
    chunks: list[pd.DataFrame] = []
    fetched = 0
    while fetched <= max_rows:
        chunk = con.fetch_df_chunk(vectors)
        if len(chunk) == 0 and chunks:
            break
        chunks.append(chunk)
        fetched += len(chunk)
        if len(chunk) == 0:
            break
    frame = chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)
    truncated = len(frame) > max_rows
    if truncated:
        frame = frame.iloc[:max_rows].reset_index(drop=True)
    return frame, truncated


def count_rows(con: duckdb.DuckDBPyConnection, count_sql: str | None) -> int | None:
    if count_sql is None:
        return None
    try:
        return int(con.execute(count_sql).fetchall()[0][0])
    except duckdb.Error:
        return None


def with_hint(exc: duckdb.Error) -> str:
    text = str(exc)
    if "Table with name" in text or ("does not exist" in text and "Table" in text):
        hint = "use SHOW TABLES (or list_tables()) to see the tables"
    elif "column" in text.lower() and "Binder" in text:
        hint = "use DESCRIBE <table> to see its columns"
    elif "Parser" in text:
        hint = "check the syntax (DuckDB SQL dialect)"
    elif "Permission" in text or "external access" in text.lower():
        hint = "files and the network are not reachable; query the database's tables"
    elif "open result" in text:
        hint = "the connection is busy with another unfetched result; fetch or close it"
    else:
        hint = "fix the statement and retry; DESCRIBE <table> shows columns and types"
    return f"{text}\nHint: {hint}."
