"""Offline models drive multi-turn tool loops with no network; the registry and JSON."""

from __future__ import annotations

import json

import pytest

import d2_notebook.llm as llm
from d2_notebook.errors import ModelConfigError, ScriptExhaustedError
from d2_notebook.llm import (
    AssistantMessage,
    CacheBreakpoint,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    TextPart,
    TokenUsage,
    ToolCallPart,
    ToolResult,
    ToolSpec,
    UserMessage,
    get_model,
    register_provider,
)
from d2_notebook.llm.offline import FunctionModel, ScriptedModel, text, tool_call, tool_calls

SQL_TOOL = ToolSpec("run_sql", "Run SQL.", {"type": "object",
                                            "properties": {"sql": {"type": "string"}}})


@pytest.fixture(autouse=True)
def _block_real_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", False)


async def run_tool_loop(model: Model, agent: str, question: str) -> tuple[str, list[Message]]:
    """A minimal agent loop: call tools until the model ends its turn."""
    history: list[Message] = [UserMessage(question)]
    for _ in range(10):
        response = await model.request(ModelRequest(
            system="Investigate.", messages=list(history), tools=[SQL_TOOL],
            role=agent.split("-")[0], agent=agent))
        history.append(response.to_message())
        if response.stop_reason != "tool_use":
            return response.text, history
        for call in response.tool_calls:
            failed = "drop" in call.args.get("sql", "")
            history.append(ToolResult(call.id, "refused" if failed else "42", is_error=failed))
    raise AssertionError("loop did not end")


async def test_scripted_model_drives_a_tool_loop_per_agent() -> None:
    model = ScriptedModel({
        "collector-H1": [tool_call("run_sql", {"sql": "select 42"}), text("H1 supported")],
        "judge": [text("verdict: H1")],
    })
    answer, history = await run_tool_loop(model, "collector-H1", "Is it 42?")
    assert answer == "H1 supported"
    assert isinstance(history[1], AssistantMessage) and isinstance(history[2], ToolResult)
    assert history[2].content == "42"
    assert (await run_tool_loop(model, "judge", "Judge"))[0] == "verdict: H1"
    assert [r.agent for r in model.requests] == ["collector-H1", "collector-H1", "judge"]
    assert model.requests[1].messages[-1] == history[2]


async def test_script_falls_back_from_agent_to_role_to_global_queue() -> None:
    model = ScriptedModel({"collector": [text("by role")], "*": [text("global")]})
    by_role = await model.request(ModelRequest("", [], role="collector", agent="collector-H7"))
    fallback = await model.request(ModelRequest("", [], role="judge", agent="judge"))
    assert (by_role.text, fallback.text) == ("by role", "global")


async def test_running_out_of_script_names_agent_and_call_number() -> None:
    model = ScriptedModel({"hypothesizer": [text("H1")]})
    request = ModelRequest("", [UserMessage("q")], role="hypothesizer", agent="hypothesizer")
    await model.request(request)
    with pytest.raises(ScriptExhaustedError, match=r"agent 'hypothesizer'.*call #2"):
        await model.request(request)


async def test_scripted_usage_is_estimated_and_model_id_reported() -> None:
    model = ScriptedModel([text("hello")], model_id="claude-haiku-4-5")
    response = await model.request(ModelRequest("x" * 400, [UserMessage("q")]))
    assert response.model == "claude-haiku-4-5"
    assert response.usage.input_tokens > 100 and response.usage.output_tokens >= 1


async def test_function_model_decides_each_response_sync_or_async() -> None:
    def sync_fn(request: ModelRequest) -> ModelResponse:
        last = request.messages[-1]
        if isinstance(last, ToolResult):
            return text(f"the answer is {last.content}")
        return tool_call("run_sql", {"sql": "select 6*7"})

    async def async_fn(request: ModelRequest) -> ModelResponse:
        return sync_fn(request)

    for fn in (sync_fn, async_fn):
        model = FunctionModel(fn)
        answer, _ = await run_tool_loop(model, "collector-H2", "q")
        assert answer == "the answer is 42"
        assert len(model.requests) == 2


async def test_function_model_rejects_a_wrong_return_type() -> None:
    model = FunctionModel(lambda request: "just text")  # type: ignore[arg-type,return-value]
    with pytest.raises(ModelConfigError, match="not a ModelResponse"):
        await model.request(ModelRequest("", []))


async def test_failed_tool_goes_back_as_an_error_result() -> None:
    model = ScriptedModel([tool_call("run_sql", {"sql": "drop table x"}), text("ok")])
    _, history = await run_tool_loop(model, "collector-H1", "q")
    assert history[2] == ToolResult(history[1].parts[0].id, "refused", is_error=True)


def test_requests_and_responses_round_trip_through_json() -> None:
    request = ModelRequest(
        system="sys", tools=[SQL_TOOL], max_tokens=99, role="judge", agent="judge",
        cache_breakpoints=(CacheBreakpoint.SYSTEM,),
        messages=[UserMessage("q"),
                  AssistantMessage([TextPart("hm"), ToolCallPart("c1", "run_sql", {"sql": "x"})]),
                  ToolResult("c1", "boom", is_error=True)])
    assert ModelRequest.from_dict(json.loads(json.dumps(request.to_dict()))) == request
    response = tool_calls(("a", {"x": 1}), ("b", {}), ids=["i1", "i2"], say="two calls")
    response = ModelResponse(response.parts, "tool_use", TokenUsage(1, 2, 3, 4), "m")
    assert ModelResponse.from_dict(json.loads(json.dumps(response.to_dict()))) == response
    old_board = {**request.to_dict(), "cache_prefix": False}
    del old_board["cache_breakpoints"]
    assert ModelRequest.from_dict(old_board).cache_breakpoints == ()
    assert response.to_dict()["parts"][1] == {
        "type": "tool_call", "id": "i1", "name": "a", "args": {"x": 1}}


def test_unknown_model_lists_known_providers() -> None:
    with pytest.raises(ModelConfigError, match=r"known providers: anthropic, .*openai.*scripted"):
        get_model("gemini:pro")


def test_default_model_comes_from_d2_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("D2_MODEL", "scripted:my-id")
    model = get_model()
    assert isinstance(model, ScriptedModel) and model.model_id == "my-id"


def test_providers_register_like_plugins() -> None:
    register_provider("echo-test", lambda model_id, **kw: ScriptedModel(name=f"echo:{model_id}"),
                      replace=True)
    assert get_model("echo-test:v1").name == "echo:v1"
    with pytest.raises(ModelConfigError, match="already registered"):
        register_provider("echo-test", lambda model_id: ScriptedModel())
    assert isinstance(get_model("function", fn=lambda r: text("x")), FunctionModel)
