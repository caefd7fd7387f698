"""Whole investigations, end to end, driven offline on the real hospital database."""

from __future__ import annotations

import asyncio
import collections
import time

import duckdb
import pandas as pd
import pytest

from d2_notebook import investigate
from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.data import GuardedSQL
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.team_policy import Turn
from d2_notebook.llm import ModelRequest, ModelResponse

QUESTION = hospital.QUESTION


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


def by_statement(board: Board) -> dict[str, object]:
    return {h.statement: h for h in board.list_hypotheses()}


def calls_by_agent(board: Board) -> collections.Counter[str]:
    return collections.Counter(c.agent for c in board.list_model_calls())


async def test_the_full_team_investigates_the_hospital(con, board_path):
    result = await investigate(con, QUESTION, board=board_path,
                               model=HospitalWalkthrough().model())
    board = result.board
    hyps = by_statement(board)
    status = {s: h.status.value for s, h in hyps.items()}
    # Several competing hypotheses, each settled the way the planted truths say.
    assert status == {
        "Virexa lowers mortality for older COVID-19 patients": "contradicted",
        "The effect of Virexa on older patients depends on comorbidities": "supported",
        "Corvalin lowers mortality for older COVID-19 patients": "contradicted",
        "Pulmorex lowers mortality for older COVID-19 patients": "supported",
        "Hydrazol lowers mortality for older COVID-19 patients": "abandoned",
        "Higher Solvanir doses (>= 500 mg) lower mortality for older patients": "supported",
        "Virexa helps older patients with asthma": "supported",
        "Virexa helps older patients with diabetes": "contradicted",
    }
    # The judge refined H2 into two children, queued for the next round.
    parent = hyps["The effect of Virexa on older patients depends on comorbidities"]
    children = [h for h in board.list_hypotheses() if h.parent_id == parent.id]
    assert [c.statement for c in children] == ["Virexa helps older patients with asthma",
                                               "Virexa helps older patients with diabetes"]
    assert {c.author_role for c in children} == {"judge"} and {c.round for c in children} == {2}
    # The judge sent the confounded Corvalin comparison back once ("collect more").
    corvalin = hyps["Corvalin lowers mortality for older COVID-19 patients"]
    calls = calls_by_agent(board)
    assert calls[f"judge-{corvalin.id}"] == 2 and calls[f"collector-{corvalin.id}"] == 4
    readings = [board.get_evidence(link.evidence_id).description
                for link in board.list_links(hypothesis_id=corvalin.id)]
    assert "Death rate vs standard care, age 65+, per severity" in readings
    # The orchestrator asked the hypothesizer for more (the dose hypothesis).
    assert hyps["Higher Solvanir doses (>= 500 mg) lower mortality for older patients"
                ].author_role == "hypothesizer"
    assert calls["hypothesizer"] == 4
    # The abandoned hypothesis keeps its reason.
    assert "Hydrazol" in board.get_hypothesis(
        hyps["Hydrazol lowers mortality for older COVID-19 patients"].id).statement
    # The reporter marked evidence redundant (kept, not deleted) and wrote the report.
    assert [e.id for e in board.list_evidence() if e.redundant] == ["E1"]
    assert result.report.startswith("## Answer")
    assert board.get_investigation(result.investigation_id).report == result.report
    assert result.state == "finished" and result.stop_reason is None
    assert [c.hypothesis.statement for c in result.conclusions] == [
        "The effect of Virexa on older patients depends on comorbidities",
        "Pulmorex lowers mortality for older COVID-19 patients",
        "Higher Solvanir doses (>= 500 mg) lower mortality for older patients",
        "Virexa helps older patients with asthma",
    ]
    # Every call was recorded and counted.
    assert result.usage.calls == len(board.list_model_calls()) == sum(calls.values())
    assert set(result.usage.by_role) == {"hypothesizer", "orchestrator", "collector", "judge",
                                         "reporter"}


async def test_every_evidence_row_is_what_the_guarded_sql_returned(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model())
    sql = GuardedSQL(con)
    for evidence in result.board.list_evidence():
        again = sql.run(evidence.sql).frame
        pd.testing.assert_frame_equal(result.board.evidence_frame(evidence.id), again)


class SlowCollectors(HospitalWalkthrough):
    """The walkthrough, with collectors that take 50 ms per call; records overlap."""

    def __init__(self) -> None:
        super().__init__()
        self.in_flight = 0
        self.most_in_flight = 0

    async def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        if request.role != "collector":
            return super().__call__(request)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.05)
            return super().__call__(request)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("collectors", [1, 4])
async def test_collectors_overlap_in_time_up_to_the_limit(con, collectors):
    policy = SlowCollectors()
    started = time.perf_counter()
    result = await investigate(con, QUESTION, model=policy.model(), collectors=collectors)
    assert result.state == "finished"
    assert policy.most_in_flight == collectors
    print(f"{collectors} collector(s): {time.perf_counter() - started:.2f} s")


async def test_branch_starts_and_board_history(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model())
    events = result.board.events()
    kinds = [e.kind for e in events]
    assert kinds[0] == "investigation.started"
    assert kinds[-2:] == ["investigation.state", "data.fingerprinted"]  # finished, report
    assert events[-2].payload["state"] == "finished"  # stored; then the data fingerprinted
    assert "round.started" not in kinds  # no rounds: a queue
    started = [e.payload["id"] for e in events if e.kind == "hypothesis.status"
               and e.payload["status"] == "investigating"]
    examined = {h.id for h in result.board.list_hypotheses()
                if h.status.value != "abandoned"}
    assert sorted(started) == sorted(examined)  # each examined once, the loop started it
    assert {e.actor for e in events if e.kind == "hypothesis.status"
            and e.payload["status"] == "investigating"} == {"detective"}
    settings = result.board.get_investigation("I1").settings
    assert settings["collectors"] == 8 and settings["collectors_before_triage"] == 4
    assert settings["max_depth"] == 4


async def test_the_orchestrator_cannot_finish_while_hypotheses_are_open(con):
    class HastyOrchestrator(HospitalWalkthrough):
        def orchestrator(self, turn: Turn):
            if turn.step == 0 and any(h.status == "proposed" for h in turn.hypotheses()):
                return [("finish", {"reason": "the first answer looks right"})]
            return super().orchestrator(turn)

    result = await investigate(con, QUESTION, model=HastyOrchestrator().model())
    first_turn = result.board.list_model_calls(agent="orchestrator")[1].request["messages"]
    refusal = first_turn[-1]
    assert refusal["is_error"] and "cannot finish" in refusal["content"]
    assert not [h for h in result.board.list_hypotheses() if not h.status.is_settled]


async def test_report_and_structured_answer(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model(),
                               variant="no_reporter")
    assert "## Answer" in result.report and "## Hypotheses" in result.report
    assert "Pulmorex lowers mortality for older COVID-19 patients" in result.answer["answers"]
    considered = result.answer["candidates_considered"]
    assert "Corvalin lowers mortality for older COVID-19 patients" in considered
    # Abandoned without evidence: proposed, but never analysed.
    assert "Hydrazol lowers mortality for older COVID-19 patients" not in considered
    assert result.board.get_hypothesis("H1").status is HypothesisStatus.CONTRADICTED
