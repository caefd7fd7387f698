"""The five roles (and the variants' merged roles): instructions, tools, first message.

Each role's instructions are a text file next to this module. A role function builds
the system prompt (shared rules + role instructions + the schema summary: the stable,
cacheable prefix), gives the agent its toolset, opens its turn with the board digest,
and returns what the agent decided (each role its own type, from
:mod:`~d2_notebook.detective.decisions`). The tools a role gets are the ones the
investigation's :class:`~d2_notebook.detective.variant.Variant` names for it. Roles
never call each other and never see each other's transcripts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from functools import cache
from importlib import resources

from d2_notebook.board import HypothesisStatus
from d2_notebook.detective.agent import AgentRun, run_agent
from d2_notebook.detective.analysis_tools import analysis_tools
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.coverage_view import BoardCoverage, board_coverage
from d2_notebook.detective.decisions import (
    CollectorDecision,
    HypothesizerDecision,
    JudgeDecision,
    OrchestratorDecision,
    ReactAnswer,
    ReportDecision,
)
from d2_notebook.detective.digest import board_digest, other_hypotheses
from d2_notebook.detective.evidence_view import evidence_details
from d2_notebook.detective.prompt_budget import evidence_budget
from d2_notebook.detective.read_evidence import read_evidence_tool
from d2_notebook.detective.refinement import refine_gate
from d2_notebook.detective.reporter_brief import reporter_brief
from d2_notebook.detective.sql_tools import sql_tools
from d2_notebook.detective.team_tools import (
    abandon_tool,
    evidence_tools,
    final_answer_tool,
    hypothesis_tools,
    orchestrator_tools,
    reporter_tools,
    submit_tool,
)
from d2_notebook.detective.tools import Tool, Toolset
from d2_notebook.detective.variant import Role
from d2_notebook.detective.verdict_tools import verdict_tools


@cache
def instructions(name: str) -> str:
    """The text of ``roles/<name>.txt``."""
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")


REPORT_RULES_MARK = "<<REPORT RULES>>"
"""Where a role's instructions take the reporter's rules for the report, word for word."""


def report_rules() -> str:
    """The reporter's rules for ``write_report`` (its sections, how sizes are described,
    numbers and citations): the text of ``reporter.txt`` from its ``write_report`` step on,
    so a single agent reports under exactly the team reporter's rules."""
    text = instructions("reporter")
    start = text.index("write_report:")
    return text[start:].strip()


def role_instructions(role_file: str) -> str:
    """``roles/<role_file>.txt`` with the reporter's rules put in at :data:`REPORT_RULES_MARK`."""
    return instructions(role_file).replace(REPORT_RULES_MARK, report_rules())


def system_prompt(ctx: TeamContext, role_file: str) -> str:
    """Shared rules, the role's instructions and the schema with its join graph: identical
    for every agent and every turn of a role within an investigation (what changes goes
    in the first message), so providers cache it with the role's tool specs."""
    return "\n\n".join([
        instructions("shared").format(question=ctx.question),
        role_instructions(role_file),
        f"DATABASE SCHEMA ({ctx.sql.dialect.title}):\n" + ctx.schema_summary,
    ])


ONE_CALL_ROLES = frozenset({Role.JUDGE, Role.ORCHESTRATOR, Role.REPORTER})
"""Roles whose turn is normally one call: they decide (or write the report) on what their
first message shows, so it is not written to the provider's cache (see ``run_agent``)."""


async def _turn(ctx: TeamContext, *, role: str, agent: str, role_file: str, first: str,
                tools: list[Tool], log: QueryLog | None = None, system: str | None = None,
                max_steps: int | None = None, max_tokens: int = 4096) -> AgentRun:
    stuck = log.stuck if log is not None else (lambda: None)
    return await run_agent(
        ctx.model_for(role), role=role, agent=agent,
        system=system if system is not None else system_prompt(ctx, role_file),
        first_message=first, toolset=Toolset(tools), sequencer=ctx.sequencer,
        max_steps=max_steps or ctx.settings.max_steps, stuck=stuck, max_tokens=max_tokens,
        cache_first_message=role not in ONE_CALL_ROLES,
    )


async def _evidence(ctx: TeamContext, evidence_ids: list[str], budget: int,
                    focus: str | None = None) -> str:
    """:func:`evidence_details` off the event loop (summarising large results takes time)."""
    return await asyncio.to_thread(evidence_details, ctx.board, evidence_ids,
                                   budget_tokens=budget, focus=focus)


