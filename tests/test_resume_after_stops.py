"""However a run stops, the board is left finished, interrupted or failed (never
``running``), with nothing lost; and a resume continues exactly what is left: a run
stopped on its budget with hypotheses open resumes with a larger budget, and the
hypothesizer gets only the turns it has left."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.data import SQLSource, open_source
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.team_policy import Turn
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.offline import FunctionModel

QUESTION = hospital.QUESTION
FINGERPRINT_QUERY = "row_hash_sum"  # what record_fingerprints runs, once per table
WAIT_S = 60


def _source() -> SQLSource:
    return open_source(hospital.create())


def _state(board_path: Path) -> tuple[str, str | None, str | None]:
    with Board.open(board_path) as board:
        inv = board.get_investigation("I1")
        return inv.state.value, inv.report, inv.error


def _calls(board_path: Path) -> int:
    with Board.open(board_path) as board:
        return len(board.list_model_calls(refused=True))


class FingerprintTrouble:
    """Wraps a source's ``run``: the fingerprint query (after the reporter has written)
    fails, or waits until released."""

    def __init__(self, source: SQLSource, *, fail: bool) -> None:
        self.fail = fail
        self.started = threading.Event()
        self.release = threading.Event()
        self._run = source.run
        source.run = self  # type: ignore[method-assign]

    def __call__(self, sql: str, **kwargs: Any) -> Any:
        if FINGERPRINT_QUERY in sql:
            self.started.set()
            if self.fail:
                raise duckdb.IOException("IO Error: connection to the data lost")
            self.release.wait(WAIT_S)
        return self._run(sql, **kwargs)


# --- the report is stored before the fingerprints are taken -----------------------------


async def test_a_cancel_while_fingerprinting_keeps_the_finished_report(tmp_path) -> None:
    board_path = tmp_path / "cancelled.d2board"
    source = _source()
    trouble = FingerprintTrouble(source, fail=False)
    run = asyncio.create_task(investigate(source, QUESTION, board=board_path,
                                          model=HospitalWalkthrough().model()))
    while not trouble.started.is_set():
        await asyncio.sleep(0.01)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, WAIT_S)
    trouble.release.set()
    state, report, _ = _state(board_path)
    assert state == "finished" and report, "the reporter's work is on the board"
    calls = _calls(board_path)
    with pytest.raises(InvalidRecordError, match="nothing to resume"):
        await asyncio.wait_for(investigate(_source(), None, board=board_path, resume=True,
                                           model=HospitalWalkthrough().model()), WAIT_S)
    assert _calls(board_path) == calls, "nothing is paid again"


async def test_a_source_fault_while_fingerprinting_is_recorded_and_the_run_finishes(
        tmp_path) -> None:
    board_path = tmp_path / "fault.d2board"
    source = _source()
    FingerprintTrouble(source, fail=True)
    result = await asyncio.wait_for(investigate(source, QUESTION, board=board_path,
                                                model=HospitalWalkthrough().model()), WAIT_S)
    assert result.state == "finished"
    assert result.board.get_investigation("I1").report == result.report
    failed = [e for e in result.board.events(kinds=["data.fingerprints_failed"])
              if e.investigation_id == "I1"]
    assert len(failed) == 1 and "connection to the data lost" in failed[0].payload["error"]
    assert result.board.data_fingerprints("I1") == {}
    result.board.close()


# --- a fault or a cancel while the run is set up ------------------------------------------


@pytest.mark.parametrize("stop", ["fault", "cancel"])
async def test_a_stop_while_the_run_is_set_up_leaves_it_resumable(tmp_path, stop) -> None:
    board_path = tmp_path / f"setup-{stop}.d2board"
    source = _source()
    entered = threading.Event()
    release = threading.Event()

    def schema_summary() -> str:
        entered.set()
        if stop == "fault":
            raise duckdb.IOException("IO Error: lost the catalog")
        release.wait(WAIT_S)
        return "no schema"

    source.schema_summary = schema_summary  # type: ignore[method-assign]
    run = asyncio.create_task(investigate(source, QUESTION, board=board_path,
                                          model=HospitalWalkthrough().model()))
    if stop == "cancel":
        while not entered.is_set():
            await asyncio.sleep(0.01)
        run.cancel()
    with pytest.raises(asyncio.CancelledError if stop == "cancel" else duckdb.IOException):
        await asyncio.wait_for(run, WAIT_S)
    release.set()
    state, _, error = _state(board_path)
    if stop == "fault":
        assert (state, error) == ("failed", "IOException: IO Error: lost the catalog")
    else:
        assert (state, error) == ("interrupted", "interrupted")
    resumed = await asyncio.wait_for(investigate(_source(), None, board=board_path,
                                                 resume=True,
                                                 model=HospitalWalkthrough().model()), WAIT_S)
    assert resumed.state == "finished" and resumed.report
    resumed.board.close()


# --- a run stopped on its budget ----------------------------------------------------------


async def test_a_run_stopped_on_its_budget_resumes_with_a_larger_budget(tmp_path) -> None:
    board_path = tmp_path / "budget.d2board"
    first = await asyncio.wait_for(investigate(_source(), QUESTION, board=board_path,
                                               model=HospitalWalkthrough().model(),
                                               max_calls=14), WAIT_S)
    assert first.state == "finished" and "max_calls" in (first.stop_reason or "")
    assert [h for h in first.board.list_hypotheses() if not h.status.is_settled]
    first_report, first_calls = first.report, first.usage.calls
    first.board.close()

    with pytest.raises(InvalidRecordError, match=r"stopped early.*larger max_calls"):
        await asyncio.wait_for(investigate(_source(), None, board=board_path, resume=True,
                                           model=HospitalWalkthrough().model(), max_calls=14),
                               WAIT_S)
    assert _state(board_path)[0] == "finished", "a refused resume changes nothing"

    resumed = await asyncio.wait_for(investigate(_source(), None, board=board_path,
                                                 resume=True,
                                                 model=HospitalWalkthrough().model(),
                                                 max_calls=200), WAIT_S)
    board = resumed.board
    assert resumed.state == "finished" and resumed.stop_reason is None
    assert all(h.status.is_settled for h in board.list_hypotheses())
    versions = board.list_report_versions("I1")
    assert [v.report for v in versions] == [first_report, resumed.report]
    assert board.get_investigation("I1").report == resumed.report
    calls = board.list_model_calls()
    assert resumed.usage.calls == len(calls) > first_calls, "the budget counts both runs"
    with pytest.raises(InvalidRecordError, match="nothing to resume"):
        await asyncio.wait_for(investigate(_source(), None, board=board, resume=True,
                                           model=HospitalWalkthrough().model(),
                                           max_calls=400), WAIT_S)
    board.close()


# --- the hypothesizer's turns across a resume ---------------------------------------------


class Greedy(HospitalWalkthrough):
    """An orchestrator that asks for more hypotheses whenever it may; a hypothesizer that
    adds one each time. With ``task`` set, that run is cancelled (like Ctrl-C) at the
    orchestrator's first call after the hypothesizer's second turn."""

    def __init__(self) -> None:
        super().__init__()
        self.added = self.hypothesizer_turns = 0
        self.task: asyncio.Task[Any] | None = None

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The FunctionModel's function."""
        turn = Turn(request)
        if turn.role == "hypothesizer" and turn.step == 0:
            self.hypothesizer_turns += 1
        if self.task is not None and turn.role == "orchestrator" \
                and self.hypothesizer_turns == 2:
            self.task.cancel()
            await asyncio.sleep(WAIT_S)
        return self(request)

    def orchestrator(self, turn: Turn) -> Any:
        if "The hypothesizer has calls left" in turn.first_message:
            return [("request_hypotheses", {"guidance": "more please"})]
        return super().orchestrator(turn)

    def hypothesizer(self, turn: Turn) -> Any:
        if "asks for more hypotheses" in turn.first_message:
            self.added += 1
            return [("add_hypothesis", {"statement": f"Factor number {self.added} lowers "
                                                     "mortality",
                                        "rationale": "asked for more", "query_ids": []}),
                    ("done", {"summary": "one more"})]
        return super().hypothesizer(turn)


