"""The five roles (and the variants' merged roles): instructions, tools, first message.

Each role's instructions are a text file next to this module. A role function builds
the system prompt (shared rules + role instructions + the schema summary: the stable,
cacheable prefix), gives the agent its toolset, opens its turn with the board digest,
and returns what the agent decided (:class:`TurnOutcome`). Roles never call each other
and never see each other's transcripts.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from d2_notebook.detective.agent import AgentRun, run_agent
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.digest import board_digest, evidence_details
from d2_notebook.detective.sql_tools import sql_tools
from d2_notebook.detective.team_tools import (
    TurnOutcome,
    abandon_tool,
    evidence_tools,
    final_answer_tool,
    hypothesis_tools,
    orchestrator_tools,
    reporter_tools,
    submit_tool,
    verdict_tools,
)
from d2_notebook.detective.tools import Tool, Toolset


@cache
def instructions(name: str) -> str:
    """The text of ``roles/<name>.txt``."""
    return resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")


def system_prompt(ctx: TeamContext, role_file: str) -> str:
    """Shared rules, the role's instructions and the schema: identical for every agent of
    a role within an investigation, so providers can cache it."""
    return "\n\n".join([
        instructions("shared").format(question=ctx.question),
        instructions(role_file),
        f"DATABASE SCHEMA ({ctx.sql.dialect.title}):\n" + ctx.schema_summary,
    ])


async def _turn(ctx: TeamContext, *, role: str, agent: str, role_file: str, first: str,
                tools: list[Tool], log: QueryLog | None = None, system: str | None = None,
                max_steps: int | None = None, max_tokens: int = 4096) -> AgentRun:
    stuck = log.stuck if log is not None else (lambda: None)
    return await run_agent(
        ctx.model, role=role, agent=agent,
        system=system if system is not None else system_prompt(ctx, role_file),
        first_message=first, toolset=Toolset(tools), sequencer=ctx.sequencer,
        max_steps=max_steps or ctx.settings.max_steps, stuck=stuck, max_tokens=max_tokens,
    )


def _digest(ctx: TeamContext, focus: str | None = None) -> str:
    return board_digest(ctx.board, investigation_id=ctx.investigation_id, focus=focus)


async def hypothesize(ctx: TeamContext, *, guidance: str | None = None,
                      agent: str = "hypothesizer") -> TurnOutcome:
    """Explore the data and add competing hypotheses."""
    outcome, log = TurnOutcome(), QueryLog()
    first = f"THE BOARD NOW:\n{_digest(ctx)}\n\n"
    first += (f"The orchestrator asks for more hypotheses: {guidance}" if guidance else
              "Explore the data and add every competing hypothesis it supports.")
    await _turn(ctx, role="hypothesizer", agent=agent, role_file="hypothesizer", first=first,
                tools=sql_tools(ctx, log) + hypothesis_tools(
                    ctx, log, agent, "hypothesizer", outcome, may_add_none=bool(guidance)),
                log=log)
    return outcome


async def orchestrate(ctx: TeamContext, *, can_ask_for_more: bool,
                      agent: str = "orchestrator") -> TurnOutcome:
    """Decide the next step from the board digest alone."""
    outcome = TurnOutcome()
    first = (f"Round {ctx.round} of at most {ctx.settings.max_rounds}. "
             f"Collectors available: {ctx.settings.collectors}.\n\n"
             f"THE BOARD NOW:\n{_digest(ctx)}\n\nDecide the next step.")
    await _turn(ctx, role="orchestrator", agent=agent, role_file="orchestrator", first=first,
                tools=orchestrator_tools(ctx, agent, outcome, can_ask_for_more=can_ask_for_more))
    return outcome


async def plan_merged(ctx: TeamContext, *, agent: str = "planner") -> TurnOutcome:
    """The ``merged_planner`` variant: one agent explores, adds hypotheses and steers."""
    outcome, log = TurnOutcome(), QueryLog()
    first = (f"Round {ctx.round} of at most {ctx.settings.max_rounds}.\n\n"
             f"THE BOARD NOW:\n{_digest(ctx)}\n\nAdd hypotheses if needed, then decide.")
    tools = (sql_tools(ctx, log) + hypothesis_tools(ctx, log, agent, "planner", outcome)[:1]
             + orchestrator_tools(ctx, agent, outcome, can_ask_for_more=False)[:2]
             + orchestrator_tools(ctx, agent, outcome, can_ask_for_more=False)[3:])
    await _turn(ctx, role="planner", agent=agent, role_file="planner", first=first,
                tools=tools, log=log)
    return outcome


async def collect(ctx: TeamContext, hypothesis_id: str, *, hints: str | None = None,
                  judge_themselves: bool = False) -> TurnOutcome:
    """Gather evidence for and against one hypothesis (and, in ``no_judge``, decide)."""
    agent = f"collector-{hypothesis_id}"
    outcome, log = TurnOutcome(), QueryLog()
    first = f"YOUR HYPOTHESIS: {hypothesis_id}\n\nTHE BOARD NOW:\n{_digest(ctx, hypothesis_id)}"
    motivating = list(ctx.board.get_hypothesis(hypothesis_id).motivated_by)
    if motivating:
        first += ("\n\nTHE EXPLORATION THAT SUGGESTED IT (context, not yet evidence for it):\n"
                  + evidence_details(ctx.board, motivating, max_chars=3_000))
    if hints:
        first += f"\n\nTHE JUDGE SENT IT BACK WITH THESE HINTS: {hints}"
    tools = sql_tools(ctx, log) + evidence_tools(ctx, log, agent, "collector", hypothesis_id)
    if judge_themselves:
        first += "\n\nIn this team you also give the verdict when your evidence is enough."
        tools += verdict_tools(ctx, agent, outcome, hypothesis_id, can_send_back=False,
                               can_refine=False)
    else:
        tools.append(submit_tool(outcome, ctx, hypothesis_id))
    await _turn(ctx, role="collector", agent=agent, role_file="collector", first=first,
                tools=tools, log=log)
    return outcome


async def judge(ctx: TeamContext, hypothesis_id: str, *, can_send_back: bool) -> TurnOutcome:
    """Weigh the linked evidence of one hypothesis: verdict, send back, or refine."""
    agent = f"judge-{hypothesis_id}"
    outcome = TurnOutcome()
    send_back = "possible" if can_send_back else "no longer possible"
    first = (f"HYPOTHESIS TO JUDGE: {hypothesis_id}\n"
             f"Sending it back for more evidence is {send_back}."
             f"\n\nTHE BOARD NOW:\n{_digest(ctx, hypothesis_id)}")
    submitted = [e.payload["summary"] for e in ctx.board.events(kinds=["collector.submitted"])
                 if e.payload.get("hypothesis_id") == hypothesis_id]
    if submitted:
        first += f"\n\nTHE COLLECTOR'S SUMMARY: {submitted[-1]}"
    linked = [link.evidence_id for link in ctx.board.list_links(hypothesis_id=hypothesis_id)]
    if linked:
        first += f"\n\nTHE LINKED EVIDENCE IN FULL:\n{evidence_details(ctx.board, linked)}"
    tools = verdict_tools(ctx, agent, outcome, hypothesis_id, can_send_back=can_send_back,
                          can_refine=True)
    await _turn(ctx, role="judge", agent=agent, role_file="judge", first=first, tools=tools)
    return outcome


async def write_report(ctx: TeamContext, *, unexamined_note: str,
                       agent: str = "reporter") -> TurnOutcome:
    """Mark redundant evidence and write the report."""
    outcome = TurnOutcome()
    first = f"THE BOARD NOW:\n{_digest(ctx)}"
    cited = list(dict.fromkeys(e for v in ctx.board.list_verdicts()
                               if v.investigation_id == ctx.investigation_id
                               for e in v.evidence_ids))
    if cited:
        first += ("\n\nTHE EVIDENCE THE VERDICTS CITE:\n"
                  + evidence_details(ctx.board, cited, max_rows=3, max_chars=5_000,
                                     max_sql=240))
    if unexamined_note:
        first += f"\n\nLEFT UNEXAMINED: {unexamined_note}"
    await _turn(ctx, role="reporter", agent=agent, role_file="reporter", first=first,
                tools=reporter_tools(ctx, agent, outcome), max_tokens=8192)
    return outcome


async def investigate_alone(ctx: TeamContext, *, agent: str = "detective") -> TurnOutcome:
    """The ``single_agent_board`` variant: one agent does every job on the board."""
    outcome, log = TurnOutcome(), QueryLog()
    tools = (sql_tools(ctx, log)
             + hypothesis_tools(ctx, log, agent, "detective", outcome)[:1]
             + evidence_tools(ctx, log, agent, "detective", None)
             + verdict_tools(ctx, agent, TurnOutcome(), None, can_send_back=False,
                             can_refine=False)
             + [abandon_tool(ctx, agent)]
             + reporter_tools(ctx, agent, outcome)[1:])
    # give_verdict must not end this agent's turn: only write_report does.
    tools = [t if t.name != "give_verdict" else type(t)(t.spec, t.handler, False, True)
             for t in tools]
    first = f"THE BOARD NOW:\n{_digest(ctx)}\n\nInvestigate."
    await _turn(ctx, role="detective", agent=agent, role_file="single_agent", first=first,
                tools=tools, log=log, max_steps=ctx.settings.max_steps_alone,
                max_tokens=8192)
    return outcome


async def react_baseline(ctx: TeamContext, *, agent: str = "react") -> tuple[TurnOutcome,
                                                                               QueryLog]:
    """The ``react_sql`` baseline: one ReAct agent, the SQL tool only, no board."""
    outcome, log = TurnOutcome(), QueryLog()
    system = (instructions("react_sql").format(question=ctx.question)
              + f"\n\nDATABASE SCHEMA ({ctx.sql.dialect.title}):\n" + ctx.schema_summary)
    await _turn(ctx, role="react", agent=agent, role_file="", first=ctx.question,
                tools=[*sql_tools(ctx, log)[:1], final_answer_tool(outcome, log)], log=log,
                system=system, max_steps=ctx.settings.max_steps_alone, max_tokens=8192)
    return outcome, log
