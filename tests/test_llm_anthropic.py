"""The Anthropic provider against the real SDK: a fake transport and a local server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import httpx2
import pytest
from json_server import json_server

import d2_notebook.llm as llm
from d2_notebook.errors import ModelAPIError, ModelConfigError, ModelRequestsBlockedError
from d2_notebook.llm import (
    AssistantMessage,
    ModelRequest,
    ToolResult,
    ToolSpec,
    UserMessage,
    allow_model_requests,
    block_model_requests,
    cost_of,
    get_model,
)
from d2_notebook.llm.anthropic_provider import AnthropicModel

SQL_TOOL = ToolSpec(
    "run_sql", "Run one read-only SQL query.",
    {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
)
NOTE_TOOL = ToolSpec("note", "Write a note.", {"type": "object", "properties": {}})


@pytest.fixture(autouse=True)
def _block_real_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)


@pytest.fixture
def allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let 'real' providers run: every test using this talks to a fake on 127.0.0.1."""
    monkeypatch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", True)


def message_json(content: list[dict[str, Any]], stop: str = "end_turn", **usage: int) -> dict:
    return {
        "id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929", "content": content,
        "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20, **usage},
    }


class FakeAPI:
    """An httpx2 transport answering from a list of (status, json, headers)."""

    def __init__(self, *answers: tuple[int, dict, dict[str, str]]) -> None:
        self.answers = list(answers)
        self.bodies: list[dict] = []

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        status, body, headers = self.answers.pop(0)
        return httpx2.Response(status, json=body, headers=headers)

    def model(self, **options: Any) -> AnthropicModel:
        client = httpx2.AsyncClient(transport=httpx2.MockTransport(self.handle))
        options.setdefault("retry_base_delay", 0.0)
        return AnthropicModel("claude-sonnet-4-6", api_key="sk-test", http_client=client,
                              **options)


def ok(body: dict) -> tuple[int, dict, dict[str, str]]:
    return 200, body, {}


def ask(*messages: Any) -> ModelRequest:
    return ModelRequest(system="You are a detective.", messages=list(messages),
                        tools=[NOTE_TOOL, SQL_TOOL], max_tokens=500, role="collector",
                        agent="collector-H1")


async def test_two_step_tool_loop_sends_tool_use_and_tool_result_blocks(allowed: None) -> None:
    api = FakeAPI(
        ok(message_json([{"type": "text", "text": "Let me look."},
                         {"type": "tool_use", "id": "toolu_1", "name": "run_sql",
                          "input": {"sql": "select 1"}},
                         {"type": "tool_use", "id": "toolu_2", "name": "note", "input": {}}],
                        stop="tool_use")),
        ok(message_json([{"type": "text", "text": "Done."}])),
    )
    model = api.model()
    history: list[Any] = [UserMessage("Who did it?")]
    first = await model.request(ask(*history))
    assert first.stop_reason == "tool_use"
    assert [(c.id, c.name, c.args) for c in first.tool_calls] == [
        ("toolu_1", "run_sql", {"sql": "select 1"}), ("toolu_2", "note", {})]
    history += [first.to_message(), ToolResult("toolu_1", "1 row"),
                ToolResult("toolu_2", "board is locked", is_error=True)]
    second = await model.request(ask(*history))
    assert second.text == "Done." and second.stop_reason == "end_turn"

    sent = api.bodies[1]
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][1]["content"][1] == {
        "type": "tool_use", "id": "toolu_1", "name": "run_sql", "input": {"sql": "select 1"}}
    assert sent["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "1 row", "is_error": False},
        {"type": "tool_result", "tool_use_id": "toolu_2", "content": "board is locked",
         "is_error": True, "cache_control": {"type": "ephemeral"}},  # the conversation so far
    ]
    assert "role" not in sent and "agent" not in sent  # labels never reach the provider


