"""Low-level execution helpers for GuardedSQL: timeout watchdog, capped fetch, extension
auto-loading off, error text without the values it quotes."""

from __future__ import annotations

import heapq
import itertools
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import duckdb
import pandas as pd

from d2_notebook.data.keyword_hint import keyword_hint

__all__ = ["RESULT_BYTE_LIMIT", "ResultTooLargeError", "Watchdog", "count_rows",
           "extensions_off", "fetch_capped", "hide_quoted", "with_hint"]

_VECTOR_ROWS = 2048
RESULT_BYTE_LIMIT = 100_000_000
"""Bytes a kept result may take in memory (as a DataFrame); larger results fail cleanly."""
_EXTENSION_SETTINGS = ("autoinstall_known_extensions", "autoload_known_extensions",
                       "python_enable_replacements")
"""Global settings switched off while a guarded statement runs on the user's connection:
extensions that install or load themselves, and Python replacement scans (a name that is
no table would read a Python variable of a calling frame, the user's notebook's with
``python_scan_all_frames``)."""
# Errors raised before anything runs (parsing, binding names): their quoted parts are
# names and literals the statement itself wrote. Every other error may quote values the
# query computed.
_COMPILE_ERRORS = (duckdb.ParserException, duckdb.BinderException, duckdb.CatalogException)
# A macro's parameter defaults, folded to constants when it was created, are listed in
# binder errors ("Candidate macros: m(x, y := '<value>')"): hidden from the first ":="
# to the line's closing parenthesis, quoted parts whole (a struct or list default holds
# commas, parentheses and newlines in strings; every later parameter has a default too).
_MACRO_DEFAULT = re.compile(r"(?m):=(?:'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|[^'\"\n])*?(?=\)?$)")
_QUOTE = re.compile(r"['\"]")


class ResultTooLargeError(Exception):
    """A result passed :data:`RESULT_BYTE_LIMIT` while it was fetched."""


