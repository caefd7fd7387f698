"""``python -m benchmark insightbench --preset economy``: the team's roles on the preset's
models over the Messages API (a local fake server), the preset recorded with each result,
and results of another preset never resumed."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest
from fake_anthropic_server import fake_anthropic

import d2_notebook.llm
from benchmark.insightbench.policies import policy_for
from benchmark.insightbench.runner import InsightRunConfig, run_insightbench
from benchmark.insightbench.tasks import find_tasks
from d2_notebook.board import Board
from tests.shared_dir import shared_dir

SONNET, HAIKU = "anthropic:claude-sonnet-4-6", "anthropic:claude-haiku-4-5"


def _config(out: Path, **overrides) -> InsightRunConfig:
    fields = {"tasks_dir": shared_dir("insightbench-dev"), "out": out, "variants": ["full"],
              "tasks": "flag-21", "model": SONNET, "preset": "economy", "jobs": 1,
              "timeout": 60.0}
    return InsightRunConfig(**{**fields, **overrides})


def test_an_economy_run_puts_its_roles_on_the_smaller_model_and_records_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
    monkeypatch.setattr(d2_notebook.llm, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    (task,) = find_tasks(shared_dir("insightbench-dev"), "flag-21")
    config = _config(tmp_path / "out")
    with fake_anthropic(policy_for("half", task)) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server["url"])
        summary = asyncio.run(run_insightbench(config))
    (record,) = summary.records
    assert record["complete"] and record["preset"] == "economy" and record["model"] == SONNET
    with Board.open(config.out / record["board"]) as board:
        by_role = collections.defaultdict(set)
        for call in board.list_model_calls():
            by_role[call.role].add(call.model)
        assert by_role["collector"] == by_role["judge"] == by_role["orchestrator"] == {HAIKU}
        assert by_role["hypothesizer"] == by_role["reporter"] == {SONNET}
    sent = collections.Counter(body["model"] for body in server["requests"])
    assert sent["claude-haiku-4-5"] >= 1 and sent["claude-sonnet-4-6"] >= 1

    # the same folder with the default preset: another configuration, not resumed
    with pytest.raises(ValueError, match=r"preset economy; this run: model "
                                         r"anthropic:claude-sonnet-4-6, policy None, preset "
                                         r"default\).*--preset to resume"):
        asyncio.run(run_insightbench(_config(config.out, preset=None)))


def test_a_preset_needs_a_model_and_a_known_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="--preset economy needs a --model"):
        _config(tmp_path, model=None, policy="half")
    with pytest.raises(ValueError, match="unknown preset 'cheap'; presets are: default, "
                                         "economy"):
        _config(tmp_path, preset="cheap")
