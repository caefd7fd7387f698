"""A local server that speaks the Anthropic Messages API, answering with an offline policy.

It lets tests run the real Anthropic SDK, real HTTP on 127.0.0.1 and the real
``d2 investigate`` against "any server that speaks the Messages API". The wire request
carries no role or agent labels (they are never sent to a provider), so the server
reads them back from the role instructions and the first message, then asks the
policy as the FunctionModel would.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from json_server import json_server

from d2_notebook.llm import (
    AssistantMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolResult,
    ToolSpec,
    UserMessage,
)

Policy = Callable[[ModelRequest], ModelResponse]

_ROLES = [
    ("YOUR ROLE: Planner", None, "planner"),
    ("YOUR ROLE: Hypothesizer.", None, "hypothesizer"),
    ("YOUR ROLE: Orchestrator.", None, "orchestrator"),
    ("YOUR ROLE: Evidence collector", None, "collector"),
    ("YOUR ROLE: Judge", None, "judge"),
    ("YOUR ROLE: Reporter.", None, "reporter"),
    ("YOUR ROLE: You are the whole team", None, "detective"),
    ("You are an expert data analyst", None, "react"),
]


def role_of(system: str) -> str:
    """The team role whose instructions ``system`` holds."""
    for marker, also, role in _ROLES:
        if marker in system and (also is None or also in system):
            return role
    return "unknown"


def to_model_request(body: dict[str, Any]) -> ModelRequest:
    """Rebuild our request from a Messages API request body."""
    system = body.get("system", "")
    if isinstance(system, list):
        system = "".join(block.get("text", "") for block in system)
    messages: list[Any] = []
    for message in body["messages"]:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message["role"] == "assistant":
            parts = [TextPart(b["text"]) if b["type"] == "text"
                     else ToolCallPart(b["id"], b["name"], b.get("input", {}))
                     for b in blocks if b["type"] in ("text", "tool_use")]
            messages.append(AssistantMessage(parts))
            continue
        for block in blocks:
            if block["type"] == "tool_result":
                inner = block.get("content", "")
                text = inner if isinstance(inner, str) else "".join(
                    b.get("text", "") for b in inner)
                messages.append(ToolResult(block["tool_use_id"], text,
                                           bool(block.get("is_error", False))))
            elif block["type"] == "text":
                messages.append(UserMessage(block["text"]))
    role = role_of(system)
    first = messages[0].text if messages and isinstance(messages[0], UserMessage) else ""
    focus = re.search(r"(?:YOUR HYPOTHESIS|HYPOTHESIS TO JUDGE): (H\d+)", first)
    agent = {"collector": "collector-", "judge": "judge-"}.get(role, role)
    if focus and role in ("collector", "judge"):
        agent += focus.group(1)
    tools = [ToolSpec(t["name"], t.get("description", ""), t.get("input_schema", {}))
             for t in body.get("tools", [])]
    return ModelRequest(system=system, messages=messages, tools=tools,
                        max_tokens=body.get("max_tokens", 4096), role=role, agent=agent)


def to_wire_response(response: ModelResponse, model: str, number: int) -> dict[str, Any]:
    """Our response as a Messages API response body."""
    content = []
    for part in response.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.text})
        else:
            content.append({"type": "tool_use", "id": f"toolu_{number}_{part.id}",
                            "name": part.name, "input": part.args})
    return {
        "id": f"msg_{number}", "type": "message", "role": "assistant", "model": model,
        "content": content,
        "stop_reason": "tool_use" if response.tool_calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 1200, "output_tokens": 80,
                  "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0},
    }


@contextmanager
def fake_anthropic(policy: Policy) -> Iterator[dict[str, Any]]:
    """Serve ``policy`` on 127.0.0.1; yields ``{"url": ..., "requests": [...]}``."""
    count = itertools.count(1)

    def reply(body: dict[str, Any]) -> dict[str, Any] | None:
        if not body["_path"].startswith("/v1/messages"):
            return None
        number = next(count)
        return to_wire_response(policy(to_model_request(body)), body["model"], number)

    with json_server(reply) as (url, requests):
        yield {"url": url, "requests": requests}
