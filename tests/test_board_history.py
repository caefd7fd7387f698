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
        applied = [v for v, _, _ in board_migrations.applied_migrations(conn)]
        assert applied == [m.version for m in board_migrations.MIGRATIONS]


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
    current = board_migrations.MIGRATIONS[-1].version
    broken = (*board_migrations.MIGRATIONS,
              board_migrations.Migration(current + 1, "broken",
                                         "CREATE TABLE x (a); SELECT * FROM nope"))
    conn = sqlite3.connect(board_path, isolation_level=None)
    with pytest.raises(sqlite3.OperationalError):
        board_migrations.migrate(conn, broken)
    assert board_migrations.schema_version(conn) == current
    assert conn.execute("SELECT name FROM sqlite_master WHERE name = 'x'").fetchone() is None
    conn.close()


def test_processes_creating_the_same_new_board_at_once_all_succeed(board_path):
    import subprocess
    import sys

    script = ("import sys; from d2_notebook.board import Board; "
              "b = Board.open(sys.argv[1]); b.add_hypothesis('from ' + sys.argv[2]); b.close()")
    processes = [subprocess.Popen([sys.executable, "-c", script, str(board_path), str(i)],
                                  stderr=subprocess.PIPE, text=True) for i in range(6)]
    errors = [p.communicate(timeout=300)[1] for p in processes]
    assert [p.returncode for p in processes] == [0] * 6, errors
    with Board.open(board_path) as board:
        assert sorted(h.id for h in board.list_hypotheses()) == sorted(f"H{i}" for i in
                                                                      range(1, 7))
    with sqlite3.connect(board_path) as conn:
        applied = [v for v, _, _ in board_migrations.applied_migrations(conn)]
        assert applied == [m.version for m in board_migrations.MIGRATIONS]


# --- import is all-or-nothing, malformed documents are BoardFormatError -------------


def _exported(board: Board) -> dict:
    _small_investigation(board)
    return json.loads(board.to_json())


def test_import_with_a_dangling_link_leaves_no_board_and_can_be_retried(board, tmp_path):
    document = _exported(board)
    broken = dict(document, evidence=[])  # the link (and verdict) now point at nothing
    target = tmp_path / "copy.d2board"
    with pytest.raises(BoardFormatError) as info:
        Board.from_json(json.dumps(broken), target)
    assert "links record 1 refers to missing evidence 'E1'" in str(info.value)
    assert not target.exists(), "a failed import into a new path leaves no file behind"
    with Board.from_json(json.dumps(document), target) as copy:  # retry succeeds
        assert copy.to_json() == board.to_json()