def _digest(ctx: TeamContext, focus: str | None = None) -> str:
    coverage = board_coverage(ctx.board, ctx.candidates, ctx.investigation_id)
    return _earlier(ctx) + board_digest(ctx.board, investigation_id=ctx.investigation_id,
                                        focus=focus, coverage=coverage,
                                        other_evidence=focus is not None)


def _earlier(ctx: TeamContext) -> str:
    """A follow-up's view of the investigation it follows, before its own board."""
    return "" if ctx.follow_up is None else f"{ctx.follow_up.digest}\n\nTHIS INVESTIGATION:\n"


def _pick(ctx: TeamContext, role: Role, built: Iterable[Tool]) -> list[Tool]:
    """The tools the variant names for ``role``, in its order, from those ``built``
    (the same specs in every turn of the role, so its prompt prefix is cached)."""
    by_name = {t.name: t for t in built}
    names = list(ctx.settings.variant.tools_of(role))
    missing = [n for n in names if n not in by_name]
    if missing:
        raise ValueError(f"variant {ctx.settings.variant.name!r} gives {role.value} tools "
                         f"{missing} that this role cannot build")
    return [by_name[n] for n in names]


async def hypothesize(ctx: TeamContext, *, guidance: str | None = None,
                      agent: str = "hypothesizer") -> HypothesizerDecision:
    """Explore the data and add competing hypotheses (each is queued as it is added)."""
    decision, log = HypothesizerDecision(), QueryLog()
    first = f"THE BOARD NOW:\n{_digest(ctx)}\n\n"
    first += (f"The orchestrator asks for more hypotheses: {guidance}" if guidance else
              "Explore the data and add every competing hypothesis it supports.")
    built = (sql_tools(ctx, log) + analysis_tools(ctx, log)
             + hypothesis_tools(ctx, log, agent, "hypothesizer", decision,
                                may_add_none=bool(guidance)))
    await _turn(ctx, role="hypothesizer", agent=agent, role_file="hypothesizer", first=first,
                tools=_pick(ctx, Role.HYPOTHESIZER, built), log=log)
    return decision


def _steering_request(ctx: TeamContext, new: list[str]) -> str:
    if new:
        statuses = {h: ctx.board.get_hypothesis(h).status for h in new}
        groups = (([h for h in new if statuses[h].is_settled], "already decided"),
                  ([h for h in new if statuses[h] is HypothesisStatus.INVESTIGATING],
                   "being examined by their judges"),
                  ([h for h in new if not statuses[h].is_settled
                    and statuses[h] is not HypothesisStatus.INVESTIGATING], "queued"))
        said = "; ".join(f"{', '.join(ids)} {'is' if len(ids) == 1 else 'are'} {what}"
                         for ids, what in groups if ids)
        queued = groups[2][0]
        task = ("Triage the queued ones: abandon duplicates and off-question ones, ask for "
                "more if coverage is thin, otherwise carry on." if queued else
                "None is left to abandon: ask for more if coverage is thin, otherwise carry "
                "on.")
        return f"NEW HYPOTHESES: {', '.join(new)} ({said}). {task}"
    return ("Every hypothesis on the board is settled. Finish if coverage is enough, or "
            "ask for more hypotheses if it is thin.")


async def orchestrate(ctx: TeamContext, *, new: list[str], can_ask_for_more: bool,
                      agent: str = "orchestrator") -> OrchestratorDecision:
    """Steer from the board digest alone: triage the ``new`` hypotheses, or (when
    ``new`` is empty, every hypothesis being settled) decide whether to end."""
    decision = OrchestratorDecision()
    hypothesizer = ("The hypothesizer has calls left." if can_ask_for_more else
                    "The hypothesizer has no calls left: carry on or finish.")
    first = (f"THE BOARD NOW:\n{_digest(ctx)}\n\n{_steering_request(ctx, new)} "
             f"{hypothesizer}")
    built = orchestrator_tools(ctx, agent, decision, can_ask_for_more=can_ask_for_more)
    await _turn(ctx, role="orchestrator", agent=agent, role_file="orchestrator", first=first,
                tools=_pick(ctx, Role.ORCHESTRATOR, built))
    return decision


