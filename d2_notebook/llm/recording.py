"""Record every model call on the board: the audit trail, cost meter and replay source.

Each send of a request becomes one ``model_calls`` row: role, agent, model name,
``request.to_dict()``, ``response.to_dict()`` (None when none came back), token
counts, cost, latency, how it ended (``status``: answered, failed, retried, cancelled
or refused) and, for a failure or a refusal, the error as ``"<ErrorClass>: <message>"``.
A request a provider sent more than once (:class:`~d2_notebook.llm.remote.RemoteModel`
retries) has a ``retried`` row for each failed send before the row of its last one.
:class:`~d2_notebook.llm.replay.ReplayModel` reads these rows back.

The recorder is also where a call meets the investigation's :class:`Ledger`: each
send is reserved before it is sent and settled when its row is written, so the
board's rows and the ledger agree after any stop, a cancellation included. A failed
send is counted (on the row and the ledger alike) as
:func:`~d2_notebook.llm.usage.failed_send_usage` says: at its whole estimate when it
failed with no HTTP status (the provider may have billed it), else at no tokens.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Protocol

from d2_notebook.board.records import ModelCallStatus
from d2_notebook.errors import BudgetExceededError
from d2_notebook.llm.messages import ModelRequest, ModelResponse, TokenUsage
from d2_notebook.llm.model import Model
from d2_notebook.llm.pricing import PriceTable, cost_of
from d2_notebook.llm.usage import (
    Budget,
    Ledger,
    Reservation,
    Sends,
    estimate_call,
    priced_as,
    request_counting_sends,
)

CANCELLED_TEXT = "cancelled: the run stopped before this call was recorded in its turn"


class ModelCallSink(Protocol):
    """What :class:`RecordingModel` needs of a board (``Board`` satisfies it)."""

    def record_model_call(self, **fields: object) -> object:
        """Append one model call."""
        ...


def error_text(exc: BaseException) -> str:
    """How an error is recorded: ``"<ErrorClass>: <message>"``."""
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class _Outcome:
    """How one request ended, ready to be written."""

    status: ModelCallStatus
    reservation: Reservation | None
    response: ModelResponse | None = None
    error: str | None = None
    latency_s: float = 0.0
    counted: tuple[TokenUsage, float, bool] | None = None
    """A failed send's ``(usage, cost_usd, priced)`` (see ``failed_send_usage``)."""


