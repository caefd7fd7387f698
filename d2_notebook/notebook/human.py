"""A person's additions to a board: hypotheses, abandonments and evidence.

Human records carry ``author_role="human"`` and belong to the board's latest
investigation, so a ``--resume`` run takes them into account like the team's own.
"""

from __future__ import annotations

from d2_notebook.board import Board, Evidence, Hypothesis, Link, Stance
from d2_notebook.data import QueryResult

HUMAN_ROLE = "human"


def add_hypothesis(board: Board, statement: str, *, rationale: str = "",
                   parent_id: str | None = None, author: str = "user") -> Hypothesis:
    """Propose a hypothesis of your own (status ``proposed``)."""
    return board.add_hypothesis(statement, rationale=rationale, parent_id=parent_id,
                                author_role=HUMAN_ROLE, author=author,
                                investigation_id=latest_investigation_id(board))


def abandon(board: Board, hypothesis_id: str, reason: str, *, author: str = "user") -> Hypothesis:
    """Abandon a hypothesis, saying why (it stays on the board)."""
    return board.abandon(hypothesis_id, reason, actor=author)


def add_evidence(board: Board, result: QueryResult, *, hypothesis_id: str,
                 stance: Stance | str, rationale: str, description: str | None = None,
                 author: str = "user") -> tuple[Evidence, Link]:
    """Record a guarded query's result as evidence and link it to a hypothesis.

    Args:
        result: what :meth:`GuardedSQL.run` returned (the only source of evidence rows).
        stance: ``supports`` or ``contradicts``.
        rationale: how the result bears on the hypothesis.
        description: one sentence on what the query shows (default: the rationale).

    Raises:
        NotFoundError: no such hypothesis on the board.
    """
    board.get_hypothesis(hypothesis_id)
    evidence = board.add_evidence(
        result.sql, result.frame, description=description or rationale,
        row_count=result.row_count, truncated=result.truncated, author_role=HUMAN_ROLE,
        author=author, duration_s=result.duration_s,
        investigation_id=latest_investigation_id(board))
    link = board.link(evidence.id, hypothesis_id, stance, rationale, actor=author)
    return evidence, link


def latest_investigation_id(board: Board) -> str | None:
    """The id of the board's most recent investigation, or None on an empty board."""
    investigations = board.list_investigations()
    return investigations[-1].id if investigations else None
