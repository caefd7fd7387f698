"""One ledger of an investigation's model use, the budgets checked against it, and the
per-model concurrency cap.

A :class:`Ledger` is the single account of an investigation: every role and every
model of it reserve each call there before it is sent (:meth:`Ledger.reserve` checks a
:class:`Budget` against the calls made *and* those in flight), and the reservation is
settled into the actual usage when the call ends — answered, failed or cancelled
(:meth:`Ledger.settle`). So ``max_calls`` holds whatever the number of models and
agents running at once. A resumed investigation's ledger starts from the spend already
recorded on its board, so the budgets count the whole investigation.

:class:`~d2_notebook.llm.recording.RecordingModel` is the wrapper an investigation
uses (it records refusals and cancellations on the board too); :class:`BudgetedModel`
is the same accounting without a board.
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

FINISH_HINT = "finish with what the board holds, or raise the budget"


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

    def add(self, usage: TokenUsage, cost_usd: float, priced: bool, *, calls: int = 1) -> None:
        """Count ``calls`` call(s) that used ``usage`` together."""
        self.calls += calls
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.cache_read_tokens += usage.cache_read_tokens
        self.cache_write_tokens += usage.cache_write_tokens
        self.cost_usd += cost_usd
        self.unpriced_calls += 0 if priced else calls


@dataclass
class Usage(UsageTotals):
    """Totals of every call plus a breakdown by role. Safe to share between threads
    and tasks: update it only through :meth:`record`."""

    by_role: dict[str, UsageTotals] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def record(self, role: str, usage: TokenUsage, cost_usd: float, priced: bool = True, *,
               calls: int = 1) -> None:
        """Add ``calls`` finished call(s) made by ``role`` (one, unless seeding totals)."""
        with self._lock:
            self.add(usage, cost_usd, priced, calls=calls)
            self.by_role.setdefault(role, UsageTotals()).add(usage, cost_usd, priced,
                                                             calls=calls)


@dataclass(frozen=True)
class Budget:
    """Caps on an investigation's model use; None means no cap.

    The refusal messages name the cap only, never a count taken at that instant, so
    the same stop reads the same in every run (and in its replay).
    """

    max_calls: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = None

    def check(self, usage: UsageTotals, *, pending_calls: int = 0) -> None:
        """Raise if ``usage`` (plus ``pending_calls`` reserved and in flight) has
        reached a cap.

        Raises:
            BudgetExceededError: a cap is reached; the message names which.
        """
        if self.max_calls is not None and usage.calls + pending_calls >= self.max_calls:
            raise BudgetExceededError(
                f"model call budget spent: {self.max_calls} of max_calls={self.max_calls} "
                f"calls made or under way; {FINISH_HINT}")
        if self.max_tokens is not None and usage.total_tokens >= self.max_tokens:
            raise BudgetExceededError(
                f"token budget spent: max_tokens={self.max_tokens} reached; {FINISH_HINT}")
        if self.max_usd is not None and usage.cost_usd >= self.max_usd:
            raise BudgetExceededError(
                f"dollar budget spent: max_usd=${_dollars(self.max_usd)} reached; {FINISH_HINT}")


def _dollars(amount: float) -> str:
    """``amount`` to the cent or finer, without trailing zeros (5, 0.5, 0.068)."""
    return f"{amount:.4f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Reservation:
    """One call's place in the ledger, from before it is sent until it is settled."""

    role: str
    number: int


class Ledger:
    """The one account of an investigation's model use, shared by every role and model.

    Calls are reserved before they are sent and settled when they end; a reserved call
    counts against ``max_calls`` at once, tokens and dollars count once they are known.
    Thread-safe.
    """

    def __init__(self, spent: Usage | None = None) -> None:
        """Start from ``spent`` (an investigation's earlier runs), or from nothing."""
        self.usage = spent if spent is not None else Usage()
        self._in_flight: dict[int, Reservation] = {}
        self._numbers = 0
        self._lock = threading.Lock()

    @property
    def in_flight(self) -> int:
        """Calls reserved and not yet settled."""
        with self._lock:
            return len(self._in_flight)

    def reserve(self, role: str, budget: Budget) -> Reservation:
        """Reserve one call of ``role`` under ``budget``.

        Raises:
            BudgetExceededError: the call would pass a cap; nothing is reserved.
        """
        with self._lock:
            budget.check(self.usage, pending_calls=len(self._in_flight))
            self._numbers += 1
            reservation = Reservation(role, self._numbers)
            self._in_flight[reservation.number] = reservation
            return reservation

    def settle(self, reservation: Reservation, usage: TokenUsage, cost_usd: float,
               priced: bool) -> None:
        """The reserved call ended (answered, failed or cancelled): count what it used.

        Settling a reservation twice counts it once.
        """
        with self._lock:
            if self._in_flight.pop(reservation.number, None) is None:
                return
            self.usage.record(reservation.role, usage, cost_usd, priced)


    def cancel(self, reservation: Reservation) -> None:
        """The reserved call was never sent after all (refused further in): forget it."""
        with self._lock:
            self._in_flight.pop(reservation.number, None)


class BudgetedModel:
    """Wraps a model: reserves each call on a :class:`Ledger` under a :class:`Budget`
    before sending it, settles the usage after it (also when it fails or is cancelled).

    For a model outside an investigation; an investigation's models are
    :class:`~d2_notebook.llm.recording.RecordingModel`\\ s, which also record every call.
    """

    def __init__(
        self,
        inner: Model,
        budget: Budget,
        ledger: Ledger | None = None,
        *,
        prices: PriceTable | None = None,
    ) -> None:
        """Wrap ``inner``; calls are counted on ``ledger`` (a new one when None)."""
        self.inner = inner
        self.name = inner.name
        self.budget = budget
        self.ledger = ledger if ledger is not None else Ledger()
        self.prices = prices

    @property
    def usage(self) -> Usage:
        """The ledger's totals."""
        return self.ledger.usage

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Forward ``request`` unless the budget is spent.

        Raises:
            BudgetExceededError: before the request, when a cap is reached.
        """
        reservation = self.ledger.reserve(request.role, self.budget)
        try:
            response = await self.inner.request(request)
        except BaseException:
            self.ledger.settle(reservation, TokenUsage(), 0.0, True)
            raise
        cost = cost_of(response.model or self.name, response.usage, self.prices)
        self.ledger.settle(reservation, response.usage, cost.usd, cost.priced)
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
