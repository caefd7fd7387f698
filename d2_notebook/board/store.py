"""The board file itself: opening, the write transaction every change goes through,
the append-only event log and the overview counts.

Record-specific methods live in mixins (:mod:`.hypotheses`, :mod:`.evidence`,
:mod:`.model_calls`) that :class:`~d2_notebook.board.Board` combines.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import sqlite3
import threading
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

import pandas as pd

from d2_notebook.board import rows
from d2_notebook.board.connect import connect_read_only, connect_writable
from d2_notebook.board.faults import board_fault
from d2_notebook.board.import_checks import check_record
from d2_notebook.board.records import (
    Event,
    HypothesisStatus,
)
from d2_notebook.errors import BoardFormatError, InvalidRecordError, NotFoundError

DEFAULT_MAX_ROWS = 10_000
"""How many rows of a query result a board stores by default (the rest are counted)."""
DEFAULT_MAX_RESULT_BYTES = 64 * 1024 * 1024
"""How many bytes one stored result may take by default (SQLite refuses values over
its length limit, about 1 GB; a board also stays small enough to open and export)."""
_ID_PREFIX = {"hypotheses": "H", "evidence": "E", "investigations": "I", "recheck_runs": "R"}
_BY_ID = frozenset({"links", "verdicts", "model_calls", "dimension_dismissals", "rechecks"})
"""Tables keyed by an integer ``id`` (the others by ``num``, the event log by ``seq``)."""


def now() -> str:
    """The current UTC time as ISO-8601 text, the board's timestamp format."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class BoardStore:
    """The SQLite file of a board and the plumbing every record type shares.

    Open one with :meth:`Board.open`; use it as a context manager or call
    :meth:`close`. All methods are safe to call from several threads at once.
    """

    def __init__(self, conn: sqlite3.Connection, path: str, *, max_rows: int,
                 max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES,
                 read_only: bool = False) -> None:
        """Wrap an open, migrated connection. Use :meth:`open` instead."""
        self._conn = conn
        self._path = path
        self._lock = threading.RLock()
        self._closed = False
        self.read_only = read_only
        self._atomic_depth = 0
        if not read_only and path != ":memory:":
            _OPEN_FOR_WRITING.add(self)
        self.max_rows = max_rows
        self.max_result_bytes = max_result_bytes
        # Decoded evidence results (never change once written), most recent last.
        self._frames: OrderedDict[str, pd.DataFrame] = OrderedDict()

    # --- opening and closing -------------------------------------------------

    @classmethod
    def open(cls, path: str | Path = ":memory:", *, max_rows: int = DEFAULT_MAX_ROWS,
             max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES, read_only: bool = False) -> Self:
        """Create or reopen the board at ``path`` (``":memory:"`` for a throwaway one).

        An older board file is migrated to the current schema on open, unless
        ``read_only``: then an existing board is opened for reading and nothing is
        ever written to the file or beside it — no migration (an older board is
        migrated in memory), no ``-wal``/``-shm`` files — and writes raise
        :class:`BoardReadOnlyError`. See :mod:`d2_notebook.board.connect`.

        Args:
            path: The board file.
            max_rows: Rows of a query result stored at most (the rest are counted).
            max_result_bytes: Bytes one stored result may take at most (rows beyond
                are cut and counted; see :meth:`add_evidence`).
            read_only: Open an existing board without writing to it.

        Raises:
            BoardFormatError: the file is not a board (it is left untouched), or was
                written by a newer version.
            BoardDamagedError: the file is a damaged board.
            BoardError: the file cannot be opened (missing folder or file, no permission).
        """
        if max_rows < 1:
            raise InvalidRecordError(f"max_rows must be at least 1, got {max_rows}")
        if max_result_bytes < 1024:
            raise InvalidRecordError(
                f"max_result_bytes must be at least 1024, got {max_result_bytes}")
        location = str(path)
        conn = connect_read_only(location) if read_only else connect_writable(location)
        return cls(conn, location, max_rows=max_rows, max_result_bytes=max_result_bytes,
                   read_only=read_only)

    @property
    def path(self) -> str:
        """The file the board lives in (``":memory:"`` for an in-memory board)."""
        return self._path

    def checkpoint(self) -> None:
        """Copy the write-ahead log into the board file and empty the log, so the
        ``.d2board`` file alone holds the whole board (a run calls this when it ends).

        Best effort: while another process reads the board, the part of the log it
        still needs stays in the log (SQLite moves it later). Does nothing for a
        read-only or in-memory board.
        """
        if self.read_only or self._path == ":memory:":
            return
        with self._lock:
            if self._closed:
                return
            try:
                self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error as exc:
                raise board_fault(self._path, exc) from exc

    def close(self) -> None:
        """Checkpoint (see :meth:`checkpoint`) and close the file; closing twice is
        harmless. The board must not be used afterwards. A board opened for writing
        and never closed is closed when the interpreter exits."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            _OPEN_FOR_WRITING.discard(self)
            try:
                if not self.read_only and self._path != ":memory:":
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            except sqlite3.Error:
                pass  # a full disk or a reader still in the log: the log stays, nothing is lost
            finally:
                self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Board({self._path!r})"

    # --- the plumbing every write goes through -------------------------------

    @contextlib.contextmanager
    def atomic(self) -> Iterator[None]:
        """Make every write inside the block one transaction: all land, or none does.

        Each board write (``add_evidence``, ``link``, ``add_verdict`` ...) is its own
        transaction; inside ``with board.atomic():`` they join one, so a tool that
        records evidence and then links it never leaves the evidence without its link.
        A write inside that fails (a rule it breaks) undoes only itself; an exception
        leaving the block undoes everything in it. Blocks nest (the inner one joins the
        outer). The block holds the board's lock: do not ``await`` inside it.

        Raises:
            BoardError: the transaction could not start or commit (locked, full,
                read-only); nothing in the block was written.
        """
        with self._lock:
            if self._atomic_depth:
                self._atomic_depth += 1
                try:
                    yield
                finally:
                    self._atomic_depth -= 1
                return
            self._begin()
            self._atomic_depth = 1
            try:
                yield
            except BaseException:
                self._rollback()
                raise
            finally:
                self._atomic_depth = 0
            try:
                self._conn.execute("COMMIT")
            except sqlite3.OperationalError as exc:
                self._rollback()
                raise board_fault(self._path, exc) from exc

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction: committed when the block ends, rolled back when it
        raises. SQLite's own faults (disk full, locked, read-only, damaged) come out as
        the typed :class:`BoardError` that names the fix, never hidden behind a failed
        rollback (SQLite rolls back by itself after some of them). Inside
        :meth:`atomic` the write is a savepoint of that transaction."""
        with self._lock:
            if self._atomic_depth:
                yield from self._write_in_atomic()
                return
            self._begin()
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException as exc:
                self._rollback()
                if type(exc) in (sqlite3.OperationalError, sqlite3.DatabaseError):
                    raise board_fault(self._path, exc) from exc
                raise

    def _write_in_atomic(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("SAVEPOINT board_write")
        try:
            yield self._conn
        except BaseException as exc:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK TO board_write")
                self._conn.execute("RELEASE board_write")
            if type(exc) in (sqlite3.OperationalError, sqlite3.DatabaseError):
                raise board_fault(self._path, exc) from exc
            raise
        self._conn.execute("RELEASE board_write")

    def _begin(self) -> None:
        """Open a write transaction (a read-only board refuses; SQLite's faults come out
        as the :class:`BoardError` that names the fix)."""
        self._refuse_if_read_only()
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise board_fault(self._path, exc) from exc

    def _refuse_if_read_only(self) -> None:
        if self.read_only:
            raise board_fault(self._path, sqlite3.OperationalError(
                "attempt to write a readonly database"), read_only=True)

    def _rollback(self) -> None:
        """Roll back the open transaction, if SQLite has not already done so."""
        if self._conn.in_transaction:
            # The transaction is gone either way; the caller raises the original fault.
            with contextlib.suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._conn.execute(sql, tuple(params)).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such" in str(exc):
                    raise  # a programming error, not a fault of the file
                raise board_fault(self._path, exc) from exc
            except sqlite3.DatabaseError as exc:
                if type(exc) is not sqlite3.DatabaseError:
                    raise
                raise board_fault(self._path, exc) from exc

    def _select(self, table: str, order: str, **equal: Any) -> list[sqlite3.Row]:
        """Rows of ``table`` in ``order`` whose columns equal the given values (a value
        of None means no filter on that column)."""
        where = [(column, value) for column, value in equal.items() if value is not None]
        clause = " AND ".join(f"{column} = ?" for column, _ in where) or "1 = 1"
        return self._query(f"SELECT * FROM {table} WHERE {clause} ORDER BY {order}",
                           [value for _, value in where])

    def _one(self, sql: str, params: Iterable[Any], what: str) -> sqlite3.Row:
        found = self._query(sql, params)
        if not found:
            raise NotFoundError(f"{what} is not on this board ({self._path})")
        return found[0]

    @staticmethod
    def _next_id(conn: sqlite3.Connection, table: str) -> tuple[int, str]:
        num = conn.execute(f"SELECT COALESCE(MAX(num), 0) + 1 FROM {table}").fetchone()[0]
        return num, f"{_ID_PREFIX[table]}{num}"

    @staticmethod
    def _append_event(
        conn: sqlite3.Connection,
        kind: str,
        payload: Mapping[str, Any],
        *,
        actor: str,
        investigation_id: str | None,
        time: str,
    ) -> int:
        cursor = conn.execute(
            "INSERT INTO events (time, actor, kind, payload, investigation_id) "
            "VALUES (?, ?, ?, ?, ?)",
            (time, actor, kind, rows.to_json_text(dict(payload)), investigation_id),
        )
        return int(cursor.lastrowid or 0)

    def _require(self, conn: sqlite3.Connection, table: str, record_id: str) -> None:
        if conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (record_id,)).fetchone() is None:
            kind = {"hypotheses": "hypothesis", "evidence": "evidence"}.get(table, "record")
            raise NotFoundError(f"{kind} {record_id!r} is not on this board")


    # --- the event log -------------------------------------------------------

    def log_event(
        self,
        kind: str,
        payload: Mapping[str, Any] | None = None,
        *,
        actor: str,
        investigation_id: str | None = None,
    ) -> Event:
        """Append an event that changes no record (a round started, a collector ran)."""
        stamp = now()
        with self._write() as conn:
            seq = self._append_event(conn, kind, payload or {}, actor=actor,
                                     investigation_id=investigation_id, time=stamp)
        return Event(seq=seq, time=stamp, actor=actor, kind=kind, payload=dict(payload or {}),
                     investigation_id=investigation_id)

    def events(
        self, since: int = 0, *, kinds: Iterable[str] | None = None, limit: int | None = None
    ) -> list[Event]:
        """Events with ``seq > since`` in order; the whole history for ``since=0``."""
        sql, params = "SELECT * FROM events WHERE seq > ?", [since]
        if kinds is not None:
            wanted = list(kinds)
            sql += f" AND kind IN ({', '.join('?' * len(wanted))})"
            params.extend(wanted)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [rows.event(r) for r in self._query(sql, params)]

    def last_seq(self) -> int:
        """The sequence number of the newest event (0 for an empty board): a cheap
        way for a live view to learn whether anything changed."""
        return int(self._query("SELECT COALESCE(MAX(seq), 0) FROM events")[0][0])

    async def follow(
        self, since: int = 0, *, interval: float = 0.25, stop: asyncio.Event | None = None
    ) -> AsyncIterator[list[Event]]:
        """Yield each new batch of events as it appears, polling every ``interval`` s.

        Ends when ``stop`` is set (after yielding what arrived before it). Used by the
        notebook widget and the CLI progress view.
        """
        seq = since
        while True:
            stopping = stop is not None and stop.is_set()
            if self.last_seq() > seq:
                batch = self.events(since=seq)
                seq = batch[-1].seq
                yield batch
            if stopping:
                return
            await asyncio.sleep(interval)

    # --- overview ------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Numbers for a header line: hypotheses by status, evidence, links, calls..."""
        counts: dict[str, int] = {status.value: 0 for status in HypothesisStatus}
        for row in self._query("SELECT status, count(*) AS n FROM hypotheses GROUP BY status"):
            counts[row["status"]] = row["n"]
        for table in ("hypotheses", "evidence", "links", "verdicts", "model_calls", "events"):
            counts[table] = int(self._query(f"SELECT count(*) FROM {table}")[0][0])
        counts["model_calls"] -= int(self._query(  # refused requests were never sent
            "SELECT count(*) FROM model_calls WHERE status = 'refused'")[0][0])
        counts["redundant_evidence"] = int(
            self._query("SELECT count(*) FROM evidence WHERE redundant = 1")[0][0]
        )
        return counts


    def _raw_rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of a table as a dict, in key order (for export)."""
        return self._snapshot_rows([table])[table]

    def _snapshot_rows(self, tables: Iterable[str]) -> dict[str, list[dict[str, Any]]]:
        """Every row of each table, all read in ONE read transaction (for export).

        The lock keeps this process's writers out, and the transaction gives a single
        snapshot of the file against other connections and processes (WAL), so a link
        is never exported without the evidence and hypothesis it points to.
        """
        out: dict[str, list[dict[str, Any]]] = {}
        with self._lock:
            try:
                self._conn.execute("BEGIN")
                try:
                    for table in tables:
                        key = {"events": "seq", "evidence_tool_calls": "rowid",
                               "evidence_chart_requests": "rowid",
                               "recheck_verdicts": "rowid", "rejudges": "rowid",
                               "report_versions": "rowid", "follow_ups": "rowid",
                               "data_fingerprints": "rowid",
                               "evidence_reuses": "rowid"}.get(
                            table, "id" if table in _BY_ID else "num")
                        found = self._conn.execute(f"SELECT * FROM {table} ORDER BY {key}")
                        out[table] = [dict(r) for r in found.fetchall()]
                finally:
                    self._rollback()
            except sqlite3.OperationalError as exc:
                raise board_fault(self._path, exc) from exc
            except sqlite3.DatabaseError as exc:
                if type(exc) is not sqlite3.DatabaseError:
                    raise
                raise board_fault(self._path, exc) from exc
        return out

    def _insert_raw(self, tables: Mapping[str, list[dict[str, Any]]]) -> None:
        """Insert exported rows verbatim, every table in ONE transaction, no events added.

        Raises:
            BoardFormatError: a record has unknown columns, refers to a missing record
                or breaks a constraint; nothing was inserted.
        """
        with self._write() as conn:
            for table, records in tables.items():
                columns = {r[1]: (str(r[2]).upper(), bool(r[3]) and r[4] is None)
                           for r in conn.execute(f"PRAGMA table_info({table})")}
                for record in records:
                    names = list(record)
                    unknown = sorted(set(names) - set(columns))
                    if unknown:
                        raise BoardFormatError(
                            f"{_describe(table, record)} has unknown field(s) "
                            f"{', '.join(map(repr, unknown))}"
                        )
                    check_record(table, record, columns)
                    try:
                        conn.execute(
                            f"INSERT INTO {table} ({', '.join(names)}) "
                            f"VALUES ({', '.join('?' * len(names))})",
                            [record[n] for n in names],
                        )
                    except sqlite3.IntegrityError as exc:
                        problem = _integrity_problem(conn, table, record, exc)
                        raise BoardFormatError(problem) from exc
                    except (sqlite3.DatabaseError, sqlite3.InterfaceError, OverflowError) as exc:
                        raise BoardFormatError(f"{_describe(table, record)}: {exc}") from exc


_OPEN_FOR_WRITING: weakref.WeakSet[BoardStore] = weakref.WeakSet()
"""Boards opened for writing and not yet closed: closed (checkpointed) at exit, so a
kernel that shuts down with a board still open leaves one self-contained file."""


@atexit.register
def _close_boards_left_open() -> None:
    for board in list(_OPEN_FOR_WRITING):
        with contextlib.suppress(Exception):  # the interpreter is exiting; nothing to tell
            board.close()


def _describe(table: str, record: Mapping[str, Any]) -> str:
    key = record.get("id", record.get("seq", "?"))
    return f"{table} record {key!r}"


def _integrity_problem(
    conn: sqlite3.Connection, table: str, record: Mapping[str, Any], exc: sqlite3.Error
) -> str:
    """Name the missing record a failed insert points to, if that is the problem."""
    for ref in conn.execute(f"PRAGMA foreign_key_list({table})").fetchall():
        ref_table, column, ref_column = ref[2], ref[3], ref[4] or "id"
        value = record.get(column)
        if value is None:
            continue
        found = conn.execute(f"SELECT 1 FROM {ref_table} WHERE {ref_column} = ?", (value,))
        if found.fetchone() is None:
            return (
                f"{_describe(table, record)} refers to missing {ref_table} {value!r} "
                f"(field {column}): {exc}"
            )
    return f"{_describe(table, record)} breaks a constraint: {exc}"


def parse_enum(enum_type: type, value: Any, what: str) -> Any:
    try:
        return enum_type(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum_type)
        raise InvalidRecordError(f"unknown {what} {value!r}; use one of: {allowed}") from None


def check_confidence(confidence: float | None) -> None:
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidRecordError(f"confidence must be between 0 and 1, got {confidence}")


def investigation_of(conn: sqlite3.Connection, table: str, record_id: str) -> str | None:
    sql = f"SELECT investigation_id FROM {table} WHERE id = ?"
    row = conn.execute(sql, (record_id,)).fetchone()
    return None if row is None else row[0]
