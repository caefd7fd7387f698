"""Follow-up questions on one board: which investigation a follow-up follows, the data
fingerprints an investigation's evidence rests on, and the earlier evidence a follow-up
reused instead of running its query again."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from d2_notebook.board.store import BoardStore, now
from d2_notebook.errors import InvalidRecordError, NotFoundError


@dataclass(frozen=True)
class EvidenceReuse:
    """Earlier evidence a follow-up linked instead of running its query again.

    Attributes:
        investigation_id: The follow-up that reused it.
        evidence_id: The earlier evidence.
        from_investigation: The investigation that recorded the evidence.
        author: The agent (or ``user``) that reused it.
        created_at: When.
    """

    investigation_id: str
    evidence_id: str
    from_investigation: str
    author: str
    created_at: str


def reuse_text(origin: str | None, reused_by: Sequence[str]) -> str:
    """How every view (tree, widget, snapshot) says that follow-ups ``reused_by`` reused
    evidence of investigation ``origin``."""
    return f"reused from {origin} (not re-run) by follow-up {', '.join(reused_by)}"


class FollowUpRecords(BoardStore):
    """Board methods for follow-ups, data fingerprints and reused evidence."""

    def record_follow_up(self, investigation_id: str, follows: str, *, actor: str) -> None:
        """Record that ``investigation_id`` is a follow-up of ``follows``.

        Raises:
            NotFoundError: Either investigation is not on the board.
            InvalidRecordError: An investigation cannot follow itself.
        """
        if investigation_id == follows:
            raise InvalidRecordError(f"{investigation_id} cannot follow itself")
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            self._require(conn, "investigations", follows)
            conn.execute("INSERT OR IGNORE INTO follow_ups (investigation_id, follows, "
                         "created_at) VALUES (?, ?, ?)", (investigation_id, follows, stamp))
            self._append_event(conn, "investigation.follows", {"follows": follows},
                               actor=actor, investigation_id=investigation_id, time=stamp)

    def follows(self, investigation_id: str) -> str | None:
        """The investigation ``investigation_id`` is a follow-up of, if any."""
        found = self._query("SELECT follows FROM follow_ups WHERE investigation_id = ?",
                            (investigation_id,))
        return str(found[0]["follows"]) if found else None

    def record_data_fingerprints(self, investigation_id: str, fingerprints: Mapping[str, str],
                                 *, actor: str) -> None:
        """Store the fingerprint of each table (by name) the investigation's evidence
        read, as the data stood when it ended (a later store replaces a table's)."""
        if not fingerprints:
            return
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            conn.executemany(
                "INSERT OR REPLACE INTO data_fingerprints (investigation_id, table_name, "
                "fingerprint, created_at) VALUES (?, ?, ?, ?)",
                [(investigation_id, table, fp, stamp) for table, fp in fingerprints.items()])
            self._append_event(conn, "data.fingerprinted", {"tables": sorted(fingerprints)},
                               actor=actor, investigation_id=investigation_id, time=stamp)

    def data_fingerprints(self, investigation_id: str) -> dict[str, str]:
        """The stored fingerprint of each table the investigation's evidence read."""
        found = self._query("SELECT table_name, fingerprint FROM data_fingerprints WHERE "
                            "investigation_id = ? ORDER BY table_name", (investigation_id,))
        return {str(r["table_name"]): str(r["fingerprint"]) for r in found}

    def record_reuse(self, investigation_id: str, evidence_id: str, *,
                     actor: str) -> EvidenceReuse:
        """Record that follow-up ``investigation_id`` reused earlier evidence
        ``evidence_id`` (recorded once; a second call returns the first record).

        Raises:
            NotFoundError: The investigation or the evidence is not on the board.
            InvalidRecordError: The evidence belongs to ``investigation_id`` itself.
        """
        stamp = now()
        with self._write() as conn:
            self._require(conn, "investigations", investigation_id)
            row = conn.execute("SELECT investigation_id FROM evidence WHERE id = ?",
                               (evidence_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"evidence {evidence_id!r} is not on this board")
            origin = row["investigation_id"]
            if origin is None or origin == investigation_id:
                raise InvalidRecordError(f"{evidence_id} is not evidence of an earlier "
                                         "investigation; only that can be reused")
            cursor = conn.execute(
                "INSERT OR IGNORE INTO evidence_reuses (investigation_id, evidence_id, "
                "from_investigation, author, created_at) VALUES (?, ?, ?, ?, ?)",
                (investigation_id, evidence_id, origin, actor, stamp))
            if cursor.rowcount:
                self._append_event(conn, "evidence.reused",
                                   {"evidence_id": evidence_id, "from_investigation": origin},
                                   actor=actor, investigation_id=investigation_id, time=stamp)
            return _reuse(conn.execute(
                "SELECT * FROM evidence_reuses WHERE investigation_id = ? AND evidence_id = ?",
                (investigation_id, evidence_id)).fetchone())

    def list_reuses(self, investigation_id: str | None = None) -> list[EvidenceReuse]:
        """Reused evidence, in the order it was reused (of one follow-up, if given)."""
        if investigation_id is None:
            found = self._query("SELECT * FROM evidence_reuses ORDER BY rowid")
        else:
            found = self._query("SELECT * FROM evidence_reuses WHERE investigation_id = ? "
                                "ORDER BY rowid", (investigation_id,))
        return [_reuse(r) for r in found]


def _reuse(row: sqlite3.Row) -> EvidenceReuse:
    return EvidenceReuse(str(row["investigation_id"]), str(row["evidence_id"]),
                         str(row["from_investigation"]), str(row["author"]),
                         str(row["created_at"]))
