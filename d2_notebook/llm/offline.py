"""Offline models shipped with the package, so tests, docs and benchmarks run without
network or keys (after pydantic-ai's ``TestModel``/``FunctionModel``).

- :class:`ScriptedModel` answers from queues of prepared responses, per agent (or
  role) or from one global queue, and keeps the requests it saw.
- :class:`FunctionModel` asks a function (sync or async) for each response.
- :class:`ReplayModel` (from :mod:`d2_notebook.llm.replay`) re-answers a run recorded
  on a board.

Responses are built with :func:`text` and :func:`tool_call`. Unless a response
carries its own usage, both models estimate it (about 4 characters a token) so
budget and cost paths run offline too.
"""

from __future__ import annotations

import inspect
import itertools
import json
import threading
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from d2_notebook.errors import ModelConfigError, ScriptExhaustedError
from d2_notebook.llm.messages import (
    ModelRequest,
    ModelResponse,
    Part,
    TextPart,
    TokenUsage,
    ToolCallPart,
)
from d2_notebook.llm.replay import ReplayModel
from d2_notebook.llm.settings import allow_model_requests, block_model_requests

__all__ = [
    "FunctionModel",
    "ReplayModel",
    "ScriptedModel",
    "allow_model_requests",
    "block_model_requests",
    "estimate_usage",
    "text",
    "tool_call",
    "tool_calls",
]

GLOBAL = "*"
"""The key of the global queue in a ScriptedModel's script."""

_call_ids = itertools.count(1)


def text(content: str) -> ModelResponse:
    """A response that says ``content`` and ends the turn."""
    return ModelResponse(parts=[TextPart(content)], stop_reason="end_turn")


def tool_call(
    name: str, args: Mapping[str, Any] | None = None, *, id: str | None = None, say: str = ""
) -> ModelResponse:
    """A response that calls one tool (optionally after saying ``say``)."""
    return tool_calls((name, args or {}), ids=[id] if id else None, say=say)


def tool_calls(
    *calls: tuple[str, Mapping[str, Any]], ids: Sequence[str] | None = None, say: str = ""
) -> ModelResponse:
    """A response that calls several tools at once; ids default to ``call_<n>``."""
    ids = list(ids) if ids else [f"call_{next(_call_ids)}" for _ in calls]
    parts: list[Part] = [TextPart(say)] if say else []
    parts += [ToolCallPart(i, n, dict(a)) for i, (n, a) in zip(ids, calls, strict=True)]
    return ModelResponse(parts=parts, stop_reason="tool_use")


