"""Recording every call on a board, and replaying a run from a reopened board."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import d2_notebook.llm as llm
from d2_notebook.board import Board
from d2_notebook.errors import ModelAPIError, ReplayDivergenceError, ScriptExhaustedError
from d2_notebook.llm import (
    Ledger,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    RecordingModel,
    ToolResult,
    ToolSpec,
    UserMessage,
)
from d2_notebook.llm.offline import ReplayModel, ScriptedModel, text, tool_call

SQL_TOOL = ToolSpec("run_sql", "Run SQL.", {"type": "object",
                                            "properties": {"sql": {"type": "string"}}})


@pytest.fixture(autouse=True)
def _block_real_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(llm, "ALLOW_MODEL_REQUESTS", False)


async def agent_session(
    model: Model, agent: str, question: str, tools: list[ToolSpec] | None = None
) -> list[ModelResponse]:
    """One agent's tool loop; yields control between calls so agents interleave."""
    history: list[Message] = [UserMessage(question)]
    responses = []
    while True:
        response = await model.request(ModelRequest(
            system=f"You are {agent}.", messages=list(history),
            tools=[SQL_TOOL] if tools is None else tools, role=agent.split("-")[0],
            agent=agent))
        responses.append(response)
        history.append(response.to_message())
        await asyncio.sleep(0)
        if response.stop_reason != "tool_use":
            return responses
        history += [ToolResult(c.id, f"rows for {c.args['sql']}") for c in response.tool_calls]


def script() -> ScriptedModel:
    return ScriptedModel({
        "collector-H1": [tool_call("run_sql", {"sql": "select 1"}, id="a1"),
                         tool_call("run_sql", {"sql": "select 2"}, id="a2"),
                         text("H1 is supported")],
        "collector-H2": [tool_call("run_sql", {"sql": "select 3"}, id="b1"),
                         text("H2 is contradicted")],
    }, model_id="claude-sonnet-4-5")


async def record_session(board_path: Path) -> tuple[str, dict[str, list[ModelResponse]]]:
    with Board.open(board_path) as board:
        investigation = board.start_investigation("Who did it?")
        ledger = Ledger()
        usage = ledger.usage
        model = RecordingModel(script(), board, investigation.id, ledger=ledger)
        h1, h2 = await asyncio.gather(agent_session(model, "collector-H1", "Check H1"),
                                      agent_session(model, "collector-H2", "Check H2"))
        assert usage.calls == 5 and usage.by_role["collector"].calls == 5
        assert usage.cost_usd > 0
        return investigation.id, {"collector-H1": h1, "collector-H2": h2}


async def test_recorded_session_replays_identically_from_a_reopened_board(
    tmp_path: Path,
) -> None:
    board_path = tmp_path / "run.d2board"
    investigation_id, recorded = await record_session(board_path)

    with Board.open(board_path) as board:
        calls = board.list_model_calls(investigation_id=investigation_id)
        assert len(calls) == 5
        assert {c.agent for c in calls} == {"collector-H1", "collector-H2"}
        first = board.list_model_calls(agent="collector-H1")[0]
        assert first.role == "collector" and first.model == "scripted"
        assert first.request["messages"] == [{"role": "user", "text": "Check H1"}]
        assert first.response["parts"][0]["args"] == {"sql": "select 1"}
        assert first.input_tokens > 0 and first.cost_usd > 0 and first.error is None

        replay = ReplayModel(board, investigation_id)
        h2, h1 = await asyncio.gather(agent_session(replay, "collector-H2", "Check H2"),
                                      agent_session(replay, "collector-H1", "Check H1"))
    assert h1 == recorded["collector-H1"] and h2 == recorded["collector-H2"]
    assert replay.unreplayed() == {}


async def test_changed_message_is_a_precise_divergence(tmp_path: Path) -> None:
    investigation_id, _ = await record_session(tmp_path / "run.d2board")
    with Board.open(tmp_path / "run.d2board") as board:
        replay = ReplayModel(board, investigation_id)
        with pytest.raises(ReplayDivergenceError) as caught:
            await agent_session(replay, "collector-H1", "Check H9")
    message = str(caught.value)
    assert "agent 'collector-H1', call #1: messages differ at messages[0].text" in message
    assert "character 7: recorded 'Check H1', now 'Check H9'" in message


