"""One re-judging turn: the judge sees a stale verdict's old and new evidence and
confirms, revises or refines it.

The judge's toolset is its usual one (``give_verdict``, ``refine``) with
``confirm_verdict`` instead of ``request_more_evidence``: a re-judge sends nothing back
to a collector (a refinement's children are collected, as in a run).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from d2_notebook.board import Evidence, Recheck, RecheckOutcome, RecheckRun, Verdict
from d2_notebook.detective.agent import run_agent
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.contribution_check import row_scale
from d2_notebook.detective.coverage_view import board_coverage
from d2_notebook.detective.decisions import JudgeDecision, Judgement
from d2_notebook.detective.digest import board_digest
from d2_notebook.detective.evidence_view import evidence_details
from d2_notebook.detective.prompt_budget import evidence_budget
from d2_notebook.detective.refinement import refine_gate
from d2_notebook.detective.rejudge.brief import evidence_lines, rejudge_message
from d2_notebook.detective.roles import system_prompt
from d2_notebook.detective.tools import Tool, ToolError, Toolset, tool
from d2_notebook.detective.verdict_tools import verdict_tools

__all__ = ["ROLE_FILE", "Rejudgement", "judge_again"]

ROLE_FILE = "rejudge"
AGENT_PREFIX = "rejudge-"
"""Re-judging agents are named ``rejudge-H<n>`` (their role is ``judge``)."""


@dataclass
class Rejudgement:
    """What the judge did: ``decision`` as for any judge, ``confirmed`` when it kept the
    verdict with ``confirm_verdict``."""

    decision: JudgeDecision
    confirmed: bool = False


async def judge_again(ctx: TeamContext, hypothesis_id: str, previous: Verdict,
                      run: RecheckRun, rechecks: Mapping[str, Recheck],
                      reruns: Mapping[str, Evidence]) -> Rejudgement:
    """Ask the judge to re-judge ``hypothesis_id``, whose verdict ``previous`` went stale
    in re-check ``run`` (``rechecks``: that run's records by evidence id; ``reruns``:
    the evidence recorded from the changed queries' new results, by the id they repeat).
    """
    agent = f"{AGENT_PREFIX}{hypothesis_id}"
    outcome = Rejudgement(JudgeDecision())
    hypothesis = ctx.board.get_hypothesis(hypothesis_id)
    gate = refine_gate(ctx.board, hypothesis, ctx.settings,
                       depth_allows=ctx.round < ctx.settings.max_depth)
    built = verdict_tools(ctx, agent, outcome.decision, hypothesis_id, can_send_back=False,
                          can_refine=gate.possible)
    tools = [_confirm_tool(ctx, agent, outcome, previous, rechecks, reruns)] + [
        t for t in built if t.name != "request_more_evidence"]
    cited = list(previous.evidence_ids)
    lines = evidence_lines(ctx.board, hypothesis_id, cited, rechecks, reruns)
    refining = "possible" if gate.possible else f"not possible: {gate.why_not}"
    digest = board_digest(ctx.board, investigation_id=ctx.investigation_id,
                          focus=hypothesis_id, coverage=board_coverage(
                              ctx.board, ctx.candidates, ctx.investigation_id))
    system = system_prompt(ctx, ROLE_FILE)
    first = rejudge_message(hypothesis, previous, run, lines, refining=refining,
                            digest=digest, evidence="")
    shown = cited + [reruns[e].id for e in cited if e in reruns]
    budget = evidence_budget(ctx, system=system, tools=tools, first_message=first,
                             max_output_tokens=4096)
    evidence = await asyncio.to_thread(evidence_details, ctx.board, shown,
                                       budget_tokens=budget, focus=hypothesis_id)
    first = rejudge_message(hypothesis, previous, run, lines, refining=refining,
                            digest=digest, evidence=evidence)
    await run_agent(ctx.model_for("judge"), role="judge", agent=agent, system=system,
                    first_message=first, toolset=Toolset(tools), sequencer=ctx.sequencer,
                    max_steps=ctx.settings.max_steps)
    return outcome


def _confirm_tool(ctx: TeamContext, agent: str, outcome: Rejudgement, previous: Verdict,
                  rechecks: Mapping[str, Recheck], reruns: Mapping[str, Evidence]) -> Tool:
    async def confirm(args: dict[str, Any]) -> str:
        failing = [e for e in previous.evidence_ids if e in rechecks
                   and rechecks[e].outcome is RecheckOutcome.FAILS]
        if failing:
            raise ToolError(f"{', '.join(failing)} no longer runs "
                            f"({rechecks[failing[0]].detail}); a verdict cannot rest on it: "
                            "revise it with give_verdict instead")
        cited = [reruns[e].id if e in reruns else e for e in previous.evidence_ids]
        size, dropped = previous.contribution, ""
        if size is not None and size.evidence_id in reruns:  # its numbers may have moved
            size, dropped = None, (f"; its size was read from {size.evidence_id}, which "
                                   "changed: it is not kept (give_verdict with the re-run's "
                                   "size to state one)")
        given = ctx.board.add_verdict(
            previous.hypothesis_id, previous.status, previous.confidence, args["rationale"],
            cited, author=agent, round=ctx.round, contribution=size,
            row_scale=row_scale(ctx.board, size) if size is not None else None)
        outcome.decision.judgement = Judgement.VERDICT
        outcome.decision.status = previous.status
        outcome.confirmed = True
        return (f"{previous.hypothesis_id} stays {given.headline}, citing {', '.join(cited)}"
                f"{dropped}")

    return tool("confirm_verdict", "Keep your earlier verdict: it still holds on the new data. "
                "It is recorded again (same status, confidence and size, the size only when "
                "its evidence is unchanged), citing the re-run evidence instead of the old. "
                "Ends your turn. Refused when a cited evidence no longer runs.",
                {"rationale": {"type": "string", "description": (
                    "why the change does not touch the verdict, citing the re-run ids")}},
                confirm, ends_turn=True, writes_board=True)
