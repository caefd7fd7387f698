"""The event log, live following, JSON export/import and schema migrations."""

from __future__ import annotations

import asyncio
import json
import sqlite3

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.board import migrations as board_migrations
from d2_notebook.errors import BoardFormatError


def _small_investigation(board: Board) -> None:
    inv = board.start_investigation("Which treatment works?", {"model": "scripted"})
    board.add_hypothesis("Drug A helps", investigation_id=inv.id, author="hypothesizer")
    board.add_hypothesis("Drug A helps with asthma", parent_id="H1", investigation_id=inv.id)
    ev = board.add_evidence("SELECT 1 AS n", pd.DataFrame({"n": [1]}), description="one",
                            investigation_id=inv.id)
    board.link(ev.id, "H1", "supports", "one row", actor="collector-1")
    board.add_verdict("H1", "supported", 0.9, "E1", [ev.id], author="judge")
    board.mark_redundant(ev.id, "kept for audit", actor="reporter")
    board.record_model_call(role="judge", agent="judge", model="m", request={"a": 1},
                            response={"b": 2}, investigation_id=inv.id)
    board.log_event("round.finished", {"round": 1}, actor="orchestrator", investigation_id=inv.id)
    board.set_investigation_state(inv.id, "finished", actor="reporter", report="# R")


def test_every_change_is_an_event_in_order(board):
    _small_investigation(board)
    events = board.events()
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [e.kind for e in events] == [
        "investigation.started", "hypothesis.added", "hypothesis.added", "evidence.added",
        "link.added", "verdict.added", "evidence.redundant", "model_call.recorded",
        "round.finished", "investigation.state",
    ]
    assert events[4].payload["stance"] == "supports"
    assert all(e.investigation_id == "I1" for e in events)
    assert [e.kind for e in board.events(since=8)] == ["round.finished", "investigation.state"]
    assert [e.seq for e in board.events(kinds=["hypothesis.added"])] == [2, 3]
    assert board.last_seq() == 10


async def test_follow_yields_new_batches_until_stopped(board):
    stop = asyncio.Event()
    seen: list[int] = []

    async def watch() -> None:
        async for batch in board.follow(interval=0.01, stop=stop):
            seen.extend(e.seq for e in batch)

    watcher = asyncio.create_task(watch())
    for i in range(5):
        board.add_hypothesis(f"h{i}")
        await asyncio.sleep(0.02)
    stop.set()
    await asyncio.wait_for(watcher, 2)
    assert seen == [1, 2, 3, 4, 5]


def test_json_export_import_reproduces_everything(board, tmp_path):
    _small_investigation(board)
    document = board.to_json()
    data = json.loads(document)
    assert data["format"] == "d2-board" and data["json_schema_version"] == 1
    assert len(data["events"]) == 10
    copy = Board.from_json(document, tmp_path / "copy.d2board")
    assert copy.to_json() == document
    assert copy.events() == board.events()
    pd.testing.assert_frame_equal(copy.evidence_frame("E1"), board.evidence_frame("E1"))
    assert copy.add_hypothesis("next").id == "H3"


def test_import_refuses_other_documents_and_never_merges(board, tmp_path):
    _small_investigation(board)
    with pytest.raises(BoardFormatError, match="not a d2 board export"):
        Board.from_json({"format": "something"})
    newer = json.loads(board.to_json()) | {"json_schema_version": 99}
    with pytest.raises(BoardFormatError, match="upgrade"):
        Board.from_json(newer)
    target = tmp_path / "busy.d2board"
    with Board.open(target) as busy:
        busy.add_hypothesis("already here")
    with pytest.raises(BoardFormatError, match="new path"):
        Board.from_json(board.to_json(), target)


def test_migrations_are_recorded_in_the_file(board_path):
    Board.open(board_path).close()
    with sqlite3.connect(board_path) as conn:
        versions = [v for v, _, _ in board_migrations.applied_migrations(conn)]
        assert versions == [m.version for m in board_migrations.MIGRATIONS]
        assert board_migrations.schema_version(conn) == board_migrations.MIGRATIONS[-1].version


def test_an_old_board_opens_and_is_migrated(board_path):
    # A board written by a version that knew only migration 1, with data in it.
    conn = sqlite3.connect(board_path, isolation_level=None)
    board_migrations.migrate(conn, board_migrations.MIGRATIONS[:1])
    conn.execute(
        "INSERT INTO hypotheses (num, id, statement, status, rationale, author_role, author,"
        " round, created_at, updated_at) VALUES (1, 'H1', 'old', 'proposed', '', 'user', 'user',"
        " 0, 't', 't')"
    )
    conn.close()
    with Board.open(board_path) as board:
        assert board.get_hypothesis("H1").statement == "old"
        assert board.add_hypothesis("new").id == "H2"
    with sqlite3.connect(board_path) as conn:
        assert [v for v, _, _ in board_migrations.applied_migrations(conn)] == [1, 2, 3]


def test_a_future_migration_applies_on_open(board_path):
    Board.open(board_path).close()
    future = (*board_migrations.MIGRATIONS,
              board_migrations.Migration(99, "add a tag column",
                                         "ALTER TABLE hypotheses ADD COLUMN tag TEXT"))
    conn = sqlite3.connect(board_path, isolation_level=None)
    assert board_migrations.migrate(conn, future) == [99]
    assert board_migrations.migrate(conn, future) == []
    conn.close()
    # This version does not know migration 99: it refuses rather than guessing.
    with pytest.raises(BoardFormatError, match="schema version 99"):
        Board.open(board_path)


def test_a_failing_migration_leaves_the_file_as_it_was(board_path):
    Board.open(board_path).close()
    broken = (*board_migrations.MIGRATIONS,
              board_migrations.Migration(4, "broken", "CREATE TABLE x (a); SELECT * FROM nope"))
    conn = sqlite3.connect(board_path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError):
        board_migrations.migrate(conn, broken)
    assert board_migrations.schema_version(conn) == 3
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'x'").fetchone() is None
    conn.close()


def test_processes_creating_the_same_new_board_at_once_all_succeed(board_path):
    import subprocess
    import sys

    script = ("import sys; from d2_notebook.board import Board; "
              "b = Board.open(sys.argv[1]); b.add_hypothesis('from ' + sys.argv[2]); b.close()")
    processes = [subprocess.Popen([sys.executable, "-c", script, str(board_path), str(i)],
                                  stderr=subprocess.PIPE, text=True) for i in range(6)]
    errors = [p.communicate(timeout=60)[1] for p in processes]
    assert [p.returncode for p in processes] == [0] * 6, errors
    with Board.open(board_path) as board:
        assert sorted(h.id for h in board.list_hypotheses()) == sorted(f"H{i}" for i in
                                                                      range(1, 7))
    with sqlite3.connect(board_path) as conn:
        assert [v for v, _, _ in board_migrations.applied_migrations(conn)] == [1, 2, 3]
