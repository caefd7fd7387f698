"""One ledger of an investigation's model use, the budgets checked against it, and the
per-model concurrency cap.

A :class:`Ledger` is the single account of an investigation: every role and every
model of it reserve each call there before it is sent, and the reservation is settled
into the actual usage when the call ends — answered, failed or cancelled
(:meth:`Ledger.settle`). :meth:`Ledger.reserve` admits a call only while what was spent,
plus *every call under way* at a conservative estimate (:func:`estimate_call`: its
prompt's estimated tokens plus its whole output allowance, at the model's price), plus
the new call's own prompt, is below each cap of the :class:`Budget`. So whatever the
number of models and agents running at once:

- ``max_calls`` is never passed;
- ``max_tokens`` and ``max_usd`` are passed, if at all, only by the answer of the last
  call admitted (at most its ``max_tokens``) and by the estimate error: prompts
  tokenized at fewer characters per token than
  :func:`~d2_notebook.llm.estimate_tokens` assumes.

The new call's answer is not counted before it is sent: counting each call at its
whole output allowance (4–8 K tokens, far above what a turn usually writes) would
refuse most calls of a small budget.

A resumed investigation's ledger starts from the spend already recorded on its board,
so the budgets count the whole investigation.

Every *send* is a call. A model that retries a failed send (a
:class:`~d2_notebook.llm.remote.RemoteModel`: a timeout, a dropped connection, HTTP
429/5xx) reports each failed send to the wrapper that counts it
(:class:`CountsSends`), and the retry is reserved like any call: a budget with no
room left stops the retries with its own :class:`~d2_notebook.errors.BudgetExceededError`.
A failed send is settled at what is known of its billing (:func:`failed_send_usage`):
one that failed without an HTTP status (timed out or cut off after it was sent) may
have been processed and billed, so it counts at its whole estimate, as if it had
written its whole output allowance; one the server answered with an error status was
not billed and counts as a call of no tokens.

:class:`~d2_notebook.llm.recording.RecordingModel` is the wrapper an investigation
uses (it records refusals and cancellations on the board too); :class:`BudgetedModel`
is the same accounting without a board.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from d2_notebook.errors import BudgetExceededError
from d2_notebook.llm.context_window import estimate_tokens
from d2_notebook.llm.messages import ModelRequest, ModelResponse, TokenUsage
from d2_notebook.llm.model import Model
from d2_notebook.llm.pricing import PRICES, PriceTable, cost_of

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
class CallEstimate:
    """What one call may use: its prompt (as estimated) and its answer (at most its
    ``max_tokens``). The prompt counts against the caps when the call is admitted, the
    whole of it while the call is under way."""

    prompt_tokens: int = 0
    prompt_usd: float = 0.0
    answer_tokens: int = 0
    answer_usd: float = 0.0
    priced: bool = True

    @property
    def tokens(self) -> int:
        """Prompt and answer tokens together."""
        return self.prompt_tokens + self.answer_tokens

    @property
    def cost_usd(self) -> float:
        """Prompt and answer dollars together."""
        return self.prompt_usd + self.answer_usd

    def as_usage(self) -> TokenUsage:
        """The estimate as a call's usage: the prompt as input, the answer as output."""
        return TokenUsage(input_tokens=self.prompt_tokens, output_tokens=self.answer_tokens)


def estimate_call(request: ModelRequest, model: str,
                  prices: PriceTable | None = None) -> CallEstimate:
    """A conservative estimate of what ``request`` will use on ``model``.

    Input: :func:`~d2_notebook.llm.estimate_tokens` of the request as recorded (system,
    messages and tool specs as JSON), priced at the model's dearest input rate (a
    prompt written to the provider's cache costs more than plain input). Output: the
    request's whole ``max_tokens`` allowance, at the output price. A model without a
    price (see :mod:`~d2_notebook.llm.pricing`) is estimated at $0, as it is charged.
    """
    prompt_tokens = estimate_tokens(json.dumps(request.to_dict()))
    price = (prices or PRICES).price_for(model)
    if price is None:
        return CallEstimate(prompt_tokens, 0.0, request.max_tokens, 0.0, priced=False)
    input_price = max(price.input, price.cache_write, price.cache_read)
    return CallEstimate(prompt_tokens, prompt_tokens * input_price / 1_000_000,
                        request.max_tokens, request.max_tokens * price.output / 1_000_000)


