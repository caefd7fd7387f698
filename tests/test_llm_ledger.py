"""One ledger per investigation: every role and model reserves its calls there, every
call sent is on the board (cancelled ones too), and a resumed run counts what was spent."""

from __future__ import annotations

import asyncio
import contextlib
import random

import duckdb
import pytest
from test_detective_scheduler import CLAIMS, Claims

import d2_notebook.llm as llm
from d2_notebook import investigate
from d2_notebook.board import Board, ModelCallStatus
from d2_notebook.detective.sequencer import WriteSequencer
from d2_notebook.errors import BudgetExceededError, ModelAPIError
from d2_notebook.llm import (
    Budget,
    Ledger,
    ModelRequest,
    ModelResponse,
    RecordingModel,
    TextPart,
    TokenUsage,
    UserMessage,
)
from d2_notebook.llm.offline import FunctionModel

QUESTION = "Which ward does best?"
BIG = TokenUsage(input_tokens=50_000, output_tokens=2_000)  # a 52 K-token response


@pytest.fixture(autouse=True)
def _block_real_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", False)


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE patients AS SELECT range AS id, range % 3 AS ward "
                "FROM range(40)")
    return con


def ask(agent: str, role: str = "collector") -> ModelRequest:
    return ModelRequest("s", [UserMessage("q")], role=role, agent=agent)


