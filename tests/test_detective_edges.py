"""Edge cases of the control loop and the tools (each once a real defect)."""

from __future__ import annotations

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.board import HypothesisStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough, comparison_sql
from d2_notebook.detective.policies.team_policy import TeamPolicy, Turn
from d2_notebook.llm import ModelRequest, ModelResponse, TextPart, ToolCallPart

QUESTION = hospital.QUESTION


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


def tool_errors(board, agent: str) -> list[str]:
    seen = {}
    for call in board.list_model_calls(agent=agent):
        for message in call.request["messages"]:
            if message.get("role") == "tool" and message["is_error"]:
                seen[message["tool_call_id"]] = message["content"]
    return list(seen.values())


async def test_no_hypothesis_waits_for_the_orchestrator(con):
    class SilentOrchestrator(HospitalWalkthrough):
        def orchestrator(self, turn: Turn):
            if "every hypothesis on the board is settled" in turn.first_message.lower():
                return super().orchestrator(turn)
            return "Looks fine."  # triage without a decision: nothing is held back

    result = await investigate(con, QUESTION, model=SilentOrchestrator().model())
    assert result.state == "finished"
    assert not [h for h in result.board.list_hypotheses() if not h.status.is_settled]
    assert result.board.get_hypothesis("H1").status is HypothesisStatus.CONTRADICTED


async def test_the_judge_gets_the_collectors_summary(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model())
    submitted = result.board.events(kinds=["collector.submitted"])
    assert {e.payload["hypothesis_id"] for e in submitted} >= {"H1", "H2", "H3", "H4"}
    first = result.board.list_model_calls(agent="judge-H4")[0].request["messages"][0]["text"]
    assert "THE COLLECTOR'S SUMMARY: evidence recorded" in first


async def test_a_decisive_verdict_must_cite_evidence(con):
    class Careless(HospitalWalkthrough):
        def judge(self, turn: Turn):
            if turn.step == 0 and turn.hypothesis_id == "H4":
                return [("give_verdict", {"status": "supported", "confidence": 0.9,
                                          "rationale": "obviously", "evidence_ids": []})]
            return super().judge(turn)

    result = await investigate(con, QUESTION, model=Careless().model())
    assert any("must cite the evidence" in e for e in tool_errors(result.board, "judge-H4"))
    verdict = result.board.latest_verdict("H4")
    assert verdict.evidence_ids, "the retried verdict cites evidence"


async def test_a_guided_hypothesizer_may_add_nothing(con):
    class NothingToAdd(HospitalWalkthrough):
        def hypothesizer(self, turn: Turn):
            if "asks for more hypotheses" in turn.first_message:
                return [("done", {"summary": "the board already covers every candidate"})]
            return super().hypothesizer(turn)

        def orchestrator(self, turn: Turn):
            if not getattr(self, "asked", False):
                self.asked = True
                return [("request_hypotheses", {"guidance": "anything about doses?"})]
            return TeamPolicy.orchestrator(self, turn)  # carry on, then finish

    result = await investigate(con, QUESTION, model=NothingToAdd().model())
    assert result.state == "finished"
    assert len(result.board.list_model_calls(agent="hypothesizer")) == 3  # 2 + 1 (guided)
    assert tool_errors(result.board, "hypothesizer") == []


async def test_a_budget_stop_leaves_nothing_marked_as_being_investigated(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model(), max_calls=14)
    assert result.stop_reason
    statuses = {h.status for h in result.board.list_hypotheses()}
    assert HypothesisStatus.INVESTIGATING not in statuses
    reset = [e for e in result.board.events(kinds=["hypothesis.status"])
             if (e.payload.get("reason") or "").startswith("not examined to the end")]
    assert reset


async def test_single_agent_baselines_get_a_team_sized_step_budget(con):
    drugs = [d for d in hospital.DRUGS if d != "Standard care"]

    class Thorough(HospitalWalkthrough):
        def react(self, turn: Turn):
            if turn.step < 15:  # one query per step: more steps than one team agent has
                return [("run_sql", {"sql": comparison_sql(drugs[turn.step % 5],
                                                           by_severity=turn.step >= 5)
                                     + f" -- pass {turn.step}"})]
            return [("final_answer", {"answer_markdown": "Pulmorex", "answers": ["Pulmorex"],
                                      "candidates_considered": drugs})]

    result = await investigate(con, QUESTION, model=Thorough().model(), variant="react_sql")
    assert result.answer["answers"] == ["Pulmorex"]
    assert len(result.queries) == 15


async def test_an_answer_cut_at_the_output_limit_is_pointed_out(con):
    class Verbose(HospitalWalkthrough):
        def __call__(self, request: ModelRequest) -> ModelResponse:
            turn = Turn(request)
            if request.role == "reporter" and turn.step == 0:
                return ModelResponse(
                    parts=[TextPart("Here is the"), ToolCallPart("cut", "write_report", {})],
                    stop_reason="max_tokens")
            return super().__call__(request)

    result = await investigate(con, QUESTION, model=Verbose().model())
    second = result.board.list_model_calls(agent="reporter")[1].request["messages"]
    assert "cut off at the output limit (8192 tokens)" in second[-1]["text"]
    assert result.report.startswith("## Answer")
