"""Budgets stop a team before it overspends; usage is counted by role; prices."""

from __future__ import annotations

import asyncio

import pytest

import d2_notebook.llm as llm
from d2_notebook.errors import BudgetExceededError
from d2_notebook.llm import (
    Budget,
    BudgetedModel,
    ConcurrencyLimit,
    Ledger,
    ModelRequest,
    ModelResponse,
    Price,
    PriceTable,
    TextPart,
    TokenUsage,
    UserMessage,
    cost_of,
)
from d2_notebook.llm.offline import FunctionModel, text


@pytest.fixture(autouse=True)
def _block_real_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", False)


def fixed(input_tokens: int, output_tokens: int, model: str = "claude-sonnet-4-6") -> FunctionModel:
    """A model whose every answer costs the same tokens."""
    usage = TokenUsage(input_tokens, output_tokens)
    return FunctionModel(lambda request: ModelResponse([TextPart("ok")], usage=usage,
                                                       model=model))


def ask(role: str = "judge") -> ModelRequest:
    return ModelRequest("s", [UserMessage("q")], role=role, agent=role)


async def test_call_cap_stops_the_next_request() -> None:
    inner = fixed(10, 10)
    model = BudgetedModel(inner, Budget(max_calls=3))
    for _ in range(3):
        await model.request(ask())
    with pytest.raises(BudgetExceededError, match=r"3 of max_calls=3 calls made or under way"):
        await model.request(ask())
    assert len(inner.requests) == 3  # the refused request never reached the model


async def test_call_cap_holds_under_concurrency() -> None:
    async def slow(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0.01)
        return text("ok")

    model = BudgetedModel(FunctionModel(slow), Budget(max_calls=4))
    results = await asyncio.gather(*(model.request(ask()) for _ in range(10)),
                                   return_exceptions=True)
    assert sum(isinstance(r, ModelResponse) for r in results) == 4
    assert all(isinstance(r, BudgetExceededError) for r in results
               if not isinstance(r, ModelResponse))


async def test_token_cap() -> None:
    model = BudgetedModel(fixed(600, 100), Budget(max_tokens=1500))
    await model.request(ask())
    await model.request(ask())  # 700 then 1400 tokens: still under the cap
    await model.request(ask())  # 2100: this one crossed it
    with pytest.raises(BudgetExceededError, match=r"token budget spent: max_tokens=1500 reached"):
        await model.request(ask())


async def test_dollar_cap_and_usage_by_role() -> None:
    ledger = Ledger()
    usage = ledger.usage
    # sonnet: 1M input tokens = $3, so each call costs $0.03 + 10k output ($0.15) = $0.18
    model = BudgetedModel(fixed(10_000, 10_000), Budget(max_usd=0.5), ledger)
    await model.request(ask("hypothesizer"))
    await model.request(ask("judge"))
    await model.request(ask("judge"))
    with pytest.raises(BudgetExceededError, match=r"dollar budget spent: max_usd=\$0\.5 reached"):
        await model.request(ask("judge"))
    assert usage.calls == 3 and usage.input_tokens == 30_000
    assert usage.cost_usd == pytest.approx(0.54)
    assert usage.by_role["judge"].calls == 2
    assert usage.by_role["hypothesizer"].cost_usd == pytest.approx(0.18)


async def test_unpriced_models_cost_nothing_but_are_flagged() -> None:
    ledger = Ledger()
    usage = ledger.usage
    model = BudgetedModel(fixed(100, 100, model="llama3.1"), Budget(max_usd=0.01), ledger)
    await model.request(ask())
    assert usage.cost_usd == 0 and usage.unpriced_calls == 1
    assert cost_of("llama3.1", TokenUsage(5, 5)).priced is False


def test_prices_match_by_longest_prefix_and_are_editable() -> None:
    table = PriceTable()
    assert table.price_for("claude-sonnet-4-5-20250929") == table.price_for("claude-sonnet-4")
    assert table.price_for("anthropic:claude-opus-4-5").input == 5.0
    assert table.price_for("claude-opus-4-1").input == 15.0
    table.set_price("llama", Price(1.0, 2.0, 0.0, 0.0))
    cost = table.cost("llama3.1", TokenUsage(1_000_000, 500_000))
    assert cost.priced and cost.usd == pytest.approx(2.0)
    assert llm.price_for("llama3.1") is None  # the shared table was not touched


async def test_concurrency_limit_caps_tasks_in_flight() -> None:
    limit = ConcurrencyLimit(3)
    in_flight, peak = 0, 0

    async def work() -> None:
        nonlocal in_flight, peak
        async with limit:
            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1

    await asyncio.gather(*(work() for _ in range(12)))
    assert peak == 3
