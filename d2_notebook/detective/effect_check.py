"""The judge's rule for verdicts on an effect: no verdict without a heterogeneity check.

A hypothesis is about an *effect* when the verdict says so (``claim_kind: "effect"``),
or, when the verdict does not say (no ``claim_kind``), when its statement uses effect
words ("helps", "lowers", "no effect", "little benefit", "is the best"...). A supported
or contradicted verdict on an effect is refused unless the hypothesis (or an ancestor
it refines) has a linked ``compare_within`` evidence (the check across the candidate
dimensions), or its linked evidence already controlled or split by every candidate
dimension such a check would test (a linked ``segment_scan``, or queries stratified
by each of them: the coverage map says so), or the verdict states why no such check
applies (``no_check_reason``).
When a linked check flagged heterogeneity on a dimension the hypothesis does not
already split by, ``refine`` is the expected outcome: a plain verdict is refused while
refining is possible, unless it gives ``no_refine_reason``: why that split does not
matter for the question (the report lists it among the splits not made).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from d2_notebook.board import Board, Evidence, Hypothesis
from d2_notebook.detective.analysis_tools import (
    AnalysisTool,
    analysis_tool_of,
    heterogeneity_dimensions,
    is_heterogeneity_check,
)
from d2_notebook.detective.coverage_view import BoardCoverage


class ClaimKind(StrEnum):
    """What a hypothesis claims, as the verdict states it."""

    EFFECT = "effect"
    """Something helps, harms, changes an outcome, has no or little effect, is the best."""
    OTHER = "other"
    """Anything else (who did it, how many, when)."""


EFFECT_WORDS = re.compile(
    r"\b(effect|effects|effective|effectiveness|helps?|helped|benefits?|beneficial|"
    r"improves?|improved|reduces?|reduced|lowers?|lowered|raises?|raised|increases?|"
    r"increased|decreases?|decreased|worsens?|harms?|harmful|protects?|prevents?|"
    r"causes?|impacts?|works?|changes?)\b", re.IGNORECASE)
"""Words that make a statement a claim about an effect (kept generic)."""

CLAIM_PROPERTIES: dict[str, Any] = {
    "claim_kind": {"type": "string", "enum": [k.value for k in ClaimKind], "description": (
        "effect: the hypothesis says something helps, harms, changes an outcome, has no "
        "or little effect, or is the best option; other: any other claim. Default: "
        "read from the statement's wording.")},
    "no_check_reason": {"type": "string", "description": (
        "Only for an effect verdict without a linked compare_within check (and whose "
        "linked evidence did not control every candidate dimension): why no "
        "heterogeneity check across the candidate dimensions applies.")},
    "no_refine_reason": {"type": "string", "description": (
        "Only when a linked check flagged HETEROGENEITY and refining is possible: why "
        "splitting along the flagged dimension would not matter for the question, e.g. "
        "the dimension is the outcome (or a part of it) recorded again, so each stratum "
        "fixes the result, or the strata differ too little to change what anyone "
        "would conclude or do. The report lists the split as not made, with this reason.")},
}

RULE = ("A supported or contradicted verdict on an effect (claim_kind effect, or a "
        "statement saying something helps, lowers, has no effect, little benefit, is the best...) "
        "is refused unless a compare_within result is linked to the "
        "hypothesis or a hypothesis it refines (the heterogeneity check across the candidate "
        "dimensions), or its linked evidence already controlled or split by every candidate "
        "dimension (e.g. a linked segment_scan: the digest's coverage line says 'every "
        "candidate dimension'), or no_check_reason says why none applies; when that check "
        "flagged HETEROGENEITY on a dimension the hypothesis does not already split by, "
        "refine is expected and a plain verdict is refused while refining is possible, "
        "unless no_refine_reason says why that split does not matter for the question.")


def declined_split(args: dict[str, Any]) -> str:
    """The verdict's ``no_refine_reason``, stripped ("" when it gives none)."""
    return str(args.get("no_refine_reason", "")).strip()


def is_effect_claim(statement: str, claim_kind: str | None) -> bool:
    """True if the verdict says the claim is an effect; when it does not say
    (``claim_kind`` None), if the statement's words say so — as the schema states."""
    if claim_kind is not None:
        return ClaimKind(claim_kind) is ClaimKind.EFFECT
    return bool(EFFECT_WORDS.search(statement))


