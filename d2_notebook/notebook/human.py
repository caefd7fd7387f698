"""A person's additions to a board: hypotheses, abandonments and evidence.

Human records carry ``author_role="human"`` and belong to the investigation they are
about: evidence to its hypothesis's investigation, a refinement to its parent's, a new
hypothesis to the board's latest investigation unless another is named. A ``--resume``
run of that investigation takes them into account like the team's own; other
investigations on the board are not touched.
"""

from __future__ import annotations

from d2_notebook.board import Board, Evidence, Hypothesis, Link, Stance
from d2_notebook.data import QueryResult
from d2_notebook.errors import InvalidRecordError

HUMAN_ROLE = "human"


def add_hypothesis(board: Board, statement: str, *, rationale: str = "",
                   parent_id: str | None = None, author: str = "user",
                   investigation_id: str | None = None) -> Hypothesis:
    """Propose a hypothesis of your own (status ``proposed``).

    Args:
        parent_id: the hypothesis it refines; it then belongs to that one's investigation.
        investigation_id: the investigation it is for (default: the parent's, else the
            board's latest).

    Raises:
        NotFoundError: no such parent or investigation on the board.
        InvalidRecordError: the parent belongs to another investigation than the one named.
    """
    if parent_id is not None:
        parent = board.get_hypothesis(parent_id).investigation_id
        if investigation_id is not None and parent is not None and parent != investigation_id:
            raise InvalidRecordError(
                f"{parent_id} belongs to investigation {parent}, not {investigation_id}; "
                "refine a hypothesis of the same investigation, or name none")
        investigation_id = investigation_id or parent
    return board.add_hypothesis(statement, rationale=rationale, parent_id=parent_id,
                                author_role=HUMAN_ROLE, author=author,
                                investigation_id=investigation_id
                                or latest_investigation_id(board))


def abandon(board: Board, hypothesis_id: str, reason: str, *, author: str = "user") -> Hypothesis:
    """Abandon a hypothesis, saying why (it stays on the board)."""
    return board.abandon(hypothesis_id, reason, actor=author)


def add_evidence(board: Board, result: QueryResult, *, hypothesis_id: str,
                 stance: Stance | str, rationale: str, description: str | None = None,
                 author: str = "user") -> tuple[Evidence, Link]:
    """Record a guarded query's result as evidence and link it to a hypothesis.

    Args:
        result: what :meth:`GuardedSQL.run` returned (the only source of evidence rows).
        stance: ``supports``, ``contradicts``, ``weak`` or ``neutral`` (:class:`Stance`).
        rationale: how the result bears on the hypothesis.
        description: one sentence on what the query shows (default: the rationale).

    The evidence belongs to the hypothesis's investigation.

    Raises:
        NotFoundError: no such hypothesis on the board.
    """
    investigation_id = board.get_hypothesis(hypothesis_id).investigation_id
    with board.atomic():  # the evidence and its link, or neither
        evidence = board.add_evidence(
            result.sql, result.frame, description=description or rationale,
            row_count=result.row_count, truncated=result.truncated, author_role=HUMAN_ROLE,
            author=author, duration_s=result.duration_s, investigation_id=investigation_id)
        link = board.link(evidence.id, hypothesis_id, stance, rationale, actor=author)
    return evidence, link


def latest_investigation_id(board: Board) -> str | None:
    """The id of the board's most recent investigation, or None on an empty board."""
    investigations = board.list_investigations()
    return investigations[-1].id if investigations else None