@dataclass(frozen=True)
class Budget:
    """Caps on an investigation's model use; None means no cap.

    A call is admitted while what was spent, plus the calls under way (at their
    estimate), plus its own prompt is below every cap (see the module docstring for
    what that bounds).
    ``whole`` is set on a share of the user's budget (:meth:`share`: what collection
    may spend, the rest being kept for the reporter); a refusal then names the user's
    cap and what is kept, not the share alone.

    The refusal messages name the caps only, never a count taken at that instant, so
    the same stop reads the same in every run (and in its replay).
    """

    max_calls: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = None
    whole: Budget | None = None

    def share(self, fraction: float) -> Budget:
        """``fraction`` (in (0, 1]) of each cap, at least one call and one token,
        with this budget as its ``whole``; the rest is kept for the reporter."""
        return Budget(
            None if self.max_calls is None else max(1, int(self.max_calls * fraction)),
            None if self.max_tokens is None else max(1, int(self.max_tokens * fraction)),
            None if self.max_usd is None else self.max_usd * fraction,
            whole=self)

    def check(self, usage: UsageTotals, *, pending_calls: int = 0, pending_tokens: int = 0,
              pending_usd: float = 0.0) -> None:
        """Raise if ``usage`` plus what is under way or about to be (``pending_calls``
        calls, ``pending_tokens`` and ``pending_usd`` estimated) has reached a cap.

        Raises:
            BudgetExceededError: a cap is reached; the message names which.
        """
        whole = self.whole or self
        if self.max_calls is not None and usage.calls + pending_calls >= self.max_calls:
            raise BudgetExceededError(
                f"model call budget spent: {self.max_calls} of max_calls={whole.max_calls} "
                f"calls made or under way{self._kept(whole.max_calls, self.max_calls)}; "
                f"{FINISH_HINT}")
        if (self.max_tokens is not None
                and usage.total_tokens + pending_tokens >= self.max_tokens):
            of = f"{self.max_tokens} of " if self.whole is not None else ""
            raise BudgetExceededError(
                f"token budget spent: {of}max_tokens={whole.max_tokens} reached{UNDER_WAY}"
                f"{self._kept(whole.max_tokens, self.max_tokens)}; {FINISH_HINT}")
        if self.max_usd is not None and usage.cost_usd + pending_usd >= self.max_usd:
            of = f"${_dollars(self.max_usd)} of " if self.whole is not None else ""
            kept = self._kept(whole.max_usd, self.max_usd, lambda usd: f"${_dollars(usd)}")
            raise BudgetExceededError(
                f"dollar budget spent: {of}max_usd=${_dollars(whole.max_usd or 0)} "
                f"reached{UNDER_WAY}{kept}; {FINISH_HINT}")

    def _kept(self, whole: float | None, share: float,
              shown: Callable[[float], str] = str) -> str:
        """``, <the rest> kept for the reporter`` on a share of the user's cap ``whole``."""
        if self.whole is None or whole is None:
            return ""
        return f", {shown(whole - share)} kept for the reporter"


UNDER_WAY = " (counting calls under way at their estimate)"


def _dollars(amount: float) -> str:
    """``amount`` to the cent or finer, without trailing zeros (5, 0.5, 0.068)."""
    return f"{amount:.4f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Reservation:
    """One call's place in the ledger, from before it is sent until it is settled;
    ``estimate`` counts against the caps meanwhile."""

    role: str
    number: int
    estimate: CallEstimate = CallEstimate()


class Ledger:
    """The one account of an investigation's model use, shared by every role and model.

    Calls are reserved before they are sent and settled when they end. A reserved call
    counts against ``max_calls`` at once and against ``max_tokens`` and ``max_usd`` at
    its estimate until it is settled, then at what it really used. Thread-safe.
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

    def reserve(self, role: str, budget: Budget,
                estimate: CallEstimate = CallEstimate()) -> Reservation:
        """Reserve one call of ``role`` under ``budget``, counting ``estimate`` (see
        :func:`estimate_call`) until it is settled.

        The call is admitted while the spend, plus every call under way at its whole
        estimate, plus this call's prompt, is below each cap.

        Raises:
            BudgetExceededError: a cap is reached; nothing is reserved.
        """
        with self._lock:
            pending = self._in_flight.values()
            budget.check(
                self.usage, pending_calls=len(self._in_flight),
                pending_tokens=estimate.prompt_tokens + sum(r.estimate.tokens for r in pending),
                pending_usd=estimate.prompt_usd + sum(r.estimate.cost_usd for r in pending))
            self._numbers += 1
            reservation = Reservation(role, self._numbers, estimate)
            self._in_flight[reservation.number] = reservation
            return reservation

    def settle(self, reservation: Reservation, usage: TokenUsage, cost_usd: float,
               priced: bool) -> None:
        """The reserved call ended (answered, failed or cancelled): release its
        estimate and count what it really used (what the provider reported, else nothing).

        Settling a reservation twice counts it once.
        """
        with self._lock:
            if self._in_flight.pop(reservation.number, None) is None:
                return
            self.usage.record(reservation.role, usage, cost_usd, priced)

    def cancel(self, reservation: Reservation) -> None:
        """The reserved call was never sent after all (refused further in): forget it
        and its estimate."""
        with self._lock:
            self._in_flight.pop(reservation.number, None)


@dataclass(frozen=True)
class FailedSend:
    """One send of a request that failed, as a retrying model reports it.

    ``billing_unknown`` is True when no HTTP status came back (a timeout, a dropped
    connection): the server may have processed, and billed, the request. ``retrying``
    is True when the request will be sent again, False when ``error`` ends it.
    """

    error: Exception
    billing_unknown: bool
    retrying: bool


class SendListener(Protocol):
    """What a retrying model tells the one counting its sends (see :class:`Sends`)."""

    def failed(self, send: FailedSend) -> None:
        """A send failed; called at once, whether or not it will be retried."""
        ...

    def resending(self) -> None:
        """The failed send goes out again now (after the backoff). Raising stops the
        retries: the exception propagates instead of the send's error."""
        ...


