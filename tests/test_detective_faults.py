"""Bad input and faults: budgets, hostile SQL, model errors, interruption and resume."""

from __future__ import annotations

import asyncio
import collections

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.team_policy import Turn
from d2_notebook.errors import InvalidRecordError, ModelAPIError, ModelConfigError
from d2_notebook.llm import ModelRequest, ModelResponse

QUESTION = hospital.QUESTION


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


def evidence_keys(board: Board) -> list[tuple[str, str]]:
    return [(e.sql, e.result_hash) for e in board.list_evidence()]


def tool_results(board: Board, agent: str) -> list[dict]:
    """Every tool result an agent received, once each (requests repeat the history)."""
    seen: dict[str, dict] = {}
    for call in board.list_model_calls(agent=agent):
        for message in call.request["messages"]:
            if message.get("role") == "tool":
                seen.setdefault(message["tool_call_id"], message)
    return list(seen.values())


async def test_a_budget_ends_collection_and_the_report_says_so(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model(), max_calls=14)
    assert result.state == "finished"
    assert "model call budget spent" in result.stop_reason
    assert "## Not examined" in result.report
    assert "Collection stopped early" in result.report
    # The reporter still ran, within its reserved share (14 calls - 15% for collection).
    agents = collections.Counter(c.agent for c in result.board.list_model_calls())
    assert agents["reporter"] >= 1
    assert sum(agents.values()) <= 14
    open_ids = [h.id for h in result.board.list_hypotheses() if not h.status.is_settled]
    assert open_ids and all(h in result.report for h in open_ids)


async def test_a_dollar_budget_is_enforced_too(con):
    result = await investigate(con, QUESTION, model=HospitalWalkthrough().model(
        model_id="claude-sonnet-4-6"), max_usd=0.05)
    assert "dollar budget spent" in result.stop_reason
    assert result.usage.cost_usd < 0.08


class HostileCollector(HospitalWalkthrough):
    """A collector that first tries to write and to read files, then works normally."""

    def collector(self, turn: Turn):
        if turn.step == 0:
            return [("run_sql", {"sql": "DROP TABLE patients"}),
                    ("run_sql", {"sql": "SELECT * FROM read_csv('/etc/passwd')"}),
                    ("run_sql", {"sql": "SELECT 1; DELETE FROM outcomes"})]
        if turn.step == 1:
            return [("run_sql", {"sql": sql}) for sql in self._queries(turn, self._statement(turn))]
        turn_results = turn.results[3:]
        return super().collector(_Shifted(turn, turn_results))


class _Shifted(Turn):
    """A turn seen without the hostile first step (so the walkthrough can continue)."""

    def __init__(self, turn: Turn, results) -> None:
        super().__init__(turn.request)
        self._results = results

    @property
    def step(self) -> int:
        return 1

    @property
    def results(self):
        return self._results


async def test_hostile_sql_from_a_collector_is_refused_and_the_run_goes_on(con):
    before = con.execute("SELECT count(*) FROM patients").fetchall()
    result = await investigate(con, QUESTION, model=HostileCollector().model())
    assert result.state == "finished"
    refusals = [m for m in tool_results(result.board, "collector-H1") if m["is_error"]]
    assert len(refusals) == 3
    assert all("refused" in m["content"].lower() or "not allowed" in m["content"].lower()
               for m in refusals), refusals
    assert con.execute("SELECT count(*) FROM patients").fetchall() == before
    assert con.execute("SELECT count(*) FROM outcomes").fetchall()[0][0] > 0
    assert result.board.get_hypothesis("H1").status is HypothesisStatus.CONTRADICTED


async def test_tool_mistakes_go_back_to_the_model_as_tool_errors(con):
    class Clumsy(HospitalWalkthrough):
        def orchestrator(self, turn):
            if turn.step == 0 and "dose" in " ".join(h.statement for h in turn.hypotheses()):
                return [("abandon", {"hypothesis_id": "H99", "reason": "no such"}),
                        ("abandon", {"hypothesis_id": "H1"}),
                        ("no_such_tool", {})]
            return super().orchestrator(turn)

        def collector(self, turn):
            if turn.step == 1:
                return [("record_evidence", {"query_id": "Q42", "description": "d",
                                             "stance": "supports", "reading": "r"}),
                        ("record_evidence", {"query_id": "Q1", "description": "d",
                                             "stance": "maybe", "reading": "r"})]
            if turn.step == 2:
                return super().collector(_Shifted(turn, turn.results[:1]))
            return super().collector(turn)

    result = await investigate(con, QUESTION, model=Clumsy().model())
    errors = [m["content"] for m in tool_results(result.board, "orchestrator") if m["is_error"]]
    assert any("unknown hypothesis 'H99'" in e for e in errors)
    assert any("missing argument(s): reason" in e for e in errors)
    assert any("unknown tool 'no_such_tool'" in e for e in errors)
    errors = [m["content"] for m in tool_results(result.board, "collector-H1") if m["is_error"]]
    assert any("unknown query id 'Q42'" in e for e in errors)
    assert any("must be one of ['supports', 'contradicts', 'weak', 'neutral']" in e for e in errors)
    assert result.state == "finished"


