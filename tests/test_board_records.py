"""The board's records: ids, statuses, links, verdicts, and that nothing is deleted."""

from __future__ import annotations

import pandas as pd
import pytest

from d2_notebook.board import Board, HypothesisStatus, InvestigationState, Stance
from d2_notebook.errors import BoardError, BoardFormatError, InvalidRecordError, NotFoundError


def _evidence(board: Board, sql: str = "SELECT 1 AS x", **kwargs):
    return board.add_evidence(sql, pd.DataFrame({"x": [1]}), description="one row", **kwargs)


def test_ids_are_sequential_and_stable_across_reopen(board_path):
    with Board.open(board_path) as board:
        ids = [board.add_hypothesis(f"h{i}").id for i in range(3)]
        ev = _evidence(board)
    assert ids == ["H1", "H2", "H3"]
    assert ev.id == "E1"
    with Board.open(board_path) as again:
        assert [h.id for h in again.list_hypotheses()] == ids
        assert again.add_hypothesis("h3").id == "H4"


def test_hypothesis_fields_round_trip(board):
    inv = board.start_investigation("Which drug works?", {"collectors": 4})
    parent = board.add_hypothesis("Drug A helps", investigation_id=inv.id)
    child = board.add_hypothesis(
        "Drug A helps with asthma", rationale="effect differs by comorbidity",
        parent_id=parent.id, author_role="judge", author="judge", round=2,
        investigation_id=inv.id, confidence=0.4,
    )
    got = board.get_hypothesis(child.id)
    assert got.parent_id == "H1"
    assert got.status is HypothesisStatus.PROPOSED
    assert (got.author_role, got.author, got.round, got.confidence) == ("judge", "judge", 2, 0.4)
    assert got.investigation_id == "I1"
    assert board.get_investigation("I1").settings == {"collectors": 4}


def test_status_changes_keep_the_hypothesis_and_log_events(board):
    hyp = board.add_hypothesis("Drug B helps")
    board.set_status(hyp.id, "investigating", actor="orchestrator")
    abandoned = board.abandon(hyp.id, "does not answer the question", actor="orchestrator")
    assert abandoned.status is HypothesisStatus.ABANDONED
    assert abandoned.status_reason == "does not answer the question"
    assert [h.id for h in board.list_hypotheses()] == ["H1"]
    kinds = [(e.kind, e.payload.get("status")) for e in board.events()]
    assert kinds == [
        ("hypothesis.added", None),
        ("hypothesis.status", "investigating"),
        ("hypothesis.status", "abandoned"),
    ]


def test_list_hypotheses_filters_by_status(board):
    for statement in ("a", "b", "c"):
        board.add_hypothesis(statement)
    board.abandon("H2", "duplicate of H1", actor="orchestrator")
    assert [h.id for h in board.list_hypotheses(status="proposed")] == ["H1", "H3"]
    assert [h.id for h in board.list_hypotheses(status=["abandoned", "supported"])] == ["H2"]


def test_links_and_verdicts(board):
    hyp = board.add_hypothesis("Drug A helps older patients")
    e1, e2 = _evidence(board), _evidence(board, "SELECT 2 AS x")
    board.link(e1.id, hyp.id, Stance.SUPPORTS, "lower death rate", actor="collector-1")
    board.link(e2.id, hyp.id, "contradicts", "same rate in severe cases", actor="collector-1")
    assert [(link.evidence_id, link.stance) for link in board.list_links(hypothesis_id="H1")] == [
        ("E1", Stance.SUPPORTS), ("E2", Stance.CONTRADICTS)]
    verdict = board.add_verdict(hyp.id, "contradicted", 0.7, "E2 outweighs E1", ["E2", "E1", "E2"],
                                author="judge", round=1)
    assert verdict.evidence_ids == ("E2", "E1")
    updated = board.get_hypothesis(hyp.id)
    assert (updated.status, updated.confidence) == (HypothesisStatus.CONTRADICTED, 0.7)
    assert board.latest_verdict(hyp.id) == verdict


def test_relinking_same_stance_is_idempotent_and_flipping_is_refused(board):
    board.add_hypothesis("h")
    _evidence(board)
    first = board.link("E1", "H1", "supports", actor="c")
    assert board.link("E1", "H1", "supports", actor="c") == first
    with pytest.raises(InvalidRecordError, match="already linked"):
        board.link("E1", "H1", "contradicts", actor="c")
    assert len(board.list_links()) == 1