def _hypothesizer_turns_so_far(board_path: Path) -> int:
    """Hypothesizer turns sent: requests that open a turn (one message)."""
    with Board.open(board_path) as board:
        return sum(1 for c in board.list_model_calls()
                   if c.role == "hypothesizer" and len(c.request["messages"]) == 1)


async def test_a_resume_gives_the_hypothesizer_only_the_turns_it_has_left(tmp_path) -> None:
    whole_path = tmp_path / "whole.d2board"
    whole = await asyncio.wait_for(investigate(_source(), QUESTION, board=whole_path,
                                               model=FunctionModel(Greedy().respond)), WAIT_S)
    whole.board.close()
    assert _hypothesizer_turns_so_far(whole_path) == 2  # max_hypothesizer_calls

    board_path = tmp_path / "interrupted.d2board"
    policy = Greedy()
    policy.task = asyncio.create_task(investigate(_source(), QUESTION, board=board_path,
                                                  model=FunctionModel(policy.respond)))
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(policy.task, WAIT_S)
    assert _state(board_path)[0] == "interrupted"
    assert _hypothesizer_turns_so_far(board_path) == 2
    resumed = await asyncio.wait_for(investigate(_source(), None, board=board_path,
                                                 resume=True,
                                                 model=FunctionModel(Greedy().respond)), WAIT_S)
    assert resumed.state == "finished"
    resumed.board.close()
    assert _hypothesizer_turns_so_far(board_path) == 2, "no third turn after the resume"
