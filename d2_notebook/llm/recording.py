"""Record every model call on the board: the audit trail, cost meter and replay source.

Each call becomes one ``model_calls`` row as it finishes: role, agent, model name,
``request.to_dict()``, ``response.to_dict()`` (None when it failed), token counts,
cost, latency and, for a failure, the error as ``"<ErrorClass>: <message>"``.
:class:`~d2_notebook.llm.offline.ReplayModel` reads these rows back.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from d2_notebook.llm.messages import ModelRequest, ModelResponse
from d2_notebook.llm.model import Model
from d2_notebook.llm.pricing import PriceTable, cost_of
from d2_notebook.llm.usage import Usage


class ModelCallSink(Protocol):
    """What :class:`RecordingModel` needs of a board (``Board`` satisfies it)."""

    def record_model_call(self, **fields: object) -> object:
        """Append one model call."""
        ...


def error_text(exc: BaseException) -> str:
    """How an error is recorded: ``"<ErrorClass>: <message>"``."""
    return f"{type(exc).__name__}: {exc}"


class RecordingModel:
    """Wraps a model and records each call on ``board`` as it happens.

    Failed calls are recorded too (response None, error set) and the error is then
    re-raised unchanged. Cancellation (``asyncio.CancelledError``) is not recorded.
    If ``usage`` is given, successful calls are also counted there.

    ``before_record`` (optional) is awaited after the model answered (or failed) and
    before the call is written: a caller that orders board writes of parallel agents
    uses it to write each call in its turn (see ``d2_notebook.detective.sequencer``).
    """

    def __init__(
        self,
        inner: Model,
        board: ModelCallSink,
        investigation_id: str | None = None,
        *,
        usage: Usage | None = None,
        prices: PriceTable | None = None,
        before_record: Callable[[ModelRequest], Awaitable[None]] | None = None,
    ) -> None:
        """Record calls of ``inner`` on ``board`` under ``investigation_id``."""
        self.inner = inner
        self.name = inner.name
        self.board = board
        self.investigation_id = investigation_id
        self.usage = usage
        self.prices = prices
        self.before_record = before_record

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Forward ``request``, record the outcome, return or re-raise it."""
        started = time.perf_counter()
        try:
            response = await self.inner.request(request)
        except Exception as exc:
            if self.before_record is not None:
                await self.before_record(request)
            self.board.record_model_call(
                role=request.role,
                agent=request.agent,
                model=self.name,
                request=request.to_dict(),
                response=None,
                error=error_text(exc),
                latency_s=time.perf_counter() - started,
                investigation_id=self.investigation_id,
            )
            raise
        latency = time.perf_counter() - started
        if self.before_record is not None:
            await self.before_record(request)
        cost = cost_of(response.model or self.name, response.usage, self.prices)
        self.board.record_model_call(
            role=request.role,
            agent=request.agent,
            model=self.name,
            request=request.to_dict(),
            response=response.to_dict(),
            error=None,
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cache_read_tokens=response.usage.cache_read_tokens,
            cache_write_tokens=response.usage.cache_write_tokens,
            cost_usd=cost.usd,
            latency_s=latency,
            investigation_id=self.investigation_id,
        )
        if self.usage is not None:
            self.usage.record(request.role, response.usage, cost.usd, cost.priced)
        return response
