"""Every send is a call: a remote model's retries are admitted by the budget like any
call, a send whose billing is unknown (timed out after it was sent) counts at its
estimate, the board's model_calls show each send, and a run with retries replays."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import duckdb
import httpx2
import pytest
from test_detective_scheduler import Claims
from test_llm_ledger import board_totals, ledger_totals

import d2_notebook.llm as llm
from d2_notebook import investigate
from d2_notebook.board import Board, ModelCallStatus
from d2_notebook.cli.board_usage import usage_breakdown
from d2_notebook.detective.resume import spent_so_far
from d2_notebook.errors import BudgetExceededError, ModelAPIError
from d2_notebook.llm import (
    Budget,
    BudgetedModel,
    Ledger,
    ModelRequest,
    ModelResponse,
    RecordingModel,
    TextPart,
    TokenUsage,
    UserMessage,
    cost_of,
)
from d2_notebook.llm.anthropic_provider import AnthropicModel
from d2_notebook.llm.remote import RemoteModel
from d2_notebook.llm.replay import ReplayModel
from d2_notebook.llm.usage import estimate_call

PRICED = "claude-sonnet-4-6"  # $3 per million input tokens, $15 per million output
ANSWERED = TokenUsage(input_tokens=10_000, output_tokens=2_000)
LIMIT_S = 60.0


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the 'remote' models run: every one here is a fake in this process."""
    monkeypatch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", True)


class ReadTimeout(Exception):
    """The answer did not come back in time; the server may have processed the
    request (and billed it) all the same. No HTTP status."""


class Overloaded(Exception):
    """The server refused the request with HTTP 529 (not processed, not billed)."""

    status_code = 529


class FakeRemote(RemoteModel):
    """A remote model over an offline answer: the sends numbered in ``failing`` (from 1)
    fail with the exception given there; the others are answered with ``ANSWERED``
    usage, or by ``answer(request)`` when given."""

    def __init__(self, failing: dict[int, Exception] | None = None, *, max_retries: int = 3,
                 retry_delay: float = 0.0, answer: Any = None) -> None:
        super().__init__(PRICED, max_retries=max_retries, timeout=1.0, max_concurrency=8,
                         retry_base_delay=retry_delay, retry_max_delay=retry_delay)
        self.failing = failing or {}
        self.answer = answer
        self.sent = 0

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return {"request": request}

    async def _send(self, params: dict[str, Any]) -> Any:
        self.sent += 1
        if self.sent in self.failing:
            raise self.failing[self.sent]
        if self.answer is not None:
            return await self.answer(params["request"])
        return ModelResponse([TextPart("ok")], usage=ANSWERED, model=PRICED)

    def _parse(self, raw: Any) -> ModelResponse:
        return raw

    def _is_api_error(self, exc: Exception) -> bool:
        return isinstance(exc, ReadTimeout | Overloaded)

    def _is_connection_error(self, exc: Exception) -> bool:
        return isinstance(exc, ReadTimeout)


def timeouts(*sends: int) -> dict[int, Exception]:
    return {send: ReadTimeout("read timed out") for send in sends}


def ask(agent: str = "collector-H1") -> ModelRequest:
    return ModelRequest("s" * 3_000, [UserMessage("q")], max_tokens=1_000, role="collector",
                        agent=agent)


ESTIMATE = estimate_call(ask(), PRICED)  # what a send of unknown billing counts


def statuses(board: Board) -> list[ModelCallStatus]:
    return [c.status for c in board.list_model_calls(refused=True)]


# --- the ledger counts every send ---------------------------------------------------------


async def test_a_budget_with_no_room_stops_the_retries_with_its_own_message(allowed) -> None:
    remote = FakeRemote(timeouts(1, 2))  # the repro: two timeouts, then an answer
    model = BudgetedModel(remote, Budget(max_calls=2))
    with pytest.raises(BudgetExceededError, match="2 of max_calls=2"):
        await model.request(ask())
    assert remote.sent == 2  # the third send was refused, never sent
    assert model.usage.calls == 2
    assert model.usage.total_tokens == 2 * ESTIMATE.tokens
    assert model.ledger.in_flight == 0


