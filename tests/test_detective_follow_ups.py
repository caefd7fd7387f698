"""Two investigations on one board are kept apart: human additions go to the
investigation their hypothesis belongs to, and a resume reads only its own events."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import InvalidRecordError
from d2_notebook.notebook import human

QUESTION = hospital.QUESTION


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


async def _two_investigations(con: duckdb.DuckDBPyConnection, board_path: Path) -> None:
    for _ in range(2):
        result = await investigate(con, QUESTION, board=board_path,
                                   model=HospitalWalkthrough().model())
        assert result.state == "finished"
        result.board.close()


def _pulmorex(board: Board, investigation_id: str):
    return next(h for h in board.list_hypotheses(investigation_id=investigation_id)
                if h.statement.startswith("Pulmorex"))


async def test_evidence_on_an_earlier_investigation_reopens_that_one_only(con, board_path):
    await _two_investigations(con, board_path)
    with Board.open(board_path) as board:
        old = _pulmorex(board, "I1")
        second_before = {h.id: h.status for h in board.list_hypotheses(investigation_id="I2")}
        result = GuardedSQL(con).run("SELECT 1 AS deaths_in_my_ward")
        evidence, _link = human.add_evidence(board, result, hypothesis_id=old.id,
                                             stance="contradicts",
                                             rationale="my ward saw no benefit")
        assert evidence.investigation_id == "I1"
        refinement = human.add_hypothesis(board, "Pulmorex helps only the oldest patients",
                                          parent_id=old.id)
        assert refinement.investigation_id == "I1"

    again = await investigate(con, None, board=board_path, resume=True,
                              model=HospitalWalkthrough().model())
    board = again.board
    assert again.investigation_id == "I1" and again.state == "finished"
    assert board.get_investigation("I2").state.value == "finished"
    reopened = board.events(kinds=["investigation.resumed"])
    assert [e.investigation_id for e in reopened] == ["I1"]
    second_after = {h.id: h.status for h in board.list_hypotheses(investigation_id="I2")}
    assert second_after == second_before, "the other investigation was not touched"
    assert board.get_hypothesis(old.id).status.is_settled, "judged again, not left proposed"
    assert evidence.id in board.latest_verdict(old.id).evidence_ids
    assert board.get_hypothesis(refinement.id).status.is_settled
    board.close()


async def test_the_latest_investigation_with_nothing_new_is_refused(con, board_path):
    await _two_investigations(con, board_path)
    with pytest.raises(InvalidRecordError, match="investigation I2 is finished"):
        await investigate(con, None, board=board_path, resume=True,
                          model=HospitalWalkthrough().model())


async def test_a_human_hypothesis_goes_to_the_named_or_latest_investigation(con, board_path):
    await _two_investigations(con, board_path)
    with Board.open(board_path) as board:
        assert human.add_hypothesis(board, "Age alone explains it").investigation_id == "I2"
        named = human.add_hypothesis(board, "Wards differ", investigation_id="I1")
        assert named.investigation_id == "I1"
        with pytest.raises(InvalidRecordError, match="belongs to investigation I1"):
            human.add_hypothesis(board, "x", parent_id=_pulmorex(board, "I1").id,
                                 investigation_id="I2")
        assert board.add_hypothesis("child", parent_id=named.id).investigation_id == "I1"
