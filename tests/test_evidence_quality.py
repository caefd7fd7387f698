"""Evidence weighed by its quality: weak and neutral link stances, and the evidence a
verdict discounted with its typed reason. Real SQLite boards, the real judge tools."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import duckdb
import pytest

from d2_notebook.board import Board, Discount, DiscountReason, Stance
from d2_notebook.board.migrations import MIGRATIONS, migrate
from d2_notebook.board.render import render_tree
from d2_notebook.data import GuardedSQL
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.decisions import CollectorDecision, JudgeDecision
from d2_notebook.detective.digest import board_digest
from d2_notebook.detective.report import fallback_report
from d2_notebook.detective.reporter_brief import reporter_brief
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.team_tools import evidence_tools
from d2_notebook.detective.tools import Toolset
from d2_notebook.detective.verdict_tools import verdict_tools
from d2_notebook.errors import InvalidRecordError, NotFoundError
from d2_notebook.llm import ToolCallPart
from d2_notebook.llm.offline import FunctionModel, text
from d2_notebook.notebook import style
from d2_notebook.notebook.graph import board_elements
from d2_notebook.notebook.report_html import report_document
from d2_notebook.notebook.snapshot import board_snapshot
from d2_notebook.notebook.static import board_svg, legend_html
from d2_notebook.teaching.answer import Edge, SystemAnswer
from d2_notebook.teaching.answer import Evidence as AnswerEvidence
from d2_notebook.teaching.answer import Hypothesis as AnswerHypothesis
from d2_notebook.teaching.graph_match import Unscored, match_graph


def _evidence(board: Board, sql: str = "SELECT 1 AS x", investigation_id: str | None = None
              ) -> str:
    frame = duckdb.connect().execute(sql).df()
    return board.add_evidence(sql, frame, description=f"result of {sql}",
                              investigation_id=investigation_id).id


def _three_stances(board: Board, investigation_id: str | None = None
                   ) -> tuple[str, str, str, str]:
    hyp = board.add_hypothesis("Entity 7 meets every stated criterion",
                               investigation_id=investigation_id)
    present = _evidence(board, "SELECT 1 AS fits")
    missing = _evidence(board, "SELECT NULL AS record")
    thin = _evidence(board, "SELECT 'one statement' AS source")
    board.link(present, hyp.id, Stance.SUPPORTS, "fits", actor="collector")
    board.link(missing, hyp.id, "neutral", "no record either way", actor="collector")
    board.link(thin, hyp.id, "weak", "points against, one unconfirmed source", actor="collector")
    return hyp.id, present, missing, thin


# --- the board ----------------------------------------------------------------------


def test_weak_and_neutral_links_are_stored_and_read_back(board: Board):
    hyp, _, missing, thin = _three_stances(board)
    stances = {link.evidence_id: link.stance for link in board.list_links(hypothesis_id=hyp)}
    assert stances[missing] is Stance.NEUTRAL and stances[thin] is Stance.WEAK
    assert [s.is_decisive for s in Stance] == [True, True, False, False]
    with pytest.raises(InvalidRecordError, match=r"already linked .* as neutral"):
        board.link(missing, hyp, "contradicts", actor="collector")


def test_an_unknown_stance_is_refused_by_the_code_and_by_the_file(board: Board):
    hyp, present, _, _ = _three_stances(board)
    with pytest.raises(InvalidRecordError, match="stance"):
        board.link(present, hyp, "maybe", actor="collector")
    with sqlite3.connect(board.path) as raw, pytest.raises(sqlite3.IntegrityError,
                                                          match="unknown link stance"):
        raw.execute("INSERT INTO links (evidence_id, hypothesis_id, stance, rationale, author,"
                    " created_at) VALUES (?, ?, 'maybe', '', 'x', '')", (present, "H1"))


def test_a_verdict_stores_the_evidence_it_discounted_with_the_reason(board: Board):
    hyp, present, missing, thin = _three_stances(board)
    verdict = board.add_verdict(
        hyp, "supported", 0.8, "E1 decides it", [present], author="judge",
        discounted=[Discount(missing, DiscountReason.MISSING_RECORD, "the record is absent"),
                    Discount(thin, "unreliable_source", "E9 places the source elsewhere")])
    again = board.latest_verdict(hyp)
    assert again == verdict
    assert [(d.evidence_id, d.reason) for d in again.discounted] == [
        (missing, DiscountReason.MISSING_RECORD), (thin, DiscountReason.UNRELIABLE_SOURCE)]
    event = [e for e in board.events() if e.kind == "verdict.added"][-1]
    assert event.payload["discounted"][0] == {"evidence_id": missing, "reason": "missing_record",
                                              "explanation": "the record is absent"}


@pytest.mark.parametrize(("discount", "error", "message"), [
    (lambda p, m: Discount(p, DiscountReason.SUPERSEDED, "newer"), InvalidRecordError,
     "both cited .* and discounted"),
    (lambda p, m: Discount(m, DiscountReason.MISSING_RECORD, "  "), InvalidRecordError,
     "non-empty explanation"),
    (lambda p, m: Discount(m, "forgotten", "why"), InvalidRecordError, "discount reason"),
    (lambda p, m: Discount("E99", DiscountReason.OFF_TARGET, "why"), NotFoundError, "E99"),
])
def test_a_bad_discount_is_refused_and_nothing_is_written(board: Board, discount, error,
                                                          message):
    hyp, present, missing, _ = _three_stances(board)
    with pytest.raises(error, match=message):
        board.add_verdict(hyp, "supported", 0.8, "r", [present], author="judge",
                          discounted=[discount(present, missing)])
    assert board.list_verdicts() == []


def test_a_discount_listed_twice_is_refused(board: Board):
    hyp, present, missing, _ = _three_stances(board)
    twice = [Discount(missing, DiscountReason.MISSING_RECORD, "absent")] * 2
    with pytest.raises(InvalidRecordError, match="discounted twice"):
        board.add_verdict(hyp, "supported", 0.8, "r", [present], author="judge",
                          discounted=twice)


def test_a_board_written_before_the_migration_keeps_reading(tmp_path: Path):
    path = tmp_path / "old.d2board"
    conn = sqlite3.connect(path)
    migrate(conn, tuple(m for m in MIGRATIONS if m.version <= 8))
    conn.close()
    with Board.open(path) as old:  # written by the version before weak/neutral stances
        hyp = old.add_hypothesis("h")
        ev = _evidence(old)
        old.link(ev, hyp.id, "contradicts", actor="collector")
        old.add_verdict(hyp.id, "contradicted", 0.9, "r", [ev], author="judge")
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == MIGRATIONS[-1].version
    with Board.open(path) as reopened:
        assert reopened.latest_verdict(hyp.id).discounted == ()
        assert reopened.list_links()[0].stance is Stance.CONTRADICTS


def test_export_and_import_keep_stances_and_discounts(board: Board, tmp_path: Path):
    hyp, present, missing, _ = _three_stances(board)
    board.add_verdict(hyp, "supported", 0.8, "r", [present], author="judge",
                      discounted=[Discount(missing, DiscountReason.MISSING_RECORD, "absent")])
    copy = Board.from_json(board.to_json(), tmp_path / "copy.d2board")
    assert copy.latest_verdict(hyp).discounted == board.latest_verdict(hyp).discounted
    assert [lk.stance for lk in copy.list_links()] == [lk.stance for lk in board.list_links()]
    copy.close()
    document = json.loads(board.to_json())
    document["verdicts"][0]["discounted"] = "not json ["
    with pytest.raises(Exception, match="discounted"):
        Board.from_json(json.dumps(document), tmp_path / "bad.d2board")


# --- what a reader sees ------------------------------------------------------------------


def _judged(board: Board, investigation_id: str | None = None) -> tuple[str, str, str, str]:
    hyp, present, missing, thin = _three_stances(board, investigation_id)
    board.add_verdict(hyp, "supported", 0.8, "the present record decides it", [present],
                      author="judge",
                      discounted=[Discount(missing, DiscountReason.MISSING_RECORD,
                                           "no record either way")])
    return hyp, present, missing, thin


def test_board_show_and_the_reports_show_stances_and_discounts(board: Board):
    investigation = board.start_investigation("q")
    _, _, missing, thin = _judged(board, investigation.id)
    tree = render_tree(board)
    assert f"{missing} neutral" in tree and f"{thin} weak" in tree
    assert f"discounted {missing} (missing record): no record either way" in tree
    report = fallback_report(board, investigation.id)
    assert f"- neutral: {missing}" in report and f"- weak: {thin}" in report
    assert f"discounted {missing} (missing record): no record either way" in report
    assert f"discounted {missing} (missing record)" in board_digest(board)
    assert f"discounted {missing} (missing record)" in reporter_brief(board, investigation.id)
    html = report_document(board, investigation.id)
    assert f"discounted {missing} (missing record)" in html


def test_the_graph_draws_weak_and_neutral_links_in_their_own_style(board: Board):
    hyp, present, missing, thin = _judged(board)
    edges = {e.source: e for e in board_elements(board).edges.values()}
    assert (edges[missing].kind, edges[thin].kind, edges[present].kind) == (
        "neutral", "weak", "supports")
    assert edges[missing].classes == "neutral" and edges[thin].classes == "weak"
    assert len({edges[x].data["color"] for x in (missing, thin, present)}) == 3
    sheet = {rule["selector"]: rule["style"] for rule in style.cytoscape_style()}
    assert sheet["edge.weak"]["line-style"] == "dashed"
    assert sheet["edge.neutral"]["line-style"] == "dotted"
    svg = board_svg(board)
    assert 'stroke-dasharray="8,4"' in svg and 'stroke-dasharray="1,3"' in svg
    assert "weak evidence" in legend_html() and "neutral" in legend_html()
    snapshot = board_snapshot(board)
    verdict = snapshot["hypotheses"][hyp]["verdict"]
    assert verdict["discounted"] == [{"evidence_id": missing, "reason": "missing_record",
                                      "explanation": "no record either way"}]
    assert {lk["stance"] for lk in snapshot["hypotheses"][hyp]["links"]} == {
        "supports", "neutral", "weak"}


def test_teaching_grades_leave_weak_and_neutral_links_unscored():
    gold = {"suspects": [{"id": 7, "name": "Ann Lee"}], "murderers": [{"id": 7,
                                                                          "name": "Ann Lee"}],
            "graph": {"hypotheses": [{"id": "H7", "text": "Ann Lee (person 7) is a murderer.",
                                      "suspect": "7"}],
                      "evidence": [{"id": "E1", "sql": "SELECT 7", "rows": [[7, "blue"]],
                                    "description": "car"}],
                      "edges": [{"evidence": "E1", "hypothesis": "H7", "stance": "supports"}]}}
    answer = SystemAnswer()
    answer.hypotheses.append(AnswerHypothesis("H1", "Ann Lee is a murderer.", "7"))
    answer.evidence.append(AnswerEvidence("Q1", "SELECT 7", [[7, "blue"]], ""))
    answer.edges = [Edge("Q1", "H1", "neutral")]
    match = match_graph(answer, gold)
    assert match.unscored == {("Q1", "H1", "neutral"): Unscored.NOT_DECISIVE}
    assert match.scores.edge_precision == 0.0 and match.scored == ()


# --- the judge's and collector's tools -----------------------------------------------------


@pytest.fixture
def ctx(board: Board) -> TeamContext:
    investigation = board.start_investigation("q")
    return TeamContext(board=board, sql=GuardedSQL(duckdb.connect()),
                       model=FunctionModel(lambda r: text("")),
                       investigation_id=investigation.id, question="q", schema_summary="",
                       settings=InvestigationSettings())


async def _call(tools: list, name: str, args: dict) -> tuple[bool, str]:
    result = await Toolset(tools).call(ToolCallPart("c", name, args))
    return result.is_error, result.content


async def test_link_evidence_takes_weak_and_neutral_stances(ctx: TeamContext):
    hyp = ctx.board.add_hypothesis("h", investigation_id=ctx.investigation_id)
    ev = _evidence(ctx.board, investigation_id=ctx.investigation_id)
    tools = evidence_tools(ctx, QueryLog(), "collector-H1", "collector", hyp.id)
    error, content = await _call(tools, "link_evidence", {
        "evidence_id": ev, "stance": "neutral", "reading": "no record for it"})
    assert not error and "neutral" in content
    error, content = await _call(tools, "link_evidence", {
        "evidence_id": ev, "stance": "probably", "reading": "x"})
    assert error and "weak" in content and "neutral" in content


async def _judge(ctx: TeamContext, hyp: str, **args: object) -> tuple[bool, str]:
    tools = verdict_tools(ctx, "judge", JudgeDecision(), hyp, can_send_back=True)
    return await _call(tools, "give_verdict", {"status": "supported", "confidence": 0.8,
                                              "rationale": "r", "claim_kind": "other", **args})


async def test_give_verdict_records_what_it_discounted(ctx: TeamContext):
    hyp, present, missing, thin = _three_stances(ctx.board)
    error, content = await _judge(ctx, hyp, evidence_ids=[present], discounted=[
        {"evidence_id": missing, "reason": "missing_record", "explanation": "absent record"},
        {"evidence_id": thin, "reason": "unreliable_source", "explanation": "one source"}])
    assert not error, content
    assert [d.reason.value for d in ctx.board.latest_verdict(hyp).discounted] == [
        "missing_record", "unreliable_source"]


@pytest.mark.parametrize(("cited", "discounted", "message"), [
    (["MISSING"], [], "needs decisive evidence.* linked only as weak or neutral"),
    (["MISSING", "THIN"], [], "needs decisive evidence"),
    (["PRESENT"], [{"evidence_id": "E99", "reason": "missing_record", "explanation": "x"}],
     "E99 is not linked"),
    (["PRESENT"], [{"evidence_id": "PRESENT", "reason": "superseded", "explanation": "x"}],
     "both cited as deciding and discounted"),
    (["PRESENT"], [{"evidence_id": "MISSING", "reason": "gone", "explanation": "x"}],
     "must be one of"),
    (["PRESENT"], [{"evidence_id": "MISSING", "reason": "missing_record"}],
     "missing argument"),
])
async def test_give_verdict_refuses_bad_weighing(ctx: TeamContext, cited, discounted, message):
    hyp, present, missing, thin = _three_stances(ctx.board)
    ids = {"PRESENT": present, "MISSING": missing, "THIN": thin}
    error, content = await _judge(
        ctx, hyp, evidence_ids=[ids.get(e, e) for e in cited],
        discounted=[{**d, "evidence_id": ids.get(d["evidence_id"], d["evidence_id"])}
                    for d in discounted])
    assert error and re.search(message, content), content
    assert ctx.board.list_verdicts() == []


@pytest.mark.parametrize("can_send_back", [True, False])
async def test_weak_evidence_alone_names_only_the_ways_out_the_judge_has(
        ctx: TeamContext, can_send_back: bool):
    hyp, _, _, thin = _three_stances(ctx.board)
    tools = verdict_tools(ctx, "judge", JudgeDecision(), hyp, can_send_back=can_send_back)
    error, content = await _call(tools, "give_verdict", {
        "status": "supported", "confidence": 0.8, "rationale": "r", "claim_kind": "other",
        "evidence_ids": [thin]})
    assert error and "needs decisive evidence" in content
    assert ("request_more_evidence" in content) is can_send_back
    assert ("last round" in content) is not can_send_back
    assert "give inconclusive, saying what evidence would decide it" in content


async def test_an_agent_that_runs_queries_is_told_to_collect_more(ctx: TeamContext):
    """A collector or the single agent can always run and record more queries: its
    refusal never says the last round is over."""
    hyp, _, _, thin = _three_stances(ctx.board)
    for tools in (verdict_tools(ctx, "collector-H1", CollectorDecision(), hyp),
                  verdict_tools(ctx, "single", JudgeDecision(), None)):
        args = {"status": "supported", "confidence": 0.8, "rationale": "r",
                "claim_kind": "other", "evidence_ids": [thin]}
        if tools[0].spec.parameters["properties"].get("hypothesis_id"):
            args["hypothesis_id"] = hyp
        error, content = await _call(tools, "give_verdict", args)
        assert error and "collect it (run_sql, then record_evidence)" in content, content
        assert "last round" not in content


async def test_an_inconclusive_verdict_may_rest_on_neutral_evidence(ctx: TeamContext):
    hyp, _, missing, _ = _three_stances(ctx.board)
    error, content = await _judge(ctx, hyp, status="inconclusive", evidence_ids=[missing])
    assert not error, content