async def test_every_send_counts_and_a_timed_out_one_at_its_estimate(allowed) -> None:
    remote = FakeRemote(timeouts(1, 2))
    model = BudgetedModel(remote, Budget())
    assert (await model.request(ask())).text == "ok"
    assert remote.sent == model.usage.calls == 3
    assert model.usage.total_tokens == 2 * ESTIMATE.tokens + ANSWERED.total_tokens
    assert model.usage.cost_usd == pytest.approx(
        2 * ESTIMATE.cost_usd + cost_of(PRICED, ANSWERED).usd)


async def test_a_send_refused_with_a_status_is_a_call_of_no_tokens(allowed) -> None:
    remote = FakeRemote({1: Overloaded("overloaded")})
    model = BudgetedModel(remote, Budget())
    await model.request(ask())
    assert model.usage.calls == 2
    assert model.usage.total_tokens == ANSWERED.total_tokens


async def test_the_dollars_of_timed_out_sends_stop_the_retries(allowed) -> None:
    remote = FakeRemote(timeouts(1, 2, 3))
    # Room for the first send and one retry at their estimates, not for a third send.
    model = BudgetedModel(remote, Budget(max_usd=2 * ESTIMATE.cost_usd
                                         + ESTIMATE.prompt_usd / 2))
    with pytest.raises(BudgetExceededError, match="max_usd"):
        await model.request(ask())
    assert remote.sent == 2 and model.usage.calls == 2


# --- the board's audit trail shows every send, and agrees with the ledger ------------------


async def test_each_retried_send_is_a_row_that_agrees_with_the_ledger(allowed,
                                                                      board_path) -> None:
    with Board.open(board_path) as board:
        ledger = Ledger()
        investigation = board.start_investigation("Which ward does best?")
        model = RecordingModel(FakeRemote(timeouts(1, 2)), board, investigation.id,
                               ledger=ledger)
        await model.request(ask())
        assert statuses(board) == [ModelCallStatus.RETRIED, ModelCallStatus.RETRIED,
                                   ModelCallStatus.ANSWERED]
        retried = board.list_model_calls()[0]
        assert retried.error == "ReadTimeout: read timed out" and retried.response is None
        assert (retried.input_tokens, retried.output_tokens) == (ESTIMATE.prompt_tokens,
                                                                 ESTIMATE.answer_tokens)
        assert retried.cost_usd == pytest.approx(ESTIMATE.cost_usd)
        assert board_totals(board) == ledger_totals(ledger) == (
            3, 2 * ESTIMATE.tokens + ANSWERED.total_tokens, round(ledger.usage.cost_usd, 9))
        # ``d2 board show --usage`` and a resumed run's ledger read the same calls.
        total = usage_breakdown(board)[0].total
        assert (total.calls, total.input_tokens + total.output_tokens) == ledger_totals(
            ledger)[:2]
        assert spent_so_far(board, investigation.id).calls == 3


async def test_a_retry_the_budget_refuses_is_recorded_as_refused(allowed, board_path) -> None:
    with Board.open(board_path) as board:
        ledger = Ledger()
        model = RecordingModel(FakeRemote(timeouts(1, 2)), board, ledger=ledger,
                               budget=Budget(max_calls=2))
        with pytest.raises(BudgetExceededError, match="2 of max_calls=2"):
            await model.request(ask())
        assert statuses(board) == [ModelCallStatus.RETRIED, ModelCallStatus.RETRIED,
                                   ModelCallStatus.REFUSED]
        assert board_totals(board) == ledger_totals(ledger) == (2, 2 * ESTIMATE.tokens,
                                                                round(2 * ESTIMATE.cost_usd, 9))
        assert ledger.in_flight == 0


async def test_a_last_send_that_timed_out_counts_at_its_estimate(allowed, board_path) -> None:
    with Board.open(board_path) as board:
        ledger = Ledger()
        model = RecordingModel(FakeRemote(timeouts(1, 2), max_retries=1), board,
                               ledger=ledger)
        with pytest.raises(ModelAPIError, match="after 2 attempts"):
            await model.request(ask())
        assert statuses(board) == [ModelCallStatus.RETRIED, ModelCallStatus.FAILED]
        assert board_totals(board) == ledger_totals(ledger) == (2, 2 * ESTIMATE.tokens,
                                                                round(2 * ESTIMATE.cost_usd, 9))


