"""The team against a real HTTP server speaking the Anthropic Messages API (on 127.0.0.1),
through the real Anthropic SDK: what `d2 investigate` does with ANTHROPIC_BASE_URL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fake_anthropic_server import fake_anthropic

import d2_notebook.llm
from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.datasets import hospital
from d2_notebook.datasets.sql_city import generate_case, load_gold, write_case
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.sql_city import CaseWalkthrough

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def local_server_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Allow model requests: they go only to the local fake server."""
    monkeypatch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
    monkeypatch.setattr(d2_notebook.llm, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")


async def test_the_full_team_over_the_messages_api(local_server_allowed, monkeypatch,
                                                   board_path):
    with fake_anthropic(HospitalWalkthrough()) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server["url"])
        result = await investigate(hospital.create(), hospital.QUESTION, board=board_path,
                                   model="anthropic:claude-sonnet-4-6")
    assert result.state == "finished"
    statuses = {h.statement: h.status.value for h in result.board.list_hypotheses()}
    assert statuses["Pulmorex lowers mortality for older COVID-19 patients"] == "supported"
    assert statuses["Virexa helps older patients with asthma"] == "supported"
    # Every request went over HTTP, with the prompt-caching marker on the stable prefix.
    requests = server["requests"]
    assert len(requests) == result.usage.calls == len(result.board.list_model_calls())
    assert all(r["model"] == "claude-sonnet-4-6" for r in requests)
    assert any("cache_control" in str(r["system"]) for r in requests)
    # Usage and cost come from the server's usage block (priced as a Sonnet model).
    assert result.usage.input_tokens == 1200 * len(requests)
    assert result.usage.cache_read_tokens == 1000 * len(requests)
    assert result.usage.cost_usd > 0


def _env_for(server_url: str) -> dict[str, str]:
    """A subprocess environment that reaches only the local server."""
    env = {k: v for k, v in os.environ.items() if k != "D2_BLOCK_MODEL_REQUESTS"}
    return {**env, "ANTHROPIC_BASE_URL": server_url, "ANTHROPIC_API_KEY": "test-key",
            "PYTHONPATH": str(ROOT)}


def test_d2_investigate_needs_only_the_database_and_the_question(tmp_path):
    database = tmp_path / "hospital.duckdb"
    hospital.create(database).close()
    with fake_anthropic(HospitalWalkthrough()) as server:
        done = subprocess.run(
            [sys.executable, "-m", "d2_notebook", "investigate", str(database),
             hospital.QUESTION], cwd=tmp_path, env=_env_for(server["url"]),
            capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "## Answer" in done.stdout and "Pulmorex lowers mortality" in done.stdout
    boards = list(tmp_path.glob("*.d2board"))
    assert len(boards) == 1
    with Board.open(boards[0]) as board:
        assert board.list_investigations()[0].state.value == "finished"
        assert len(board.list_model_calls()) == len(server["requests"])


def test_benchmark_run_against_a_messages_api_server(tmp_path):
    cases = tmp_path / "cases"
    paths = write_case(generate_case(5, 0, "easy"), cases)
    gold = load_gold(paths["gold"])
    out = tmp_path / "results"
    with fake_anthropic(CaseWalkthrough(gold)) as server:
        done = subprocess.run(
            [sys.executable, "-m", "benchmark", "run", "--cases-dir", str(cases),
             "--cases", gold.case_id, "--variants", "full",
             "--model", "anthropic:claude-sonnet-4-6", "--out", str(out)],
            cwd=ROOT, env=_env_for(server["url"]), capture_output=True, text=True,
            timeout=180, check=False)
    assert done.returncode == 0, done.stderr
    result = json.loads(next((out / "results").glob("*.json")).read_text())
    assert result["complete"] and result["model"] == "anthropic:claude-sonnet-4-6"
    assert result["scores"]["correctness"] == 1.0
    assert result["usage"]["calls"] == len(server["requests"])
