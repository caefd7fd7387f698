"""The judge's board tools: ``give_verdict``, ``refine`` and ``request_more_evidence``.

A verdict cites only evidence linked to its hypothesis (or that motivated it), passes the
rules of :mod:`.effect_check` (no effect verdict without a heterogeneity check),
:mod:`.evidence_quality` (weak and neutral links do not decide; discounted evidence with
its reason) and :mod:`.contribution_check` (a factor's size copied from cited evidence),
and is written in one board transaction.
"""

from __future__ import annotations

from typing import Any

from d2_notebook.board import HypothesisStatus
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.contribution_check import (
    CONTRIBUTION_PROPERTIES,
    SIZE_RULE,
    read_contribution,
    row_scale,
)
from d2_notebook.detective.coverage_view import board_coverage
from d2_notebook.detective.decisions import (
    CollectorDecision,
    JudgeDecision,
    Judgement,
)
from d2_notebook.detective.effect_check import (
    CLAIM_PROPERTIES,
    RULE,
    declined_split,
    effect_refusal,
    new_heterogeneity,
)
from d2_notebook.detective.evidence_quality import (
    DISCOUNT_PROPERTIES,
    QUALITY_RULE,
    indecisive_refusal,
    verdict_discounts,
)
from d2_notebook.detective.reading_check import check_team_text
from d2_notebook.detective.refinement import cap_reached, record_declined
from d2_notebook.detective.team_tools import (
    IDS_SCHEMA,
    STRING_SCHEMA,
    evidence_id_of,
    known_hypothesis,
    one_write,
)
from d2_notebook.detective.tools import Tool, ToolError, tool


def _with_board_ids(args: dict[str, Any], log: QueryLog) -> dict[str, Any]:
    """``args`` of a verdict with each of ``log``'s query ids that became evidence
    replaced by its evidence id (:func:`.evidence_id_of`); a query id never recorded is
    refused with the fix."""
    mapped = {**args, "evidence_ids": [evidence_id_of(log, str(e))
                                       for e in args.get("evidence_ids", [])],
              "rationale": log.with_board_ids(str(args.get("rationale", "")))}
    if isinstance(args.get("contribution"), dict) and "evidence_id" in args["contribution"]:
        mapped["contribution"] = {**args["contribution"], "evidence_id": evidence_id_of(
            log, str(args["contribution"]["evidence_id"]))}
    if isinstance(args.get("discounted"), list):
        mapped["discounted"] = [
            {**item, "evidence_id": evidence_id_of(log, str(item["evidence_id"]))}
            if isinstance(item, dict) and "evidence_id" in item else item
            for item in args["discounted"]]
    return mapped


_VERDICT_PROPERTIES: dict[str, Any] = {
    "status": {"type": "string", "enum": ["supported", "contradicted", "inconclusive"]},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "rationale": {"type": "string", "description": (
        "at most about 80 words: the deciding evidence ids with their numbers, and what "
        "would change the verdict")},
    "evidence_ids": {**IDS_SCHEMA, "description": "the evidence that decides it: only evidence "
                     "linked to this hypothesis or that motivated it; at least one unless "
                     "the status is inconclusive"},
}