async def test_changed_tool_spec_is_a_precise_divergence(tmp_path: Path) -> None:
    investigation_id, _ = await record_session(tmp_path / "run.d2board")
    changed = ToolSpec("run_sql", "Run SQL, read-only.", SQL_TOOL.parameters)
    with Board.open(tmp_path / "run.d2board") as board:
        replay = ReplayModel(board, investigation_id)
        with pytest.raises(ReplayDivergenceError,
                           match=r"agent 'collector-H2', call #1: tools differ at "
                                 r"tools\[0\]\.description"):
            await agent_session(replay, "collector-H2", "Check H2", tools=[changed])


async def test_asking_more_than_was_recorded_diverges(tmp_path: Path) -> None:
    investigation_id, _ = await record_session(tmp_path / "run.d2board")
    with Board.open(tmp_path / "run.d2board") as board:
        replay = ReplayModel(board, investigation_id)
        with pytest.raises(ReplayDivergenceError,
                           match=r"agent 'judge' made call #1 but the recording has only 0"):
            await replay.request(ModelRequest("You are judge.", [], agent="judge"))


async def test_failed_calls_are_recorded_and_replayed_as_errors(board: Board) -> None:
    class Broken:
        name = "broken"

        async def request(self, request: ModelRequest) -> ModelResponse:
            raise ModelAPIError("HTTP 500 after 5 attempts; try again later")

    model = RecordingModel(Broken(), board)
    request = ModelRequest("s", [UserMessage("q")], role="judge", agent="judge")
    with pytest.raises(ModelAPIError):
        await model.request(request)
    [call] = board.list_model_calls()
    assert call.response is None
    assert call.error == "ModelAPIError: HTTP 500 after 5 attempts; try again later"

    exhausted = RecordingModel(ScriptedModel(), board)
    with pytest.raises(ScriptExhaustedError):
        await exhausted.request(ModelRequest("s", [UserMessage("q")], agent="judge"))

    replay = ReplayModel(board)
    with pytest.raises(ModelAPIError, match="replayed from the recording: HTTP 500"):
        await replay.request(request)
    with pytest.raises(ScriptExhaustedError, match="replayed from the recording"):
        await replay.request(request)


async def test_ordered_replay_answers_in_the_global_recorded_order(tmp_path: Path) -> None:
    with Board.open(tmp_path / "rec.d2board") as board:
        recorder = RecordingModel(ScriptedModel({"a": [text("a1"), text("a2")],
                                                 "b": [text("b1")]}), board)
        for agent in ("a", "b", "a"):  # recorded order: a#1, b#1, a#2
            await recorder.request(ModelRequest(system="s", messages=[UserMessage(agent)],
                                                agent=agent))
        replay = ReplayModel(board, ordered=True, wait_timeout_s=5)
    answered: list[str] = []

    async def ask(agent: str, delay: float) -> None:
        await asyncio.sleep(delay)
        response = await replay.request(ModelRequest(system="s", messages=[UserMessage(agent)],
                                                     agent=agent))
        answered.append(response.text)

    # b asks first and a's second call before a's first: both wait for their turn.
    await asyncio.gather(ask("b", 0), ask("a", 0.05))
    await ask("a", 0)
    assert answered == ["a1", "b1", "a2"]


async def test_ordered_replay_reports_a_call_that_never_comes(tmp_path: Path) -> None:
    with Board.open(tmp_path / "rec.d2board") as board:
        recorder = RecordingModel(ScriptedModel({"a": [text("a1")], "b": [text("b1")]}), board)
        for agent in ("a", "b"):
            await recorder.request(ModelRequest(system="s", messages=[UserMessage(agent)],
                                                agent=agent))
        replay = ReplayModel(board, ordered=True, wait_timeout_s=0.2)
    with pytest.raises(ReplayDivergenceError, match="agent 'a''s call #1"):
        await replay.request(ModelRequest(system="s", messages=[UserMessage("b")], agent="b"))