class _Deadlines:
    """One daemon thread that runs callbacks at their deadlines (shared by every query).

    A thread per query cost about 0.7 ms to start and stop, a third of the guard's
    overhead on short queries; one long-lived thread with a heap costs microseconds.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._pending: set[int] = set()  # scheduled, neither run nor cancelled
        self._ids = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, delay_s: float, callback: Callable[[], None]) -> int:
        """Run ``callback`` in ``delay_s`` seconds unless cancelled; returns a handle."""
        with self._wake:
            handle = next(self._ids)
            heapq.heappush(self._heap, (time.monotonic() + delay_s, handle, callback))
            self._pending.add(handle)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="d2-sql-deadlines",
                                                daemon=True)
                self._thread.start()
            self._wake.notify()
        return handle

    def cancel(self, handle: int) -> None:
        """Forget a scheduled callback (no-op if it already ran)."""
        with self._wake:
            self._pending.discard(handle)

    def _run(self) -> None:
        while True:
            with self._wake:
                while self._heap and self._heap[0][1] not in self._pending:
                    heapq.heappop(self._heap)  # cancelled: drop it
                if not self._heap:
                    self._wake.wait()
                    continue
                deadline, handle, callback = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._wake.wait(wait)
                    continue
                heapq.heappop(self._heap)
                self._pending.discard(handle)
            callback()


_DEADLINES = _Deadlines()


class Watchdog:
    """Interrupt ``con`` if the ``with`` block is still running after ``timeout_s``."""

    def __init__(self, con: duckdb.DuckDBPyConnection, timeout_s: float) -> None:
        self.fired = False
        self._con = con
        self._timeout_s = timeout_s
        self._done = False
        self._state = threading.Lock()
        self._handle: int | None = None

    def _fire(self) -> None:
        with self._state:
            if not self._done:
                self.fired = True
                self._con.interrupt()

    def __enter__(self) -> Watchdog:
        self._handle = _DEADLINES.schedule(self._timeout_s, self._fire)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with self._state:
            self._done = True
        if self._handle is not None:
            _DEADLINES.cancel(self._handle)


@contextmanager
def extensions_off(con: duckdb.DuckDBPyConnection, *, user_connection: bool) -> Iterator[None]:
    """Switch extension auto-install and auto-load, and Python replacement scans, off
    while the block runs (:data:`_EXTENSION_SETTINGS`).

    The settings are global in DuckDB, so on the user's connection they are read, set
    off, and restored to the user's values afterwards (also after an error). A
    connection GuardedSQL opened itself has them off from the start.
    """
    if not user_connection:
        yield
        return
    reads = ", ".join(f"system.main.current_setting('{n}')" for n in _EXTENSION_SETTINGS)
    before = dict(zip(_EXTENSION_SETTINGS, con.execute(f"SELECT {reads}").fetchall()[0],
                      strict=True))
    changed = [name for name, value in before.items() if value]
    for name in changed:
        con.execute(f"SET {name} = false")
    try:
        yield
    finally:
        for name in changed:
            try:
                con.execute(f"SET {name} = true")
            except duckdb.Error:  # e.g. an interrupt that landed on the SET: once more
                con.execute(f"SET {name} = true")


def fetch_capped(con: duckdb.DuckDBPyConnection, max_rows: int,
                 max_bytes: int = RESULT_BYTE_LIMIT) -> tuple[pd.DataFrame, bool]:
    """Fetch at most ``max_rows + 1`` rows of the open result as a DataFrame.

    Raises:
        ResultTooLargeError: The rows fetched so far take more than ``max_bytes``.
    """
    vectors = max(1, min(math.ceil((max_rows + 1) / _VECTOR_ROWS), 4))
    chunks: list[pd.DataFrame] = []
    fetched = size = 0
    while fetched <= max_rows:
        chunk = con.fetch_df_chunk(vectors)
        if len(chunk) == 0 and chunks:
            break
        chunks.append(chunk)
        fetched += len(chunk)
        size += int(chunk.memory_usage(index=False, deep=True).sum())
        if size > max_bytes:
            raise ResultTooLargeError(f"more than {max_bytes:,} bytes")
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


def hide_quoted(text: str) -> str:
    """``text`` with each line cut at its first single or double quote, the rest shown as
    ``'…'`` / ``"…"``.

    A quoted value may itself hold quotes (``"x"SECRET"``), so no pairing of quotes can
    tell where it ends: everything from the first quote to the end of the line goes.
    """
    lines = []
    for line in text.split("\n"):
        quote = _QUOTE.search(line)
        lines.append(line if quote is None else
                     line[:quote.start()] + quote.group(0) + "…" + quote.group(0))
    return "\n".join(lines)


def with_hint(exc: duckdb.Error) -> str:
    """DuckDB's message with a hint; of a run-time error only the first line, with its
    quoted parts replaced by ``'…'``.

    A run-time error (a failed cast, bad JSON, an overflow) quotes the value that failed,
    which a hostile query could have computed from anything it reached; parse, binder and
    catalog errors quote only what the statement wrote and the catalog's names, and keep
    them (the agent needs "Did you mean ..." to fix a name) — except the values of macro
    parameter defaults a binder error lists, which are always hidden.
    """
    text = _MACRO_DEFAULT.sub(":= …", str(exc))
    if not isinstance(exc, _COMPILE_ERRORS):
        # Only the first line: later lines may echo the failing value unquoted
        # (strptime prints the input string on a line of its own).
        text = hide_quoted(text.split("\n", 1)[0])
    if "Table with name" in text or ("does not exist" in text and "Table" in text):
        hint = "use SHOW TABLES (or list_tables()) to see the tables"
    elif "mix aggregates with non-aggregated columns" in text:
        hint = ("GROUP BY ALL could not sort the select list into groups and aggregates (a "
                "window over an aggregate, such as sum(count(*)) OVER (PARTITION BY x), "
                "does this): name the GROUP BY columns explicitly")
    elif "column" in text.lower() and "Binder" in text:
        hint = "use DESCRIBE <table> to see its columns"
    elif "Parser" in text:
        hint = keyword_hint(text) or "check the syntax (DuckDB SQL dialect)"
    elif "Permission" in text or "external access" in text.lower():
        hint = "files and the network are not reachable; query the database's tables"
    elif "open result" in text:
        hint = "the connection is busy with another unfetched result; fetch or close it"
    else:
        hint = "fix the statement and retry; DESCRIBE <table> shows columns and types"
    return f"{text}\nHint: {hint}."