async def test_an_agent_repeating_itself_is_stopped(con):
    class Looping(HospitalWalkthrough):
        def collector(self, turn):
            if turn.hypothesis_id == "H4":
                return [("run_sql", {"sql": "SELECT count(*) FROM patients"})]
            return super().collector(turn)

    result = await investigate(con, QUESTION, model=Looping().model())
    # Two turns (the judge sends the thin evidence back once), each stopped after the
    # third identical call instead of running to the 12-step limit.
    assert len(result.board.list_model_calls(agent="collector-H4")) == 6
    errors = [m["content"] for m in tool_results(result.board, "collector-H4") if m["is_error"]]
    assert errors and "already ran this query as Q1" in errors[0]
    assert result.state == "finished"


async def test_an_agent_is_told_its_last_call_and_can_still_finish(con):
    class Wandering(HospitalWalkthrough):
        """H4's collector explores for ever unless it reads that its next call is its last."""

        def collector(self, turn):
            last = turn.request.messages[-1]
            told = "This is your last model call of this turn" in getattr(last, "text", "")
            if turn.hypothesis_id == "H4" and not told:
                return [("run_sql", {"sql": f"SELECT {turn.step} AS step_{turn.step}"})]
            return super().collector(turn)

    result = await investigate(con, QUESTION, model=Wandering().model(), max_steps=4)
    calls = result.board.list_model_calls(agent="collector-H4")
    notices = [c.request["messages"][-1].get("text", "") for c in calls]
    assert "last model call of this turn (at most 4)" in notices[3]
    assert "call submit_for_judgement" in notices[3]
    assert not any("last model call" in n for n in notices[:3])
    # Told at its fourth call, the collector records its evidence and submits: the turn
    # ends by its tool, not at the step limit, and the judge decides on what it recorded.
    assert result.board.get_hypothesis("H4").status.is_settled
    assert result.state == "finished"


class FailingOnce(HospitalWalkthrough):
    """The walkthrough, but one collector's model call fails beyond retries."""

    def __init__(self, fail_agent: str) -> None:
        super().__init__()
        self.fail_agent = fail_agent

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if request.agent == self.fail_agent:
            raise ModelAPIError("the provider is overloaded (529) after 4 retries")
        return super().__call__(request)


async def test_a_model_error_mid_run_fails_the_run_and_resume_finishes_it(con, board_path):
    with pytest.raises(ModelAPIError, match="overloaded"):
        await investigate(con, QUESTION, board=board_path,
                          model=FailingOnce("collector-H4").model())
    with Board.open(board_path) as board:
        investigation = board.get_investigation("I1")
        assert investigation.state.value == "failed" and "overloaded" in investigation.error
        failed_calls = [c for c in board.list_model_calls() if c.error]
        assert [c.agent for c in failed_calls] == ["collector-H4"]
        # The other collectors' work is on the board.
        assert board.get_hypothesis("H1").status.is_settled
        assert board.get_hypothesis("H4").status is HypothesisStatus.INVESTIGATING
        before = evidence_keys(board)
    result = await investigate(con, None, board=board_path, resume=True,
                               model=HospitalWalkthrough().model())
    assert result.state == "finished" and result.investigation_id == "I1"
    after = evidence_keys(result.board)
    assert after[: len(before)] == before, "nothing recorded is lost"
    assert len(after) == len(set(after)), "nothing is duplicated"
    assert result.board.get_hypothesis("H4").status is HypothesisStatus.SUPPORTED


class Hanging(HospitalWalkthrough):
    """Collector H3 hangs (a slow model) until the run is interrupted."""

    def __init__(self) -> None:
        super().__init__()
        self.hanging = asyncio.Event()

    async def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        if request.agent == "collector-H3" and request.messages[-1].__class__.__name__ != \
                "UserMessage":
            self.hanging.set()
            await asyncio.Event().wait()
        return super().__call__(request)