def estimate_usage(request: ModelRequest, response: ModelResponse) -> TokenUsage:
    """Rough token counts (characters / 4, at least 1) of a request and its response."""
    sent = len(json.dumps(request.to_dict()))
    received = len(json.dumps([p.to_dict() for p in response.parts]))
    return TokenUsage(input_tokens=max(1, sent // 4), output_tokens=max(1, received // 4))


def _finish(
    request: ModelRequest, response: ModelResponse, model_id: str, estimate: bool
) -> ModelResponse:
    """Fill in the model id and (estimated) usage a prepared response leaves empty."""
    if not response.model:
        response = replace(response, model=model_id)
    if estimate and response.usage == TokenUsage():
        response = replace(response, usage=estimate_usage(request, response))
    return response


class ScriptedModel:
    """Answers from prepared responses, in order.

    ``script`` is either one sequence (the global queue) or a mapping from agent
    name — or role name, or ``"*"`` for the global queue — to a sequence. A request
    takes the next response of its agent's queue, else its role's, else the global
    one. ``.requests`` lists every request seen, in order.

    Raises (from :meth:`request`):
        ScriptExhaustedError: the queue is empty; names the agent and call number.
    """

    def __init__(
        self,
        script: Sequence[ModelResponse] | Mapping[str, Sequence[ModelResponse]] = (),
        *,
        name: str = "scripted",
        model_id: str = "scripted",
        estimate: bool = True,
    ) -> None:
        """Prepare the queues; ``model_id`` is reported on responses (and priced)."""
        self.name = name
        self.model_id = model_id
        self.estimate = estimate
        self.requests: list[ModelRequest] = []
        self._queues: dict[str, deque[ModelResponse]] = {}
        self._calls: dict[str, int] = {}
        self._lock = threading.Lock()
        items = script.items() if isinstance(script, Mapping) else [(GLOBAL, script)]
        for key, responses in items:
            self.add(*responses, agent=key)

    def add(self, *responses: ModelResponse, agent: str = GLOBAL) -> None:
        """Append responses to ``agent``'s queue (a role name or ``"*"`` work too)."""
        with self._lock:
            self._queues.setdefault(agent, deque()).extend(responses)

    def remaining(self, agent: str = GLOBAL) -> int:
        """Responses left in one queue."""
        with self._lock:
            return len(self._queues.get(agent, ()))

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Pop the next scripted response for ``request.agent``."""
        with self._lock:
            self.requests.append(request)
            number = self._calls[request.agent] = self._calls.get(request.agent, 0) + 1
            for key in (request.agent, request.role, GLOBAL):
                queue = self._queues.get(key)
                if queue:
                    response = queue.popleft()
                    break
            else:
                raise ScriptExhaustedError(
                    f"ScriptedModel {self.name!r} has no response left for agent "
                    f"{request.agent!r} (role {request.role!r}), call #{number}; add more "
                    "responses to the script for that agent, its role or '*'"
                )
        return _finish(request, response, self.model_id, self.estimate)


ResponseFunction = Callable[[ModelRequest], ModelResponse | Awaitable[ModelResponse]]


class FunctionModel:
    """Asks ``fn(request)`` — sync or async — for each response.

    This is how tests and the benchmark drive whole investigations deterministically.
    ``.requests`` lists every request seen.
    """

    def __init__(
        self,
        fn: ResponseFunction,
        *,
        name: str = "function",
        model_id: str = "function",
        estimate: bool = True,
    ) -> None:
        """Wrap ``fn``; ``model_id`` is reported on responses (and priced)."""
        self.fn = fn
        self.name = name
        self.model_id = model_id
        self.estimate = estimate
        self.requests: list[ModelRequest] = []

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Return whatever ``fn`` answers for ``request``."""
        self.requests.append(request)
        result = self.fn(request)
        response = await result if inspect.isawaitable(result) else result
        if not isinstance(response, ModelResponse):
            raise ModelConfigError(
                f"FunctionModel {self.name!r}: the function returned {type(response).__name__}, "
                "not a ModelResponse; build one with text(...) or tool_call(...)"
            )
        return _finish(request, response, self.model_id, self.estimate)


# --- registry factories (get_model("scripted"), get_model("function", fn=...)) --------


def scripted_factory(
    model_id: str = "",
    *,
    script: Sequence[ModelResponse] | Mapping[str, Sequence[ModelResponse]] = (),
    **kw: Any,
) -> ScriptedModel:
    """``get_model("scripted[:<model-id>]", script=...)``."""
    return ScriptedModel(script, model_id=model_id or "scripted", **kw)


def function_factory(model_id: str = "", *, fn: ResponseFunction | None = None,
                     **kw: Any) -> FunctionModel:
    """``get_model("function[:<model-id>]", fn=...)``."""
    if fn is None:
        raise ModelConfigError("the function model needs fn=: get_model('function', fn=...)")
    return FunctionModel(fn, model_id=model_id or "function", **kw)


def replay_factory(model_id: str = "", *, board: Any = None, **kw: Any) -> ReplayModel:
    """``get_model("replay", board=..., investigation_id=...)``."""
    if board is None:
        raise ModelConfigError("the replay model needs board=: get_model('replay', board=...)")
    return ReplayModel(board, **kw)
