"""Dismissed candidate dimensions: what the team chose not to examine, with the reason."""

from __future__ import annotations

from d2_notebook.board import rows
from d2_notebook.board.records import DimensionDismissal
from d2_notebook.board.store import BoardStore, now
from d2_notebook.errors import InvalidRecordError


class DismissalRecords(BoardStore):
    """Board methods for dimension dismissals."""

    def dismiss_dimension(
        self, dimension: str, reason: str, *, actor: str, investigation_id: str | None = None
    ) -> DimensionDismissal:
        """Record that candidate dimension ``dimension`` is left unexamined, and why
        (:meth:`dismiss_dimensions` of one)."""
        return self.dismiss_dimensions([dimension], reason, actor=actor,
                                       investigation_id=investigation_id)[0]

    def dismiss_dimensions(
        self, dimensions: list[str], reason: str, *, actor: str,
        investigation_id: str | None = None,
    ) -> list[DimensionDismissal]:
        """Record that each of ``dimensions`` is left unexamined for one ``reason``, in
        one transaction: all are recorded or none.

        Dismissing a dimension of the same investigation again returns its first
        dismissal (its reason is kept).

        Raises:
            InvalidRecordError: no dimension, an empty one, or an empty reason.
        """
        names = [d.strip() for d in dimensions]
        reason = reason.strip()
        if not names or not all(names):
            raise InvalidRecordError("name the dimension to dismiss")
        if not reason:
            raise InvalidRecordError(f"say why {', '.join(names)} is not examined: pass a "
                                     "reason")
        stamp = now()
        recorded = []
        with self._write() as conn:
            if investigation_id is not None:
                self._require(conn, "investigations", investigation_id)
            for dimension in names:
                existing = conn.execute(
                    "SELECT * FROM dimension_dismissals WHERE dimension = ? AND "
                    "investigation_id IS ?", (dimension, investigation_id)).fetchone()
                if existing is not None:
                    recorded.append(rows.dimension_dismissal(existing))
                    continue
                cursor = conn.execute(
                    "INSERT INTO dimension_dismissals (investigation_id, dimension, reason, "
                    "author, created_at) VALUES (?, ?, ?, ?, ?)",
                    (investigation_id, dimension, reason, actor, stamp))
                record_id = int(cursor.lastrowid or 0)
                self._append_event(conn, "dimension.dismissed",
                                   {"id": record_id, "dimension": dimension, "reason": reason},
                                   actor=actor, investigation_id=investigation_id, time=stamp)
                recorded.append(rows.dimension_dismissal(conn.execute(
                    "SELECT * FROM dimension_dismissals WHERE id = ?", (record_id,)).fetchone()))
        return recorded

    def list_dimension_dismissals(
        self, *, investigation_id: str | None = None
    ) -> list[DimensionDismissal]:
        """Dismissals in the order they were made (of one investigation, if given)."""
        if investigation_id is None:
            found = self._query("SELECT * FROM dimension_dismissals ORDER BY id")
        else:
            found = self._query("SELECT * FROM dimension_dismissals WHERE investigation_id = ? "
                                "ORDER BY id", (investigation_id,))
        return [rows.dimension_dismissal(r) for r in found]
