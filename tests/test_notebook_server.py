"""The server extension's reading of board files (the HTTP route is exercised against a
real JupyterLab in tests/test_browser.py)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.notebook.server import (
    SnapshotRequestError,
    _jupyter_server_extension_points,
    resolve_board_file,
    snapshot_of_file,
)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    with Board.open(tmp_path / "notes.d2board") as board:
        board.start_investigation("Which drug works?", {}, actor="user")
        board.add_hypothesis("Pulmorex lowers deaths")
        item = board.add_evidence("SELECT 1", pd.DataFrame({"n": [1]}), description="one")
        board.link(item.id, "H1", "supports", "", actor="me")
        (tmp_path / "export.json").write_text(board.to_json())
    (tmp_path / "sub").mkdir()
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    (tmp_path / "readme.txt").write_text("hello")
    return tmp_path


def test_board_file_and_json_export_give_the_same_snapshot(root: Path) -> None:
    from_file = snapshot_of_file(resolve_board_file(root, "notes.d2board"))
    from_json = snapshot_of_file(resolve_board_file(root, "/export.json"))
    assert [n["id"] for n in from_file["graph"]["nodes"]] == ["H1", "E1"]
    assert from_file["graph"] == from_json["graph"]
    assert from_file["evidence"] == from_json["evidence"]


@pytest.mark.parametrize(("path", "status", "message"), [
    ("", 400, r"pass \?path="),
    ("../outside.d2board", 403, "outside the server root"),
    ("missing.d2board", 404, "no file"),
    ("sub", 404, "no file"),
    ("readme.txt", 415, "not a board"),
])
def test_bad_paths_are_refused_with_a_status_and_the_fix(root: Path, path: str, status: int,
                                                          message: str) -> None:
    with pytest.raises(SnapshotRequestError, match=message) as caught:
        resolve_board_file(root, path)
    assert caught.value.status == status


def test_files_that_are_not_boards_are_refused(root: Path) -> None:
    with pytest.raises(SnapshotRequestError, match="not a board export") as caught:
        snapshot_of_file(root / "other.json")
    assert caught.value.status == 422
    (root / "fake.d2board").write_text("not sqlite")
    with pytest.raises(SnapshotRequestError, match="not a board") as caught:
        snapshot_of_file(root / "fake.d2board")
    assert caught.value.status == 422


def test_server_extension_entry_point() -> None:
    assert _jupyter_server_extension_points() == [{"module": "d2_notebook.notebook.server"}]
