"""Refinement only where it pays: a per-investigation cap, no second split of a child
without a new material difference, every split not made listed in the report, and the
queue breadth before depth. Real board, real hospital database, real compare_within."""

from __future__ import annotations

import asyncio

import pytest

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within
from d2_notebook.datasets import hospital
from d2_notebook.detective import roles
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.decisions import JudgeDecision
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.refinement import (
    queue_rank,
    refine_gate,
    refinements_made,
    unmade_refinements,
)
from d2_notebook.detective.report import board_sections
from d2_notebook.detective.scheduler import BranchScheduler
from d2_notebook.detective.settings import DEFAULT_MAX_REFINEMENTS, InvestigationSettings
from d2_notebook.detective.sql_tools import analysis_description
from d2_notebook.detective.tools import Toolset
from d2_notebook.detective.verdict_tools import verdict_tools
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import ToolCallPart
from d2_notebook.llm.offline import FunctionModel, text, tool_call

SOURCE = ("admissions a JOIN treatments t USING (admission_id) "
          "JOIN outcomes o USING (admission_id)")
METRIC = "avg(CASE WHEN o.died THEN 1 ELSE 0 END)"


@pytest.fixture(scope="module")
def sql() -> GuardedSQL:
    return GuardedSQL(hospital.create())


@pytest.fixture
def ctx(board: Board, sql: GuardedSQL) -> TeamContext:
    investigation = board.start_investigation("q")
    return TeamContext(board=board, sql=sql, model=FunctionModel(lambda r: text("")),
                       investigation_id=investigation.id, question="q", schema_summary="",
                       settings=InvestigationSettings(max_refinements=1))


def _check(ctx: TeamContext, hypothesis_id: str) -> str:
    """A real compare_within linked to the hypothesis (it flags heterogeneity)."""
    result = compare_within(ctx.sql, source=SOURCE, metric=METRIC, exposure="t.drug",
                            value="Virexa", reference="Standard care")
    evidence = ctx.board.add_evidence(result.sql, result.frame,
                                      description=analysis_description(result, ""),
                                      investigation_id=ctx.investigation_id)
    ctx.board.link(evidence.id, hypothesis_id, "supports", actor="collector")
    return evidence.id


def _hypothesis(ctx: TeamContext, statement: str, parent: str | None = None,
                author_role: str = "hypothesizer"):
    return ctx.board.add_hypothesis(statement, parent_id=parent, author_role=author_role,
                                    investigation_id=ctx.investigation_id)


def _refine(ctx: TeamContext, parent_id: str) -> None:
    for side in ("one", "other"):
        _hypothesis(ctx, f"{parent_id} holds in the {side} subgroup", parent_id, "judge")


def test_the_cap_has_a_documented_default_and_bad_values_are_refused() -> None:
    assert InvestigationSettings().max_refinements == DEFAULT_MAX_REFINEMENTS == 4
    with pytest.raises(InvalidRecordError, match="max_refinements must be at least 0"):
        InvestigationSettings(max_refinements=-1)
    assert InvestigationSettings.from_dict({"collectors": 2}).max_refinements == 4


async def test_the_cap_stops_refinement_and_the_split_not_made_is_listed(ctx) -> None:
    first = _hypothesis(ctx, "Option V changes the rate")
    second = _hypothesis(ctx, "Option V changes the rate for the old")
    check = _check(ctx, second.id)
    settings = ctx.settings
    assert refine_gate(ctx.board, second, settings, depth_allows=True).possible
    _refine(ctx, first.id)
    assert refinements_made(ctx.board, ctx.investigation_id) == 1
    gate = refine_gate(ctx.board, second, settings, depth_allows=True)
    assert not gate.possible and "refinement cap (1) is reached" in gate.why_not
    # With refining impossible the judge's verdict is taken, and the split not made is
    # listed with the difference its check found.
    tools = verdict_tools(ctx, "judge", JudgeDecision(), second.id, can_refine=False)
    result = await Toolset(tools).call(ToolCallPart("c", "give_verdict", {
        "status": "supported", "confidence": 0.7, "rationale": "r", "evidence_ids": [check]}))
    assert not result.is_error, result.content
    [unmade] = unmade_refinements(ctx.board, ctx.investigation_id, settings)
    assert unmade.hypothesis_id == second.id
    assert unmade.line().startswith(f"Not refined: {second.id} by has comorbidities")
    assert f"({check})" in unmade.line() and "refinement cap (1) was reached" in unmade.line()


