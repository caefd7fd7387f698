"""Typed, provider-neutral model requests and responses.

Agents build a :class:`ModelRequest` and read a :class:`ModelResponse`; they never see
a provider's wire format. Every class here round-trips through plain JSON
(``to_dict()`` / ``from_dict()``): that JSON is what the board records and what
:class:`~d2_notebook.llm.offline.ReplayModel` replays.

The conversation is a list of messages:

- :class:`UserMessage` — text from the user (or the orchestration code);
- :class:`AssistantMessage` — the parts a model answered earlier (text, tool calls);
- :class:`ToolResult` — the outcome of one tool call, matched by ``tool_call_id``;
  ``is_error=True`` when the tool failed (the error goes back to the model, it never
  crashes the run).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from d2_notebook.errors import ModelError

StopReason = Literal[
    "end_turn", "tool_use", "max_tokens", "stop_sequence", "refusal", "pause_turn", "other"
]
"""Why a model stopped, normalised across providers."""

STOP_REASONS: frozenset[str] = frozenset(StopReason.__args__)  # type: ignore[attr-defined]


# --- parts of an assistant turn ---------------------------------------------------


@dataclass(frozen=True)
class TextPart:
    """Text the model wrote."""

    text: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"type": "text", "text": ...}``."""
        return {"type": "text", "text": self.text}


@dataclass(frozen=True)
class ToolCallPart:
    """A tool the model asked to run: provider-assigned ``id``, tool ``name`` and the
    parsed JSON ``args``."""

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"type": "tool_call", "id": ..., "name": ..., "args": {...}}``."""
        return {"type": "tool_call", "id": self.id, "name": self.name, "args": dict(self.args)}


Part = TextPart | ToolCallPart


def part_from_dict(data: Mapping[str, Any]) -> Part:
    """Rebuild a part from its JSON form.

    Raises:
        ModelError: the ``type`` is not ``text`` or ``tool_call``.
    """
    kind = data.get("type")
    if kind == "text":
        return TextPart(text=str(data["text"]))
    if kind == "tool_call":
        return ToolCallPart(id=str(data["id"]), name=str(data["name"]), args=dict(data["args"]))
    raise ModelError(f"unknown response part type {kind!r}; expected 'text' or 'tool_call'")


# --- messages of a conversation ---------------------------------------------------


@dataclass(frozen=True)
class UserMessage:
    """A user turn of plain text."""

    text: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"role": "user", "text": ...}``."""
        return {"role": "user", "text": self.text}


@dataclass(frozen=True)
class AssistantMessage:
    """An earlier model turn, replayed into the history as the parts it answered."""

    parts: list[Part]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"role": "assistant", "parts": [part, ...]}``."""
        return {"role": "assistant", "parts": [p.to_dict() for p in self.parts]}


@dataclass(frozen=True)
class ToolResult:
    """What running one tool call produced. ``is_error`` marks a failed tool."""

    tool_call_id: str
    content: str
    is_error: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"role": "tool", "tool_call_id": ..., "content": ..., "is_error": b}``."""
        return {
            "role": "tool",
            "tool_call_id": self.tool_call_id,
            "content": self.content,
            "is_error": self.is_error,
        }


