"""The judge's rule: no verdict on an effect without a heterogeneity check; refine when
the check flags heterogeneity. Real board, real hospital database, real compare_within."""

from __future__ import annotations

import duckdb
import pytest

from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within, segment_scan
from d2_notebook.datasets import hospital
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.coverage_view import read_candidates
from d2_notebook.detective.decisions import JudgeDecision
from d2_notebook.detective.effect_check import is_effect_claim
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.sql_tools import analysis_description
from d2_notebook.detective.tools import Toolset
from d2_notebook.detective.verdict_tools import verdict_tools
from d2_notebook.llm import ToolCallPart
from d2_notebook.llm.offline import FunctionModel, text

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
                       settings=InvestigationSettings())


def _evidence(ctx: TeamContext, hypothesis_id: str, sql_text: str | None = None,
              value: str | None = None) -> str:
    if value is not None:
        result = compare_within(ctx.sql, source=SOURCE, metric=METRIC, exposure="t.drug",
                                value=value, reference="Standard care")
        evidence = ctx.board.add_evidence(result.sql, result.frame,
                                          description=analysis_description(result, ""),
                                          investigation_id=ctx.investigation_id)
    else:
        frame = duckdb.connect().execute(sql_text or "SELECT 1 AS x").df()
        evidence = ctx.board.add_evidence(sql_text or "SELECT 1 AS x", frame,
                                          description="a plain query",
                                          investigation_id=ctx.investigation_id)
    ctx.board.link(evidence.id, hypothesis_id, "supports", actor="collector")
    return evidence.id


async def _verdict(ctx: TeamContext, hypothesis_id: str, evidence: list[str], *,
                   can_refine: bool = True, **extra: object) -> tuple[bool, str]:
    tools = verdict_tools(ctx, "judge", JudgeDecision(), hypothesis_id, can_send_back=True,
                          can_refine=can_refine)
    result = await Toolset(tools).call(ToolCallPart("c", "give_verdict", {
        "status": "supported", "confidence": 0.8, "rationale": "r", "evidence_ids": evidence,
        **extra}))
    return result.is_error, result.content


def test_effect_claims_are_read_from_the_verdict_or_the_words():
    assert is_effect_claim("The treatment lowers the rate", None)
    assert is_effect_claim("A is the most effective option", None)
    assert is_effect_claim("Little benefit from the new plan", None)
    assert is_effect_claim("Region matters", "effect")
    assert not is_effect_claim("The suspect was at the scene", None)
    assert not is_effect_claim("The suspect was at the scene", "other")


async def test_an_effect_verdict_without_a_check_is_refused(ctx: TeamContext):
    hyp = ctx.board.add_hypothesis("Option A lowers the rate",
                                   investigation_id=ctx.investigation_id)
    plain = _evidence(ctx, hyp.id)
    refused, message = await _verdict(ctx, hyp.id, [plain])
    assert refused and "needs a heterogeneity check" in message and "compare_within" in message
    # A stated reason why no check applies lets it through.
    ok, _ = await _verdict(ctx, hyp.id, [plain], no_check_reason="one group only")
    assert not ok and ctx.board.get_hypothesis(hyp.id).status.value == "supported"


async def test_a_claim_that_is_not_an_effect_needs_no_check(ctx: TeamContext):
    hyp = ctx.board.add_hypothesis("The record names the person",
                                   investigation_id=ctx.investigation_id)
    refused, content = await _verdict(ctx, hyp.id, [_evidence(ctx, hyp.id)],
                                      claim_kind="other")
    assert not refused, content


async def test_a_stated_claim_kind_decides_over_the_statement_s_wording(ctx: TeamContext):
    """A descriptive claim whose words look like an effect ("shifted", "changes") is
    judged as the verdict classifies it: the schema says the wording is only the default."""
    hyp = ctx.board.add_hypothesis("The share of closures changes between quarters",
                                   investigation_id=ctx.investigation_id)
    refused, _ = await _verdict(ctx, hyp.id, [_evidence(ctx, hyp.id)])
    assert refused  # by its words, an effect
    refused_as_other, content = await _verdict(ctx, hyp.id, [_evidence(ctx, hyp.id)],
                                               claim_kind="other")
    assert not refused_as_other, content


async def test_heterogeneity_calls_for_refine(ctx: TeamContext):
    hyp = ctx.board.add_hypothesis("Option V changes the rate",
                                   investigation_id=ctx.investigation_id)
    check = _evidence(ctx, hyp.id, value="Virexa")
    refused, message = await _verdict(ctx, hyp.id, [check])
    assert refused and "HETEROGENEITY" in message and "refine" in message
    assert "has comorbidities.condition = asthma" in message
    # At the depth limit (no refine possible) the verdict is taken.
    accepted, _ = await _verdict(ctx, hyp.id, [check], can_refine=False)
    assert not accepted


async def test_a_subgroup_already_split_by_the_flagged_dimension_may_be_decided(ctx):
    parent = ctx.board.add_hypothesis("Option V changes the rate",
                                      investigation_id=ctx.investigation_id)
    _evidence(ctx, parent.id, value="Virexa")
    child = ctx.board.add_hypothesis("Option V changes the rate in one subgroup",
                                     parent_id=parent.id, investigation_id=ctx.investigation_id)
    check = _evidence(ctx, child.id, value="Virexa")
    refused, content = await _verdict(ctx, child.id, [check])
    assert not refused, content


async def test_a_confounded_effect_with_a_check_is_decided(ctx: TeamContext):
    hyp = ctx.board.add_hypothesis("Option C lowers the rate",
                                   investigation_id=ctx.investigation_id)
    check = _evidence(ctx, hyp.id, value="Corvalin")
    refused, content = await _verdict(ctx, hyp.id, [check], claim_kind="effect")
    assert not refused, content