class RecordingModel:
    """Wraps a model and records each request on ``board``, counting it on ``ledger``.

    Before a request is sent it is reserved on ``ledger`` under ``budget``, at its
    estimate (:func:`~d2_notebook.llm.usage.estimate_call`) until its row is written
    and its real usage settled; a request the budget refuses is recorded as ``refused``
    (never sent) and its :class:`~d2_notebook.errors.BudgetExceededError` raised. A
    failed call is recorded (response None, error set) and its error re-raised
    unchanged. Each retry of a failed send (by a model that reports them,
    :class:`~d2_notebook.llm.usage.CountsSends`) is a call of its own: the failed send
    is recorded at once as ``retried`` and the retry reserved like a new request; a
    retry the budget refuses ends the request as ``refused``. A call cancelled
    (``asyncio.CancelledError``, ``KeyboardInterrupt``) while out at the provider, or
    after its response came back but before its turn to be recorded, is recorded at
    once as ``cancelled`` with whatever usage came back (a failed send waiting for its
    retry: as a failed send counts), and the cancellation goes on.

    ``before_record`` (optional) is awaited after the model answered (or failed, or the
    budget refused) and before the call is written: a caller that orders board writes
    of parallel agents uses it to write each call in its turn (see
    ``d2_notebook.detective.sequencer``).
    """

    def __init__(
        self,
        inner: Model,
        board: ModelCallSink,
        investigation_id: str | None = None,
        *,
        ledger: Ledger | None = None,
        budget: Budget | None = None,
        prices: PriceTable | None = None,
        before_record: Callable[[ModelRequest], Awaitable[None]] | None = None,
    ) -> None:
        """Record calls of ``inner`` on ``board`` under ``investigation_id``; count them
        on ``ledger`` (a new one when None) against ``budget`` (no caps when None)."""
        self.inner = inner
        self.name = inner.name
        self.board = board
        self.investigation_id = investigation_id
        self.ledger = ledger if ledger is not None else Ledger()
        self.budget = budget if budget is not None else Budget()
        self.prices = prices
        self.before_record = before_record

    def with_budget(self, budget: Budget) -> RecordingModel:
        """The same recorder (same board, ledger and turn order) under another budget."""
        return RecordingModel(self.inner, self.board, self.investigation_id, ledger=self.ledger,
                              budget=budget, prices=self.prices,
                              before_record=self.before_record)

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Reserve, forward ``request``, record the outcome, return or re-raise it."""
        try:
            sends = Sends(self.ledger, self.budget, request.role,
                          estimate_call(request, priced_as(self.inner), self.prices),
                          settle_retried=lambda retried: self._write_retried(request, retried))
        except BudgetExceededError as exc:
            await self._in_turn(request, _Outcome(ModelCallStatus.REFUSED, None,
                                                  error=error_text(exc)))
            raise
        try:
            response = await request_counting_sends(self.inner, request, sends)
        except BudgetExceededError as exc:  # refused further in: a retry, or replayed
            self.ledger.cancel(sends.reservation)  # (a refused retry's send is settled)
            await self._in_turn(request, _Outcome(ModelCallStatus.REFUSED, None,
                                                  error=error_text(exc)))
            raise
        except Exception as exc:
            await self._in_turn(request, _Outcome(
                ModelCallStatus.FAILED, sends.reservation, error=error_text(exc),
                latency_s=time.perf_counter() - sends.started, counted=sends.failed_usage()))
            raise
        except BaseException:  # cancelled while out at the provider: nothing came back
            self._write(request, _Outcome(ModelCallStatus.CANCELLED, sends.reservation,
                                          error=CANCELLED_TEXT,
                                          latency_s=time.perf_counter() - sends.started,
                                          counted=sends.failed_usage()))
            raise
        await self._in_turn(request, _Outcome(ModelCallStatus.ANSWERED, sends.reservation,
                                              response,
                                              latency_s=time.perf_counter() - sends.started))
        return response

    def _write_retried(self, request: ModelRequest, sends: Sends) -> None:
        """Write the failed send that is about to be retried, at once (not in turn: the
        request's turn is its last send's), and settle it."""
        failed = sends.last_failed
        self._write(request, _Outcome(
            ModelCallStatus.RETRIED, sends.reservation,
            error=None if failed is None else error_text(failed.error),
            latency_s=time.perf_counter() - sends.started, counted=sends.failed_usage()))

    async def _in_turn(self, request: ModelRequest, outcome: _Outcome) -> None:
        """Wait for the call's turn, then write it; cancelled while waiting, write it at
        once (an answered call as ``cancelled``, with its usage) and go on cancelling."""
        try:
            if self.before_record is not None:
                await self.before_record(request)
        except BaseException:
            if outcome.status is ModelCallStatus.ANSWERED:
                outcome = replace(outcome, status=ModelCallStatus.CANCELLED,
                                  error=CANCELLED_TEXT)
            self._write(request, outcome)
            raise
        self._write(request, outcome)

    def _write(self, request: ModelRequest, outcome: _Outcome) -> None:
        """Write the call's row and settle its reservation into the ledger."""
        response = outcome.response
        if outcome.counted is not None:
            usage, cost_usd, priced = outcome.counted
        else:
            usage = response.usage if response is not None else TokenUsage()
            cost = cost_of((response.model if response is not None else None) or self.name,
                           usage, self.prices)
            cost_usd, priced = cost.usd, cost.priced
        try:
            self.board.record_model_call(
                role=request.role,
                agent=request.agent,
                model=self.name,
                request=request.to_dict(),
                response=None if response is None else response.to_dict(),
                error=outcome.error,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost_usd=cost_usd,
                latency_s=outcome.latency_s,
                investigation_id=self.investigation_id,
                status=outcome.status,
            )
        finally:
            if outcome.reservation is not None:
                self.ledger.settle(outcome.reservation, usage, cost_usd, priced)
