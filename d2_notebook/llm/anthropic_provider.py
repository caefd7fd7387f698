"""The Anthropic provider: :class:`ModelRequest` to the Messages API and back.

Reads ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) and ``ANTHROPIC_BASE_URL``,
so it talks to any server speaking the Messages API. Prompt caching marks the stable
prefix — the system block and the last tool spec — with ``cache_control``. Retries
are ours (the SDK's are off); errors become :mod:`d2_notebook.errors` with a fix.
"""

from __future__ import annotations

import os
from typing import Any

import anthropic
import httpx2

from d2_notebook.errors import ModelAPIError, ModelConfigError
from d2_notebook.llm import settings
from d2_notebook.llm.messages import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    Part,
    TextPart,
    TokenUsage,
    ToolCallPart,
    ToolResult,
    UserMessage,
)
from d2_notebook.llm.retry import is_retryable_status, with_retries
from d2_notebook.llm.usage import ConcurrencyLimit

CACHE_CONTROL = {"type": "ephemeral"}


class AnthropicModel:
    """A Claude model behind ``AsyncAnthropic``.

    Args:
        model_id: e.g. ``claude-sonnet-4-6`` (empty: the default model id).
        api_key: defaults to ``$ANTHROPIC_API_KEY`` (then ``$ANTHROPIC_AUTH_TOKEN``).
        base_url: defaults to ``$ANTHROPIC_BASE_URL``, then the public API.
        max_retries: retries after the first attempt on 408/409/429/5xx/529 and
            connection errors.
        timeout: seconds per attempt.
        max_concurrency: requests in flight at once on this instance.
        retry_base_delay: first backoff in seconds (doubles each retry).
        retry_max_delay: cap on one backoff, including a server's retry-after.
        http_client: an ``httpx2.AsyncClient`` to send through (tests, proxies).

    Raises:
        ModelConfigError: no API key is configured.
    """

    def __init__(
        self,
        model_id: str = "",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = settings.DEFAULT_MAX_RETRIES,
        timeout: float = settings.DEFAULT_TIMEOUT_S,
        max_concurrency: int = settings.DEFAULT_MAX_CONCURRENCY,
        retry_base_delay: float = settings.DEFAULT_RETRY_BASE_DELAY_S,
        retry_max_delay: float = settings.DEFAULT_RETRY_MAX_DELAY_S,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        self.model_id = model_id or settings.DEFAULT_ANTHROPIC_MODEL
        self.name = f"anthropic:{self.model_id}"
        self.max_retries = max_retries
        self.timeout = timeout
        self.retry_base_delay = retry_base_delay
        self.retry_max_delay = retry_max_delay
        self._limit = ConcurrencyLimit(max_concurrency)
        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY") or None
        auth_token = None if api_key else os.environ.get("ANTHROPIC_AUTH_TOKEN") or None
        if not api_key and not auth_token:
            raise ModelConfigError(
                f"no API key for {self.name}: set ANTHROPIC_API_KEY or pass "
                "--model openai:... (any OpenAI-compatible server); see README"
            )
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            auth_token=auth_token if not api_key else None,
            base_url=self.base_url,
            max_retries=0,
            timeout=timeout,
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model_id!r}, base_url={self.base_url!r})"

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send ``request`` to the Messages API.

        Raises:
            ModelRequestsBlockedError: real requests are blocked (before any I/O).
            ModelConfigError: the key was refused, or the model id is unknown.
            ModelAPIError: any other API error, after retries where they apply.
        """
        settings.check_model_requests_allowed(self.name)
        params = to_anthropic_params(request, self.model_id)
        async with self._limit:
            try:
                message = await with_retries(
                    lambda: self._client.messages.create(**params, timeout=self.timeout),
                    retryable=_retryable,
                    max_retries=self.max_retries,
                    base_delay=self.retry_base_delay,
                    max_delay=self.retry_max_delay,
                )
            except anthropic.APIError as exc:
                raise self._friendly_error(exc) from exc
        return from_anthropic_message(message)

    def _friendly_error(self, exc: anthropic.APIError) -> Exception:
        """Map an SDK error to a d2 error whose message says what to do."""
        where = f"{self.name} at {self._client.base_url}"
        if isinstance(exc, anthropic.APIConnectionError):
            return ModelAPIError(
                f"cannot reach {where} after {self.max_retries + 1} attempts: {exc.message}; "
                "check your network or ANTHROPIC_BASE_URL"
            )
        status = getattr(exc, "status_code", None)
        detail = getattr(exc, "api_message", None) or exc.message
        if status == 401:
            return ModelConfigError(
                f"the API key was refused by {where}; check ANTHROPIC_API_KEY ({detail})"
            )
        if status == 403:
            return ModelConfigError(
                f"the API key may not use {where}; check the key's workspace ({detail})"
            )
        if status == 404:
            return ModelConfigError(
                f"{where} does not know model {self.model_id!r}; check --model ({detail})"
            )
        if is_retryable_status(status):
            return ModelAPIError(
                f"{where} failed with HTTP {status} after {self.max_retries + 1} attempts: "
                f"{detail}; try again later or lower the concurrency"
            )
        return ModelAPIError(f"{where} refused the request (HTTP {status}): {detail}")


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts
        return True
    return isinstance(exc, anthropic.APIStatusError) and is_retryable_status(exc.status_code)


# --- mapping -------------------------------------------------------------------------


def to_anthropic_params(request: ModelRequest, model_id: str) -> dict[str, Any]:
    """Keyword arguments for ``messages.create`` (``role``/``agent`` are not sent).

    Consecutive user-side messages (tool results, user text) merge into one user turn
    with tool results first, as the Messages API requires.
    """
    params: dict[str, Any] = {
        "model": model_id,
        "max_tokens": request.max_tokens,
        "messages": _to_anthropic_messages(request),
    }
    if request.system:
        block: dict[str, Any] = {"type": "text", "text": request.system}
        if request.cache_prefix:
            block["cache_control"] = CACHE_CONTROL
        params["system"] = [block]
    if request.tools:
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if request.cache_prefix:
            tools[-1]["cache_control"] = CACHE_CONTROL
        params["tools"] = tools
    return params


def _to_anthropic_messages(request: ModelRequest) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            content = [_assistant_block(p) for p in message.parts]
            content = [b for b in content if b is not None]
            turns.append({"role": "assistant", "content": content})
            continue
        if isinstance(message, ToolResult):
            block = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id,
                "content": message.content,
                "is_error": message.is_error,
            }
        elif isinstance(message, UserMessage):
            block = {"type": "text", "text": message.text}
        else:
            raise ModelAPIError(f"cannot send message {message!r} to Anthropic")
        if not turns or turns[-1]["role"] != "user":
            turns.append({"role": "user", "content": []})
        turns[-1]["content"].append(block)
    for turn in turns:  # tool results must lead their user turn
        if turn["role"] == "user":
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    return turns


def _assistant_block(part: Part) -> dict[str, Any] | None:
    if isinstance(part, ToolCallPart):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.args}
    return {"type": "text", "text": part.text} if part.text else None  # API rejects ""


def from_anthropic_message(message: Any) -> ModelResponse:
    """A :class:`ModelResponse` from the SDK's ``Message``; blocks other than text and
    tool_use (e.g. thinking) are dropped."""
    parts: list[Part] = []
    for block in message.content:
        if block.type == "text":
            parts.append(TextPart(text=block.text))
        elif block.type == "tool_use":
            parts.append(ToolCallPart(id=block.id, name=block.name, args=dict(block.input)))
    usage = message.usage
    return ModelResponse(
        parts=parts,
        stop_reason=_stop_reason(message.stop_reason),
        usage=TokenUsage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
        ),
        model=message.model,
    )


def _stop_reason(reason: str | None) -> str:
    if reason in {"end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn"}:
        return str(reason)
    if reason == "model_context_window_exceeded":
        return "max_tokens"
    return "end_turn" if reason is None else "other"