Message = UserMessage | AssistantMessage | ToolResult


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """Rebuild a message from its JSON form.

    Raises:
        ModelError: the ``role`` is not ``user``, ``assistant`` or ``tool``.
    """
    role = data.get("role")
    if role == "user":
        return UserMessage(text=str(data["text"]))
    if role == "assistant":
        return AssistantMessage(parts=[part_from_dict(p) for p in data["parts"]])
    if role == "tool":
        return ToolResult(
            tool_call_id=str(data["tool_call_id"]),
            content=str(data["content"]),
            is_error=bool(data.get("is_error", False)),
        )
    raise ModelError(f"unknown message role {role!r}; expected 'user', 'assistant' or 'tool'")


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description and a JSON schema of its args."""

    name: str
    description: str
    parameters: dict[str, Any] = field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"name": ..., "description": ..., "parameters": {schema}}``."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolSpec:
        """Rebuild a tool spec from its JSON form."""
        return cls(str(data["name"]), str(data["description"]), dict(data["parameters"]))


# --- prompt caching --------------------------------------------------------------------


class CacheBreakpoint(StrEnum):
    """Where a provider that caches prompts ends a cached prefix.

    A request is laid out stable-first: tool specs, then the system instructions (the
    role's rules, the schema and its join graph), then the conversation. Each
    breakpoint asks the provider to cache everything up to and including that point,
    so a later request starting with the same bytes reads it back instead of paying
    for it again. Providers that cache on their own (OpenAI) ignore breakpoints.
    """

    TOOLS = "tools"
    """After the last tool spec."""
    SYSTEM = "system"
    """After the system instructions: the stable prefix every agent of a role shares."""
    CONVERSATION = "conversation"
    """After the last message so far: the next step of the same turn reads it back."""


STABLE_FIRST: tuple[CacheBreakpoint, ...] = tuple(CacheBreakpoint)
"""Every breakpoint: the role's stable prefix and the turn's conversation so far."""


def _breakpoints_from(data: Mapping[str, Any]) -> tuple[CacheBreakpoint, ...]:
    if "cache_breakpoints" in data:
        return tuple(CacheBreakpoint(b) for b in data["cache_breakpoints"])
    return STABLE_FIRST if data.get("cache_prefix", True) else ()  # boards before breakpoints


# --- request and response -----------------------------------------------------------


@dataclass(frozen=True)
class ModelRequest:
    """One request to a model.

    ``role`` and ``agent`` label the call for recording, replay and scripting; they are
    never sent to a provider. ``cache_breakpoints`` say where providers that support
    prompt caching end a cached prefix (none: nothing is cached).
    """

    system: str
    messages: list[Message]
    tools: list[ToolSpec] = field(default_factory=list)
    max_tokens: int = 4096
    role: str = ""
    agent: str = ""
    cache_breakpoints: tuple[CacheBreakpoint, ...] = STABLE_FIRST

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, as recorded on the board."""
        return {
            "system": self.system,
            "messages": [m.to_dict() for m in self.messages],
            "tools": [t.to_dict() for t in self.tools],
            "max_tokens": self.max_tokens,
            "role": self.role,
            "agent": self.agent,
            "cache_breakpoints": [b.value for b in self.cache_breakpoints],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelRequest:
        """Rebuild a request from :meth:`to_dict` output."""
        return cls(
            system=str(data.get("system", "")),
            messages=[message_from_dict(m) for m in data.get("messages", [])],
            tools=[ToolSpec.from_dict(t) for t in data.get("tools", [])],
            max_tokens=int(data.get("max_tokens", 4096)),
            role=str(data.get("role", "")),
            agent=str(data.get("agent", "")),
            cache_breakpoints=_breakpoints_from(data),
        )


@dataclass(frozen=True)
class TokenUsage:
    """Tokens one call used. ``input_tokens`` excludes cache reads and writes."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """All tokens of the call: input, output, cache reads and cache writes."""
        return (
            self.input_tokens + self.output_tokens + self.cache_read_tokens
            + self.cache_write_tokens
        )

    def to_dict(self) -> dict[str, int]:
        """JSON form with the four counts."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TokenUsage:
        """Rebuild usage from :meth:`to_dict` output (missing counts are 0)."""
        return cls(**{k: int(data.get(k, 0)) for k in cls().to_dict()})


@dataclass(frozen=True)
class ModelResponse:
    """What a model answered: typed parts, why it stopped, tokens used, model id."""

    parts: list[Part]
    stop_reason: str = "end_turn"
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = ""

    @property
    def text(self) -> str:
        """All text parts joined with newlines ("" when there are none)."""
        return "\n".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        """The tool calls, in the order the model made them."""
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    def to_message(self) -> AssistantMessage:
        """This response as the assistant turn to append to the history."""
        return AssistantMessage(parts=list(self.parts))

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form, as recorded on the board."""
        return {
            "parts": [p.to_dict() for p in self.parts],
            "stop_reason": self.stop_reason,
            "usage": self.usage.to_dict(),
            "model": self.model,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ModelResponse:
        """Rebuild a response from :meth:`to_dict` output."""
        return cls(
            parts=[part_from_dict(p) for p in data.get("parts", [])],
            stop_reason=str(data.get("stop_reason", "end_turn")),
            usage=TokenUsage.from_dict(data.get("usage", {})),
            model=str(data.get("model", "")),
        )

