"""The run's time limit (``max_seconds``): it bounds the whole run, the reporter
included; only its own clock is a time stop, and a fault is never lost to it.

Every run is awaited through ``asyncio.wait_for`` so that a regression fails in a few
seconds instead of hanging the suite.
"""

from __future__ import annotations

import asyncio

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective import loop
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import ModelAPIError
from d2_notebook.llm import ModelRequest, ModelResponse

QUESTION = hospital.QUESTION
HANG_BOUND_S = 5.0
"""A run with ``max_seconds`` of 1 or 2 that is still going after this long has hung."""
RUN_BOUND_S = 60.0
"""A run that waits on nothing hanging, on a slow machine."""


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


async def never_answers() -> None:
    """A model call that never comes back (a stuck connection)."""
    await asyncio.Event().wait()


class StuckAgent(HospitalWalkthrough):
    """The walkthrough, but every call of ``agent`` hangs."""

    def __init__(self, agent: str) -> None:
        super().__init__()
        self.agent = agent

    async def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        if request.agent == self.agent:
            await never_answers()
        return super().__call__(request)


class StuckReporter(HospitalWalkthrough):
    """The walkthrough, but the reporter never answers."""

    async def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        if request.role == "reporter":
            await never_answers()
        return super().__call__(request)


class OwnTimeout(HospitalWalkthrough):
    """The walkthrough, but ``agent``'s model raises its own TimeoutError (a read
    timeout in a provider, ``asyncio.wait_for`` inside a custom model)."""

    def __init__(self, agent: str) -> None:
        super().__init__()
        self.agent = agent

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if request.agent == self.agent:
            raise TimeoutError("read timed out")
        return super().__call__(request)


class FailingWhileAnotherHangs(HospitalWalkthrough):
    """Collector H2's model fails beyond retries while collector H1's call hangs."""

    async def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        if request.agent == "collector-H2":
            raise ModelAPIError("the provider is overloaded (529) after 4 retries")
        if request.agent == "collector-H1":
            await never_answers()
        return super().__call__(request)


async def test_a_budget_stop_waits_for_running_branches_only_within_the_time_limit(
        con, board_path):
    # The call budget runs out while collector H1's call hangs: the wait for the
    # branches still running ends with the time limit, not never.
    result = await asyncio.wait_for(
        investigate(con, QUESTION, board=board_path, model=StuckAgent("collector-H1").model(),
                    max_calls=10, max_seconds=2),
        HANG_BOUND_S)
    assert result.state == "finished"
    assert "model call budget spent" in result.stop_reason
    assert result.board.get_hypothesis("H1").status is HypothesisStatus.PROPOSED
    assert "Collection stopped early" in result.report


async def test_a_reporter_that_hangs_is_stopped_and_the_board_reports(
        con, board_path, monkeypatch):
    monkeypatch.setattr(loop, "REPORT_GRACE_S", 0.5, raising=False)
    result = await asyncio.wait_for(
        investigate(con, QUESTION, board=board_path, model=StuckReporter().model(),
                    max_seconds=1),
        HANG_BOUND_S)
    assert result.state == "finished"
    assert "The reporter ran out of time" in result.report
    assert result.report.startswith(f"# {QUESTION}")  # the board-built report
    assert "## Hypotheses" in result.report
    with Board.open(board_path) as board:
        assert board.get_investigation("I1").report == result.report


async def test_a_reporter_within_the_time_limit_writes_the_report(con):
    result = await asyncio.wait_for(
        investigate(con, QUESTION, model=HospitalWalkthrough().model(), max_seconds=60),
        RUN_BOUND_S)
    assert result.stop_reason is None
    assert "ran out of time" not in result.report
    assert not result.report.startswith(f"# {QUESTION}")  # the reporter's, not the board's
    calls = result.board.list_model_calls(agent="reporter")
    assert calls and all(c.error is None for c in calls)


@pytest.mark.parametrize("agent", ["collector-H2", "orchestrator"])
@pytest.mark.parametrize("max_seconds", [None, 300])
async def test_a_models_own_timeout_fails_the_run_and_resume_finishes_it(
        con, board_path, agent, max_seconds):
    with pytest.raises(TimeoutError, match="read timed out"):
        await asyncio.wait_for(
            investigate(con, QUESTION, board=board_path, model=OwnTimeout(agent).model(),
                        max_seconds=max_seconds),
            RUN_BOUND_S)
    with Board.open(board_path) as board:
        investigation = board.get_investigation("I1")
        assert investigation.state.value == "failed"
        assert investigation.error == "TimeoutError: read timed out"
        assert "time budget" not in str(investigation.report)
    result = await asyncio.wait_for(
        investigate(con, None, board=board_path, resume=True,
                    model=HospitalWalkthrough().model()),
        RUN_BOUND_S)
    assert result.state == "finished" and result.stop_reason is None


async def test_a_branch_fault_is_raised_when_the_time_limit_ends_the_wait_for_others(
        con, board_path):
    with pytest.raises(ModelAPIError, match="overloaded"):
        await asyncio.wait_for(
            investigate(con, QUESTION, board=board_path,
                        model=FailingWhileAnotherHangs().model(), max_seconds=1),
            HANG_BOUND_S)
    with Board.open(board_path) as board:
        investigation = board.get_investigation("I1")
        assert investigation.state.value == "failed" and "overloaded" in investigation.error