def test_the_rule_is_stated_in_the_schema(ctx: TeamContext):
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    tools = {t.name: t.spec for t in verdict_tools(ctx, "judge", JudgeDecision(), hyp.id,
                                                   can_refine=True)}
    verdict = tools["give_verdict"]
    assert "heterogeneity check" in verdict.description
    assert "refine is expected" in verdict.description
    assert {"claim_kind", "no_check_reason"} <= set(verdict.parameters["properties"])
    assert not {"claim_kind", "no_check_reason"} & set(verdict.parameters["required"])
    assert "HETEROGENEITY" in tools["refine"].description
    assert not {"claim_kind", "no_check_reason"} & set(tools["refine"].parameters["required"])


@pytest.fixture
def mapped_ctx(ctx: TeamContext, sql: GuardedSQL) -> TeamContext:
    """The context with the database's candidate dimensions read (the coverage map on)."""
    ctx.candidates = read_candidates(sql)
    assert ctx.candidates.dimensions
    return ctx


async def test_evidence_that_controlled_every_dimension_counts_as_the_check(mapped_ctx):
    """A linked segment_scan splits by every candidate dimension: the verdict on an
    effect needs no separate compare_within (the send-back it forced cost a round)."""
    ctx = mapped_ctx
    hyp = ctx.board.add_hypothesis("Option A lowers the rate",
                                   investigation_id=ctx.investigation_id)
    scan = segment_scan(ctx.sql, source=SOURCE, metric=METRIC)
    evidence = ctx.board.add_evidence(scan.sql, scan.frame,
                                      description=analysis_description(scan, ""),
                                      investigation_id=ctx.investigation_id)
    ctx.board.link(evidence.id, hyp.id, "supports", actor="collector")
    refused, content = await _verdict(ctx, hyp.id, [evidence.id])
    assert not refused, content


async def test_a_plain_query_is_refused_naming_the_dimensions_it_left(mapped_ctx):
    ctx = mapped_ctx
    hyp = ctx.board.add_hypothesis("Option A lowers the rate",
                                   investigation_id=ctx.investigation_id)
    plain = _evidence(ctx, hyp.id, "SELECT 1 AS x")
    refused, message = await _verdict(ctx, hyp.id, [plain])
    assert refused and "has not controlled" in message and "link an existing one" in message
    assert ctx.candidates.names[0] in message


async def test_a_check_linked_to_the_parent_covers_its_refinement(ctx: TeamContext):
    parent = ctx.board.add_hypothesis("Option C lowers the rate",
                                      investigation_id=ctx.investigation_id)
    _evidence(ctx, parent.id, value="Corvalin")
    child = ctx.board.add_hypothesis("Option C lowers the rate in older patients",
                                     parent_id=parent.id, investigation_id=ctx.investigation_id)
    plain = _evidence(ctx, child.id)
    refused, content = await _verdict(ctx, child.id, [plain])
    assert not refused, content


async def test_queries_stratified_by_every_dimension_count_as_the_check(board: Board):
    """Hand-written evidence that held every candidate dimension fixed or split by it is
    the same control a compare_within gives: the effect verdict is taken."""
    con = duckdb.connect()
    con.execute("CREATE TABLE visits AS SELECT "
                "CASE WHEN i % 2 = 0 THEN 'north' ELSE 'south' END AS region, "
                "CASE WHEN i % 3 = 0 THEN 'web' ELSE 'store' END AS channel, "
                "CASE WHEN i % 5 = 0 THEN 'a' ELSE 'b' END AS offer, i % 7 AS spend "
                "FROM range(600) r(i)")
    sql = GuardedSQL(con)
    investigation = board.start_investigation("q")
    ctx = TeamContext(board=board, sql=sql, model=FunctionModel(lambda r: text("")),
                      investigation_id=investigation.id, question="q", schema_summary="",
                      settings=InvestigationSettings(), candidates=read_candidates(sql))
    hyp = ctx.board.add_hypothesis("Offer a raises spend", investigation_id=investigation.id)

    def linked(query: str) -> str:
        evidence = board.add_evidence(query, con.execute(query).df(), description="q",
                                      investigation_id=investigation.id)
        board.link(evidence.id, hyp.id, "supports", actor="collector")
        return evidence.id

    partial = linked("SELECT offer, region, avg(spend) AS spend FROM visits GROUP BY ALL")
    refused, message = await _verdict(ctx, hyp.id, [partial])
    assert refused and "visits.channel" in message and "visits.region" not in message
    whole = linked("SELECT offer, region, channel, spend, count(*) AS n FROM visits "
                   "GROUP BY ALL")
    refused, content = await _verdict(ctx, hyp.id, [partial, whole])
    assert not refused, content


async def test_a_check_that_motivated_the_hypothesis_counts(ctx: TeamContext):
    """A single agent proposes a hypothesis on a compare_within it already ran: that
    result is the check; the verdict needs no second copy of it."""
    result = compare_within(ctx.sql, source=SOURCE, metric=METRIC, exposure="t.drug",
                            value="Corvalin", reference="Standard care")
    check = ctx.board.add_evidence(result.sql, result.frame,
                                   description=analysis_description(result, ""),
                                   investigation_id=ctx.investigation_id)
    hyp = ctx.board.add_hypothesis("Option C lowers the rate", motivated_by=[check.id],
                                   investigation_id=ctx.investigation_id)
    plain = _evidence(ctx, hyp.id)
    refused, content = await _verdict(ctx, hyp.id, [plain], claim_kind="effect")
    assert not refused, content
