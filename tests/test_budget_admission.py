"""Admitting a model call: calls under way count at their estimate, the reporter's
reserve is held back only for a reporter, and a stop names the user's own budget."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from d2_notebook import investigate
from d2_notebook.board import Board, ModelCallStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import BudgetExceededError
from d2_notebook.llm import (
    Budget,
    Ledger,
    ModelRequest,
    ModelResponse,
    RecordingModel,
    TextPart,
    TokenUsage,
    UserMessage,
    cost_of,
)
from d2_notebook.llm.offline import FunctionModel

PRICED = "claude-sonnet-4-6"  # $3 per million input tokens, $15 per million output
USED = TokenUsage(input_tokens=2_000, output_tokens=500)  # what each offline call reports
ONE_CALL_USD = cost_of(PRICED, USED).usd  # $0.0135
ANSWER = TokenUsage(output_tokens=USED.output_tokens)
LIMIT_S = 60.0  # no test waits longer than this for a run
QUICK_S = 2.0  # for a call that must be refused at once, not sent


def ask(agent: str) -> ModelRequest:
    """A collector's request whose prompt is about USED's 2,000 input tokens."""
    return ModelRequest("x" * 6_000, [UserMessage("q")], max_tokens=500, role="collector",
                        agent=agent)


def slow_answers(gate: asyncio.Event | None = None) -> FunctionModel:
    """A priced offline model; every call takes a while (or waits for ``gate``) and
    reports USED."""

    async def answer(request: ModelRequest) -> ModelResponse:
        if gate is not None:
            await gate.wait()
        else:
            await asyncio.sleep(0.02)
        return ModelResponse([TextPart("ok")], usage=USED, model=PRICED)

    return FunctionModel(answer, model_id=PRICED)


async def parallel(model: RecordingModel, calls: int) -> list[object]:
    """``calls`` requests sent at once, as parallel collectors send them."""
    return await asyncio.wait_for(
        asyncio.gather(*(model.request(ask(f"collector-H{i}")) for i in range(calls)),
                       return_exceptions=True), LIMIT_S)


# --- 1. calls under way count when another is admitted ----------------------------------


@pytest.mark.parametrize("budget, used", [
    (Budget(max_usd=0.05), lambda usage: usage.cost_usd),
    (Budget(max_tokens=6_000), lambda usage: usage.total_tokens),
])
async def test_parallel_calls_stop_within_the_cap_but_for_the_last_answer(board_path: Path,
                                                                         budget, used) -> None:
    answer = cost_of(PRICED, ANSWER).usd if budget.max_usd else ANSWER.total_tokens
    cap = budget.max_usd or budget.max_tokens
    with Board.open(board_path) as board:
        ledger = Ledger()
        model = RecordingModel(slow_answers(), board, ledger=ledger, budget=budget)
        outcomes = await parallel(model, 8)
        answered = sum(isinstance(o, ModelResponse) for o in outcomes)
        assert answered >= 2
        assert all(isinstance(o, BudgetExceededError) for o in outcomes
                   if not isinstance(o, ModelResponse))
        # Admitted only while spent + calls under way (at estimate) + its own prompt
        # stayed below the cap: only the last call's answer may pass it.
        assert used(ledger.usage) <= cap + answer
        assert ledger.in_flight == 0 and ledger.usage.calls == answered
        assert len(board.list_model_calls()) == answered


async def test_a_call_under_way_holds_its_estimate_until_it_ends(board_path: Path) -> None:
    gate = asyncio.Event()
    with Board.open(board_path) as board:
        ledger = Ledger()
        model = RecordingModel(slow_answers(gate), board, ledger=ledger,
                               budget=Budget(max_usd=0.02))
        first = asyncio.create_task(model.request(ask("collector-H1")))
        await asyncio.sleep(0.01)
        assert ledger.in_flight == 1
        with pytest.raises(BudgetExceededError, match=r"max_usd=\$0\.02"):
            await asyncio.wait_for(model.request(ask("collector-H2")), QUICK_S)
        first.cancel()  # cancelled at the provider: the estimate is released, nothing spent
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(first, LIMIT_S)
        assert ledger.in_flight == 0 and ledger.usage.cost_usd == 0.0
        gate.set()
        await asyncio.wait_for(model.request(ask("collector-H3")), LIMIT_S)
        assert ledger.usage.cost_usd == pytest.approx(ONE_CALL_USD)  # settled as reported
        statuses = [c.status for c in board.list_model_calls(refused=True)]
        assert statuses == [ModelCallStatus.REFUSED, ModelCallStatus.CANCELLED,
                            ModelCallStatus.ANSWERED]


async def run_hospital(tmp_path: Path, **settings: object):
    return await asyncio.wait_for(investigate(
        hospital.create(), hospital.QUESTION, board=tmp_path / "h.d2board",
        model=HospitalWalkthrough().model(model_id=PRICED), **settings), LIMIT_S)


@pytest.mark.parametrize("cap, value", [("max_usd", 0.10), ("max_tokens", 20_000)])
async def test_parallel_collectors_leave_the_reporter_its_reserve(tmp_path: Path, cap,
                                                                  value) -> None:
    result = await run_hospital(tmp_path, collectors=8, **{"max_usd": None, cap: value})
    try:
        def spent(totals) -> float:
            return totals.cost_usd if cap == "max_usd" else totals.total_tokens

        collection = sum(spent(t) for role, t in result.usage.by_role.items()
                         if role != "reporter")
        def answer(role: str) -> float:  # the largest answer of ``role`` or of collection
            return max(cost_of(PRICED, TokenUsage(output_tokens=c.output_tokens)).usd
                       if cap == "max_usd" else c.output_tokens
                       for c in result.board.list_model_calls()
                       if (c.role == "reporter") == (role == "reporter"))

        assert result.stop_reason and cap in result.stop_reason
        # Within its share but for the last call's answer, and never into the reserve.
        assert collection <= 0.85 * value + answer("collector")
        assert collection < value
        reporter = [c.status for c in result.board.list_model_calls(refused=True)
                    if c.role == "reporter"]
        assert ModelCallStatus.ANSWERED in reporter
        assert spent(result.usage) <= value + answer("reporter")
    finally:
        result.board.close()


# --- 2. the reserve is held back only for a reporter ------------------------------------


@pytest.mark.parametrize("variant, cap", [("no_reporter", 12), ("single_agent_board", 4)])
async def test_a_variant_without_a_reporter_may_spend_the_whole_budget(tmp_path: Path,
                                                                      variant, cap) -> None:
    result = await run_hospital(tmp_path, variant=variant, max_calls=cap)
    try:
        assert result.usage.calls == cap  # the user's cap, not 85% of it
        assert result.stop_reason is not None
        assert f"{cap} of max_calls={cap}" in result.stop_reason
        assert "reporter" not in result.stop_reason
    finally:
        result.board.close()


async def test_no_reporter_uses_the_calls_the_full_team_keeps_for_its_reporter(
        tmp_path: Path) -> None:
    result = await run_hospital(tmp_path, variant="no_reporter", max_calls=20)
    try:
        assert result.usage.calls > 17  # 17 = 85% of 20, the reporter's share held back
    finally:
        result.board.close()


# --- 3. a stop names the user's budget --------------------------------------------------


@pytest.mark.parametrize("settings, named, kept", [
    ({"max_calls": 14}, "11 of max_calls=14", "3 kept for the reporter"),
    ({"max_usd": 0.05}, "$0.0425 of max_usd=$0.05", "$0.0075 kept for the reporter"),
    ({"max_usd": None, "max_tokens": 20_000}, "17000 of max_tokens=20000",
     "3000 kept for the reporter"),
])
async def test_a_collection_stop_names_the_users_budget(tmp_path: Path, settings, named,
                                                        kept) -> None:
    result = await run_hospital(tmp_path, collectors=8, **settings)
    try:
        assert result.stop_reason is not None
        assert named in result.stop_reason and kept in result.stop_reason
    finally:
        result.board.close()
