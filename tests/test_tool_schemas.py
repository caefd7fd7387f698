"""Tool schemas state every constraint their tools enforce."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from d2_notebook.board import Board
from d2_notebook.data import open_source
from d2_notebook.detective import roles
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.decisions import (
    CollectorDecision,
    HypothesizerDecision,
    JudgeDecision,
    OrchestratorDecision,
    ReactAnswer,
    ReportDecision,
)
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.team_tools import (
    evidence_tools,
    final_answer_tool,
    hypothesis_tools,
    orchestrator_tools,
    reporter_tools,
    submit_tool,
)
from d2_notebook.detective.tools import Toolset
from d2_notebook.detective.verdict_tools import verdict_tools
from d2_notebook.llm import ToolCallPart
from d2_notebook.llm.offline import FunctionModel, text


@pytest.fixture
def ctx(board: Board) -> TeamContext:
    investigation = board.start_investigation("q")
    return TeamContext(board=board, sql=open_source(duckdb.connect()),
                       model=FunctionModel(lambda r: text("")),
                       investigation_id=investigation.id, question="q", schema_summary="",
                       settings=InvestigationSettings())


def _specs(tools: list) -> dict[str, object]:
    return {t.name: t.spec for t in tools}


def _without_descriptions(schema: object) -> object:
    if isinstance(schema, dict):
        return {k: _without_descriptions(v) for k, v in schema.items()
                if not (k == "description" and isinstance(v, str))}
    return schema


def test_refine_takes_give_verdicts_fields_described_once(ctx: TeamContext) -> None:
    """refine validates the same verdict fields as give_verdict (types, enums, required),
    but states their rules once, in give_verdict: a real-model judge read ~6 KB of size
    rules twice in every request."""
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    specs = _specs(verdict_tools(ctx, "judge", JudgeDecision(), hyp.id, can_refine=True))
    verdict, refine = specs["give_verdict"].parameters, specs["refine"].parameters
    fields = {k: v for k, v in refine["properties"].items() if k != "children"}
    assert fields.keys() == verdict["properties"].keys()
    assert _without_descriptions(fields) == _without_descriptions(verdict["properties"])
    assert set(refine["required"]) == {*verdict["required"], "children"}
    assert all(f["description"] == "as in give_verdict" for f in fields.values())
    assert len(str(refine)) < len(str(verdict)) / 2


async def test_refine_states_and_enforces_two_children(ctx: TeamContext) -> None:
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    tools = verdict_tools(ctx, "judge", JudgeDecision(), hyp.id, can_send_back=True,
                          can_refine=True)
    refine = _specs(tools)["refine"]
    assert "at least two children" in refine.description
    assert refine.parameters["properties"]["children"]["minItems"] == 2
    assert "at least one evidence id" in refine.description
    result = await Toolset(tools).call(ToolCallPart("c1", "refine", {
        "status": "supported", "confidence": 0.5, "rationale": "r", "evidence_ids": [],
        "children": [{"statement": "only one"}]}))
    assert result.is_error and "at least 2" in result.content
    empty = await Toolset(tools).call(ToolCallPart("c2", "refine", {
        "status": "inconclusive", "confidence": 0.5, "rationale": "r", "evidence_ids": [],
        "children": [{"statement": "a"}, {"statement": "  "}]}))
    assert empty.is_error and "must not be empty" in empty.content


def test_every_refusal_is_stated_in_the_tool_description(ctx: TeamContext) -> None:
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    log = QueryLog()
    specs = _specs([
        *hypothesis_tools(ctx, log, "hyp", "hypothesizer", HypothesizerDecision()),
        *orchestrator_tools(ctx, "orch", OrchestratorDecision(), can_ask_for_more=False),
        *evidence_tools(ctx, log, "col", "collector", hyp.id),
        submit_tool(CollectorDecision(), ctx, hyp.id),
        *verdict_tools(ctx, "judge", JudgeDecision(), hyp.id, can_send_back=False,
                       can_refine=True),
        *reporter_tools(ctx, "rep", ReportDecision()),
    ])
    stated = {
        "add_hypothesis": ["empty", "repeats a hypothesis", "query id"],
        "done": ["at least one hypothesis"],
        "abandon": ["has a verdict", "being examined"],
        "carry_on": ["Refused when no hypothesis is open"],
        "request_hypotheses": ["Refused when", "no calls left"],
        "finish": ["Refused while", "no verdict"],
        "record_evidence": ["run_sql or an analysis tool returned", "a column the result"],
        "link_evidence": ["unknown evidence id", "another investigation",
                          "other than the one it already has"],
        "submit_for_judgement": ["at least one evidence"],
        "give_verdict": ["at least one evidence id", "only evidence linked", "abandoned"],
        "request_more_evidence": ["Refused when", "no evidence rounds"],
        "refine": ["Refused when refining is not possible", "at least two children"],
        "mark_redundant": ["a verdict cites"],
        "write_report": ["empty", "unverified"],
    }
    for name, phrases in stated.items():
        for phrase in phrases:
            assert phrase in specs[name].description, f"{name} must say {phrase!r}"


def test_descriptions_do_not_change_with_what_is_possible_now(ctx: TeamContext) -> None:
    """The specs are part of each role's cached prompt prefix: what is possible now is
    said in the first message and enforced by the tool, never in the description."""
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    pairs = [
        (orchestrator_tools(ctx, "o", OrchestratorDecision(), can_ask_for_more=True),
         orchestrator_tools(ctx, "o", OrchestratorDecision(), can_ask_for_more=False)),
        (hypothesis_tools(ctx, QueryLog(), "h", "hypothesizer", HypothesizerDecision(),
                          may_add_none=True),
         hypothesis_tools(ctx, QueryLog(), "h", "hypothesizer", HypothesizerDecision())),
        (verdict_tools(ctx, "j", JudgeDecision(), hyp.id, can_send_back=True, can_refine=True),
         verdict_tools(ctx, "j", JudgeDecision(), hyp.id)),
    ]
    for able, unable in pairs:
        assert [t.spec for t in able] == [t.spec for t in unable]


async def test_refine_is_offered_but_refused_when_not_possible(ctx: TeamContext) -> None:
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    tools = verdict_tools(ctx, "j", JudgeDecision(), hyp.id, can_refine=False)
    result = await Toolset(tools).call(ToolCallPart("c1", "refine", {
        "status": "inconclusive", "confidence": 0.5, "rationale": "r", "evidence_ids": [],
        "children": [{"statement": "a"}, {"statement": "b"}]}))
    assert result.is_error and "refining is not possible" in result.content
    assert len(ctx.board.list_hypotheses(investigation_id=ctx.investigation_id)) == 1
    assert ctx.board.list_verdicts() == []


async def test_a_collector_can_ask_for_the_chart_of_the_evidence_it_records(
        ctx: TeamContext) -> None:
    import pandas as pd

    from d2_notebook.charts import ChartKind, chart_for_evidence
    from d2_notebook.data.results import QueryResult

    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    log = QueryLog()
    frame = pd.DataFrame({"ward": ["icu", "ward"], "deaths": [9, 3], "stay": [12.0, 4.0]})
    log.add("SELECT ward, deaths, stay FROM t", QueryResult("SELECT ward, deaths, stay FROM t",
                                                           frame, 2, False, 0.01))
    tools = Toolset(evidence_tools(ctx, log, "col", "collector", hyp.id))
    assert "chart" not in tools.get("record_evidence").spec.parameters["required"]
    bad = await tools.call(ToolCallPart("c1", "record_evidence", {
        "query_id": "Q1", "description": "d", "stance": "supports", "reading": "r",
        "chart": {"x": "ward", "y": "deaths_per_day"}}))
    assert bad.is_error and "deaths_per_day" in bad.content and "ward, deaths, stay" in bad.content
    assert ctx.board.list_evidence() == []  # nothing half-recorded
    done = await tools.call(ToolCallPart("c2", "record_evidence", {
        "query_id": "Q1", "description": "d", "stance": "supports", "reading": "r",
        "chart": {"x": "ward", "y": "stay"}}))
    assert not done.is_error, done.content
    chart = chart_for_evidence(ctx.board, "E1")
    assert chart is not None and chart.kind is ChartKind.BARS
    assert chart.spec["encoding"]["x"]["field"] == "stay"  # the asked measure, not the first


async def test_a_verdict_may_cite_the_evidence_that_motivated_the_hypothesis(
        ctx: TeamContext) -> None:
    import pandas as pd

    seen = ctx.board.add_evidence("SELECT 1 AS x", pd.DataFrame({"x": [1]}),
                                  description="exploration", investigation_id=ctx.investigation_id)
    other = ctx.board.add_evidence("SELECT 2 AS x", pd.DataFrame({"x": [2]}),
                                   description="unrelated", investigation_id=ctx.investigation_id)
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id,
                                   motivated_by=[seen.id])
    tools = Toolset(verdict_tools(ctx, "j", JudgeDecision(), hyp.id))
    refused = await tools.call(ToolCallPart("c1", "give_verdict", {
        "status": "supported", "confidence": 0.7, "rationale": "r", "evidence_ids": [other.id]}))
    assert refused.is_error and "motivated it" in refused.content and seen.id in refused.content
    done = await tools.call(ToolCallPart("c2", "give_verdict", {
        "status": "supported", "confidence": 0.7, "rationale": f"as {seen.id} shows",
        "evidence_ids": [seen.id]}))
    assert not done.is_error, done.content
    assert ctx.board.latest_verdict(hyp.id).evidence_ids == (seen.id,)


async def test_existing_evidence_is_linked_without_running_its_query_again(
        ctx: TeamContext) -> None:
    import pandas as pd

    explored = ctx.board.add_evidence("SELECT 1 AS x", pd.DataFrame({"x": [1]}),
                                      description="exploration",
                                      investigation_id=ctx.investigation_id)
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    tools = Toolset(evidence_tools(ctx, QueryLog(), "col", "collector", hyp.id))
    done = await tools.call(ToolCallPart("c1", "link_evidence", {
        "evidence_id": explored.id, "stance": "supports", "reading": "as explored"}))
    assert not done.is_error and "not run again" in done.content
    assert [link.evidence_id for link in ctx.board.list_links(hypothesis_id=hyp.id)] == [
        explored.id]
    assert len(ctx.board.list_evidence()) == 1  # linked, not recorded twice
    unknown = await tools.call(ToolCallPart("c2", "link_evidence", {
        "evidence_id": "E99", "stance": "supports", "reading": "r"}))
    opposite = await tools.call(ToolCallPart("c3", "link_evidence", {
        "evidence_id": explored.id, "stance": "contradicts", "reading": "r"}))
    assert unknown.is_error and opposite.is_error


def test_an_interval_holding_zero_that_reaches_a_material_effect_is_not_no_effect(
        ctx: TeamContext) -> None:
    """A real-model judge read "none: the data shows no effect (interval holding 0)" as
    forcing 'contradicted' on a difference of 0.088 (95% CI -0.016 to 0.191) in the
    claimed direction, with every row used. Role none and the judge's prompt now say such
    an interval cannot decide: inconclusive, which gives no size."""
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    specs = _specs(verdict_tools(ctx, "judge", JudgeDecision(), hyp.id, can_refine=False))
    size = specs["give_verdict"].parameters["properties"]["contribution"]["description"]
    none = size[size.index("none:"):size.index("The verdict follows")]
    assert "holds 0 but still reaches" in none and "inconclusive, with no size" in none
    prompt = (Path(roles.__file__).parent / "judge.txt").read_text()
    assert "holds 0 but reaches, in the claimed direction, one that would matter" in prompt
    assert "role none: the interval holds zero)" not in prompt  # the old rule, gone
    assert "role none: the interval holds zero and does not reach" in prompt


def test_a_stance_asks_for_a_reading_only_where_there_is_one(ctx: TeamContext) -> None:
    """A react_sql answerer was told to "say which way in the reading" of a weak evidence
    item, which has no reading; a link's stance still asks it of the link's reading."""
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    log = QueryLog()
    linked = _specs(evidence_tools(ctx, log, "col", "collector", hyp.id))
    answer = final_answer_tool(ReactAnswer(), log).spec
    item = answer.parameters["properties"]["evidence"]["items"]["properties"]
    assert "reading" not in item["stance"]["description"]
    assert "weak when it points one way on thin grounds" in item["stance"]["description"]
    stance = linked["link_evidence"].parameters["properties"]["stance"]["description"]
    assert "say which way in the reading" in stance
