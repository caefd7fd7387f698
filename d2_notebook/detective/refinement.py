"""Refinement only where it pays: when a judge may split a hypothesis into subgroups,
and which splits the team did not make.

A judge may refine a hypothesis when all of these hold (checked as its turn starts):

- the hypothesis is above the depth limit (``max_depth``);
- the investigation has made fewer than ``max_refinements`` refinements;
- a hypothesis that is itself a refinement shows a *new material difference*: a
  heterogeneity check linked to it flagged a dimension its ancestors did not already
  split by (a child is not split again along the same lines).

The cap is checked again when the judge refines (judges running at once may reach it
meanwhile). A judge may also decline a flagged split that does not matter for the
question (:func:`record_declined`, its reason shown in the report).

:func:`unmade_refinements` lists, for the report, every settled hypothesis whose checks
flagged such a difference and that was not refined, with why; :func:`queue_rank`
orders the team's queue breadth before depth.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2_notebook.board import Board, Hypothesis, HypothesisStatus
from d2_notebook.detective.effect_check import new_heterogeneity
from d2_notebook.detective.settings import InvestigationSettings


@dataclass(frozen=True)
class RefineGate:
    """Whether a judge may refine one hypothesis; ``why_not`` says why not (else "")."""

    possible: bool
    why_not: str = ""


@dataclass(frozen=True)
class UnmadeRefinement:
    """A difference the checks found on a settled hypothesis that no refinement split by.

    Attributes:
        hypothesis_id: the hypothesis.
        differences: ``(evidence id, dimension)`` pairs the linked checks flagged.
        reason: why it was not refined.
    """

    hypothesis_id: str
    differences: tuple[tuple[str, str], ...]
    reason: str

    def line(self) -> str:
        """``Not refined: H3 by region (E12) — the refinement cap (4) was reached``, on one
        line whatever the reason holds (a judge's reason is a model's text: a line break
        in it would start a heading or a list of its own in the report)."""
        by = ", ".join(f"{dimension} ({evidence})" for evidence, dimension in self.differences)
        return f"Not refined: {self.hypothesis_id} by {by} — {' '.join(self.reason.split())}"


def queue_rank(generation: int) -> int:
    """Where a hypothesis of ``generation`` waits in the team's queue (lower goes first).

    A refinement (generation 2) goes before the hypothesizer's hypotheses, so a split
    is examined while its parent's work is fresh; a refinement of a refinement (3 and
    deeper) goes after every top-level hypothesis: breadth before depth, so a budget
    that runs short ends deep splits, not the checks the question needs.
    """
    return -generation if generation <= 2 else generation


def refinements_made(board: Board, investigation_id: str | None) -> int:
    """How many hypotheses of the investigation a judge has split into subgroups."""
    return len({h.parent_id for h in board.list_hypotheses(investigation_id=investigation_id)
                if h.parent_id and h.author_role == "judge"})


def refine_gate(board: Board, hypothesis: Hypothesis, settings: InvestigationSettings, *,
                depth_allows: bool) -> RefineGate:
    """Whether the judge of ``hypothesis`` may refine it now (see the module docstring).

    Args:
        depth_allows: the hypothesis is above the depth limit (the loop knows its
            generation).
    """
    if not depth_allows:
        return RefineGate(False, f"the depth limit ({settings.max_depth} generations) is "
                                 "reached")
    if cap_reached(board, hypothesis.investigation_id, settings):
        return RefineGate(False, f"the investigation's refinement cap "
                                 f"({settings.max_refinements}) is reached")
    if hypothesis.parent_id and not new_heterogeneity(board, hypothesis):
        return RefineGate(False, f"it refines {hypothesis.parent_id} and its checks show no "
                                 "new material difference (no heterogeneity on a dimension "
                                 "its parents did not split by)")
    return RefineGate(True)


DECLINED_EVENT = "refinement.declined"
"""The board event of a judge declining a split the checks flagged (its reason)."""


def record_declined(board: Board, hypothesis: Hypothesis, reason: str, *, actor: str) -> None:
    """Write that the judge of ``hypothesis`` declined to split it, and why."""
    board.log_event(DECLINED_EVENT, {"hypothesis_id": hypothesis.id, "reason": reason},
                    actor=actor, investigation_id=hypothesis.investigation_id)


def declined_reasons(board: Board, investigation_id: str | None) -> dict[str, str]:
    """Hypothesis id → the reason its judge gave for not splitting it (the latest)."""
    return {e.payload["hypothesis_id"]: str(e.payload.get("reason", ""))
            for e in board.events(kinds=[DECLINED_EVENT])
            if investigation_id is None or e.investigation_id == investigation_id}


def cap_reached(board: Board, investigation_id: str | None,
                settings: InvestigationSettings) -> bool:
    """Whether the investigation has made all the refinements it may make."""
    return refinements_made(board, investigation_id) >= settings.max_refinements


def unmade_refinements(board: Board, investigation_id: str | None,
                       settings: InvestigationSettings) -> list[UnmadeRefinement]:
    """Every settled hypothesis whose checks flagged a new difference it was not split by."""
    hypotheses = board.list_hypotheses(investigation_id=investigation_id)
    parents = {h.parent_id for h in hypotheses if h.parent_id}
    capped = cap_reached(board, investigation_id, settings)
    declined = declined_reasons(board, investigation_id)
    unmade = []
    for hyp in hypotheses:
        if (hyp.id in parents or not hyp.status.is_settled
                or hyp.status is HypothesisStatus.ABANDONED):
            continue
        differences = tuple(dict.fromkeys(new_heterogeneity(board, hyp)))
        if not differences:
            continue
        if hyp.id in declined:
            reason = f"its judge: {declined[hyp.id]}"
        elif _generation(board, hyp) >= settings.max_depth:
            reason = f"the depth limit ({settings.max_depth} generations) was reached"
        elif capped:
            reason = f"the refinement cap ({settings.max_refinements}) was reached"
        else:
            reason = "the judge gave one verdict for all subgroups"
        unmade.append(UnmadeRefinement(hyp.id, differences, reason))
    return unmade


def _generation(board: Board, hypothesis: Hypothesis) -> int:
    generation = 1
    while hypothesis.parent_id:
        generation += 1
        hypothesis = board.get_hypothesis(hypothesis.parent_id)
    return generation
