"""The team against a real HTTP server speaking the Anthropic Messages API (on 127.0.0.1),
through the real Anthropic SDK: what `d2 investigate` does with ANTHROPIC_BASE_URL."""

from __future__ import annotations

import pytest
from fake_anthropic_server import fake_anthropic

import d2_notebook.llm
from d2_notebook import investigate
from d2_notebook.datasets import hospital
from d2_notebook.demo import HospitalWalkthrough


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
