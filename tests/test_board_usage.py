"""``d2 board show --usage``: a finished board's calls by role and turn, with tokens,
cache-read share and dollars, from a run over a real HTTP Messages API server."""

from __future__ import annotations

import asyncio
import re

import pytest
from click.testing import CliRunner
from fake_anthropic_server import fake_anthropic

import d2_notebook.llm
from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.cli import main
from d2_notebook.cli.board_usage import usage_breakdown
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("usage") / "run.d2board"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("D2_BLOCK_MODEL_REQUESTS", raising=False)
        patch.setattr(d2_notebook.llm, "ALLOW_MODEL_REQUESTS", True)
        patch.setenv("ANTHROPIC_API_KEY", "test-key")
        with fake_anthropic(HospitalWalkthrough()) as server:
            patch.setenv("ANTHROPIC_BASE_URL", server["url"])
            result = asyncio.run(investigate(hospital.create(), hospital.QUESTION, board=path,
                                             model="anthropic:claude-sonnet-4-6"))
            result.board.close()
    return path


def test_the_breakdown_adds_up_by_role_and_by_turn(finished) -> None:
    with Board.open(finished) as board:
        calls = board.list_model_calls()
        [usage] = usage_breakdown(board)
        corvalin = next(h.id for h in board.list_hypotheses()
                        if h.statement.startswith("Corvalin"))
    assert usage.total.calls == len(calls)
    assert sum(line.calls for line in usage.by_role) == len(calls)
    assert sum(line.calls for line in usage.by_turn) == len(calls)
    assert usage.total.cost_usd == pytest.approx(sum(c.cost_usd for c in calls))
    # The fake server reports 1200 uncached and 1000 cached input tokens per call.
    assert usage.total.input_tokens == 2200 * len(calls)
    assert usage.total.cache_read_share == pytest.approx(1000 / 2200)
    assert [line.label[0] for line in usage.by_role] == [
        "hypothesizer", "orchestrator", "collector", "judge", "reporter"]
    turns = {line.label[1:]: line.calls for line in usage.by_turn}
    # The judge of the confounded comparison sent it back once: two turns of two calls
    # each (as its collector: two turns), and the hypothesizer was asked for more.
    assert turns[(f"judge-{corvalin}", "1")] == 1 and (f"judge-{corvalin}", "2") in turns
    assert (f"collector-{corvalin}", "2") in turns
    assert ("hypothesizer", "2") in turns


def test_the_cli_prints_it(finished) -> None:
    result = CliRunner().invoke(main, ["board", "show", str(finished), "--usage"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("usage of investigation I1") and lines[1] == "by role:"
    assert re.match(r"\s+role\s+calls\s+input tokens\s+output tokens\s+cache read\s+cost",
                    lines[2])
    total = next(line for line in lines if line.strip().startswith("total"))
    assert "45%" in total and "$" in total
    assert any(re.match(r"\s+judge\s+judge-H\d+\s+2\s", line) for line in lines)


def test_a_board_without_calls_says_so(tmp_path) -> None:
    Board.open(tmp_path / "empty.d2board").close()
    result = CliRunner().invoke(main, ["board", "show", str(tmp_path / "empty.d2board"),
                                       "--usage"])
    assert result.exit_code == 0 and "no model calls on this board" in result.output