async def test_a_judge_may_decline_a_split_that_does_not_matter_and_it_is_listed(ctx):
    hyp = _hypothesis(ctx, "Option V changes the rate")
    check = _check(ctx, hyp.id)
    verdict = {"status": "supported", "confidence": 0.7, "rationale": "r",
               "evidence_ids": [check], "claim_kind": "effect"}
    tools = Toolset(verdict_tools(ctx, "judge-H1", JudgeDecision(), hyp.id, can_refine=True))
    refused = await tools.call(ToolCallPart("c", "give_verdict", verdict))
    assert refused.is_error and "flagged HETEROGENEITY" in refused.content
    assert "no_refine_reason" in refused.content  # the refusal names the way out
    assert ctx.board.get_hypothesis(hyp.id).status.value == "proposed"
    reason = "the comorbidity strata differ by less than a decision turns on"
    taken = await tools.call(ToolCallPart("d", "give_verdict",
                                          {**verdict, "no_refine_reason": reason}))
    assert not taken.is_error, taken.content
    assert ctx.board.get_hypothesis(hyp.id).status.value == "supported"
    [unmade] = unmade_refinements(ctx.board, ctx.investigation_id, ctx.settings)
    assert unmade.hypothesis_id == hyp.id
    assert unmade.line().endswith(f"— its judge: {reason}")
    assert refinements_made(ctx.board, ctx.investigation_id) == 0
    # the reason is a model's text: it stays on its line in the report
    other = _hypothesis(ctx, "Option V changes the rate again")
    check = _check(ctx, other.id)
    taken = await Toolset(verdict_tools(ctx, "judge-H2", JudgeDecision(), other.id,
                                        can_refine=True)).call(ToolCallPart("e", "give_verdict", {
        **verdict, "evidence_ids": [check],
        "no_refine_reason": "too small\n## Injected heading\n- a list"}))
    assert not taken.is_error, taken.content
    line = next(u.line() for u in unmade_refinements(ctx.board, ctx.investigation_id,
                                                     ctx.settings) if u.hypothesis_id == other.id)
    assert line.endswith("its judge: too small ## Injected heading - a list")
    section = board_sections(ctx.board, ctx.investigation_id, "", not_refined=[line])
    assert "\n## Injected" not in section


async def test_a_reason_on_a_verdict_with_nothing_to_split_records_nothing(ctx) -> None:
    hyp = _hypothesis(ctx, "Option V is listed")
    tools = Toolset(verdict_tools(ctx, "judge-H1", JudgeDecision(), hyp.id, can_refine=True))
    taken = await tools.call(ToolCallPart("c", "give_verdict", {
        "status": "inconclusive", "confidence": 0.2, "rationale": "r", "evidence_ids": [],
        "no_refine_reason": "nothing flagged"}))
    assert not taken.is_error, taken.content
    assert not ctx.board.events(kinds=["refinement.declined"])


async def test_the_cap_is_checked_again_when_the_judge_refines(ctx) -> None:
    # Both judges' turns started while a refinement was still allowed (cap 1); the
    # first to refine spends it, the second is told to give a verdict.
    first, second = _hypothesis(ctx, "Option V changes the rate"), _hypothesis(
        ctx, "Option V changes the rate for the old")
    checks = [_check(ctx, first.id), _check(ctx, second.id)]
    children = [{"statement": "in one subgroup"}, {"statement": "in the other"}]
    judges = [Toolset(verdict_tools(ctx, f"judge-{h.id}", JudgeDecision(), h.id,
                                    can_refine=True)) for h in (first, second)]
    for judge, hyp, check in zip(judges, (first, second), checks, strict=True):
        result = await judge.call(ToolCallPart("c", "refine", {
            "status": "supported", "confidence": 0.7, "rationale": "r",
            "evidence_ids": [check], "children": children}))
        if hyp is first:
            assert not result.is_error, result.content
        else:
            assert result.is_error and "refinement cap (1) was reached" in result.content
    # Its plain verdict is now taken: refining is no longer possible.
    plain = await judges[1].call(ToolCallPart("d", "give_verdict", {
        "status": "supported", "confidence": 0.7, "rationale": "r",
        "evidence_ids": [checks[1]], "claim_kind": "effect"}))
    assert not plain.is_error, plain.content
    assert refinements_made(ctx.board, ctx.investigation_id) == 1


