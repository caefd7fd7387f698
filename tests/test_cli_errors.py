"""Every CLI path a user can get wrong ends in one line that names the fix and a
non-zero exit, never a traceback; read-only commands never write to a board file."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pandas as pd
import pytest
from cli_helpers import hospital_database, register_test_policy
from click.testing import CliRunner

from d2_notebook.board import Board
from d2_notebook.cli import main
from d2_notebook.datasets import hospital
from d2_notebook.errors import BoardError


@pytest.fixture(autouse=True)
def _test_provider() -> None:
    register_test_policy()


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return hospital_database(tmp_path)


@pytest.fixture
def recorded(database: Path, tmp_path: Path) -> Path:
    board = tmp_path / "recorded.d2board"
    done = _invoke("investigate", database, hospital.QUESTION, "--board", board,
                   "--model", "testpolicy:x", "--quiet")
    assert done.exit_code == 0, done.output
    return board


@pytest.fixture
def small_board(tmp_path: Path) -> Path:
    path = tmp_path / "small.d2board"
    with Board.open(path) as board:
        board.start_investigation("q")
        board.add_evidence("SELECT 1", pd.DataFrame({"n": [1]}), description="one")
    return path


def _invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _one_line_error(result, code: int, *expected: str) -> None:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception)
    line = [text for text in result.output.splitlines() if text.startswith("Error:")]
    assert len(line) == 1, result.output
    for text in expected:
        assert text in line[0], result.output


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


# --- replay ------------------------------------------------------------------------


def test_replay_refuses_to_write_into_its_own_recording(database: Path, recorded: Path) -> None:
    before = Board.open(recorded, read_only=True)
    events, investigations = before.last_seq(), len(before.list_investigations())
    before.close()
    result = _invoke("investigate", database, "--replay", recorded, "--board", recorded)
    _one_line_error(result, 2, "never writes into its own recording", "new --board")
    with Board.open(recorded, read_only=True) as after:
        assert after.last_seq() == events
        assert len(after.list_investigations()) == investigations


def test_replay_of_a_board_without_investigation_is_one_line(database: Path,
                                                              tmp_path: Path) -> None:
    empty = tmp_path / "empty.d2board"
    Board.open(empty).close()
    result = _invoke("investigate", database, "--replay", empty, "--board",
                     tmp_path / "new.d2board")
    _one_line_error(result, 1, "nothing to replay", "holds no investigation")
    assert not (tmp_path / "new.d2board").exists()


def test_replay_of_a_file_that_is_not_a_board_is_one_line(database: Path,
                                                           tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a board\n")
    result = _invoke("investigate", database, "--replay", notes)
    _one_line_error(result, 1, "notes.txt", "not")
    assert notes.read_text() == "not a board\n"


# --- investigate ---------------------------------------------------------------------


def test_a_run_that_fails_before_starting_leaves_no_board(tmp_path: Path) -> None:
    not_duckdb = tmp_path / "data.duckdb"  # DuckDB's magic bytes, then garbage
    not_duckdb.write_bytes(b"\0" * 8 + b"DUCK" + b"this is not a DuckDB file" * 100)
    board = tmp_path / "run.d2board"
    result = _invoke("investigate", not_duckdb, "why?", "--board", board, "--model",
                     "testpolicy:x")
    _one_line_error(result, 1, "cannot open DuckDB database")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.duckdb"]


def test_a_failing_run_keeps_a_board_that_was_already_there(small_board: Path,
                                                            tmp_path: Path) -> None:
    not_duckdb = tmp_path / "data.duckdb"
    not_duckdb.write_bytes(b"\0" * 8 + b"DUCK" + b"nope" * 100)
    result = _invoke("investigate", not_duckdb, "why?", "--board", small_board, "--model",
                     "testpolicy:x")
    assert result.exit_code == 1
    assert small_board.exists()


def test_writing_to_a_read_only_board_is_a_board_error(small_board: Path) -> None:
    with Board.open(small_board, read_only=True) as board, pytest.raises(
            BoardError, match="read-only"):
        board.start_investigation("q2")


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_investigate_on_a_read_only_board_file_is_one_line(database: Path,
                                                           small_board: Path) -> None:
    small_board.chmod(0o444)
    result = _invoke("investigate", database, "why?", "--board", small_board, "--model",
                     "testpolicy:x")
    _one_line_error(result, 1, "read-only")


# --- board show / export / import ----------------------------------------------------


def test_show_on_an_empty_file_refuses_and_writes_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "empty.d2board"
    empty.touch()
    _one_line_error(_invoke("board", "show", empty), 1, "is not a d2 board")
    assert _files(tmp_path) == {"empty.d2board": b""}


def test_show_on_another_sqlite_file_refuses_and_writes_nothing(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (a)")
    before = _files(tmp_path)
    _one_line_error(_invoke("board", "show", other), 1, "is not a d2 board")
    assert _files(tmp_path) == before


def test_show_and_export_open_the_board_read_only(small_board: Path, tmp_path: Path) -> None:
    Board.open(small_board).close()  # checkpointed: the file alone holds the board
    before = small_board.read_bytes()
    assert _invoke("board", "show", small_board).exit_code == 0
    assert _invoke("board", "export", small_board, "--json").exit_code == 0
    assert small_board.read_bytes() == before


def test_show_width_must_be_usable(small_board: Path) -> None:
    result = _invoke("board", "show", small_board, "--width", "0")
    assert result.exit_code == 2 and "x>=20" in result.output
    assert "Traceback" not in result.output


def test_export_to_a_folder_or_a_missing_folder_is_one_line(small_board: Path,
                                                            tmp_path: Path) -> None:
    _one_line_error(_invoke("board", "export", small_board, "--json", "-o", tmp_path), 1,
                    "is a folder")
    _one_line_error(_invoke("board", "export", small_board, "--json", "-o",
                            tmp_path / "missing" / "b.json"), 1, "does not exist")


def _export(board: Path) -> dict:
    return json.loads(_invoke("board", "export", board, "--json").output)


@pytest.mark.parametrize(("change", "expected"), [
    (lambda d: json.dumps(dict(d, hypotheses=[], evidence=[
        dict(d["evidence"][0], row_count=2**63)])), "field 'row_count' is out of range"),
    (lambda d: json.dumps(dict(d, investigations=[dict(d["investigations"][0],
                                                       state="paused")])), "unknown value"),
    (lambda d: "[" * 50_000 + "]" * 50_000, "nests too deeply"),
    (lambda d: '{"format": ' * 50_000 + "1" + "}" * 50_000, "nests too deeply"),
])
def test_import_of_a_bad_document_is_one_line_and_leaves_nothing(
        small_board: Path, tmp_path: Path, change, expected: str) -> None:
    document = tmp_path / "bad.json"
    document.write_text(change(_export(small_board)))
    target = tmp_path / "copy.d2board"
    _one_line_error(_invoke("board", "import", document, target), 1, expected)
    assert not target.exists()


def test_import_into_a_missing_folder_is_one_line(small_board: Path, tmp_path: Path) -> None:
    document = tmp_path / "good.json"
    document.write_text(json.dumps(_export(small_board)))
    _one_line_error(_invoke("board", "import", document, tmp_path / "no" / "b.d2board"), 1,
                    "does not exist")


def test_a_model_the_server_does_not_serve_is_not_answered_with_the_same_resume(
        database: Path, tmp_path: Path) -> None:
    from d2_notebook.errors import ModelConfigError
    from d2_notebook.llm import register_provider
    from d2_notebook.llm.offline import FunctionModel

    def not_served(request: object) -> object:
        raise ModelConfigError("anthropic:claude-nope does not serve this model; check --model")

    register_provider("notserved", lambda model_id, **kw: FunctionModel(not_served),
                      replace=True)
    board = tmp_path / "run.d2board"
    result = _invoke("investigate", database, "why?", "--board", board, "--model",
                     "notserved:x", "--quiet")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "once the model is fixed, resume with" in result.output
    assert "--resume --model PROVIDER:MODEL`" in result.output
