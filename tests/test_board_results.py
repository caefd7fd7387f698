"""Evidence results read back equal to what was stored, up to the row cap."""

from __future__ import annotations

import decimal

import duckdb
import pandas as pd
import pytest

from d2_notebook.board import Board

ALL_TYPES_SQL = """
SELECT * FROM (VALUES
    (1::INTEGER, 10::BIGINT, 1.25::DECIMAL(10, 2), 2.5::DOUBLE, 'Ann'::VARCHAR, TRUE,
     DATE '2018-01-15', TIMESTAMP '2018-01-15 23:10:00', TIMESTAMPTZ '2018-01-15 10:00:00+02',
     INTERVAL 3 DAY, [1, 2, 3], {'make': 'Tesla', 'year': 2017}, 'ab'::BLOB, 12::HUGEINT,
     '00000000-0000-0000-0000-000000000001'::UUID, TIME '10:11:12'),
    (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
     NULL),
    (3, -4, -0.5, NULL, 'O''Brien; DROP', FALSE, DATE '1999-12-31', NULL, NULL, NULL, [], NULL,
     NULL, NULL, NULL, NULL)
) AS t(i, big, dec, dbl, name, flag, day, ts, tstz, span, list, struct, bytes, huge, id, clock)
"""


def test_every_duckdb_type_round_trips(board):
    frame = duckdb.connect().execute(ALL_TYPES_SQL).df()
    ev = board.add_evidence(ALL_TYPES_SQL, frame, description="all types")
    back = board.evidence_frame(ev.id)
    pd.testing.assert_frame_equal(back, frame)
    assert list(back.dtypes.astype(str)) == list(frame.dtypes.astype(str))
    assert [c.name for c in ev.columns] == list(frame.columns)


def test_round_trip_survives_reopening_the_file(board_path):
    frame = duckdb.connect().execute(ALL_TYPES_SQL).df()
    with Board.open(board_path) as board:
        board.add_evidence(ALL_TYPES_SQL, frame, description="all types")
    with Board.open(board_path) as again:
        pd.testing.assert_frame_equal(again.evidence_frame("E1"), frame)


def test_user_frames_with_decimals_nullable_and_duplicate_names(board):
    frame = pd.DataFrame(
        {
            "amount": [decimal.Decimal("1.10"), None, decimal.Decimal("-3.00")],
            "n": pd.array([1, None, 3], dtype="Int64"),
            "when": pd.to_datetime(["2020-01-01", None, "2020-03-01"]),
        }
    )
    frame = pd.concat([frame, frame[["n"]]], axis=1)  # two columns named "n"
    ev = board.add_evidence("SELECT ...", frame, description="user frame")
    pd.testing.assert_frame_equal(board.evidence_frame(ev.id), frame)


def test_empty_result_keeps_its_columns(board):
    frame = duckdb.connect().execute("SELECT 1 AS a, 'x' AS b WHERE false").df()
    ev = board.add_evidence("SELECT ... WHERE false", frame, description="nothing")
    assert (ev.row_count, ev.stored_rows, ev.truncated) == (0, 0, False)
    pd.testing.assert_frame_equal(board.evidence_frame(ev.id), frame)


def test_mixed_object_column_is_kept_as_text_and_flagged(board):
    frame = pd.DataFrame({"mixed": [1, "a", None]}, dtype=object)
    ev = board.add_evidence("SELECT ...", frame, description="mixed")
    assert ev.columns[0].lossy
    assert board.evidence_frame(ev.id)["mixed"].tolist() == ["1", "a", None]


def test_rows_beyond_the_cap_are_counted_not_stored(board_path):
    frame = duckdb.connect().execute("SELECT range AS n FROM range(25)").df()
    with Board.open(board_path, max_rows=10) as board:
        ev = board.add_evidence("SELECT range AS n FROM range(25)", frame, description="many")
        assert (ev.row_count, ev.stored_rows, ev.truncated) == (25, 10, True)
        pd.testing.assert_frame_equal(board.evidence_frame(ev.id), frame.head(10))


def test_caller_supplied_true_row_count_marks_truncation(board):
    frame = pd.DataFrame({"n": range(5)})
    ev = board.add_evidence("SELECT ...", frame, description="prefix", row_count=1_000_000,
                            truncated=True)
    assert (ev.row_count, ev.stored_rows, ev.truncated) == (1_000_000, 5, True)


def test_default_cap_is_ten_thousand_rows(board):
    assert board.max_rows == 10_000
    frame = pd.DataFrame({"n": range(10_001)})
    ev = board.add_evidence("SELECT ...", frame, description="big")
    assert (ev.row_count, ev.stored_rows, ev.truncated) == (10_001, 10_000, True)


def test_equal_results_have_equal_hashes(board):
    a = board.add_evidence("SELECT 1", pd.DataFrame({"x": [1, 2]}), description="a")
    b = board.add_evidence("SELECT 2", pd.DataFrame({"x": [1, 2]}), description="b")
    c = board.add_evidence("SELECT 3", pd.DataFrame({"x": [1, 3]}), description="c")
    assert a.result_hash == b.result_hash != c.result_hash


def test_invalid_row_cap_is_refused():
    from d2_notebook.errors import InvalidRecordError

    with pytest.raises(InvalidRecordError, match="max_rows"):
        Board.open(":memory:", max_rows=0)
