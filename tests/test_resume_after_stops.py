"""However a run stops, the board is left finished, interrupted or failed (never
``running``), with nothing lost."""

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
from d2_notebook.errors import InvalidRecordError

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