def test_failed_import_into_an_empty_board_leaves_it_empty(board, tmp_path):
    document = _exported(board)
    target = tmp_path / "empty.d2board"
    Board.open(target).close()
    broken = dict(document, links=[dict(document["links"][0], hypothesis_id="H99")])
    with pytest.raises(BoardFormatError, match="refers to missing hypotheses 'H99'"):
        Board.from_json(broken, target)
    with Board.open(target) as empty:
        assert empty.counts()["hypotheses"] == 0 and empty.last_seq() == 0
    Board.from_json(document, target).close()  # re-importable


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: "{not json", "not JSON: "),
        (lambda d: "[1, 2]", "not a d2 board export"),
        (lambda d: json.dumps(dict(d, evidence=[{k: v for k, v in d["evidence"][0].items()
                                                 if k != "result"}])),
         "a record of evidence lacks the field 'result'"),
        (lambda d: json.dumps(dict(d, hypotheses=["H1"])), "malformed hypotheses records"),
        (lambda d: json.dumps(dict(d, evidence=[dict(d["evidence"][0], result="@@@")])),
         "malformed evidence records"),
        (lambda d: json.dumps(dict(d, links=[dict(d["links"][0], bogus=1)])),
         "links record 1 has unknown field(s) 'bogus'"),
        (lambda d: json.dumps(dict(d, hypotheses=d["hypotheses"] * 2)),
         "hypotheses record 'H1' breaks a constraint"),
        (lambda d: json.dumps(dict(d, max_rows="lots")), "max_rows must be a whole number"),
        # every field is validated before anything is written (issue 9)
        (lambda d: json.dumps(dict(d, hypotheses=[dict(d["hypotheses"][0], status="maybe")])),
         "hypotheses record 'H1', field 'status': unknown value 'maybe'; use one of: proposed"),
        (lambda d: json.dumps(dict(d, links=[dict(d["links"][0], stance="meh")])),
         "links record 1, field 'stance': unknown value 'meh'"),
        (lambda d: json.dumps(dict(d, investigations=[dict(d["investigations"][0],
                                                           state="paused")])),
         "investigations record 'I1', field 'state': unknown value 'paused'"),
        (lambda d: json.dumps(dict(d, hypotheses=[dict(d["hypotheses"][0], round="two")])),
         "hypotheses record 'H1', field 'round' must be a whole number"),
        (lambda d: json.dumps(dict(d, hypotheses=[dict(d["hypotheses"][0], num=2**64)])),
         "hypotheses record 'H1', field 'num' is out of range (64-bit integers only)"),
        (lambda d: json.dumps(dict(d, hypotheses=[dict(d["hypotheses"][0], statement=7)])),
         "hypotheses record 'H1', field 'statement' must be text"),
        (lambda d: json.dumps(dict(d, verdicts=[dict(d["verdicts"][0], confidence=3)])),
         "field 'confidence': confidence must be between 0 and 1"),
        (lambda d: json.dumps(dict(d, verdicts=[dict(d["verdicts"][0], evidence_ids="E1,")])),
         "field 'evidence_ids' must hold JSON text"),
        (lambda d: json.dumps(dict(d, evidence=[dict(d["evidence"][0], result="aGVsbG8=")])),
         "evidence record 'E1', field 'result' is not the Arrow data its 'columns' describe"),
        (lambda d: json.dumps(dict(d, evidence=[dict(d["evidence"][0], stored_rows=99)])),
         "but stored_rows says 99"),
        (lambda d: '{"a": ' * 100_000 + "1" + "}" * 100_000, "the JSON nests too deeply"),
        (lambda d: json.dumps(dict(d, max_rows=2**70)), "max_rows must be a whole number"),
    ],
)
def test_malformed_documents_are_board_format_errors(board, tmp_path, mutate, message):
    text = mutate(_exported(board))
    target = tmp_path / "copy.d2board"
    with pytest.raises(BoardFormatError) as info:
        Board.from_json(text, target)
    assert message in str(info.value)
    assert not target.exists()


# --- export is one consistent snapshot while others write ---------------------------


MAX_CONCURRENT_WRITES = 400
"""Evidence the writer adds at most while the exports run."""


@pytest.mark.parametrize("writer_kind", ["same board object", "second connection"])
def test_export_while_writing_always_imports_cleanly(board, board_path, tmp_path, writer_kind):
    import threading

    board.add_hypothesis("h")
    writer_board = board if writer_kind == "same board object" else Board.open(board_path)
    stop = threading.Event()
    errors: list[BaseException] = []

    def write() -> None:
        try:
            i = 0
            # bounded: every export reads all that was written, so an unbounded writer
            # made each export slower and the test ran 10+ minutes on a loaded machine
            while not stop.is_set() and i < MAX_CONCURRENT_WRITES:
                ev = writer_board.add_evidence(f"SELECT {i}", pd.DataFrame({"n": [i]}),
                                                description=f"row {i}")
                writer_board.link(ev.id, "H1", "supports", "because", actor="writer")
                i += 1
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    thread = threading.Thread(target=write)
    thread.start()
    try:
        for n in range(25):
            document = json.loads(board.to_json())
            evidence = {e["id"] for e in document["evidence"]}
            assert {link["evidence_id"] for link in document["links"]} <= evidence
            Board.from_json(document, tmp_path / f"copy{n}.d2board").close()
    finally:
        stop.set()
        thread.join()
        if writer_board is not board:
            writer_board.close()
    assert not errors
    assert board.counts()["links"] > 0


def test_a_board_another_process_is_creating_opens_for_writing_not_for_reading(board_path):
    """A SQLite file with no table yet is a board being created by another process (its
    first migration not committed): a writable open migrates it (the race that made one
    of six processes creating the same board fail); a read-only open still refuses it."""
    from d2_notebook.errors import BoardFormatError

    conn = sqlite3.connect(board_path)
    conn.execute("PRAGMA journal_mode = WAL")  # the header written, no table yet
    conn.close()
    with pytest.raises(BoardFormatError, match="not a d2 board"):
        Board.open(board_path, read_only=True)
    with Board.open(board_path) as board:
        assert board.add_hypothesis("created").id == "H1"