async def test_interruption_leaves_a_consistent_board_that_resumes(con, board_path):
    policy = Hanging()
    run = asyncio.create_task(investigate(con, QUESTION, board=board_path, model=policy.model()))
    await asyncio.wait_for(policy.hanging.wait(), 10)
    await asyncio.sleep(0.2)  # let the other collectors and judges finish their work
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    with Board.open(board_path) as board:
        assert board.get_investigation("I1").state.value == "interrupted"
        assert board.get_hypothesis("H3").status is HypothesisStatus.INVESTIGATING
        settled_before = {h.id: h.status for h in board.list_hypotheses() if h.status.is_settled}
        before = evidence_keys(board)
        assert before
    result = await investigate(con, QUESTION, board=board_path, resume=True,
                               model=HospitalWalkthrough().model())
    assert result.state == "finished"
    for hyp_id, status in settled_before.items():
        assert result.board.get_hypothesis(hyp_id).status is status, "settled stays settled"
    after = evidence_keys(result.board)
    assert after[: len(before)] == before
    assert len(after) == len(set(after))
    kinds = [e.kind for e in result.board.events()]
    assert "investigation.resumed" in kinds
    redone = [e for e in result.board.events(kinds=["hypothesis.status"])
              if e.payload["id"] == "H3" and e.payload["status"] == "proposed"]
    assert redone and "redone" in redone[0].payload["reason"]


async def test_resume_without_anything_to_resume_names_the_fix(con, board_path):
    await investigate(con, QUESTION, board=board_path, model=HospitalWalkthrough().model())
    with pytest.raises(InvalidRecordError, match="nothing to resume"):
        await investigate(con, None, board=board_path, resume=True,
                          model=HospitalWalkthrough().model())
    with pytest.raises(InvalidRecordError, match="pass the question"):
        await investigate(con, "  ", model=HospitalWalkthrough().model())


async def test_no_model_configured_names_the_fix_and_touches_no_board(con, board_path):
    with pytest.raises(ModelConfigError, match="ANTHROPIC_API_KEY"):
        await investigate(con, QUESTION, board=board_path)
    assert not board_path.exists()


async def test_bad_settings_are_refused(con):
    with pytest.raises(InvalidRecordError, match="unknown variant 'best'"):
        await investigate(con, QUESTION, model=HospitalWalkthrough().model(), variant="best")
    with pytest.raises(InvalidRecordError, match="collectors must be at least 1"):
        await investigate(con, QUESTION, model=HospitalWalkthrough().model(), collectors=0)
    with pytest.raises(InvalidRecordError, match="collectors_before_triage must be at least 1"):
        await investigate(con, QUESTION, model=HospitalWalkthrough().model(),
                          collectors_before_triage=0)


async def test_resume_after_finishing_takes_human_additions_into_account(con, board_path):
    first = await investigate(con, QUESTION, board=board_path,
                              model=HospitalWalkthrough().model())
    pulmorex = next(h for h in first.board.list_hypotheses() if h.statement.startswith("Pulmorex"))
    assert pulmorex.status is HypothesisStatus.SUPPORTED
    # A student adds evidence against a settled hypothesis, and a hypothesis of her own.
    frame = con.execute("SELECT 1 AS deaths_in_my_ward").df()
    evidence = first.board.add_evidence("SELECT 1 AS deaths_in_my_ward", frame,
                                        description="my ward's count", author_role="human",
                                        investigation_id="I1")
    first.board.link(evidence.id, pulmorex.id, "contradicts", "my ward saw no benefit",
                     actor="student")
    mine = first.board.add_hypothesis("Solvanir lowers mortality for older COVID-19 patients",
                                      author_role="human", author="student",
                                      investigation_id="I1")
    first.board.close()

    again = await investigate(con, None, board=board_path, resume=True,
                              model=HospitalWalkthrough().model())
    board = again.board
    assert again.state == "finished" and again.investigation_id == "I1"
    reopened = board.get_hypothesis(pulmorex.id)
    assert reopened.status is HypothesisStatus.CONTRADICTED, "judged again with her evidence"
    assert evidence.id in board.latest_verdict(pulmorex.id).evidence_ids
    assert board.get_hypothesis(mine.id).status.is_settled, "her hypothesis was examined"
    reasons = [e.payload["reason"] for e in board.events(kinds=["hypothesis.status"])
               if e.payload["id"] == pulmorex.id and e.payload["status"] == "proposed"]
    assert reasons == [f"new evidence {evidence.id} since its verdict; judged again"]