def test_a_child_is_split_again_only_for_a_new_material_difference(ctx) -> None:
    settings = InvestigationSettings()
    parent = _hypothesis(ctx, "Option V changes the rate")
    _check(ctx, parent.id)
    _refine(ctx, parent.id)
    child = ctx.board.list_hypotheses(investigation_id=ctx.investigation_id)[-1]
    gate = refine_gate(ctx.board, child, settings, depth_allows=True)
    assert not gate.possible and "no new material difference" in gate.why_not
    _check(ctx, child.id)  # the same dimension its parent was split by: nothing new
    assert not refine_gate(ctx.board, child, settings, depth_allows=True).possible
    # A child whose parent had no such check, and whose own check flags one: new.
    plain = _hypothesis(ctx, "Option V matters")
    _refine(ctx, plain.id)
    fresh = ctx.board.list_hypotheses(investigation_id=ctx.investigation_id)[-1]
    _check(ctx, fresh.id)
    assert refine_gate(ctx.board, fresh, settings, depth_allows=True).possible
    gate = refine_gate(ctx.board, fresh, settings, depth_allows=False)
    assert not gate.possible and "depth limit (4 generations)" in gate.why_not


async def test_the_report_lists_every_split_not_made_even_if_the_reporter_forgot(ctx):
    hyp = _hypothesis(ctx, "Option V changes the rate")
    check = _check(ctx, hyp.id)
    _refine(ctx, _hypothesis(ctx, "Another claim").id)  # the cap (1) is spent
    ctx.board.add_verdict(hyp.id, "supported", 0.7, "r", [check], author="judge", round=1)
    prompts: list[str] = []

    def reporter(request):
        prompts.append(request.messages[0].text)
        if len(request.messages) > 1:
            return text("done")
        return tool_call("write_report", {"markdown": f"## Answer\n\nIt holds [{check}]."})

    reporting = TeamContext(board=ctx.board, sql=ctx.sql, model=FunctionModel(reporter),
                            investigation_id=ctx.investigation_id, question="q",
                            schema_summary="", settings=ctx.settings)
    line = unmade_refinements(ctx.board, ctx.investigation_id, ctx.settings)[0].line()
    decision = await roles.write_report(reporting, unexamined_note="", not_refined=[line],
                                        coverage=None)
    assert f"NOT REFINED:\n{line}" in prompts[0]
    assert decision.report is not None and decision.report.startswith("## Answer")
    # the loop appends what the report takes from the board, the splits not made last
    added = board_sections(ctx.board, ctx.investigation_id, decision.report,
                           not_refined=[line])
    assert added.startswith("## Hypotheses\n\n- **H1** supported (confidence 0.70): Option V")
    assert added.endswith(f"## Not refined\n\n- {line}")
    assert "Not refined" not in board_sections(ctx.board, ctx.investigation_id,
                                               f"{decision.report}\n{line}",
                                               not_refined=[line])


async def test_no_refinement_happens_past_the_cap(board_path) -> None:
    result = await investigate(hospital.create(), hospital.QUESTION, board=board_path,
                               model=HospitalWalkthrough().model(), max_refinements=0)
    assert result.state == "finished"
    assert not [h for h in result.board.list_hypotheses() if h.parent_id]
    judged = {c.request["messages"][0]["text"] for c in result.board.list_model_calls()
              if c.role == "judge"}
    assert all("refinement cap (0) is reached" in first for first in judged)


async def test_every_top_level_hypothesis_goes_before_a_refinement_of_a_refinement() -> None:
    assert queue_rank(2) < queue_rank(1) < queue_rank(3) < queue_rank(4)
    started: list[str] = []
    release = asyncio.Event()

    async def branch(hypothesis_id: str) -> None:
        await release.wait()

    def begin(hypothesis_id: str) -> bool:
        started.append(hypothesis_id)
        return True

    scheduler = BranchScheduler(1, branch, begin)
    scheduler.offer("H1", 1)  # runs
    scheduler.offer("H9", 3, parent_id="H1")
    scheduler.offer("H2", 1)
    scheduler.offer("H8", 2, parent_id="H1")
    scheduler.offer("H3", 1)
    for _ in range(4):
        release.set()
        await asyncio.sleep(0.01)
        release.clear()
    release.set()
    await scheduler.idle()
    assert started == ["H1", "H8", "H2", "H3", "H9"]
