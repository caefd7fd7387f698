"""The OpenAI-compatible provider against the real SDK: fake transport and local server."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from json_server import json_server

import d2_notebook.llm as llm
from d2_notebook.errors import ModelAPIError, ModelConfigError, ModelRequestsBlockedError
from d2_notebook.llm import ModelRequest, ToolResult, ToolSpec, UserMessage, get_model
from d2_notebook.llm.openai_provider import OpenAIModel

SQL_TOOL = ToolSpec(
    "run_sql", "Run one read-only SQL query.",
    {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
)


@pytest.fixture(autouse=True)
def _block_real_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", True)


def completion(message: dict[str, Any], finish: str = "stop", cached: int = 0) -> dict:
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "llama3.1",
        "choices": [{"index": 0, "finish_reason": finish,
                     "message": {"role": "assistant", **message}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                  "prompt_tokens_details": {"cached_tokens": cached}},
    }


TOOL_CALL = completion(
    {"content": None, "tool_calls": [
        {"id": "call_a", "type": "function",
         "function": {"name": "run_sql", "arguments": '{"sql": "select 1"}'}},
        {"id": "call_b", "type": "function",
         "function": {"name": "run_sql", "arguments": "not json"}}]},
    finish="tool_calls", cached=100,
)


def ask(*messages: Any) -> ModelRequest:
    return ModelRequest(system="Be brief.", messages=list(messages), tools=[SQL_TOOL],
                        max_tokens=300, role="judge", agent="judge")


def fake_model(answers: list[tuple[int, dict]], bodies: list[dict], **options: Any) -> OpenAIModel:
    def handle(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        status, body = answers.pop(0)
        return httpx2.Response(status, json=body)

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(handle))
    return OpenAIModel("llama3.1", base_url="http://127.0.0.1:9/v1", http_client=client,
                       retry_base_delay=0.0, **options)


async def test_tool_calls_and_results_map_to_chat_completions(allowed: None) -> None:
    bodies: list[dict] = []
    model = fake_model([(200, TOOL_CALL), (200, completion({"content": "done"}))], bodies)
    first = await model.request(ask(UserMessage("q")))
    assert first.stop_reason == "tool_use"
    assert [(c.id, c.args) for c in first.tool_calls] == [
        ("call_a", {"sql": "select 1"}), ("call_b", {"_invalid_json": "not json"})]
    assert (first.usage.input_tokens, first.usage.cache_read_tokens,
            first.usage.output_tokens) == (20, 100, 30)

    second = await model.request(ask(UserMessage("q"), first.to_message(),
                                     ToolResult("call_a", "1 row"),
                                     ToolResult("call_b", "bad arguments", is_error=True)))
    assert second.text == "done" and second.stop_reason == "end_turn"
    sent = bodies[1]
    assert sent["tools"][0] == {"type": "function", "function": {
        "name": "run_sql", "description": SQL_TOOL.description,
        "parameters": SQL_TOOL.parameters}}
    assert [m["role"] for m in sent["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert sent["messages"][2]["tool_calls"][0]["function"] == {
        "name": "run_sql", "arguments": '{"sql": "select 1"}'}
    assert sent["messages"][3] == {"role": "tool", "tool_call_id": "call_a", "content": "1 row"}
    assert sent["messages"][4]["content"] == "ERROR: bad arguments"
    assert sent["max_tokens"] == 300


async def test_server_errors_are_retried_then_reported(allowed: None) -> None:
    bodies: list[dict] = []
    error = {"error": {"message": "model loading", "type": "server_error"}}
    model = fake_model([(503, error), (200, completion({"content": "ok"}))], bodies,
                       max_retries=1)
    assert (await model.request(ask(UserMessage("q")))).text == "ok"
    model = fake_model([(503, error), (503, error)], bodies, max_retries=1)
    with pytest.raises(ModelAPIError, match="HTTP 503 after 2 attempts"):
        await model.request(ask(UserMessage("q")))


async def test_blocked_before_any_io() -> None:
    bodies: list[dict] = []
    model = fake_model([(200, completion({"content": "never"}))], bodies)
    with pytest.raises(ModelRequestsBlockedError):
        await model.request(ask(UserMessage("q")))
    assert bodies == []


def test_needs_a_model_id_and_a_server() -> None:
    with pytest.raises(ModelConfigError, match=r"openai:llama3\.1"):
        get_model("openai:", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ModelConfigError, match="OPENAI_BASE_URL"):
        get_model("openai:llama3.1")


@pytest.fixture
def local_server() -> Iterator[tuple[str, list[dict]]]:
    calls = itertools.count(1)

    def reply(body: dict) -> dict:
        return TOOL_CALL if next(calls) == 1 else completion({"content": "H2 holds"})

    with json_server(reply) as (url, bodies):
        yield f"{url}/v1", bodies


async def test_get_model_talks_to_a_local_openai_compatible_server(
    allowed: None, monkeypatch: pytest.MonkeyPatch, local_server: tuple[str, list[dict]]
) -> None:
    base_url, bodies = local_server
    monkeypatch.setenv("OPENAI_BASE_URL", base_url)
    model = get_model("openai:llama3.1")
    first = await model.request(ask(UserMessage("q")))
    results = [ToolResult(c.id, "ok") for c in first.tool_calls]
    second = await model.request(ask(UserMessage("q"), first.to_message(), *results))
    assert second.text == "H2 holds"
    assert [b["_path"] for b in bodies] == ["/v1/chat/completions"] * 2
    assert bodies[1]["messages"][-1]["tool_call_id"] == "call_b"
