"""``--preset economy``: collectors, judges and the orchestrator on the provider's smaller model,
through investigate(), the CLI and the magic; bad presets fail with the fix."""

from __future__ import annotations

import collections

import pytest
from cli_helpers import hospital_database, register_test_policy
from click.testing import CliRunner
from fake_anthropic_server import fake_anthropic

import d2_notebook.llm
from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.cli import main
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.preset import Preset, parse_preset, preset_models
from d2_notebook.errors import InvalidRecordError

HAIKU = "anthropic:claude-haiku-4-5"


def test_the_economy_mapping_is_typed_and_documented() -> None:
    assert parse_preset("economy") is Preset.ECONOMY
    assert preset_models(Preset.ECONOMY, "anthropic:claude-sonnet-4-6") == {
        "collector": HAIKU, "judge": HAIKU, "orchestrator": HAIKU}
    mini = "openai:gpt-4.1-mini"
    assert preset_models("economy", "openai:gpt-4.1") == {
        "collector": mini, "judge": mini, "orchestrator": mini}
    assert preset_models("default", "anthropic:claude-sonnet-4-6") == {}
    with pytest.raises(InvalidRecordError, match="unknown preset 'cheap'; presets are: "
                                                 "default, economy"):
        parse_preset("cheap")
    with pytest.raises(InvalidRecordError, match="knows no smaller model for 'offline:x'"):
        preset_models("economy", "offline:x")


@pytest.fixture
def local_server(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
    monkeypatch.setattr(d2_notebook.llm, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    with fake_anthropic(HospitalWalkthrough()) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server["url"])
        yield server


async def test_economy_puts_collectors_judges_and_the_orchestrator_on_the_smaller_model(
        local_server, board_path) -> None:
    result = await investigate(hospital.create(), hospital.QUESTION, board=board_path,
                               model="anthropic:claude-sonnet-4-6", preset="economy",
                               models={"orchestrator": "anthropic:claude-sonnet-4-5"})
    assert result.state == "finished"
    models = collections.defaultdict(set)
    for call in result.board.list_model_calls():
        models[call.role].add(call.model)
    assert models["collector"] == models["judge"] == {HAIKU}
    assert models["orchestrator"] == {"anthropic:claude-sonnet-4-5"}  # models= wins
    for role in ("hypothesizer", "reporter"):
        assert models[role] == {"anthropic:claude-sonnet-4-6"}
    stored = result.board.list_investigations()[0].settings["role_models"]
    assert stored == {"collector": HAIKU, "judge": HAIKU,
                      "orchestrator": "anthropic:claude-sonnet-4-5"}
    sent = collections.Counter(body["model"] for body in local_server["requests"])
    assert sent["claude-haiku-4-5"] == len([c for c in result.board.list_model_calls()
                                            if c.role in ("collector", "judge")]) > 0


async def test_a_preset_with_a_replay_is_refused(board_path) -> None:
    await investigate(hospital.create(), hospital.QUESTION, board=board_path,
                      model=HospitalWalkthrough().model())
    with pytest.raises(InvalidRecordError, match="leave out the preset"):
        await investigate(hospital.create(), None, replay=board_path, preset="economy")


def test_the_cli_preset_and_its_bad_input(tmp_path) -> None:
    register_test_policy()
    database = hospital_database(tmp_path)
    runner = CliRunner()
    bad = runner.invoke(main, ["investigate", str(database), hospital.QUESTION, "--preset",
                               "cheap", "--board", str(tmp_path / "a.d2board")])
    assert bad.exit_code == 2 and "'cheap' is not one of 'default', 'economy'" in bad.output
    unknown = runner.invoke(main, ["investigate", str(database), hospital.QUESTION,
                                   "--model", "testpolicy:x", "--preset", "economy",
                                   "--board", str(tmp_path / "b.d2board")])
    assert unknown.exit_code == 2
    assert "--preset economy: the economy preset knows no smaller model" in unknown.output
    assert not (tmp_path / "b.d2board").exists()  # nothing written
    default = runner.invoke(main, ["investigate", str(database), hospital.QUESTION,
                                   "--model", "testpolicy:x", "--preset", "default",
                                   "--board", str(tmp_path / "c.d2board")])
    assert default.exit_code == 0, default.output
    with Board.open(tmp_path / "c.d2board") as board:
        assert board.list_investigations()[0].settings["role_models"] == {}