async def test_a_run_cancelled_while_waiting_to_retry_counts_the_failed_send(
        allowed, board_path) -> None:
    with Board.open(board_path) as board:
        ledger = Ledger()
        remote = FakeRemote(timeouts(1), retry_delay=30.0)
        model = RecordingModel(remote, board, ledger=ledger)
        task = asyncio.create_task(model.request(ask()))
        while remote.sent == 0:
            await asyncio.sleep(0.005)
        await asyncio.sleep(0.01)  # the send failed; the retry waits out its backoff
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, LIMIT_S)
        assert remote.sent == 1 and statuses(board) == [ModelCallStatus.CANCELLED]
        assert board_totals(board) == ledger_totals(ledger) == (1, ESTIMATE.tokens,
                                                                round(ESTIMATE.cost_usd, 9))
        assert ledger.in_flight == 0


async def test_the_anthropic_sdk_read_timeout_is_counted_at_the_estimate(allowed,
                                                                        board_path) -> None:
    sent: list[dict] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        if len(sent) == 1:
            raise httpx2.ReadTimeout("read timed out", request=request)
        if len(sent) == 2:
            return httpx2.Response(529, json={"type": "error", "error": {
                "type": "overloaded_error", "message": "Overloaded"}})
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": PRICED,
            "content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 20}})

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handle))
    remote = AnthropicModel(PRICED, api_key="sk-test", http_client=client,
                            retry_base_delay=0.0, max_retries=3)
    with Board.open(board_path) as board:
        ledger = Ledger()
        model = RecordingModel(remote, board, ledger=ledger)
        assert (await model.request(ask())).text == "fine"
        calls = board.list_model_calls()
        assert len(sent) == 3 and [c.status for c in calls] == [
            ModelCallStatus.RETRIED, ModelCallStatus.RETRIED, ModelCallStatus.ANSWERED]
        estimate = estimate_call(ask(), remote.model_id)
        # the timeout: billing unknown; the 529: refused by the server, not billed
        assert [c.input_tokens + c.output_tokens for c in calls] == [estimate.tokens, 0, 120]
        assert board_totals(board) == ledger_totals(ledger)


# --- a recording with retried sends replays --------------------------------------------------


async def test_retried_sends_replay_as_the_answer_or_the_refusal(allowed, board_path) -> None:
    with Board.open(board_path) as board:
        answered = RecordingModel(FakeRemote(timeouts(1)), board)
        await answered.request(ask("collector-H1"))
        refused = RecordingModel(FakeRemote(timeouts(1, 2)), board, budget=Budget(max_calls=2))
        with pytest.raises(BudgetExceededError) as stop:
            await refused.request(ask("collector-H2"))
        replay = ReplayModel(board)
        assert (await replay.request(ask("collector-H1"))).text == "ok"
        with pytest.raises(BudgetExceededError) as replayed:
            await replay.request(ask("collector-H2"))
        assert str(replayed.value) == str(stop.value)
        assert replay.unreplayed() == {}


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE patients AS SELECT range AS id, range % 3 AS ward "
                "FROM range(40)")
    return con


async def test_an_investigation_with_timeouts_counts_each_send_and_replays(allowed,
                                                                           con) -> None:
    policy = Claims(refine=("Claim 2 holds",))
    offline = policy.model(model_id=PRICED)
    remote = FakeRemote(timeouts(2, 5, 6, 11), answer=offline.request)
    original = await asyncio.wait_for(
        investigate(con, "Which ward does best?", collectors=4, model=remote), LIMIT_S)
    replayed = None
    try:
        assert original.state == "finished"
        board = original.board
        assert statuses(board).count(ModelCallStatus.RETRIED) == 4
        assert original.usage.calls == remote.sent == len(board.list_model_calls())
        assert board_totals(board)[:2] == (original.usage.calls, original.usage.total_tokens)
        replayed = await asyncio.wait_for(
            investigate(con, None, replay=original.board), LIMIT_S)
        assert replayed.state == "finished"

        def content(b: Board) -> list[Any]:
            return [[h.statement for h in b.list_hypotheses()],
                    [(e.id, e.sql) for e in b.list_evidence()],
                    [(v.hypothesis_id, v.status) for v in b.list_verdicts()],
                    [(c.agent, c.status, c.response) for c in b.list_model_calls(refused=True)
                     if c.status is not ModelCallStatus.RETRIED]]

        assert content(replayed.board) == content(original.board)
    finally:
        original.board.close()
        if replayed is not None:
            replayed.board.close()