def verdict_tools(ctx: TeamContext, agent: str, decision: JudgeDecision | CollectorDecision,
                  hypothesis_id: str | None, *, can_send_back: bool = False,
                  can_refine: bool = False, verdict_ends_turn: bool = True,
                  log: QueryLog | None = None) -> list[Tool]:
    """``give_verdict``, and for a judge of one hypothesis ``request_more_evidence`` and
    ``refine`` (refused unless ``can_refine``).

    With ``log`` (an agent that runs and records its own queries: a collector that
    decides, the single agent), a verdict may cite this turn's query ids that became
    evidence (``Q7`` for the ``E12`` recorded from it), in ``evidence_ids``, the
    contribution, ``discounted`` and the rationale: an agent that records and decides
    in one answer cannot know the new evidence ids (a real-model single agent guessed
    them).

    The specs do not depend on ``can_send_back`` or ``can_refine`` (the first message
    says which is possible), so every judge's prompt prefix is byte-identical and cached.

    Refined children are announced to the loop at once (``ctx.on_new_hypothesis``),
    so they are examined while their siblings' work goes on.
    """
    judge_of_one = isinstance(decision, JudgeDecision) and hypothesis_id is not None
    # a judge collects by sending back (while it may); a collector or the single agent
    # runs and records queries itself
    collect_with = (("request_more_evidence" if can_send_back else None) if judge_of_one
                    else "run_sql, then record_evidence")
    properties = {**_VERDICT_PROPERTIES, **CLAIM_PROPERTIES, **DISCOUNT_PROPERTIES,
                  **CONTRIBUTION_PROPERTIES}
    if hypothesis_id is None:
        properties = {"hypothesis_id": STRING_SCHEMA, **properties}
    if log is not None:
        ids = properties["evidence_ids"]
        properties["evidence_ids"] = {**ids, "description": ids["description"] + (
            "; a query id of yours recorded as evidence (Q7) stands for the evidence "
            "recorded from it, so you may record and decide in one answer")}

    def verdict(args: dict[str, Any], *, refining: bool = False) -> str:
        if log is not None:
            args = _with_board_ids(args, log)
        target = hypothesis_id or args["hypothesis_id"]
        hyp = known_hypothesis(ctx, target)
        if hyp.status is HypothesisStatus.ABANDONED:
            raise ToolError(f"{target} was abandoned; it needs no verdict")
        links = ctx.board.list_links(hypothesis_id=target)
        linked = {link.evidence_id for link in links}
        linked |= set(hyp.motivated_by)  # the exploration it was proposed on counts too
        cited = list(args["evidence_ids"])
        if not cited and args["status"] != "inconclusive":
            raise ToolError(f"a {args['status']} verdict must cite the evidence that decides "
                            f"it: {', '.join(sorted(linked)) or 'no evidence is linked yet'}; "
                            "with no deciding evidence the verdict is inconclusive")
        foreign = [e for e in cited if e not in linked]
        if foreign:
            raise ToolError(f"{', '.join(foreign)} not linked to {target}; cite only its linked "
                            "evidence or the evidence that motivated it: "
                            f"{', '.join(sorted(linked)) or 'none'}")
        discounted = verdict_discounts(args.get("discounted", []), linked, cited, target)
        refusal = indecisive_refusal(args["status"], cited, links, hyp.motivated_by,
                                     collect_with=collect_with)
        may_refine = can_refine and not cap_reached(ctx.board, ctx.investigation_id,
                                                     ctx.settings)
        if refusal is None and not refining:
            refusal = effect_refusal(
                ctx.board, hyp, args, can_refine=may_refine,
                coverage=board_coverage(ctx.board, ctx.candidates, ctx.investigation_id))
        if refusal is not None:
            raise ToolError(refusal)
        try:
            contribution = read_contribution(ctx.board, args, cited)
        except ValueError as exc:
            raise ToolError(str(exc)) from None
        declined = declined_split(args)
        # its figures are looked up in the evidence it cites or the hypothesis links
        rationale = check_team_text(ctx, [*cited, *sorted(linked - set(cited))], target,
                                    args["rationale"])
        with one_write(ctx):  # the verdict and why it was not split, or nothing
            if declined and may_refine and not refining and new_heterogeneity(ctx.board, hyp):
                record_declined(ctx.board, hyp, declined, actor=agent)
            given = ctx.board.add_verdict(
                target, args["status"], args["confidence"], rationale.text, cited,
                author=agent, round=ctx.round, discounted=discounted,
                contribution=contribution,
                row_scale=row_scale(ctx.board, contribution) if contribution else None)
        status = HypothesisStatus(args["status"])
        if isinstance(decision, JudgeDecision):
            decision.judgement, decision.status = Judgement.VERDICT, status
        else:
            decision.verdict = status
        note = rationale.note()
        return f"{target} is {given.headline}" + (f"\n{note}" if note else "")

    async def give_verdict(args: dict[str, Any]) -> str:
        return verdict(args)

    async def request_more(args: dict[str, Any]) -> str:
        if not can_send_back:
            raise ToolError("no more evidence rounds are left; give a verdict now")
        assert isinstance(decision, JudgeDecision)
        decision.judgement, decision.hints = Judgement.MORE_EVIDENCE, args["hints"]
        return "sent back to the collector with your hints"

    async def refine(args: dict[str, Any]) -> str:
        if not can_refine:
            raise ToolError("refining is not possible for this hypothesis (your first message "
                            "says why); give a verdict instead")
        if cap_reached(ctx.board, ctx.investigation_id, ctx.settings):
            raise ToolError(f"the investigation's refinement cap "
                            f"({ctx.settings.max_refinements}) was reached while you worked "
                            "(other judges refined); give a verdict instead")
        children = args["children"]
        if len(children) < 2:
            raise ToolError("refine into at least two subgroup hypotheses")
        for child in children:
            if not str(child.get("statement", "")).strip():
                raise ToolError("every child needs a statement")
        assert isinstance(decision, JudgeDecision)
        added, before = [], (decision.judgement, decision.status)
        try:
            with one_write(ctx):  # the verdict and every child, or nothing
                result = verdict(args, refining=True)
                linked = [link.evidence_id
                          for link in ctx.board.list_links(hypothesis_id=hypothesis_id)]
                for child in children:
                    rationale = check_team_text(ctx, linked, None,
                                                str(child.get("rationale", "")),
                                                statement=str(child["statement"])).text
                    added.append(ctx.board.add_hypothesis(
                        child["statement"], rationale=rationale,
                        parent_id=hypothesis_id, author_role="judge", author=agent,
                        round=ctx.round + 1, investigation_id=ctx.investigation_id).id)
        except BaseException:
            decision.judgement, decision.status = before
            raise
        decision.judgement = Judgement.REFINED
        decision.children.extend(added)
        for child_id in decision.children:
            ctx.on_new_hypothesis(child_id)
        return f"{result}; refined into {', '.join(decision.children)}"

    rules = ("A supported or contradicted verdict must cite at least one evidence id; cite "
             "only evidence linked to the hypothesis or that motivated it; an abandoned "
             "hypothesis takes no "
             "verdict.")
    plain = {k: v for k, v in properties.items()
             if k not in CLAIM_PROPERTIES and k not in DISCOUNT_PROPERTIES
             and k not in CONTRIBUTION_PROPERTIES}
    tools = [tool("give_verdict", "Decide the hypothesis." + (" Ends your turn."
                  if verdict_ends_turn else "") + f" {rules} {QUALITY_RULE} {RULE} {SIZE_RULE}",
                  properties,
                  give_verdict,
                  required=list(plain), ends_turn=verdict_ends_turn, writes_board=True)]
    if hypothesis_id is not None and isinstance(decision, JudgeDecision):
        tools.append(tool(
            "request_more_evidence", "Send the hypothesis back for more evidence with concrete "
            "hints. Ends your turn. Refused when no evidence rounds are left (your first "
            "message says whether sending back is possible).",
            {"hints": STRING_SCHEMA}, request_more, ends_turn=True))
    if hypothesis_id is not None and isinstance(decision, JudgeDecision):
        child = {"type": "object", "required": ["statement"],
                 "properties": {"statement": {"type": "string", "minLength": 1,
                                              "description": "one testable sentence"},
                                "rationale": STRING_SCHEMA}}
        tools.append(tool(
            "refine", "Give a verdict AND split the hypothesis into refined subgroup "
            "hypotheses, examined next. Ends your turn. Refused when refining is not "
            "possible (your first message says whether it is). Needs at least two children, "
            f"each with a non-empty statement. {rules} The expected outcome when a "
            "compare_within check flagged HETEROGENEITY: one child per flagged stratum.",
            {**_as_in_give_verdict(properties),
             "children": {"type": "array", "items": child, "minItems": 2,
                          "description": "at least two subgroup hypotheses"}},
            refine, required=[*plain, "children"], ends_turn=True, writes_board=True))
    return tools


def _as_in_give_verdict(properties: dict[str, Any]) -> dict[str, Any]:
    """``refine``'s verdict fields: ``give_verdict``'s schema (the same types, enums and
    required fields, so the same answers validate) with each field described once, in
    ``give_verdict``; a judge used to read the ~6 KB of rules twice in every request."""

    def schema(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        kept = {k: schema(v) for k, v in value.items() if k not in ("description", "properties")}
        if "properties" in value:  # field names, one of which may be "description"
            kept["properties"] = {k: schema(v) for k, v in value["properties"].items()}
        return kept

    return {name: {**schema(spec), "description": "as in give_verdict"}
            for name, spec in properties.items()}

