"""The Data Investigation Board: the team's shared, persistent state (PAPER §3.2).

A board is one SQLite file in WAL mode. Every write is one short ``BEGIN IMMEDIATE``
transaction that changes a record *and* appends an event describing the change, so the
event log is the complete, ordered history (``board.events(since=seq)``). Nothing is
ever deleted: abandoning a hypothesis or marking evidence redundant is a new state plus
an event.

Concurrency: one :class:`Board` may be shared by many threads and asyncio tasks (its
methods are short and serialised by a lock); other processes may open the same file to
read it, or write to it, at the same time (SQLite's WAL and ``BEGIN IMMEDIATE``).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from d2_notebook.board import rows
from d2_notebook.board.frames import decode_frame, encode_frame, result_hash
from d2_notebook.board.migrations import migrate
from d2_notebook.board.records import (
    VERDICT_STATUSES,
    Event,
    Evidence,
    Hypothesis,
    HypothesisStatus,
    Investigation,
    InvestigationState,
    Link,
    ModelCall,
    Stance,
    Verdict,
)
from d2_notebook.errors import BoardError, InvalidRecordError, NotFoundError

DEFAULT_MAX_ROWS = 10_000
"""How many rows of a query result a board stores by default (the rest are counted)."""

_ID_PREFIX = {"hypotheses": "H", "evidence": "E", "investigations": "I"}


def now() -> str:
    """The current UTC time as ISO-8601 text, the board's timestamp format."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Board:
    """A Data Investigation Board stored in one SQLite file.

    Open one with :meth:`Board.open`; use it as a context manager or call
    :meth:`close`. All methods are safe to call from several threads at once.
    """

    def __init__(self, conn: sqlite3.Connection, path: str, *, max_rows: int) -> None:
        """Wrap an open, migrated connection. Use :meth:`open` instead."""
        self._conn = conn
        self._path = path
        self._lock = threading.RLock()
        self.max_rows = max_rows

    # --- opening and closing -------------------------------------------------

    @classmethod
    def open(cls, path: str | Path = ":memory:", *, max_rows: int = DEFAULT_MAX_ROWS) -> Board:
        """Create or reopen the board at ``path`` (``":memory:"`` for a throwaway one).

        An older board file is migrated to the current schema on open.

        Raises:
            BoardFormatError: the file is not a board, or was written by a newer version.
            BoardError: the file cannot be opened (missing folder, no permission).
        """
        if max_rows < 1:
            raise InvalidRecordError(f"max_rows must be at least 1, got {max_rows}")
        location = str(path)
        if location != ":memory:":
            parent = Path(location).expanduser().resolve().parent
            if not parent.is_dir():
                raise BoardError(
                    f"cannot create board {location!r}: folder {str(parent)!r} does not exist"
                )
        try:
            conn = sqlite3.connect(
                location, isolation_level=None, check_same_thread=False, timeout=30.0
            )
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA busy_timeout = 30000")
            if location != ":memory:":
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
            migrate(conn)
        except sqlite3.DatabaseError as exc:
            raise BoardError(
                f"cannot open board {location!r}: {exc}; pass the path of a d2 board "
                "file or of a new file"
            ) from exc
        return cls(conn, location, max_rows=max_rows)

    @property
    def path(self) -> str:
        """The file the board lives in (``":memory:"`` for an in-memory board)."""
        return self._path

    def close(self) -> None:
        """Close the file. The board must not be used afterwards."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Board:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Board({self._path!r})"

    # --- the plumbing every write goes through -------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _query(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._conn.execute(sql, tuple(params)).fetchall()

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

    # --- investigations ------------------------------------------------------

    def start_investigation(
        self, question: str, settings: Mapping[str, Any] | None = None, *, actor: str = "user"
    ) -> Investigation:
        """Record a new investigation of ``question`` in state ``running``."""
        if not question.strip():
            raise InvalidRecordError("an investigation needs a question; pass a non-empty one")
        stamp = now()
        with self._write() as conn:
            num, inv_id = self._next_id(conn, "investigations")
            conn.execute(
                "INSERT INTO investigations (num, id, question, state, settings, created_at,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (num, inv_id, question, "running", rows.to_json_text(dict(settings or {})),
                 stamp, stamp),
            )
            self._append_event(
                conn, "investigation.started",
                {"id": inv_id, "question": question, "settings": dict(settings or {})},
                actor=actor, investigation_id=inv_id, time=stamp,
            )
        return self.get_investigation(inv_id)

    def get_investigation(self, investigation_id: str) -> Investigation:
        """The investigation with this id. Raises NotFoundError."""
        row = self._one("SELECT * FROM investigations WHERE id = ?", (investigation_id,),
                        f"investigation {investigation_id!r}")
        return rows.investigation(row)

    def list_investigations(self) -> list[Investigation]:
        """Every investigation on the board, oldest first."""
        found = self._query("SELECT * FROM investigations ORDER BY num")
        return [rows.investigation(r) for r in found]

    def set_investigation_state(
        self,
        investigation_id: str,
        state: InvestigationState | str,
        *,
        actor: str,
        error: str | None = None,
        report: str | None = None,
    ) -> Investigation:
        """Move an investigation to ``state``; optionally store its error or report."""
        state = _enum(InvestigationState, state, "investigation state")
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            conn.execute(
                "UPDATE investigations SET state = ?, error = COALESCE(?, error),"
                " report = COALESCE(?, report), updated_at = ? WHERE id = ?",
                (state.value, error, report, stamp, investigation_id),
            )
            payload: dict[str, Any] = {"id": investigation_id, "state": state.value}
            if error is not None:
                payload["error"] = error
            if report is not None:
                payload["report_chars"] = len(report)
            self._append_event(conn, "investigation.state", payload, actor=actor,
                               investigation_id=investigation_id, time=stamp)
        return self.get_investigation(investigation_id)

    # --- hypotheses ----------------------------------------------------------

    def add_hypothesis(
        self,
        statement: str,
        *,
        rationale: str = "",
        parent_id: str | None = None,
        author_role: str = "user",
        author: str = "user",
        round: int = 0,
        investigation_id: str | None = None,
        confidence: float | None = None,
    ) -> Hypothesis:
        """Add a hypothesis in status ``proposed``; returns it with its new id (``H<n>``).

        Raises:
            InvalidRecordError: empty statement or a confidence outside 0–1.
            NotFoundError: ``parent_id`` or ``investigation_id`` is not on the board.
        """
        if not statement.strip():
            raise InvalidRecordError("a hypothesis needs a statement; pass a non-empty one")
        _check_confidence(confidence)
        stamp = now()
        with self._write() as conn:
            if parent_id is not None:
                self._require(conn, "hypotheses", parent_id)
            if investigation_id is not None:
                self._require(conn, "investigations", investigation_id)
            num, hyp_id = self._next_id(conn, "hypotheses")
            conn.execute(
                "INSERT INTO hypotheses (num, id, statement, status, confidence, rationale,"
                " parent_id, author_role, author, round, investigation_id, created_at,"
                " updated_at) VALUES (?, ?, ?, 'proposed', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (num, hyp_id, statement, confidence, rationale, parent_id, author_role, author,
                 round, investigation_id, stamp, stamp),
            )
            self._append_event(
                conn, "hypothesis.added",
                {"id": hyp_id, "statement": statement, "parent_id": parent_id,
                 "rationale": rationale, "round": round, "author_role": author_role},
                actor=author, investigation_id=investigation_id, time=stamp,
            )
        return self.get_hypothesis(hyp_id)

    def get_hypothesis(self, hypothesis_id: str) -> Hypothesis:
        """The hypothesis with this id. Raises NotFoundError."""
        row = self._one("SELECT * FROM hypotheses WHERE id = ?", (hypothesis_id,),
                        f"hypothesis {hypothesis_id!r}")
        return rows.hypothesis(row)

    def list_hypotheses(
        self,
        *,
        status: HypothesisStatus | str | Iterable[HypothesisStatus | str] | None = None,
        investigation_id: str | None = None,
    ) -> list[Hypothesis]:
        """Hypotheses in id order, optionally only those with ``status`` (one or several)."""
        sql, params = "SELECT * FROM hypotheses WHERE 1 = 1", []
        if status is not None:
            wanted = [status] if isinstance(status, str) else list(status)
            values = [_enum(HypothesisStatus, s, "hypothesis status").value for s in wanted]
            sql += f" AND status IN ({', '.join('?' * len(values))})"
            params.extend(values)
        if investigation_id is not None:
            sql += " AND investigation_id = ?"
            params.append(investigation_id)
        return [rows.hypothesis(r) for r in self._query(sql + " ORDER BY num", params)]

    def set_status(
        self,
        hypothesis_id: str,
        status: HypothesisStatus | str,
        *,
        actor: str,
        reason: str | None = None,
        confidence: float | None = None,
    ) -> Hypothesis:
        """Change a hypothesis' status (and confidence), recording why."""
        status = _enum(HypothesisStatus, status, "hypothesis status")
        _check_confidence(confidence)
        stamp = now()
        with self._write() as conn:
            self._require(conn, "hypotheses", hypothesis_id)
            conn.execute(
                "UPDATE hypotheses SET status = ?, status_reason = ?,"
                " confidence = COALESCE(?, confidence), updated_at = ? WHERE id = ?",
                (status.value, reason, confidence, stamp, hypothesis_id),
            )
            self._append_event(
                conn, "hypothesis.status",
                {"id": hypothesis_id, "status": status.value, "reason": reason,
                 "confidence": confidence},
                actor=actor, investigation_id=_investigation_of(conn, "hypotheses", hypothesis_id),
                time=stamp,
            )
        return self.get_hypothesis(hypothesis_id)

    def abandon(self, hypothesis_id: str, reason: str, *, actor: str) -> Hypothesis:
        """Abandon a hypothesis (it stays on the board, with the reason)."""
        if not reason.strip():
            raise InvalidRecordError("say why the hypothesis is abandoned: pass a reason")
        return self.set_status(
            hypothesis_id, HypothesisStatus.ABANDONED, actor=actor, reason=reason
        )

    # --- evidence ------------------------------------------------------------

    def add_evidence(
        self,
        sql: str,
        result: pd.DataFrame,
        *,
        description: str,
        row_count: int | None = None,
        truncated: bool = False,
        author_role: str = "user",
        author: str = "user",
        duration_s: float | None = None,
        round: int = 0,
        investigation_id: str | None = None,
    ) -> Evidence:
        """Record the result of ``sql`` as evidence ``E<n>``.

        Args:
            sql: the query exactly as it ran.
            result: the rows it returned (already capped by the caller or not).
            description: one sentence on what the query shows.
            row_count: the query's true row count when ``result`` holds fewer rows;
                defaults to ``len(result)``.
            truncated: True when ``result`` is already a prefix of the real result.

        Rows beyond the board's ``max_rows`` are not stored: the flag ``truncated`` is
        set and ``row_count`` keeps the true count.
        """
        if not sql.strip():
            raise InvalidRecordError("evidence needs the SQL that produced it")
        if not isinstance(result, pd.DataFrame):
            raise InvalidRecordError(
                f"evidence result must be a pandas DataFrame, got {type(result).__name__}"
            )
        true_count, stored, blob, columns, digest = self._encode_result(result, row_count)
        truncated = truncated or len(result) > self.max_rows or true_count > len(stored)
        stamp = now()
        columns_text = rows.to_json_text([c.to_dict() for c in columns])
        with self._write() as conn:
            if investigation_id is not None:
                self._require(conn, "investigations", investigation_id)
            num, ev_id = self._next_id(conn, "evidence")
            conn.execute(
                "INSERT INTO evidence (num, id, sql, description, columns, result, row_count,"
                " stored_rows, truncated, result_hash, author_role, author, duration_s, round,"
                " investigation_id, created_at, updated_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (num, ev_id, sql, description, columns_text, blob, true_count, len(stored),
                 int(truncated), digest, author_role, author, duration_s, round,
                 investigation_id, stamp, stamp),
            )
            self._append_event(
                conn, "evidence.added",
                {"id": ev_id, "sql": sql, "description": description, "row_count": true_count,
                 "truncated": truncated, "result_hash": digest, "author_role": author_role},
                actor=author, investigation_id=investigation_id, time=stamp,
            )
        return self.get_evidence(ev_id)

    def _encode_result(self, result: pd.DataFrame, row_count: int | None) -> tuple[
            int, pd.DataFrame, bytes, tuple[Any, ...], str]:
        true_count = max(len(result), row_count or 0)
        stored = result.iloc[: self.max_rows].reset_index(drop=True)
        blob, columns = encode_frame(stored)
        return true_count, stored, blob, columns, result_hash(blob, true_count)

    def find_evidence(
        self,
        sql: str,
        result: pd.DataFrame,
        *,
        row_count: int | None = None,
        investigation_id: str | None = None,
    ) -> Evidence | None:
        """Evidence already recorded for the same query (whitespace-insensitive) with the
        same stored result, or None. Lets a redone step reuse evidence, not duplicate it."""
        wanted = " ".join(sql.split())
        found = self._query("SELECT id, sql, result_hash FROM evidence"
                            " WHERE investigation_id IS ?", (investigation_id,))
        same_sql = [r for r in found if " ".join(r["sql"].split()) == wanted]
        if not same_sql:  # the common case: no result to encode and hash
            return None
        digest = self._encode_result(result, row_count)[4]
        match = next((r["id"] for r in same_sql if r["result_hash"] == digest), None)
        return None if match is None else self.get_evidence(match)

    def get_evidence(self, evidence_id: str) -> Evidence:
        """The evidence record with this id (without its rows). Raises NotFoundError."""
        row = self._one("SELECT * FROM evidence WHERE id = ?", (evidence_id,),
                        f"evidence {evidence_id!r}")
        return rows.evidence(row)

    def list_evidence(
        self, *, include_redundant: bool = True, investigation_id: str | None = None
    ) -> list[Evidence]:
        """Evidence in id order; ``include_redundant=False`` gives the audit view."""
        sql, params = "SELECT * FROM evidence WHERE 1 = 1", []
        if not include_redundant:
            sql += " AND redundant = 0"
        if investigation_id is not None:
            sql += " AND investigation_id = ?"
            params.append(investigation_id)
        return [rows.evidence(r) for r in self._query(sql + " ORDER BY num", params)]

    def evidence_frame(self, evidence_id: str) -> pd.DataFrame:
        """The stored result of evidence ``evidence_id`` as a DataFrame equal to the one
        recorded (same columns, dtypes and values; at most ``max_rows`` rows)."""
        row = self._one("SELECT columns, result FROM evidence WHERE id = ?", (evidence_id,),
                        f"evidence {evidence_id!r}")
        return decode_frame(row["result"], rows.columns_from_text(row["columns"]))

    def mark_redundant(self, evidence_id: str, reason: str, *, actor: str) -> Evidence:
        """Mark evidence as redundant for the audit graph (it is kept, not deleted)."""
        stamp = now()
        with self._write() as conn:
            self._require(conn, "evidence", evidence_id)
            conn.execute(
                "UPDATE evidence SET redundant = 1, redundant_reason = ?, updated_at = ?"
                " WHERE id = ?",
                (reason, stamp, evidence_id),
            )
            self._append_event(
                conn, "evidence.redundant", {"id": evidence_id, "reason": reason}, actor=actor,
                investigation_id=_investigation_of(conn, "evidence", evidence_id), time=stamp,
            )
        return self.get_evidence(evidence_id)

    # --- links ---------------------------------------------------------------

    def link(
        self,
        evidence_id: str,
        hypothesis_id: str,
        stance: Stance | str,
        rationale: str = "",
        *,
        actor: str,
    ) -> Link:
        """Record that evidence supports or contradicts a hypothesis.

        Linking the same pair again with the same stance returns the existing link;
        with the opposite stance it is refused (one piece of evidence has one reading
        per hypothesis).
        """
        stance = _enum(Stance, stance, "stance")
        stamp = now()
        with self._write() as conn:
            self._require(conn, "evidence", evidence_id)
            self._require(conn, "hypotheses", hypothesis_id)
            existing = conn.execute(
                "SELECT * FROM links WHERE evidence_id = ? AND hypothesis_id = ?",
                (evidence_id, hypothesis_id),
            ).fetchone()
            if existing is not None:
                if existing["stance"] != stance.value:
                    raise InvalidRecordError(
                        f"{evidence_id} is already linked to {hypothesis_id} as "
                        f"{existing['stance']}; record new evidence instead of flipping it"
                    )
                return rows.link(existing)
            cursor = conn.execute(
                "INSERT INTO links (evidence_id, hypothesis_id, stance, rationale, author,"
                " created_at) VALUES (?, ?, ?, ?, ?, ?)",
                (evidence_id, hypothesis_id, stance.value, rationale, actor, stamp),
            )
            link_id = int(cursor.lastrowid or 0)
            self._append_event(
                conn, "link.added",
                {"id": link_id, "evidence_id": evidence_id, "hypothesis_id": hypothesis_id,
                 "stance": stance.value, "rationale": rationale},
                actor=actor, investigation_id=_investigation_of(conn, "hypotheses", hypothesis_id),
                time=stamp,
            )
            created = conn.execute("SELECT * FROM links WHERE id = ?", (link_id,)).fetchone()
            return rows.link(created)

    def list_links(
        self, *, hypothesis_id: str | None = None, evidence_id: str | None = None
    ) -> list[Link]:
        """Links in the order they were made, optionally for one hypothesis or evidence."""
        sql, params = "SELECT * FROM links WHERE 1 = 1", []
        if hypothesis_id is not None:
            sql += " AND hypothesis_id = ?"
            params.append(hypothesis_id)
        if evidence_id is not None:
            sql += " AND evidence_id = ?"
            params.append(evidence_id)
        return [rows.link(r) for r in self._query(sql + " ORDER BY id", params)]

    # --- verdicts ------------------------------------------------------------

    def add_verdict(
        self,
        hypothesis_id: str,
        status: HypothesisStatus | str,
        confidence: float,
        rationale: str,
        evidence_ids: Iterable[str],
        *,
        author: str,
        round: int = 0,
    ) -> Verdict:
        """Record a verdict and move the hypothesis to its status and confidence.

        Raises:
            InvalidRecordError: status is not a verdict, confidence outside 0–1.
            NotFoundError: the hypothesis or a cited evidence id is not on the board.
        """
        status = _enum(HypothesisStatus, status, "verdict")
        if status not in VERDICT_STATUSES:
            raise InvalidRecordError(
                f"a verdict is supported, contradicted or inconclusive, not {status.value!r}"
            )
        _check_confidence(confidence)
        cited = list(dict.fromkeys(evidence_ids))
        stamp = now()
        with self._write() as conn:
            self._require(conn, "hypotheses", hypothesis_id)
            for ev_id in cited:
                self._require(conn, "evidence", ev_id)
            inv_id = _investigation_of(conn, "hypotheses", hypothesis_id)
            cursor = conn.execute(
                "INSERT INTO verdicts (hypothesis_id, status, confidence, rationale, evidence_ids,"
                " author, round, investigation_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (hypothesis_id, status.value, confidence, rationale, rows.to_json_text(cited),
                 author, round, inv_id, stamp),
            )
            conn.execute(
                "UPDATE hypotheses SET status = ?, confidence = ?, status_reason = ?,"
                " updated_at = ? WHERE id = ?",
                (status.value, confidence, rationale, stamp, hypothesis_id),
            )
            verdict_id = int(cursor.lastrowid or 0)
            self._append_event(
                conn, "verdict.added",
                {"id": verdict_id, "hypothesis_id": hypothesis_id, "status": status.value,
                 "confidence": confidence, "rationale": rationale, "evidence_ids": cited},
                actor=author, investigation_id=inv_id, time=stamp,
            )
            return rows.verdict(
                conn.execute("SELECT * FROM verdicts WHERE id = ?", (verdict_id,)).fetchone()
            )

    def list_verdicts(self, *, hypothesis_id: str | None = None) -> list[Verdict]:
        """Verdicts in the order they were given (a hypothesis may have several)."""
        sql, params = "SELECT * FROM verdicts", []
        if hypothesis_id is not None:
            sql += " WHERE hypothesis_id = ?"
            params.append(hypothesis_id)
        return [rows.verdict(r) for r in self._query(sql + " ORDER BY id", params)]

    def latest_verdict(self, hypothesis_id: str) -> Verdict | None:
        """The most recent verdict on a hypothesis, or None."""
        verdicts = self.list_verdicts(hypothesis_id=hypothesis_id)
        return verdicts[-1] if verdicts else None

    # --- model calls ---------------------------------------------------------

    def record_model_call(
        self,
        *,
        role: str,
        agent: str,
        model: str,
        request: Mapping[str, Any],
        response: Mapping[str, Any] | None,
        error: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        investigation_id: str | None = None,
    ) -> ModelCall:
        """Append one model request and its response (or error) to the audit trail."""
        stamp = now()
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO model_calls (investigation_id, role, agent, model, request, response,"
                " error, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " cost_usd, latency_s, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (investigation_id, role, agent, model, rows.to_json_text(dict(request)),
                 None if response is None else rows.to_json_text(dict(response)), error,
                 input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
                 latency_s, stamp),
            )
            call_id = int(cursor.lastrowid or 0)
            self._append_event(
                conn, "model_call.recorded",
                {"id": call_id, "role": role, "agent": agent, "model": model, "error": error,
                 "input_tokens": input_tokens, "output_tokens": output_tokens,
                 "cost_usd": cost_usd, "latency_s": latency_s},
                actor=agent, investigation_id=investigation_id, time=stamp,
            )
            return rows.model_call(
                conn.execute("SELECT * FROM model_calls WHERE id = ?", (call_id,)).fetchone()
            )

    def list_model_calls(
        self, *, investigation_id: str | None = None, agent: str | None = None
    ) -> list[ModelCall]:
        """Model calls in the order they were made, optionally for one agent."""
        sql, params = "SELECT * FROM model_calls WHERE 1 = 1", []
        if investigation_id is not None:
            sql += " AND investigation_id = ?"
            params.append(investigation_id)
        if agent is not None:
            sql += " AND agent = ?"
            params.append(agent)
        return [rows.model_call(r) for r in self._query(sql + " ORDER BY id", params)]

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
        counts["redundant_evidence"] = int(
            self._query("SELECT count(*) FROM evidence WHERE redundant = 1")[0][0]
        )
        return counts

    def show(self) -> Any:
        """The board as a notebook view: the live graph widget plus a static HTML
        fallback (see :func:`d2_notebook.notebook.show`)."""
        from d2_notebook.notebook import show

        return show(self)

    # --- export and import (implemented in d2_notebook.board.export) ----------

    def to_json(self, *, indent: int | None = None) -> str:
        """Everything on the board, events included, as one JSON document."""
        from d2_notebook.board.export import board_to_json

        return board_to_json(self, indent=indent)

    @classmethod
    def from_json(
        cls, document: str | Mapping[str, Any], path: str | Path = ":memory:"
    ) -> Board:
        """Rebuild a board exported with :meth:`to_json` at ``path`` (a new file)."""
        from d2_notebook.board.export import board_from_json

        return board_from_json(cls, document, path)

    def _raw_rows(self, table: str) -> list[dict[str, Any]]:
        """Every row of a table as a dict, in key order (for export)."""
        key = {"events": "seq"}.get(table, "id" if table in {"links", "verdicts",
                                                              "model_calls"} else "num")
        return [dict(r) for r in self._query(f"SELECT * FROM {table} ORDER BY {key}")]

    def _insert_raw(self, table: str, records: list[dict[str, Any]]) -> None:
        """Insert exported rows verbatim, in one transaction, with no events added."""
        if not records:
            return
        with self._write() as conn:
            for record in records:
                names = list(record)
                conn.execute(
                    f"INSERT INTO {table} ({', '.join(names)}) "
                    f"VALUES ({', '.join('?' * len(names))})",
                    [record[n] for n in names],
                )


def _enum(enum_type: type, value: Any, what: str) -> Any:
    try:
        return enum_type(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum_type)
        raise InvalidRecordError(f"unknown {what} {value!r}; use one of: {allowed}") from None


def _check_confidence(confidence: float | None) -> None:
    if confidence is not None and not 0.0 <= confidence <= 1.0:
        raise InvalidRecordError(f"confidence must be between 0 and 1, got {confidence}")


def _investigation_of(conn: sqlite3.Connection, table: str, record_id: str) -> str | None:
    sql = f"SELECT investigation_id FROM {table} WHERE id = ?"
    row = conn.execute(sql, (record_id,)).fetchone()
    return None if row is None else row[0]
