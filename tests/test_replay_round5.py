"""A replay reproduces the whole recorded history of an investigation: every run of a
resumed one (after an interruption or a budget stop), a run stopped by its time limit
where the clock stopped it, a follow-up after the investigation it follows, and a
re-judge replayed on another day than it was recorded."""

from __future__ import annotations

import asyncio
import datetime as dt
import shutil
from pathlib import Path

import duckdb
import pytest
from board_fingerprint import fingerprint
from test_rejudge import PULMOREX_WORSE

import d2_notebook.board.store as store
from d2_notebook import investigate, investigate_sync, recheck_sync
from d2_notebook.board import Board, ModelCallStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.naive import NaivePolicy
from d2_notebook.errors import InvalidRecordError
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.offline import FunctionModel

QUESTION = hospital.QUESTION


def _board(path: Path) -> dict[str, list]:
    with Board.open(path) as board:
        return fingerprint(board)


def _stopped_board(path: Path) -> dict[str, list]:
    """A board whose run was stopped from outside, without the bookkeeping of the calls
    that were out at the stop: which parallel calls had been sent at that instant (and
    the order their cancellations were written) is timing, not the investigation."""
    found = _board(path)
    del found["events"]  # their sequence numbers count the cancelled calls' rows
    found["calls"] = [c for c in found["calls"] if c[1] != "cancelled"]
    return found


async def test_a_budget_stopped_then_resumed_run_replays_every_run(tmp_path):
    recorded, replayed = tmp_path / "recorded.d2board", tmp_path / "replayed.d2board"
    first = await investigate(hospital.create(), QUESTION, board=recorded,
                              model=HospitalWalkthrough().model(), max_calls=14)
    assert first.stop_reason
    first.board.close()
    resumed = await investigate(hospital.create(), None, board=recorded, resume=True,
                                model=HospitalWalkthrough().model(), max_calls=200)
    report, calls = resumed.report, resumed.usage.calls
    resumed.board.close()

    replay = await investigate(hospital.create(), None, board=replayed, replay=recorded)
    replay.board.close()
    assert (replay.report, replay.usage.calls) == (report, calls)
    assert _board(replayed) == _board(recorded)


async def test_an_interrupted_then_resumed_run_replays_the_interruption(tmp_path):
    recorded, replayed = tmp_path / "recorded.d2board", tmp_path / "replayed.d2board"
    out = asyncio.Event()
    policy = HospitalWalkthrough()

    async def held_judge(request: ModelRequest) -> ModelResponse:
        if request.agent == "judge-H2":
            out.set()
            await asyncio.Event().wait()  # the user hits Ctrl-C while this call is out
        return policy(request)

    run = asyncio.ensure_future(investigate(hospital.create(), QUESTION, board=recorded,
                                            model=FunctionModel(held_judge)))
    await asyncio.wait_for(out.wait(), 60)
    await asyncio.sleep(0.2)  # the other branches wait for their model calls too
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    with Board.open(recorded) as board:
        assert board.get_investigation("I1").state.value == "interrupted"
        assert any(c.status is ModelCallStatus.CANCELLED for c in board.list_model_calls())
    resumed = await investigate(hospital.create(), None, board=recorded, resume=True,
                                model=HospitalWalkthrough().model())
    assert resumed.state == "finished"
    resumed.board.close()

    replay = await investigate(hospital.create(), None, board=replayed, replay=recorded)
    replay.board.close()
    assert _stopped_board(replayed) == _stopped_board(recorded)


async def test_a_run_stopped_by_its_time_limit_replays_to_where_the_clock_stopped(tmp_path):
    recorded, replayed = tmp_path / "recorded.d2board", tmp_path / "replayed.d2board"
    policy = HospitalWalkthrough()

    async def slow(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0.15)
        return policy(request)

    original = await investigate(hospital.create(), QUESTION, board=recorded,
                                 model=FunctionModel(slow), max_seconds=1.0)
    assert "time budget" in (original.stop_reason or "")
    original.board.close()
    replay = await investigate(hospital.create(), None, board=replayed, replay=recorded)
    replay.board.close()
    assert replay.stop_reason == original.stop_reason
    assert _stopped_board(replayed) == _stopped_board(recorded)


async def test_a_follow_up_replays_after_the_investigation_it_follows(tmp_path):
    recorded = tmp_path / "recorded.d2board"
    first = await investigate(hospital.create(), QUESTION, board=recorded,
                              model=HospitalWalkthrough().model())
    first.board.close()
    second = await investigate(hospital.create(), hospital.FOLLOW_UP_QUESTION, board=recorded,
                               follow_up=True, model=HospitalWalkthrough().model())
    second.board.close()

    both = await investigate(hospital.create(), None, board=tmp_path / "both.d2board",
                             replay=recorded)
    assert (both.investigation_id, both.question) == ("I2", hospital.FOLLOW_UP_QUESTION)
    assert both.board.follows("I2") == "I1"
    both.board.close()
    assert _board(tmp_path / "both.d2board") == _board(recorded)

    only_first = await investigate(hospital.create(), QUESTION,
                                   board=tmp_path / "first.d2board", replay=recorded)
    assert [i.id for i in only_first.board.list_investigations()] == ["I1"]
    only_first.board.close()
    with pytest.raises(InvalidRecordError, match=r"no investigation .* asks"):
        await investigate(hospital.create(), "Something never asked?", replay=recorded)


def test_a_re_judge_replays_on_a_later_day(tmp_path, monkeypatch):
    database, pristine = tmp_path / "h.duckdb", tmp_path / "pristine.duckdb"
    recorded, replayed = tmp_path / "A.d2board", tmp_path / "B.d2board"
    hospital.create(str(database), patients=1500).close()
    shutil.copy(database, pristine)

    def change_data() -> None:
        with duckdb.connect(str(database)) as con:
            con.execute(PULMOREX_WORSE)

    investigate_sync(str(database), QUESTION, board=recorded,
                     model=NaivePolicy().model()).board.close()
    change_data()
    then = recheck_sync(str(database), recorded, rejudge=True, model=NaivePolicy().model())

    class ThreeDaysLater(dt.datetime):
        @classmethod
        def now(cls, tz=None):  # type: ignore[override]
            return dt.datetime.now(tz) + dt.timedelta(days=3)

    monkeypatch.setattr(store, "datetime", ThreeDaysLater)
    shutil.copy(pristine, database)
    investigate_sync(str(database), None, replay=recorded, board=replayed).board.close()
    change_data()
    now = recheck_sync(str(database), replayed, rejudge=True, replay=recorded)
    assert now.rejudge is not None and then.rejudge is not None
    assert now.rejudge.summary() == then.rejudge.summary()