def effect_refusal(board: Board, hypothesis: Hypothesis, args: dict[str, Any], *,
                   can_refine: bool, coverage: BoardCoverage | None = None) -> str | None:
    """Why this verdict on ``hypothesis`` is refused (None: it may be given).

    ``coverage`` is the investigation's coverage map (None: the database's dimensions
    could not be read); with it, evidence that controlled every reachable candidate
    dimension the orchestrator did not dismiss counts as the check.
    """
    if args["status"] == "inconclusive":
        return None
    if not is_effect_claim(hypothesis.statement, args.get("claim_kind")):
        return None
    reason = str(args.get("no_check_reason", "")).strip()
    if not _has_check(board, hypothesis):
        missing = uncontrolled(coverage, hypothesis.id)
        if reason or missing == () or _has_scan(board, hypothesis):
            return None
        unchecked = (f" (its evidence has not controlled {_few(missing)})"
                     if missing else "")
        return (f"{hypothesis.id} claims an effect: a {args['status']} verdict needs a "
                f"heterogeneity check across the candidate dimensions first{unchecked}. "
                "Get a compare_within of the exposure linked to it first (run and record "
                "one, link an existing one or a segment_scan, or ask for one with "
                "request_more_evidence — whichever of these tools you have), or state "
                "no_check_reason: why no such check applies")
    flagged = new_heterogeneity(board, hypothesis)
    if flagged and can_refine and not declined_split(args):
        named = "; ".join(f"{e}: {d}" for e, d in flagged)
        return (f"the heterogeneity check flagged HETEROGENEITY ({named}): the effect "
                "differs between strata, so refine into subgroup hypotheses along that "
                "dimension instead of one verdict for all, or, if that split does not "
                "matter for the question (the dimension is the outcome recorded again, or "
                "the strata differ too little to change a conclusion), give the verdict "
                "with no_refine_reason saying why")
    return None


def new_heterogeneity(board: Board, hypothesis: Hypothesis) -> list[tuple[str, str]]:
    """``(evidence id, dimension)`` for each heterogeneity a check linked to
    ``hypothesis`` flagged on a dimension it does not already split by (one flagged for
    an ancestor it refines, or named in its statement): the material differences a
    refinement of it would split by."""
    addressed = _addressed(board, hypothesis)
    return [(e.id, d) for e in _linked(board, hypothesis.id) if is_heterogeneity_check(e)
            for d in heterogeneity_dimensions(e) if d not in addressed]


def uncontrolled(coverage: BoardCoverage | None, hypothesis_id: str) -> tuple[str, ...] | None:
    """The candidate dimensions a check would test that ``hypothesis_id``'s linked
    evidence has not controlled or split by: reachable, not dismissed (None: no coverage
    map, or no evidence linked yet)."""
    if coverage is None or hypothesis_id not in coverage.by_hypothesis:
        return None
    done = set(coverage.by_hypothesis[hypothesis_id])
    gone = (coverage.unreachable_names | {d.dimension for d in coverage.dismissed}
            | set(coverage.measured))
    return tuple(n for n in coverage.names if n not in done and n not in gone)


def _has_check(board: Board, hypothesis: Hypothesis) -> bool:
    """A ``compare_within`` linked to the hypothesis or to a hypothesis it refines, or
    one that motivated it (the check the hypothesis was proposed on)."""
    current: Hypothesis | None = hypothesis
    while current is not None:
        weighed = _linked(board, current.id) + _motivating(board, current)
        if any(is_heterogeneity_check(e) for e in weighed):
            return True
        current = board.get_hypothesis(current.parent_id) if current.parent_id else None
    return False


def _has_scan(board: Board, hypothesis: Hypothesis) -> bool:
    """A ``segment_scan`` linked to the hypothesis: it split the outcome by every candidate
    dimension the tool could test for that metric (those it left out are part of the
    metric's definition), the same dimensions a compare_within would stratify by."""
    return any(analysis_tool_of(e) is AnalysisTool.SEGMENT_SCAN
               for e in _linked(board, hypothesis.id) + _motivating(board, hypothesis))


def _few(names: tuple[str, ...], shown: int = 5) -> str:
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _motivating(board: Board, hypothesis: Hypothesis) -> list[Evidence]:
    return [board.get_evidence(evidence_id) for evidence_id in hypothesis.motivated_by]


def _linked(board: Board, hypothesis_id: str) -> list[Evidence]:
    return [board.get_evidence(link.evidence_id)
            for link in board.list_links(hypothesis_id=hypothesis_id)]


def _addressed(board: Board, hypothesis: Hypothesis) -> set[str]:
    """Dimensions the hypothesis already splits by: flagged for an ancestor it refines,
    or named in its own statement."""
    addressed: set[str] = set()
    parent_id = hypothesis.parent_id
    while parent_id:
        parent = board.get_hypothesis(parent_id)
        for evidence in _linked(board, parent.id):
            addressed.update(heterogeneity_dimensions(evidence))
        parent_id = parent.parent_id
    return addressed | {d for e in _linked(board, hypothesis.id)
                        for d in heterogeneity_dimensions(e) if d in hypothesis.statement}
