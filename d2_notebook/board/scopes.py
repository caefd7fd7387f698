"""One investigation of a board, as every view shows it.

A board can hold several investigations (a follow-up question, an ``--append`` re-run).
Views show one at a time: its hypotheses, the evidence linked to them (earlier evidence
a follow-up reused included), and its own evidence linked to nothing (exploration).
A board with a single investigation is shown whole, so records written outside any
investigation (a person's hypothesis, say) still appear.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2_notebook.board.board import Board
from d2_notebook.board.follow_ups import EvidenceReuse
from d2_notebook.board.records import Evidence, Hypothesis, Investigation, Link
from d2_notebook.errors import NotFoundError


@dataclass(frozen=True)
class InvestigationScope:
    """The records one view of a board shows.

    Attributes:
        investigation: the investigation shown (None: the board holds none yet).
        others: the board's other investigations, oldest first.
        hypotheses: the investigation's hypotheses, in id order.
        evidence: its own evidence and the evidence linked to its hypotheses, in id order.
        links: the links between those hypotheses and that evidence.
        reuses: the earlier evidence this investigation reused (not re-run).
        whole_board: True when the scope is the whole board (at most one investigation).
    """

    investigation: Investigation | None
    others: tuple[Investigation, ...]
    hypotheses: list[Hypothesis]
    evidence: list[Evidence]
    links: list[Link]
    reuses: list[EvidenceReuse]
    whole_board: bool

    @property
    def investigation_id(self) -> str | None:
        """The id of the investigation shown (None: none yet)."""
        return None if self.investigation is None else self.investigation.id


def choose_investigation(board: Board, investigation_id: str | None = None,
                         *, option: str = "investigation") -> Investigation | None:
    """The investigation a view shows: ``investigation_id``, or the newest when None
    (None when the board holds no investigation).

    Args:
        board: the board to read.
        investigation_id: the id asked for (``"I1"``); None: the newest.
        option: how the caller names the choice in its error (``"--investigation"``).

    Raises:
        NotFoundError: ``investigation_id`` is not on the board; the one-line message
            names the ids it holds.
    """
    investigations = board.list_investigations()
    if investigation_id is None:
        return investigations[-1] if investigations else None
    for investigation in investigations:
        if investigation.id == investigation_id:
            return investigation
    held = ", ".join(inv.id for inv in investigations) or "none"
    raise NotFoundError(f"investigation {investigation_id!r} is not on this board "
                        f"(it holds: {held}); pass one of those as {option}")


def investigation_scope(board: Board, investigation_id: str | None = None,
                        *, option: str = "investigation") -> InvestigationScope:
    """The records a view of ``investigation_id`` (None: the newest) shows; see the
    module docstring. Raises :class:`NotFoundError` as :func:`choose_investigation`."""
    shown = choose_investigation(board, investigation_id, option=option)
    investigations = board.list_investigations()
    others = tuple(inv for inv in investigations if shown is None or inv.id != shown.id)
    if shown is None or len(investigations) == 1:
        return InvestigationScope(shown, others, board.list_hypotheses(),
                                  board.list_evidence(), board.list_links(),
                                  board.list_reuses(), whole_board=True)
    hypotheses = board.list_hypotheses(investigation_id=shown.id)
    own = {hyp.id for hyp in hypotheses}
    all_links = board.list_links()
    linked = {link.evidence_id for link in all_links if link.hypothesis_id in own}
    reuses = board.list_reuses(shown.id)
    wanted = linked | {reuse.evidence_id for reuse in reuses}
    evidence = [item for item in board.list_evidence()
                if item.investigation_id == shown.id or item.id in wanted]
    kept = {item.id for item in evidence}
    links = [link for link in all_links
             if link.hypothesis_id in own and link.evidence_id in kept]
    return InvestigationScope(shown, others, hypotheses, evidence, links, reuses,
                              whole_board=False)
