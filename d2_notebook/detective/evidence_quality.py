"""The judge's rule for weighing evidence by its quality.

A verdict may set evidence aside (``discounted``), each piece with a typed reason
(:class:`~d2_notebook.board.DiscountReason`: a missing record, an unreliable source,
superseded, off target) and a sentence why; the board stores them with the verdict. A
supported or contradicted verdict must rest on at least one decisive piece of evidence:
evidence linked only as ``weak`` or ``neutral`` cannot decide it on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from d2_notebook.board import Discount, DiscountReason, Link, Stance
from d2_notebook.detective.tools import ToolError

DISCOUNT_PROPERTIES: dict[str, Any] = {
    "discounted": {
        "type": "array",
        "description": (
            "optional: the evidence you set aside, each with its reason: missing_record (a "
            "record that is absent: no evidence either way, never against), "
            "unreliable_source (contradicted by a more reliable source, or unconfirmed), "
            "superseded (a later or more direct result replaces it), off_target (it does "
            "not measure what the hypothesis claims); evidence set aside is not also "
            "cited in evidence_ids"),
        "items": {
            "type": "object", "required": ["evidence_id", "reason", "explanation"],
            "properties": {
                "evidence_id": {"type": "string"},
                "reason": {"type": "string", "enum": [r.value for r in DiscountReason]},
                "explanation": {"type": "string", "minLength": 1,
                                "description": "one sentence: why it is set aside"}}},
    },
}

QUALITY_RULE = ("Evidence linked only as weak or neutral cannot decide a supported or "
                "contradicted verdict on its own; list the evidence you set aside under "
                "discounted, each with its reason.")


def verdict_discounts(raw: Iterable[Mapping[str, Any]], linked: set[str],
                      cited: list[str], hypothesis_id: str) -> list[Discount]:
    """The ``discounted`` argument of a verdict as typed discounts.

    Raises:
        ToolError: a discounted evidence is not linked to the hypothesis (nor motivated
            it), is also cited as deciding, or is listed twice.
    """
    out: list[Discount] = []
    for item in raw:
        evidence_id = str(item["evidence_id"])
        if evidence_id not in linked:
            raise ToolError(f"{evidence_id} is not linked to {hypothesis_id}; discount only "
                            f"its linked evidence: {', '.join(sorted(linked)) or 'none'}")
        if evidence_id in cited:
            raise ToolError(f"{evidence_id} is both cited as deciding and discounted; take it "
                            "out of evidence_ids or out of discounted")
        if any(d.evidence_id == evidence_id for d in out):
            raise ToolError(f"{evidence_id} is discounted twice; list it once")
        out.append(Discount(evidence_id, DiscountReason(item["reason"]),
                            str(item["explanation"]).strip()))
    return out


def indecisive_refusal(status: str, cited: list[str], links: Iterable[Link],
                       motivated_by: Iterable[str], *,
                       collect_with: str | None = "request_more_evidence") -> str | None:
    """Why a supported or contradicted verdict citing only weak or neutral evidence is
    refused, or None when it cites decisive evidence (or is inconclusive). The ways out
    it names include collecting more evidence with ``collect_with`` (the tools that do
    it for this agent), or, when None, say that no more can be collected (a judge
    after its hypothesis's last round)."""
    if status == "inconclusive" or not cited:
        return None
    stance_of = {link.evidence_id: link.stance for link in links}
    decisive = [e for e in cited
                if e in set(motivated_by) or stance_of.get(e, Stance.SUPPORTS).is_decisive]
    if decisive:
        return None
    readings = ", ".join(f"{e} ({stance_of[e].value})" for e in cited)
    collect = (f"collect it ({collect_with}), " if collect_with else
               "(no more evidence can be collected: this hypothesis had its last round) ")
    return (f"a {status} verdict needs decisive evidence, but {readings} is linked only as weak "
            f"or neutral; cite evidence linked as supports or contradicts, {collect}or give "
            "inconclusive, saying what evidence would decide it")