async def plan_merged(ctx: TeamContext, *, agent: str = "planner") -> OrchestratorDecision:
    """The ``merged_planner`` variant: one agent explores, adds hypotheses and steers."""
    decision, log = OrchestratorDecision(), QueryLog()
    first = f"THE BOARD NOW:\n{_digest(ctx)}\n\n"
    first += ("Add hypotheses if needed, then carry on or finish." if _has_hypotheses(ctx)
              else "Explore the data, add every competing hypothesis, then carry on.")
    built = (sql_tools(ctx, log) + analysis_tools(ctx, log)
             + hypothesis_tools(ctx, log, agent, "planner", decision, may_add_none=True)
             + orchestrator_tools(ctx, agent, decision, can_ask_for_more=False))
    await _turn(ctx, role="planner", agent=agent, role_file="planner", first=first,
                tools=_pick(ctx, Role.PLANNER, built), log=log)
    return decision


def _has_hypotheses(ctx: TeamContext) -> bool:
    return bool(ctx.board.list_hypotheses(investigation_id=ctx.investigation_id))


async def collect(ctx: TeamContext, hypothesis_id: str, *,
                  hints: str | None = None) -> CollectorDecision:
    """Gather evidence for and against one hypothesis (and, when the variant gives
    collectors ``give_verdict``, decide it)."""
    agent = f"collector-{hypothesis_id}"
    decision, log = CollectorDecision(), QueryLog()
    hypothesis = ctx.board.get_hypothesis(hypothesis_id)
    first = (f"YOUR HYPOTHESIS: {hypothesis_id}: {hypothesis.statement}"
             f"\n\nTHE BOARD NOW:\n{_digest(ctx, hypothesis_id)}")
    if hints:
        first += f"\n\nTHE JUDGE SENT IT BACK WITH THESE HINTS: {hints}"
    if "give_verdict" in ctx.settings.variant.tools_of(Role.COLLECTOR):
        first += "\n\nIn this team you also give the verdict when your evidence is enough."
    built = (sql_tools(ctx, log) + analysis_tools(ctx, log)
             + evidence_tools(ctx, log, agent, "collector", hypothesis_id)
             + [read_evidence_tool(ctx, hypothesis_id)]
             + verdict_tools(ctx, agent, decision, hypothesis_id, log=log)
             + [submit_tool(decision, ctx, hypothesis_id, log)])
    tools = _pick(ctx, Role.COLLECTOR, built)
    if hypothesis.motivated_by:  # a tenth of the room: the turn grows with its own queries
        budget = evidence_budget(ctx, system=system_prompt(ctx, "collector"), tools=tools,
                                 first_message=first, max_output_tokens=4096, share=0.1)
        first += ("\n\nTHE EXPLORATION THAT SUGGESTED IT (context, not yet evidence for it):\n"
                  + await _evidence(ctx, list(hypothesis.motivated_by), budget,
                                    focus=hypothesis_id))
    await _turn(ctx, role="collector", agent=agent, role_file="collector", first=first,
                tools=tools, log=log)
    return decision


async def judge(ctx: TeamContext, hypothesis_id: str, *, can_send_back: bool,
                can_refine: bool, summary: str | None) -> JudgeDecision:
    """Weigh the linked evidence of one hypothesis: verdict, send back, or (below the
    depth limit) refine. ``summary`` is the collector's hand-over."""
    agent = f"judge-{hypothesis_id}"
    decision = JudgeDecision()
    send_back = "possible" if can_send_back else "no longer possible"
    hypothesis = ctx.board.get_hypothesis(hypothesis_id)
    gate = refine_gate(ctx.board, hypothesis, ctx.settings, depth_allows=can_refine)
    refining = "possible" if gate.possible else f"not possible: {gate.why_not}"
    statement = hypothesis.statement
    first = (f"HYPOTHESIS TO JUDGE: {hypothesis_id}: {statement}\n"
             f"Sending it back for more evidence is {send_back}. "
             f"Refining it is {refining}."
             f"\n\nTHE BOARD NOW:\n{_digest(ctx, hypothesis_id)}")
    siblings = (other_hypotheses(ctx.board, ctx.investigation_id, hypothesis_id)
                if gate.possible else "")
    if siblings:
        first += f"\n{siblings}"
    if summary:
        first += f"\n\nTHE COLLECTOR'S SUMMARY: {summary}"
    linked = [link.evidence_id for link in ctx.board.list_links(hypothesis_id=hypothesis_id)]
    built = (verdict_tools(ctx, agent, decision, hypothesis_id, can_send_back=can_send_back,
                           can_refine=gate.possible)
             + evidence_tools(ctx, QueryLog(), agent, "judge", hypothesis_id)
             + [read_evidence_tool(ctx, hypothesis_id)])
    tools = _pick(ctx, Role.JUDGE, built)  # link_evidence of the two evidence tools
    if linked:
        budget = evidence_budget(ctx, system=system_prompt(ctx, "judge"), tools=tools,
                                 first_message=first, max_output_tokens=4096)
        first += ("\n\nTHE LINKED EVIDENCE (every piece; large results summarised):\n"
                  + await _evidence(ctx, linked, budget, focus=hypothesis_id))
    context = [e for e in hypothesis.motivated_by if e not in linked]
    if context:  # what the hypothesis rests on, readable (it was a title only): a tenth
        budget = evidence_budget(ctx, system=system_prompt(ctx, "judge"), tools=tools,
                                 first_message=first, max_output_tokens=4096, share=0.1)
        first += ("\n\nTHE EXPLORATION THAT SUGGESTED IT (not linked: context, not evidence "
                  "for your verdict unless you link_evidence it):\n"
                  + await _evidence(ctx, context, budget, focus=hypothesis_id))
    await _turn(ctx, role="judge", agent=agent, role_file="judge", first=first, tools=tools)
    return decision