def test_redundant_evidence_is_marked_not_deleted(board):
    _evidence(board)
    _evidence(board)
    board.mark_redundant("E2", "same result as E1", actor="reporter")
    assert [e.id for e in board.list_evidence()] == ["E1", "E2"]
    assert [e.id for e in board.list_evidence(include_redundant=False)] == ["E1"]
    assert board.get_evidence("E2").redundant_reason == "same result as E1"
    assert board.events()[-1].kind == "evidence.redundant"


def test_investigation_life_cycle(board):
    inv = board.start_investigation("Who did it?")
    assert inv.state is InvestigationState.RUNNING
    board.set_investigation_state(inv.id, "interrupted", actor="detective", error="Ctrl-C")
    done = board.set_investigation_state(inv.id, "finished", actor="reporter", report="# Report")
    assert (done.state, done.report, done.error) == (InvestigationState.FINISHED, "# Report",
                                                      "Ctrl-C")


def test_model_calls_are_recorded(board):
    call = board.record_model_call(
        role="judge", agent="judge", model="scripted", request={"messages": [1]},
        response={"parts": []}, input_tokens=10, output_tokens=5, cost_usd=0.01, latency_s=0.2,
    )
    assert call.id == 1
    assert board.list_model_calls(agent="judge") == [call]
    assert board.list_model_calls(agent="other") == []
    assert board.events()[-1].kind == "model_call.recorded"


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        (lambda b: b.add_hypothesis("  "), InvalidRecordError, "statement"),
        (lambda b: b.add_hypothesis("x", confidence=1.5), InvalidRecordError, "between 0 and 1"),
        (lambda b: b.add_hypothesis("x", parent_id="H9"), NotFoundError, "H9"),
        (lambda b: b.set_status("H1", "maybe", actor="a"), InvalidRecordError, "proposed"),
        (lambda b: b.set_status("H7", "supported", actor="a"), NotFoundError, "H7"),
        (lambda b: b.link("E1", "H1", "proves", actor="a"), InvalidRecordError, "supports"),
        (lambda b: b.link("E5", "H1", "supports", actor="a"), NotFoundError, "E5"),
        (lambda b: b.add_verdict("H1", "abandoned", 0.5, "x", [], author="j"),
         InvalidRecordError, "supported, contradicted or inconclusive"),
        (lambda b: b.add_verdict("H1", "supported", 0.5, "x", ["E9"], author="j"),
         NotFoundError, "E9"),
        (lambda b: b.abandon("H1", " ", actor="a"), InvalidRecordError, "reason"),
        (lambda b: b.add_evidence("", pd.DataFrame(), description="d"), InvalidRecordError, "SQL"),
        (lambda b: b.add_evidence("SELECT 1", [[1]], description="d"), InvalidRecordError,
         "DataFrame"),
        (lambda b: b.get_evidence("E42"), NotFoundError, "E42"),
        (lambda b: b.evidence_frame("E42"), NotFoundError, "E42"),
        (lambda b: b.start_investigation(""), InvalidRecordError, "question"),
    ],
)
def test_bad_input_is_refused_with_a_clear_error_and_changes_nothing(board, action, error,
                                                                      message):
    board.add_hypothesis("h")
    _evidence(board)
    before = board.to_json()
    with pytest.raises(error, match=message):
        action(board)
    assert board.to_json() == before


def test_open_refuses_a_foreign_sqlite_file(tmp_path):
    import sqlite3

    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(BoardFormatError, match="not a d2 board"):
        Board.open(path)


def test_open_refuses_a_missing_folder_and_non_sqlite_file(tmp_path):
    with pytest.raises(BoardError, match="does not exist"):
        Board.open(tmp_path / "missing" / "b.d2board")
    junk = tmp_path / "junk.d2board"
    junk.write_text("not a database at all " * 100)
    with pytest.raises(BoardError, match="cannot open board"):
        Board.open(junk)


def test_find_evidence_matches_the_same_query_and_result_only(board):
    inv = board.start_investigation("q")
    frame = pd.DataFrame({"x": [1, 2]})
    stored = board.add_evidence("SELECT x\n  FROM t", frame, description="d",
                                investigation_id=inv.id)
    assert board.find_evidence("SELECT x FROM t", frame, investigation_id=inv.id) == stored
    assert board.find_evidence("SELECT x FROM t", pd.DataFrame({"x": [1, 3]}),
                               investigation_id=inv.id) is None
    assert board.find_evidence("SELECT y FROM t", frame, investigation_id=inv.id) is None
    assert board.find_evidence("SELECT x FROM t", frame) is None, "other investigation"
