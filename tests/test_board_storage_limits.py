"""Stored results are capped in bytes as well as rows, so add_evidence never exceeds
SQLite's limits; the truncated flag and the true row count are kept."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.errors import InvalidRecordError


def _wide(rows: int, cell_chars: int = 1000) -> pd.DataFrame:
    return pd.DataFrame({"id": range(rows), "text": ["x" * cell_chars] * rows})


def test_a_result_over_the_byte_cap_is_cut_to_the_rows_that_fit(board_path) -> None:
    with Board.open(board_path, max_result_bytes=50_000) as board:
        evidence = board.add_evidence("SELECT * FROM wide", _wide(1000), description="wide")
        assert evidence.truncated and evidence.row_count == 1000
        assert 0 < evidence.stored_rows < 50
        frame = board.evidence_frame(evidence.id)
        assert len(frame) == evidence.stored_rows
        assert frame["id"].tolist() == list(range(evidence.stored_rows))  # a prefix
        blob = board._query("SELECT length(result) FROM evidence")[0][0]
        assert blob <= 50_000


def test_a_result_over_sqlites_length_limit_is_stored_truncated_not_raised(board) -> None:
    board._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 300_000)  # as if the result were ~1 GB
    evidence = board.add_evidence("SELECT * FROM wide", _wide(2000), description="huge",
                                  row_count=5_000_000)
    assert evidence.truncated and evidence.row_count == 5_000_000
    assert 0 < evidence.stored_rows < 2000
    assert len(board.evidence_frame(evidence.id)) == evidence.stored_rows
    again = board.find_evidence("SELECT * FROM wide", _wide(2000), row_count=5_000_000)
    assert again is not None and again.id == evidence.id  # same cut, same hash


def test_one_row_too_large_keeps_no_rows_but_the_count(board_path) -> None:
    with Board.open(board_path, max_result_bytes=10_000) as board:
        evidence = board.add_evidence("SELECT blob", _wide(1, 100_000), description="one")
        assert evidence.truncated and evidence.row_count == 1 and evidence.stored_rows == 0
        frame = board.evidence_frame(evidence.id)
        assert list(frame.columns) == ["id", "text"] and len(frame) == 0


def test_small_results_are_untouched(board) -> None:
    evidence = board.add_evidence("SELECT 1", _wide(5, 10), description="small")
    assert not evidence.truncated and evidence.stored_rows == 5


def test_a_tiny_byte_cap_is_refused(board_path) -> None:
    with pytest.raises(InvalidRecordError, match="max_result_bytes must be at least 1024"):
        Board.open(board_path, max_result_bytes=10)
