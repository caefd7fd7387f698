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

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from d2_notebook.board.chart_requests import ChartRequestRecords
from d2_notebook.board.dismissals import DismissalRecords
from d2_notebook.board.evidence import EvidenceRecords
from d2_notebook.board.follow_ups import FollowUpRecords
from d2_notebook.board.hypotheses import HypothesisRecords
from d2_notebook.board.leases import LeaseRecords
from d2_notebook.board.model_calls import ModelCallRecords
from d2_notebook.board.rechecks import RecheckRecords
from d2_notebook.board.rejudges import RejudgeRecords
from d2_notebook.board.store import DEFAULT_MAX_ROWS, now

__all__ = ["DEFAULT_MAX_ROWS", "Board", "now"]


class Board(HypothesisRecords, EvidenceRecords, ModelCallRecords, LeaseRecords,
            DismissalRecords, RecheckRecords, RejudgeRecords, ChartRequestRecords,
            FollowUpRecords):
    """A Data Investigation Board stored in one SQLite file.

    Open one with :meth:`Board.open`; use it as a context manager or call
    :meth:`close`. All methods are safe to call from several threads at once.
    The methods are grouped by record type in :mod:`.store` (file, events),
    :mod:`.hypotheses`, :mod:`.evidence`, :mod:`.model_calls`, :mod:`.leases`,
    :mod:`.dismissals`, :mod:`.rechecks`, :mod:`.chart_requests` and
    :mod:`.follow_ups`.
    """

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