@runtime_checkable
class CountsSends(Protocol):
    """A model that may send one request more than once and reports each failed send
    to a :class:`SendListener`, so that every send is counted as a call
    (:class:`~d2_notebook.llm.remote.RemoteModel`)."""

    name: str

    async def request_counting_sends(self, request: ModelRequest,
                                     sends: SendListener | None) -> ModelResponse:
        """Answer ``request``, telling ``sends`` of each failed send and each retry."""
        ...


def failed_send_usage(failed: FailedSend | None,
                      estimate: CallEstimate) -> tuple[TokenUsage, float, bool]:
    """What a failed send counts, as ``(usage, cost_usd, priced)``: the whole
    ``estimate`` (prompt and output allowance) when its billing is unknown, else
    nothing (the server refused it with a status, or no failed send was reported)."""
    if failed is None or not failed.billing_unknown:
        return TokenUsage(), 0.0, True
    return estimate.as_usage(), estimate.cost_usd, estimate.priced


class Sends:
    """The sends of one request, each a call on ``ledger``: reserved before it goes out,
    settled when it ends. A :class:`SendListener` for a retrying model.

    ``reservation`` is the current send's; ``last_failed`` is set once it has failed
    (how its end is counted: :meth:`failed_usage`); ``started`` is when it was admitted.
    """

    def __init__(self, ledger: Ledger, budget: Budget, role: str, estimate: CallEstimate,
                 *, settle_retried: Callable[[Sends], None] | None = None) -> None:
        """Reserve the first send of a ``role`` request at ``estimate``.
        ``settle_retried(sends)`` settles a failed send that goes out again (a recorder
        writes its row there); by default it is settled on the ledger.

        Raises:
            BudgetExceededError: the budget has no room for the call; nothing reserved.
        """
        self.ledger = ledger
        self.budget = budget
        self.role = role
        self.estimate = estimate
        self.settle_retried = settle_retried or Sends.settle_on_ledger
        self.reservation = ledger.reserve(role, budget, estimate)
        self.last_failed: FailedSend | None = None
        self.started = time.perf_counter()

    def failed_usage(self) -> tuple[TokenUsage, float, bool]:
        """What the current send counts if it ends now without an answer."""
        return failed_send_usage(self.last_failed, self.estimate)

    def settle_on_ledger(self) -> None:
        """Settle the current send, ended without an answer, at :meth:`failed_usage`."""
        self.ledger.settle(self.reservation, *self.failed_usage())

    def failed(self, send: FailedSend) -> None:
        """The current send failed (see :class:`SendListener`)."""
        self.last_failed = send

    def resending(self) -> None:
        """Settle the failed send and reserve its retry as a new call.

        Raises:
            BudgetExceededError: no room for the retry; the failed send stays settled
                and nothing more is reserved.
        """
        self.settle_retried(self)
        self.last_failed = None
        self.reservation = self.ledger.reserve(self.role, self.budget, self.estimate)
        self.started = time.perf_counter()


async def request_counting_sends(model: Model, request: ModelRequest,
                                 sends: SendListener) -> ModelResponse:
    """``model``'s answer to ``request``, telling ``sends`` of each failed send when
    ``model`` retries (:class:`CountsSends`); any other model sends once."""
    if isinstance(model, CountsSends):
        return await model.request_counting_sends(request, sends)
    return await model.request(request)


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

        Each send is one call: a retry of a failed send is reserved like a new call, and
        a failed send is counted as :func:`failed_send_usage` says.

        Raises:
            BudgetExceededError: before the request, or before a retry of it, when a cap
                is reached.
        """
        sends = Sends(self.ledger, self.budget, request.role,
                      estimate_call(request, priced_as(self.inner), self.prices))
        try:
            response = await request_counting_sends(self.inner, request, sends)
        except BaseException:  # settled already when a retry was refused: counted once
            sends.settle_on_ledger()
            raise
        cost = cost_of(response.model or self.name, response.usage, self.prices)
        self.ledger.settle(sends.reservation, response.usage, cost.usd, cost.priced)
        return response


def priced_as(model: Model) -> str:
    """The model id a call to ``model`` is estimated at: its ``model_id`` if it has one
    (an offline model reports and is priced as one), else its name."""
    model_id = getattr(model, "model_id", "")
    return model_id if isinstance(model_id, str) and model_id else model.name


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
