"""``Board.atomic()``: several writes as one transaction — all land or none does, also
when the file is locked by another connection or full (SQLite's own limits)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.errors import BoardError, NotFoundError


def _hypothesis(board: Board) -> str:
    investigation = board.start_investigation("q", {}).id
    return board.add_hypothesis("h", investigation_id=investigation).id


def _counts(board: Board) -> tuple[int, int, int]:
    counts = board.counts()
    return counts["evidence"], counts["links"], counts["events"]


def test_the_writes_of_a_block_land_together(board: Board) -> None:
    hyp = _hypothesis(board)
    with board.atomic():
        evidence = board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}), description="one")
        board.link(evidence.id, hyp, "supports", "one row", actor="t")
    assert [link.evidence_id for link in board.list_links(hypothesis_id=hyp)] == [evidence.id]


def test_an_exception_leaving_the_block_undoes_every_write_in_it(board: Board) -> None:
    hyp = _hypothesis(board)
    before = _counts(board)
    with pytest.raises(NotFoundError), board.atomic():
        evidence = board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}), description="one")
        board.link(evidence.id, "H99", "supports", "no such hypothesis", actor="t")
    assert _counts(board) == before, "no evidence without its link"
    # the board takes writes again, and ids are not burnt
    assert board.add_evidence("SELECT 2", pd.DataFrame({"x": [2]}), description="two").id == "E1"
    assert board.get_hypothesis(hyp).status.value == "proposed"


def test_a_refused_write_caught_inside_undoes_only_itself(board: Board) -> None:
    hyp = _hypothesis(board)
    with board.atomic():
        evidence = board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}), description="one")
        with pytest.raises(NotFoundError):
            board.link(evidence.id, "H99", "supports", "no such hypothesis", actor="t")
        board.link(evidence.id, hyp, "supports", "the right one", actor="t")
    assert len(board.list_links()) == 1 and len(board.list_evidence()) == 1


def test_blocks_nest_into_the_outer_transaction(board: Board) -> None:
    _hypothesis(board)
    before = _counts(board)
    with pytest.raises(RuntimeError), board.atomic():
        with board.atomic():
            board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}), description="one")
        raise RuntimeError("after the inner block")
    assert _counts(board) == before


def test_a_board_locked_by_another_connection_refuses_the_block_cleanly(
        board: Board, board_path: Path) -> None:
    hyp = _hypothesis(board)
    before = _counts(board)
    board._conn.execute("PRAGMA busy_timeout = 50")  # do not wait 30 s for the lock
    other = sqlite3.connect(board_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process writing
    try:
        with pytest.raises(BoardError, match="locked"), board.atomic():
            board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}), description="one")
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert _counts(board) == before
    with board.atomic():
        evidence = board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}), description="one")
        board.link(evidence.id, hyp, "supports", "after the lock", actor="t")
    assert len(board.list_links()) == 1


def test_a_full_board_undoes_the_block_and_names_the_fault(board: Board) -> None:
    hyp = _hypothesis(board)
    before = _counts(board)
    pages = board._conn.execute("PRAGMA page_count").fetchone()[0]
    board._conn.execute(f"PRAGMA max_page_count = {pages + 1}")  # the disk is (nearly) full
    big = pd.DataFrame({"text": ["x" * 2000] * 200})
    with pytest.raises(BoardError, match="full"), board.atomic():
        board.link(board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}),
                                      description="small").id, hyp, "supports", "fits", actor="t")
        board.add_evidence("SELECT big", big, description="does not fit")
    board._conn.execute("PRAGMA max_page_count = 1073741823")  # space freed
    assert _counts(board) == before, "nothing of the block was kept"
    evidence = board.add_evidence("SELECT big", big, description="fits now")
    assert evidence.id == "E1"