def answering(usage: TokenUsage = BIG, delay: float = 0.0, name: str = "m") -> FunctionModel:
    async def answer(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(delay)
        return ModelResponse([TextPart("ok")], usage=usage, model="claude-sonnet-4-6")

    return FunctionModel(answer, name=name)


def board_totals(board: Board) -> tuple[int, int, float]:
    """Calls sent, tokens and dollars as the board records them."""
    calls = board.list_model_calls()
    return (len(calls),
            sum(c.input_tokens + c.output_tokens + c.cache_read_tokens + c.cache_write_tokens
                for c in calls),
            round(sum(c.cost_usd for c in calls), 9))


def ledger_totals(ledger: Ledger) -> tuple[int, int, float]:
    return ledger.usage.calls, ledger.usage.total_tokens, round(ledger.usage.cost_usd, 9)


# --- one ledger, many models --------------------------------------------------------------


async def test_max_calls_holds_across_models_sharing_a_ledger(tmp_path) -> None:
    with Board.open(tmp_path / "b.d2board") as board:
        ledger = Ledger()
        models = [answering(delay=0.01, name=f"m{i}") for i in range(3)]
        recorders = [RecordingModel(m, board, ledger=ledger, budget=Budget(max_calls=3))
                     for m in models]
        outcomes = await asyncio.gather(*(recorders[i % 3].request(ask(f"a{i}"))
                                          for i in range(12)), return_exceptions=True)
        assert sum(isinstance(o, ModelResponse) for o in outcomes) == 3
        assert all(isinstance(o, BudgetExceededError) for o in outcomes
                   if not isinstance(o, ModelResponse))
        assert sum(len(m.requests) for m in models) == 3
        assert ledger.in_flight == 0 and board_totals(board) == ledger_totals(ledger)
        statuses = [c.status for c in board.list_model_calls(refused=True)]
        assert statuses.count(ModelCallStatus.REFUSED) == 9
        kinds = [e.kind for e in board.events()]  # views counting calls from the log
        assert (kinds.count("model_call.recorded"), kinds.count("model_call.refused")) == (3, 9)
        assert board.counts()["model_calls"] == 3


async def test_max_calls_is_never_exceeded_with_a_model_per_role(con) -> None:
    for seed in range(8):
        policy, rng = Claims(claims=CLAIMS[:4]), random.Random(seed)
        sent: list[str] = []

        async def respond(request: ModelRequest, policy=policy, rng=rng,
                          sent=sent) -> ModelResponse:
            sent.append(request.agent)
            await asyncio.sleep(rng.random() * 0.005)
            return policy(request)

        def model(name: str) -> FunctionModel:
            return FunctionModel(respond, name=name)

        roles = ("hypothesizer", "orchestrator", "collector", "judge", "reporter")
        result = await investigate(con, QUESTION, model=model("default"), collectors=4,
                                   models={role: model(role) for role in roles},
                                   max_calls=3 + seed)
        assert len(sent) <= 3 + seed, f"seed {seed}: {sent}"
        assert result.usage.calls == len(sent) == len(result.board.list_model_calls())


# --- every call sent is recorded, whenever it is cancelled --------------------------------


async def test_a_call_cancelled_at_the_provider_is_recorded_as_cancelled(tmp_path) -> None:
    with Board.open(tmp_path / "b.d2board") as board:
        ledger = Ledger()
        model = RecordingModel(answering(delay=10), board, ledger=ledger)
        task = asyncio.create_task(model.request(ask("collector-H1")))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        [call] = board.list_model_calls()
        assert call.status is ModelCallStatus.CANCELLED and call.response is None
        assert ledger.in_flight == 0 and board_totals(board) == ledger_totals(ledger) == (1, 0, 0)


async def test_a_response_waiting_for_its_turn_is_recorded_with_its_usage(tmp_path) -> None:
    with Board.open(tmp_path / "b.d2board") as board:
        ledger, sequencer = Ledger(), WriteSequencer()
        model = RecordingModel(answering(), board, ledger=ledger,
                               before_record=sequencer.arrive)
        first = sequencer.take()  # an earlier write still holds its turn
        task = asyncio.create_task(model.request(ask("collector-H1")))
        await asyncio.sleep(0.01)
        assert not task.done() and board.list_model_calls() == []
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        [call] = board.list_model_calls()
        assert call.status is ModelCallStatus.CANCELLED
        assert call.input_tokens == 50_000 and call.response is not None
        assert call.cost_usd > 0
        assert board_totals(board) == ledger_totals(ledger)
        assert ledger.usage.total_tokens == 52_000
        sequencer.release(first)


async def test_failed_and_refused_calls_cancelled_in_their_wait_are_recorded(tmp_path) -> None:
    class Broken:
        name = "broken"

        async def request(self, request: ModelRequest) -> ModelResponse:
            raise ModelAPIError("HTTP 500")

    with Board.open(tmp_path / "b.d2board") as board:
        ledger, sequencer = Ledger(), WriteSequencer()
        failing = RecordingModel(Broken(), board, ledger=ledger, before_record=sequencer.arrive)
        spent = RecordingModel(answering(), board, ledger=ledger, budget=Budget(max_calls=1),
                               before_record=sequencer.arrive)
        first = sequencer.take()
        tasks = [asyncio.create_task(failing.request(ask("judge-H1", "judge"))),
                 asyncio.create_task(spent.request(ask("judge-H2", "judge")))]
        await asyncio.sleep(0.01)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        statuses = {c.agent: c.status for c in board.list_model_calls(refused=True)}
        # The failed call took the one call of the budget: the other was refused.
        assert statuses == {"judge-H1": ModelCallStatus.FAILED,
                            "judge-H2": ModelCallStatus.REFUSED}
        assert board_totals(board) == ledger_totals(ledger) == (1, 0, 0)
        sequencer.release(first)


class Counting:
    """Wraps a model: what was really sent, and the usage that really came back."""

    def __init__(self, inner: FunctionModel) -> None:
        self.inner, self.name = inner, inner.name
        self.sent, self.tokens = 0, 0

    async def request(self, request: ModelRequest) -> ModelResponse:
        self.sent += 1
        response = await self.inner.request(request)
        self.tokens += response.usage.total_tokens
        return response


class CancellingClaims(Claims):
    """Jittered claims; the ``at``-th request cancels the run (like Ctrl-C) while
    other calls are out at the model or wait for their turn to be recorded."""

    def __init__(self, at: int, seed: int) -> None:
        super().__init__(refine=("Claim 2 holds",))
        self.at, self.calls, self.random = at, 0, random.Random(seed)
        self.task: asyncio.Task | None = None

    async def respond(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        if self.calls == self.at and self.task is not None:
            self.task.cancel()
        await asyncio.sleep(self.random.random() * 0.004)
        return self(request)


@pytest.mark.parametrize("seed", range(3))
async def test_cancelling_a_run_at_any_call_leaves_the_board_equal_to_what_was_sent(
        con, tmp_path, seed) -> None:
    for at in range(1, 16):
        policy = CancellingClaims(at, seed * 100 + at)
        model = Counting(FunctionModel(policy.respond, model_id="claude-sonnet-4-6"))
        path = tmp_path / f"{seed}-{at}.d2board"
        policy.task = asyncio.create_task(investigate(con, QUESTION, board=path,
                                                      collectors=4, model=model))
        with contextlib.suppress(asyncio.CancelledError):
            await policy.task
        with Board.open(path) as board:
            sent, tokens, _ = board_totals(board)
            assert (sent, tokens) == (model.sent, model.tokens), f"cancelled at call {at}"
            assert board.get_investigation("I1").state.value in {"interrupted", "finished"}


# --- the ledger carries across resumes ----------------------------------------------------


async def test_a_resumed_run_counts_what_earlier_runs_spent(con, tmp_path) -> None:
    path = tmp_path / "resumed.d2board"
    first = await investigate(con, QUESTION, board=path, collectors=2, max_calls=12,
                              model=Claims(refine=("Claim 2 holds",)).model())
    assert first.stop_reason and "10 of max_calls=12" in first.stop_reason  # 15% kept
    spent_before = first.usage.calls
    first.board.set_investigation_state("I1", "interrupted", actor="test")
    first.board.close()
    resumed = await investigate(con, None, board=path, resume=True, max_calls=14,
                                model=Claims(refine=("Claim 2 holds",)).model())
    calls = resumed.board.list_model_calls()
    assert len(calls) <= 14, "the budget counts both runs"
    assert resumed.usage.calls == len(calls) > spent_before
    assert resumed.stop_reason and "11 of max_calls=14" in resumed.stop_reason


async def test_a_resumed_run_counts_earlier_dollars(con, tmp_path) -> None:
    path = tmp_path / "dollars.d2board"
    first = await investigate(con, QUESTION, board=path, max_usd=0.08,
                              model=Claims().model(model_id="claude-sonnet-4-6"))
    assert first.stop_reason and "$0.068 of max_usd=$0.08 reached" in first.stop_reason
    sent_before, spent_before = len(first.board.list_model_calls()), first.usage.cost_usd
    first.board.set_investigation_state("I1", "interrupted", actor="test")
    first.board.close()
    resumed = await investigate(con, None, board=path, resume=True, max_usd=spent_before,
                                model=Claims().model(model_id="claude-sonnet-4-6"))
    calls = resumed.board.list_model_calls()
    assert resumed.usage.cost_usd == pytest.approx(sum(c.cost_usd for c in calls))
    assert resumed.usage.calls == len(calls)
    assert calls[sent_before:] == [], "the first run spent the budget: nothing more is sent"
    refused = [c for c in resumed.board.list_model_calls(refused=True)
               if c.status is ModelCallStatus.REFUSED]
    assert {c.role for c in refused} >= {"reporter"}
    assert resumed.state == "finished" and "max_usd" in (resumed.stop_reason or "")


def test_the_default_budget_is_dollars_and_can_be_removed() -> None:
    from d2_notebook.detective import InvestigationSettings
    from d2_notebook.detective.settings import DEFAULT_MAX_USD

    assert InvestigationSettings().max_usd == DEFAULT_MAX_USD == 5.0
    assert InvestigationSettings(max_usd=None).max_usd is None
    assert InvestigationSettings.from_dict({"max_usd": None}).max_usd is None


def test_calls_recorded_before_the_status_column_read_as_answered_or_failed(tmp_path) -> None:
    import sqlite3

    from d2_notebook.board import migrations

    path = tmp_path / "old.d2board"
    conn = sqlite3.connect(path, isolation_level=None)
    migrations.migrate(conn, [m for m in migrations.MIGRATIONS if m.version <= 5])
    for error in (None, "ModelAPIError: HTTP 500"):
        conn.execute(
            "INSERT INTO model_calls (investigation_id, role, agent, model, request, response,"
            " error, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
            " cost_usd, latency_s, created_at) VALUES (NULL, 'judge', 'judge', 'm', '{}',"
            " ?, ?, 5, 5, 0, 0, 0.0, 0.1, 't')", (None if error else "{}", error))
    conn.close()
    with Board.open(path) as board:
        assert [c.status for c in board.list_model_calls()] == [ModelCallStatus.ANSWERED,
                                                                 ModelCallStatus.FAILED]
