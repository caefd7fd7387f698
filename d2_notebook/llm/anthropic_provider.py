"""The Anthropic provider: :class:`ModelRequest` to the Messages API and back.

Reads ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) and ``ANTHROPIC_BASE_URL``,
so it talks to any server speaking the Messages API. Prompt caching puts
``cache_control`` where the request's :class:`CacheBreakpoint` s say: the last tool spec,
the system block (the API orders tools, then system, then messages, so this ends the
role's stable prefix) and the last block of the conversation so far, plus the last block
of the previous user turn: that is where the turn's previous call ended its cached
prefix, so this call reads it back however many blocks the new step added. Retries
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
    CacheBreakpoint,
    ModelRequest,
    ModelResponse,
    Part,
    TextPart,
    TokenUsage,
    ToolCallPart,
    ToolResult,
    UserMessage,
)
from d2_notebook.llm.remote import RemoteModel

CACHE_CONTROL = {"type": "ephemeral"}


class AnthropicModel(RemoteModel):
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

    key_env = "ANTHROPIC_API_KEY"
    url_env = "ANTHROPIC_BASE_URL"

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
        super().__init__(f"anthropic:{self.model_id}", max_retries=max_retries, timeout=timeout,
                         max_concurrency=max_concurrency, retry_base_delay=retry_base_delay,
                         retry_max_delay=retry_max_delay)
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

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return to_anthropic_params(request, self.model_id)

    async def _send(self, params: dict[str, Any]) -> Any:
        return await self._client.messages.create(**params, timeout=self.timeout)

    def _parse(self, raw: Any) -> ModelResponse:
        return from_anthropic_message(raw)

    def _is_api_error(self, exc: Exception) -> bool:
        return isinstance(exc, anthropic.APIError)

    def _is_connection_error(self, exc: Exception) -> bool:
        return isinstance(exc, anthropic.APIConnectionError)  # includes timeouts

    def _where(self) -> str:
        return f"{self.name} at {self._client.base_url}"


# --- mapping -------------------------------------------------------------------------


def to_anthropic_params(request: ModelRequest, model_id: str) -> dict[str, Any]:
    """Keyword arguments for ``messages.create`` (``role``/``agent`` are not sent).

    Consecutive user-side messages (tool results, user text) merge into one user turn
    with tool results first, as the Messages API requires. Each of the request's cache
    breakpoints becomes a ``cache_control`` marker (at most the API's four).
    """
    breakpoints = set(request.cache_breakpoints)
    messages = _to_anthropic_messages(request)
    if CacheBreakpoint.CONVERSATION in breakpoints:
        for turn in _rolling_marks(messages):
            turn["content"][-1]["cache_control"] = CACHE_CONTROL
    params: dict[str, Any] = {
        "model": model_id,
        "max_tokens": request.max_tokens,
        "messages": messages,
    }
    if request.system:
        block: dict[str, Any] = {"type": "text", "text": request.system}
        if CacheBreakpoint.SYSTEM in breakpoints:
            block["cache_control"] = CACHE_CONTROL
        params["system"] = [block]
    if request.tools:
        tools = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in request.tools
        ]
        if CacheBreakpoint.TOOLS in breakpoints:
            tools[-1]["cache_control"] = CACHE_CONTROL
        params["tools"] = tools
    return params


def _rolling_marks(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user turns a conversation breakpoint marks: the last one (written for the
    next call) and the one before it, where the previous call of the turn put its mark
    (read back now). With the tools and system markers that is the API's four."""
    users = [t for t in turns if t["role"] == "user" and t["content"]]
    return users[-2:]


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
