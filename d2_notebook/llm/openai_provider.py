"""The OpenAI-compatible provider: chat completions with tool calling.

Works with any server speaking the chat-completions API (Ollama, vLLM, llama.cpp,
LM Studio, OpenAI itself): pass ``base_url=`` or set ``OPENAI_BASE_URL``. The
``openai`` package is an optional extra, imported only when this provider is used.
Chat completions have no ``is_error`` flag, so a failed tool's result is sent as
``"ERROR: <content>"``. Tool-call arguments that are not valid JSON arrive as
``{"_invalid_json": "<raw text>"}`` so the agent can answer with a tool error.
"""

from __future__ import annotations

import json
import os
from typing import Any

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
from d2_notebook.llm.remote import RemoteModel

FINISH_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise ModelConfigError(
            "the openai:... models need the openai package: pip install 'd2-notebook[openai]'"
        ) from exc
    return openai


class OpenAIModel(RemoteModel):
    """A model behind an OpenAI-compatible chat-completions endpoint.

    Args:
        model_id: the server's model name (``llama3.1``, ``gpt-4o``, ...).
        base_url: defaults to ``$OPENAI_BASE_URL``, then OpenAI's API.
        api_key: defaults to ``$OPENAI_API_KEY``; local servers need none (a
            placeholder is sent when ``base_url`` is set).
        max_retries, timeout, max_concurrency, retry_base_delay, retry_max_delay,
            http_client: as for :class:`~d2_notebook.llm.anthropic_provider.AnthropicModel`.

    Raises:
        ModelConfigError: ``openai`` is not installed, no model id, or no key and
            no base URL.
    """

    key_env = "OPENAI_API_KEY"
    url_env = "OPENAI_BASE_URL"

    def __init__(
        self,
        model_id: str = "",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        max_retries: int = settings.DEFAULT_MAX_RETRIES,
        timeout: float = settings.DEFAULT_TIMEOUT_S,
        max_concurrency: int = settings.DEFAULT_MAX_CONCURRENCY,
        retry_base_delay: float = settings.DEFAULT_RETRY_BASE_DELAY_S,
        retry_max_delay: float = settings.DEFAULT_RETRY_MAX_DELAY_S,
        http_client: Any = None,
    ) -> None:
        self._openai = _import_openai()
        if not model_id:
            raise ModelConfigError(
                "name the model served by your OpenAI-compatible server, e.g. openai:llama3.1"
            )
        self.model_id = model_id
        super().__init__(f"openai:{model_id}", max_retries=max_retries, timeout=timeout,
                         max_concurrency=max_concurrency, retry_base_delay=retry_base_delay,
                         retry_max_delay=retry_max_delay)
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None and self.base_url is None:
            raise ModelConfigError(
                f"no server for {self.name}: set OPENAI_BASE_URL (or pass base_url=) for a "
                "local server such as Ollama, or set OPENAI_API_KEY for OpenAI; see README"
            )
        self._client = self._openai.AsyncOpenAI(
            api_key=api_key or "not-needed",
            base_url=self.base_url,
            max_retries=0,
            timeout=timeout,
            http_client=http_client,
        )

    def __repr__(self) -> str:
        return f"OpenAIModel({self.model_id!r}, base_url={self.base_url!r})"

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        return to_openai_params(request, self.model_id)

    async def _send(self, params: dict[str, Any]) -> Any:
        return await self._client.chat.completions.create(**params, timeout=self.timeout)

    def _parse(self, raw: Any) -> ModelResponse:
        return from_openai_completion(raw)

    def _is_api_error(self, exc: Exception) -> bool:
        return isinstance(exc, self._openai.APIError)

    def _is_connection_error(self, exc: Exception) -> bool:
        return isinstance(exc, self._openai.APIConnectionError)

    def _where(self) -> str:
        return f"{self.name} at {self._client.base_url}"


# --- mapping -------------------------------------------------------------------------


def to_openai_params(request: ModelRequest, model_id: str) -> dict[str, Any]:
    """Keyword arguments for ``chat.completions.create`` (``role``/``agent`` not sent)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        if isinstance(message, UserMessage):
            messages.append({"role": "user", "content": message.text})
        elif isinstance(message, ToolResult):
            content = f"ERROR: {message.content}" if message.is_error else message.content
            messages.append(
                {"role": "tool", "tool_call_id": message.tool_call_id, "content": content}
            )
        elif isinstance(message, AssistantMessage):
            messages.append(_assistant_message(message))
        else:
            raise ModelAPIError(f"cannot send message {message!r} to an OpenAI server")
    params: dict[str, Any] = {
        "model": model_id,
        "messages": messages,
        "max_tokens": request.max_tokens,
    }
    if request.tools:
        params["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in request.tools
        ]
    return params


def _assistant_message(message: AssistantMessage) -> dict[str, Any]:
    text = "\n".join(p.text for p in message.parts if isinstance(p, TextPart))
    calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
    out: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.args)},
            }
            for c in calls
        ]
    return out


def from_openai_completion(completion: Any) -> ModelResponse:
    """A :class:`ModelResponse` from the SDK's ``ChatCompletion`` (first choice)."""
    if not completion.choices:
        raise ModelAPIError(f"the server answered with no choices (model {completion.model!r})")
    choice = completion.choices[0]
    parts: list[Part] = []
    if choice.message.content:
        parts.append(TextPart(text=choice.message.content))
    for call in choice.message.tool_calls or []:
        if getattr(call, "type", "function") != "function":
            continue
        parts.append(
            ToolCallPart(id=call.id, name=call.function.name, args=_parse_args(call.function))
        )
    return ModelResponse(
        parts=parts,
        stop_reason=FINISH_REASONS.get(choice.finish_reason or "stop", "other"),
        usage=_usage(completion.usage),
        model=completion.model or "",
    )


def _parse_args(function: Any) -> dict[str, Any]:
    raw = function.arguments or "{}"
    try:
        args = json.loads(raw)
    except json.JSONDecodeError:
        return {"_invalid_json": raw}
    return args if isinstance(args, dict) else {"_invalid_json": raw}


def _usage(usage: Any) -> TokenUsage:
    """Prompt tokens include cached ones; split them out to match Anthropic's counts."""
    if usage is None:
        return TokenUsage()
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", None) or 0) if details else 0
    return TokenUsage(
        input_tokens=max(0, (usage.prompt_tokens or 0) - cached),
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=cached,
    )
