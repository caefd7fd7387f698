"""Replaying a re-judge: answer its model calls from the ones a recorded re-judge made.

A re-judge records its calls under its investigation, after a ``rejudge.started`` event
that names the last call recorded before it. The *n*-th re-judge of an investigation
replays from the calls between the recording's *n*-th ``rejudge.started`` and the next
one, in their recorded order (:class:`~d2_notebook.llm.replay.ReplayModel`, ordered), so
a notebook re-run later (investigate with ``replay=``, change the data, re-check with
``rejudge=True, replay=``) writes the same board with no API.
"""

from __future__ import annotations

from typing import Any

from d2_notebook.board import Board
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm.replay import ReplayModel

__all__ = ["STARTED", "rejudge_replay_model", "rejudges_started"]

STARTED = "rejudge.started"
"""The event that opens a re-judge; its ``after_model_call`` bounds the re-judge's calls."""


def rejudges_started(board: Board, investigation_id: str) -> list[int]:
    """For each re-judge of ``investigation_id`` on ``board``, in order: the id of the
    last model call recorded before it."""
    return [int(e.payload.get("after_model_call", 0)) for e in board.events(kinds=[STARTED])
            if e.investigation_id == investigation_id]


def rejudge_replay_model(recorded: Board, investigation_id: str, index: int) -> ReplayModel:
    """A model answering re-judge number ``index`` (0 for the first) of
    ``investigation_id`` from ``recorded``'s calls (read now: ``recorded`` may be closed
    once it is made).

    Raises:
        InvalidRecordError: the recording holds no such re-judge.
    """
    starts = rejudges_started(recorded, investigation_id)
    if index >= len(starts):
        raise InvalidRecordError(
            f"the recording {recorded.path} holds {len(starts)} re-judge(s) of "
            f"{investigation_id}, not a re-judge number {index + 1}; replay against the "
            "board the re-judge was recorded on, or re-judge with a model")
    after = starts[index]
    until = starts[index + 1] if index + 1 < len(starts) else None
    return ReplayModel(_CallWindow(recorded, after, until), investigation_id, ordered=True,
                       name="replay")


class _CallWindow:
    """The recorded calls with ``after < id <= until`` (what ReplayModel reads)."""

    def __init__(self, board: Board, after: int, until: int | None) -> None:
        self.board, self.after, self.until = board, after, until

    def list_model_calls(self, *, investigation_id: str | None = None,
                         refused: bool = False) -> list[Any]:
        return [c for c in self.board.list_model_calls(investigation_id=investigation_id,
                                                       refused=refused)
                if c.id > self.after and (self.until is None or c.id <= self.until)]
