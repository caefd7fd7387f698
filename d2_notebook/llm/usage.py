"""Running totals of model use, budgets that stop a team before it overspends, and the
per-model concurrency cap.

A :class:`Usage` is shared by every agent of an investigation; :class:`BudgetedModel`
checks a :class:`Budget` against it *before* each request and raises
:class:`~d2_notebook.errors.BudgetExceededError` once a cap is reached, so the team can
catch it and finish gracefully.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from dataclasses import dataclass, field

from d2_notebook.errors import BudgetExceededError
from d2_notebook.llm.messages import ModelRequest, ModelResponse, TokenUsage
from d2_notebook.llm.model import Model
from d2_notebook.llm.pricing import PriceTable, cost_of


@dataclass
class UsageTotals:
    """Totals for one group of calls (everything, or one role)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0

    @property
    def total_tokens(self) -> int:
        """Input, output, cache-read and cache-write tokens together."""
        return (
            self.input_tokens + self.output_tokens + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def add(self, usage: TokenUsage, cost_usd: float, priced: bool) -> None:
        """Count one call."""
        self.calls += 1
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cost_usd += cost_usd
        self.unpriced_calls += 0 if priced else 1


@dataclass
class Usage(UsageTotals):
    """Totals of every call plus a breakdown by role. Safe to share between threads
    and tasks: update it only through :meth:`record`."""

    by_role: dict[str, UsageTotals] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, role: str, usage: TokenUsage, cost_usd: float, priced: bool = True) -> None:
        """Add one finished call made by ``role``."""
        with self._lock:
            self.add(usage, cost_usd, priced)
            self.by_role.setdefault(role, UsageTotals()).add(usage, cost_usd, priced)


@dataclass(frozen=True)
class Budget:
    """Caps on an investigation's model use; None means no cap."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = None

    def check(self, usage: UsageTotals, *, pending_calls: int = 0) -> None:
        """Raise if ``usage`` (plus calls already in flight) has reached a cap.

        Raises:
            BudgetExceededError: a cap is reached; the message names which.
        """
        calls = usage.calls + pending_calls
        if self.max_calls is not None and calls >= self.max_calls:
            raise BudgetExceededError(
                f"model call budget spent: {calls} of max_calls={self.max_calls}; "
                "finish with what the board holds, or raise the budget"
            )
        if self.max_tokens is not None and usage.total_tokens >= self.max_tokens:
            raise BudgetExceededError(
                f"token budget spent: {usage.total_tokens} of max_tokens={self.max_tokens}; "
                "finish with what the board holds, or raise the budget"
            )
        if self.max_usd is not None and usage.cost_usd >= self.max_usd:
            raise BudgetExceededError(
                f"dollar budget spent: ${usage.cost_usd:.4f} of max_usd=${self.max_usd:.2f}; "
                "finish with what the board holds, or raise the budget"
            )


class BudgetedModel:
    """Wraps a model: checks the budget before each request, counts usage after it.

    Calls already in flight count against ``max_calls``, so concurrent agents cannot
    overshoot the call cap; token and dollar caps are checked on finished calls only
    (a request's cost is unknown until it returns).
    """

    def __init__(
        self,
        inner: Model,
        budget: Budget,
        usage: Usage | None = None,
        *,
        prices: PriceTable | None = None,
    ) -> None:
        """Wrap ``inner``; totals go to ``usage`` (a new :class:`Usage` when None)."""
        self.inner = inner
        self.name = inner.name
        self.budget = budget
        self.usage = usage if usage is not None else Usage()
        self.prices = prices
        self._in_flight = 0
        self._lock = threading.Lock()

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Forward ``request`` unless the budget is spent.

        Raises:
            BudgetExceededError: before the request, when a cap is reached.
        """
        with self._lock:
            self.budget.check(self.usage, pending_calls=self._in_flight)
            self._in_flight += 1
        try:
            response = await self.inner.request(request)
        finally:
            with self._lock:
                self._in_flight -= 1
        cost = cost_of(response.model or self.name, response.usage, self.prices)
        self.usage.record(request.role, response.usage, cost.usd, cost.priced)
        return response


class ConcurrencyLimit:
    """An asyncio semaphore per event loop (a model may outlive one loop, e.g. in a
    notebook), allowing at most ``limit`` requests at once on each."""

    def __init__(self, limit: int) -> None:
        """Allow ``limit`` (at least 1) concurrent holders."""
        if limit < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {limit}")
        self.limit = limit
        self._semaphores: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Semaphore
        ] = weakref.WeakKeyDictionary()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        if loop not in self._semaphores:
            self._semaphores[loop] = asyncio.Semaphore(self.limit)
        return self._semaphores[loop]

    async def __aenter__(self) -> None:
        await self._semaphore().acquire()

    async def __aexit__(self, *exc_info: object) -> None:
        self._semaphore().release()
