"""Evidence (query results) and the links that tie it to hypotheses."""

from __future__ import annotations

import sqlite3
from typing import Any

import pandas as pd

from d2_notebook.board import rows
from d2_notebook.board.frames import encode_frame, result_hash
from d2_notebook.board.records import (
    Evidence,
    Link,
    Stance,
)
from d2_notebook.board.store import BoardStore, investigation_of, now, parse_enum
from d2_notebook.errors import InvalidRecordError

FRAME_CACHE_SIZE = 64
"""How many decoded evidence results a board keeps in memory."""


class EvidenceRecords(BoardStore):
    """Board methods for evidence and links."""

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

        Rows beyond the board's ``max_rows`` are not stored, nor rows that would make
        the stored result larger than ``max_result_bytes`` (or than the SQLite file's
        length limit): the flag ``truncated`` is set, ``row_count`` keeps the true count
        and ``stored_rows`` says how many rows were kept (possibly none, when one row
        alone is too large).
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
        limit = self._result_byte_limit()
        while len(blob) > limit and len(stored):  # shrink to the rows that fit
            keep = min(len(stored) - 1, int(len(stored) * limit / len(blob) * 0.9))
            stored = stored.iloc[:keep]
            blob, columns = encode_frame(stored)
        return true_count, stored, blob, columns, result_hash(blob, true_count)

    def _result_byte_limit(self) -> int:
        """The stored result's byte cap: the board's, and safely under SQLite's own."""
        sqlite_limit = self._conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH)
        return min(self.max_result_bytes, sqlite_limit - 64 * 1024)

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
        self, *, include_redundant: bool = True, investigation_id: str | None = None,
        include_reused: bool = False,
    ) -> list[Evidence]:
        """Evidence in id order; ``include_redundant=False`` gives the audit view.

        With ``investigation_id`` and ``include_reused``, also the earlier evidence that
        follow-up reused (:meth:`record_reuse`): everything its conclusions rest on.
        """
        if not (include_reused and investigation_id is not None):
            found = self._select("evidence", "num", investigation_id=investigation_id,
                                 redundant=None if include_redundant else 0)
            return [rows.evidence(r) for r in found]
        found = self._query(
            "SELECT * FROM evidence WHERE (investigation_id = ? OR id IN (SELECT evidence_id "
            "FROM evidence_reuses WHERE investigation_id = ?))"
            + ("" if include_redundant else " AND redundant = 0") + " ORDER BY num",
            (investigation_id, investigation_id))
        return [rows.evidence(r) for r in found]

    def evidence_frame(self, evidence_id: str) -> pd.DataFrame:
        """The stored result of evidence ``evidence_id`` as a DataFrame equal to the one
        recorded (same columns, dtypes and values; at most ``max_rows`` rows).

        Results never change once written, so recently read ones are kept decoded; each
        call returns a copy the caller may change freely.
        """
        with self._lock:
            cached = self._frames.get(evidence_id)
            if cached is not None:
                self._frames.move_to_end(evidence_id)
                return cached.copy()
        row = self._one("SELECT id, columns, result FROM evidence WHERE id = ?", (evidence_id,),
                        f"evidence {evidence_id!r}")
        frame = rows.result_frame(row)
        with self._lock:
            self._frames[evidence_id] = frame
            while len(self._frames) > FRAME_CACHE_SIZE:
                self._frames.popitem(last=False)
        return frame.copy()

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
                investigation_id=investigation_of(conn, "evidence", evidence_id), time=stamp,
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
        """Record how evidence bears on a hypothesis: supports, contradicts, weak or
        neutral (see :class:`Stance`).

        Linking the same pair again with the same stance returns the existing link;
        with another stance it is refused (one piece of evidence has one reading per
        hypothesis).
        """
        stance = parse_enum(Stance, stance, "stance")
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
                actor=actor, investigation_id=investigation_of(conn, "hypotheses", hypothesis_id),
                time=stamp,
            )
            created = conn.execute("SELECT * FROM links WHERE id = ?", (link_id,)).fetchone()
            return rows.link(created)

    def list_links(
        self, *, hypothesis_id: str | None = None, evidence_id: str | None = None
    ) -> list[Link]:
        """Links in the order they were made, optionally for one hypothesis or evidence."""
        found = self._select("links", "id", hypothesis_id=hypothesis_id, evidence_id=evidence_id)
        return [rows.link(r) for r in found]
