"""The chart a collector asked for when it recorded an evidence (x, y, colour).

The board stores the request, never a chart: charts are drawn from the stored rows by
:mod:`d2_notebook.charts`, which reads the request to choose the columns.
"""

from __future__ import annotations

from d2_notebook.board.records import ChartRequest
from d2_notebook.board.store import BoardStore, now
from d2_notebook.errors import InvalidRecordError

__all__ = ["ChartRequestRecords"]


class ChartRequestRecords(BoardStore):
    """Board methods for chart requests."""

    def request_chart(self, evidence_id: str, request: ChartRequest, *, actor: str) -> None:
        """Store the chart ``actor`` asked for evidence ``evidence_id`` (the first request
        stands; a later one for the same evidence is ignored).

        Raises:
            NotFoundError: no such evidence.
            InvalidRecordError: a named column is not a column of its stored result (the
                message lists them).
        """
        evidence = self.get_evidence(evidence_id)
        columns = [c.name for c in evidence.columns]
        for channel, name in (("x", request.x), ("y", request.y), ("color", request.color)):
            if name is not None and name not in columns:
                raise InvalidRecordError(
                    f"chart {channel}={name!r} is not a column of {evidence_id}; its columns: "
                    f"{', '.join(columns) or '(none)'}")
        stamp = now()
        with self._write() as conn:
            conn.execute("INSERT OR IGNORE INTO evidence_chart_requests (evidence_id, x, y, "
                         "color, author, created_at) VALUES (?, ?, ?, ?, ?, ?)",
                         (evidence_id, request.x, request.y, request.color, actor, stamp))

    def chart_request_of(self, evidence_id: str) -> ChartRequest | None:
        """The chart asked for ``evidence_id``, if any."""
        found = self._query("SELECT x, y, color FROM evidence_chart_requests WHERE "
                            "evidence_id = ?", (evidence_id,))
        return ChartRequest(found[0]["x"], found[0]["y"], found[0]["color"]) if found else None