async def write_report(ctx: TeamContext, *, unexamined_note: str,
                       not_refined: Sequence[str], coverage: BoardCoverage | None,
                       agent: str = "reporter") -> ReportDecision:
    """Mark redundant evidence and write the report, from the
    :func:`~d2_notebook.detective.reporter_brief.reporter_brief` of the board, what was
    left unexamined and the splits not made (``not_refined``: the lines of
    :func:`~d2_notebook.detective.refinement.unmade_refinements`), as the loop, which
    appends the board's sections after the report, computed them."""
    decision = ReportDecision()
    first = _earlier(ctx) + await asyncio.to_thread(reporter_brief, ctx.board,
                                                    ctx.investigation_id, coverage=coverage)
    if unexamined_note:
        first += f"\n\nLEFT UNEXAMINED: {unexamined_note}"
    if not_refined:
        first += "\n\nNOT REFINED:\n" + "\n".join(not_refined)
    tools = _pick(ctx, Role.REPORTER, reporter_tools(ctx, agent, decision))
    await _turn(ctx, role="reporter", agent=agent, role_file="reporter", first=first,
                tools=tools, max_tokens=8192)
    return decision


async def investigate_alone(ctx: TeamContext, *, agent: str = "detective") -> ReportDecision:
    """The ``single_agent_board`` variant: one agent does every job on the board; only
    ``write_report`` ends its turn."""
    decision, log = ReportDecision(), QueryLog()
    built = (sql_tools(ctx, log) + analysis_tools(ctx, log)
             + hypothesis_tools(ctx, log, agent, "detective", HypothesizerDecision())
             + evidence_tools(ctx, log, agent, "detective", None)
             + verdict_tools(ctx, agent, JudgeDecision(), None, verdict_ends_turn=False,
                             log=log)
             + [abandon_tool(ctx, agent)] + reporter_tools(ctx, agent, decision, log))
    first = f"THE BOARD NOW:\n{_digest(ctx)}\n\nInvestigate."
    await _turn(ctx, role="detective", agent=agent, role_file="single_agent", first=first,
                tools=_pick(ctx, Role.DETECTIVE, built), log=log,
                max_steps=ctx.settings.max_steps_alone, max_tokens=8192)
    return decision


async def react_baseline(ctx: TeamContext, *,
                         agent: str = "react") -> tuple[ReactAnswer, QueryLog]:
    """The ``react_sql`` baseline: one ReAct agent, the SQL tool only, no board."""
    decision, log = ReactAnswer(), QueryLog()
    system = (instructions("react_sql").format(question=ctx.question)
              + f"\n\nDATABASE SCHEMA ({ctx.sql.dialect.title}):\n" + ctx.schema_summary)
    built = [*sql_tools(ctx, log), final_answer_tool(decision, log)]
    await _turn(ctx, role="react", agent=agent, role_file="", first=ctx.question,
                tools=_pick(ctx, Role.REACT, built), log=log, system=system,
                max_steps=ctx.settings.max_steps_alone, max_tokens=8192)
    return decision, log