async def test_cache_control_marks_system_block_and_last_tool(allowed: None) -> None:
    api = FakeAPI(ok(message_json([{"type": "text", "text": "hi"}])),
                  ok(message_json([{"type": "text", "text": "hi"}])))
    model = api.model()
    await model.request(ask(UserMessage("q")))
    sent = api.bodies[0]
    assert sent["system"] == [{"type": "text", "text": "You are a detective.",
                               "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" not in sent["tools"][0]
    assert sent["tools"][1]["cache_control"] == {"type": "ephemeral"}
    assert sent["tools"][1]["input_schema"] == SQL_TOOL.parameters
    request = ask(UserMessage("q"))
    await model.request(ModelRequest(request.system, request.messages, request.tools,
                                     cache_breakpoints=()))
    assert "cache_control" not in json.dumps(api.bodies[1])


async def test_usage_and_cost_are_mapped(allowed: None) -> None:
    api = FakeAPI(ok(message_json([{"type": "text", "text": "x"}], input_tokens=1000,
                                  output_tokens=200, cache_read_input_tokens=5000,
                                  cache_creation_input_tokens=300)))
    response = await api.model().request(ask(UserMessage("q")))
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
            usage.cache_write_tokens) == (1000, 200, 5000, 300)
    cost = cost_of(response.model, usage)
    assert cost.priced
    assert cost.usd == pytest.approx((1000 * 3 + 200 * 15 + 5000 * 0.3 + 300 * 3.75) / 1e6)


async def test_overloaded_then_success_is_retried(allowed: None) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    api = FakeAPI((529, overloaded, {"retry-after": "0"}),
                  ok(message_json([{"type": "text", "text": "fine"}])))
    response = await api.model(max_retries=2).request(ask(UserMessage("q")))
    assert response.text == "fine"
    assert len(api.bodies) == 2


async def test_retries_run_out_with_a_clear_error(allowed: None) -> None:
    busy = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    api = FakeAPI(*[(429, busy, {})] * 3)
    with pytest.raises(ModelAPIError, match=r"HTTP 429 after 3 attempts: slow down"):
        await api.model(max_retries=2).request(ask(UserMessage("q")))
    assert len(api.bodies) == 3


async def test_refused_key_says_what_to_check(allowed: None) -> None:
    refused = {"type": "error",
               "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    api = FakeAPI((401, refused, {}))
    with pytest.raises(ModelConfigError, match=r"the API key was refused.*ANTHROPIC_API_KEY"):
        await api.model().request(ask(UserMessage("q")))
    assert len(api.bodies) == 1  # a 401 is never retried


async def test_bad_request_is_not_retried(allowed: None) -> None:
    bad = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad tools"}}
    api = FakeAPI((400, bad, {}))
    with pytest.raises(ModelAPIError, match=r"HTTP 400\): bad tools"):
        await api.model().request(ask(UserMessage("q")))
    assert len(api.bodies) == 1


async def test_blocked_requests_fail_before_any_io() -> None:
    api = FakeAPI(ok(message_json([{"type": "text", "text": "never"}])))
    with pytest.raises(ModelRequestsBlockedError, match="real model requests are blocked"):
        await api.model().request(ask(UserMessage("q")))
    assert api.bodies == []


async def test_env_variable_blocks_even_when_the_flag_allows(
    allowed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("D2_BLOCK_MODEL_REQUESTS", "1")
    api = FakeAPI()
    with pytest.raises(ModelRequestsBlockedError):
        await api.model().request(ask(UserMessage("q")))
    assert api.bodies == []


async def test_switch_context_managers_flip_and_restore_the_flag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
    api = FakeAPI(ok(message_json([{"type": "text", "text": "hi"}])))
    model = api.model()
    with allow_model_requests():
        assert (await model.request(ask(UserMessage("q")))).text == "hi"
        with block_model_requests(), pytest.raises(ModelRequestsBlockedError):
            await model.request(ask(UserMessage("q")))
    assert len(api.bodies) == 1
    assert llm.ALLOW_MODEL_REQUESTS is False  # restored to what the fixture set


def test_missing_key_names_the_fix() -> None:
    with pytest.raises(ModelConfigError, match="set ANTHROPIC_API_KEY or pass --model openai:"):
        get_model("anthropic:claude-sonnet-4-5")


async def test_concurrency_cap_limits_requests_in_flight(allowed: None) -> None:
    in_flight, peak = 0, 0

    async def slow(request: httpx2.Request) -> httpx2.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return httpx2.Response(200, json=message_json([{"type": "text", "text": "x"}]))

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(slow))
    model = AnthropicModel("claude-sonnet-4-6", api_key="k", http_client=client,
                           max_concurrency=2)
    await asyncio.gather(*(model.request(ask(UserMessage(str(i)))) for i in range(7)))
    assert peak == 2


# --- a genuine local HTTP server speaking the Messages API ---------------------------


@pytest.fixture
def local_server() -> Iterator[tuple[str, list[dict], Callable[[dict], dict]]]:
    """A Messages-API lookalike on 127.0.0.1; yields (base_url, bodies, set_answer)."""
    answer: dict[str, Any] = {"fn": lambda body: message_json([{"type": "text", "text": "ok"}])}
    with json_server(lambda body: answer["fn"](body)) as (url, bodies):
        yield url, bodies, lambda fn: answer.update(fn=fn)


async def test_get_model_talks_to_any_messages_api_server(
    allowed: None, monkeypatch: pytest.MonkeyPatch, local_server: tuple
) -> None:
    base_url, bodies, set_answer = local_server
    monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-local")

    def answer(body: dict) -> dict:
        if body["messages"][-1]["content"][0]["type"] == "tool_result":
            return message_json([{"type": "text", "text": "H1 is supported."}])
        return message_json([{"type": "tool_use", "id": "toolu_9", "name": "run_sql",
                              "input": {"sql": "select 2"}}], stop="tool_use")

    set_answer(answer)
    model = get_model("anthropic:claude-haiku-4-5")
    first = await model.request(ask(UserMessage("Who?")))
    call = first.tool_calls[0]
    second = await model.request(ask(UserMessage("Who?"), AssistantMessage(first.parts),
                                     ToolResult(call.id, "2")))
    assert second.text == "H1 is supported."
    assert [b["_path"] for b in bodies] == ["/v1/messages", "/v1/messages"]
    assert bodies[0]["_auth"] == "Bearer sk-local" and bodies[0]["model"] == "claude-haiku-4-5"
    assert bodies[1]["messages"][2]["content"][0]["tool_use_id"] == "toolu_9"


async def test_connection_errors_are_retried(allowed: None) -> None:
    attempts = 0

    def flaky(request: httpx2.Request) -> httpx2.Response:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise httpx2.ConnectError("connection refused", request=request)
        return httpx2.Response(200, json=message_json([{"type": "text", "text": "back"}]))

    client = httpx2.AsyncClient(transport=httpx2.MockTransport(flaky))
    model = AnthropicModel("claude-sonnet-4-6", api_key="k", http_client=client,
                           retry_base_delay=0.0)
    assert (await model.request(ask(UserMessage("q")))).text == "back"
    assert attempts == 2
