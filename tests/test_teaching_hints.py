"""Hints: more specific on each call, recorded on the board, never the answer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.datasets.sql_city import Gold, generate_case, standard_tiers, write_case
from d2_notebook.errors import BoardError
from d2_notebook.teaching import Gap, HintLevel, grade, hint, hints_used, read_gold
from d2_notebook.teaching.assessment import HINT_EVENT, assess
from d2_notebook.teaching.case_map import Source, case_map
from d2_notebook.teaching.hints import NOTHING_LEFT, hint_text
from d2_notebook.teaching.needs import needs
from tests.teaching_boards import StudentBoard, gold_board


@pytest.fixture(scope="module")
def easy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Gold, Path]:
    """An easy case on disk: its gold and the gold file's path."""
    out = tmp_path_factory.mktemp("case")
    paths = write_case(generate_case(3, 0, "easy"), out)
    return read_gold(paths["gold"]), paths["gold"]


def test_hints_grow_more_specific_and_are_recorded(easy: tuple[Gold, Path],
                                                   tmp_path: Path) -> None:
    gold, gold_path = easy
    path = tmp_path / "student.d2board"
    with Board.open(path) as board:
        StudentBoard(board, gold)
        levels = [hint(board, gold_path) for _ in range(4)]
    assert [h.gap for h in levels] == [Gap.REPORT] * 4
    assert [h.level for h in levels] == [HintLevel.SOURCE, HintLevel.TABLE, HintLevel.HOW,
                                         HintLevel.HOW]
    assert [h.used for h in levels] == [1, 2, 3, 4]
    assert "official record of the crime" in levels[0].text
    assert "crime_scene_report table" in levels[1].text
    assert "crime_scene_report by the date, type and city" in levels[2].text
    assert "Hint 2** (level 2 of 3)" in levels[1]._repr_markdown_()
    with Board.open(path, read_only=True) as board:
        events = board.events(kinds=[HINT_EVENT])
        assert [e.payload["level"] for e in events] == [1, 2, 3, 3]
        assert {e.actor for e in events} == {"student"}
        assert hints_used(board) == 4
    assert grade(path, gold_path).hints_used == 4
    shown = hint(path, gold_path, record=False)  # only shown: not counted, no escalation
    assert shown.level is HintLevel.HOW and shown.used == 4
    with Board.open(path, read_only=True) as board:
        assert hints_used(board) == 4
        with pytest.raises(BoardError, match="record=False"):
            hint(board, gold_path)


def test_a_new_need_starts_vague_again(easy: tuple[Gold, Path]) -> None:
    gold, gold_path = easy
    with Board.open(":memory:") as board:
        student = StudentBoard(board, gold)
        assert hint(board, gold_path).gap is Gap.REPORT
        assert hint(board, gold_path).level is HintLevel.TABLE
        student.add_evidence("E1")  # the report is on the board now
        witness = hint(board, gold_path)
        assert witness.gap is Gap.WITNESS and witness.level is HintLevel.SOURCE
        assert "interview" in hint(board, gold_path).text


def test_hints_follow_an_investigation_to_its_end(easy: tuple[Gold, Path]) -> None:
    gold, gold_path = easy
    with Board.open(":memory:") as board:
        student = StudentBoard(board, gold)
        for node in gold.graph["evidence"][:3]:  # report, witness, interview
            student.add_evidence(node["id"])
        assert hint(board, gold_path).gap is Gap.SUSPECT
        hypotheses = [h["id"] for h in gold.graph["hypotheses"]]
        for gold_hyp in hypotheses:
            student.add_hypothesis(gold_hyp)
        first = hint(board, gold_path)
        assert first.gap is Gap.UNCHECKED_CLUE and first.text.startswith("H1 has a clue")
        student.link_gold_edges(flip=True, only={hypotheses[0]})
        assert hint(board, gold_path).gap is Gap.WRONG_STANCE
        student.link_gold_edges(only=set(hypotheses[1:]))
        board.add_evidence("SELECT 1", pd.DataFrame({"x": [1]}), description="noise",
                           author_role="human",
                           author="student", investigation_id=student.investigation.id)
        assert hint(board, gold_path).gap is Gap.WRONG_STANCE
    with Board.open(":memory:") as board:
        student = StudentBoard(board, gold)
        for gold_hyp in hypotheses:
            student.add_hypothesis(gold_hyp)
        student.link_gold_edges()
        no_verdict = hint(board, gold_path)
        assert no_verdict.gap is Gap.NO_VERDICT and no_verdict.text.startswith("H1 has")
        for gold_hyp in hypotheses:
            student.verdict(gold_hyp, "supported")  # accuses everybody
        assert hint(board, gold_path).gap is Gap.WRONG_VERDICT
    with Board.open(":memory:") as board:
        gold_board(board, gold)
        done = hint(board, gold_path)
        assert (done.text, done.gap, done.level, done.used) == (NOTHING_LEFT, None, None, 0)


def test_one_query_for_several_clues_is_hinted_to_be_split(easy: tuple[Gold, Path]) -> None:
    gold, gold_path = easy
    murderer = f"H{gold.murderers[0]['id']}"
    facts = [e["evidence"] for e in gold.graph["edges"] if e["hypothesis"] == murderer]
    nodes = {e["id"]: e for e in gold.graph["evidence"]}
    row = [cell for fact in facts for cell in nodes[fact]["rows"][0]]
    with Board.open(":memory:") as board:
        student = StudentBoard(board, gold)
        student.add_hypothesis(murderer)
        profile = board.add_evidence("SELECT everything", pd.DataFrame(
            [row], columns=[f"c{i}" for i in range(len(row))]), description="profile",
            author_role="human", author="student", investigation_id=student.investigation.id)
        board.link(profile.id, "H1", "supports", "all clues", actor="student")
        found = needs(assess(board, gold_path))
    bundled = [n for n in found if n.gap is Gap.BUNDLED_EVIDENCE]
    assert len(bundled) == len(facts) - 1
    assert all(n.evidence == profile.id and n.hypothesis == "H1" for n in bundled)
    assert "own query" in hint_text(bundled[0], HintLevel.TABLE)


# --- no hint gives the answer away: all 50 standard cases, every stage, every level ----

def _forbidden(gold: Gold) -> set[str]:
    """Names and ids of everybody in the gold, every gold cell, every clue value."""
    people = [*gold.suspects, *gold.murderers, *gold.witnesses, gold.victim]
    words = {str(p["name"]) for p in people} | {str(p["id"]) for p in people}
    words |= {str(c) for e in gold.graph["evidence"] for row in e["rows"] for c in row
              if c is not None}
    words |= {str(v) for clue in gold.clues for v in clue["params"].values()}
    return {w.casefold() for w in words if w.strip()}


def _leaks(text: str, forbidden: set[str]) -> list[str]:
    folded = text.casefold()
    return [w for w in forbidden
            if re.search(rf"(?<![\w.]){re.escape(w)}(?![\w.])", folded)]


def _stages(gold: Gold) -> Iterator[Board]:
    """The same case at every stage of an investigation (in-memory boards, left to the
    garbage collector: a stage goes on with the board of the one before)."""
    hypotheses = [h["id"] for h in gold.graph["hypotheses"]]
    context = [e["id"] for e in gold.graph["evidence"]
               if e["id"] not in {edge["evidence"] for edge in gold.graph["edges"]}]

    def fresh() -> tuple[Board, StudentBoard]:
        board = Board.open(":memory:")
        return board, StudentBoard(board, gold)

    board, _ = fresh()
    yield board                                           # nothing yet
    board, student = fresh()
    student.add_evidence(context[0])
    yield board                                           # the report
    for node in context:
        student.add_evidence(node)
    student.add_hypothesis(hypotheses[0])
    yield board                                           # witnesses, one suspect
    for gold_hyp in hypotheses[1:]:
        student.add_hypothesis(gold_hyp)
    yield board                                           # every suspect, no evidence
    for edge in gold.graph["edges"]:
        student.add_evidence(edge["evidence"])
    yield board                                           # evidence, unlinked
    student.link_gold_edges(flip=True)
    yield board                                           # every stance wrong
    board, student = fresh()
    for gold_hyp in hypotheses:
        student.add_hypothesis(gold_hyp)
    student.link_gold_edges()
    yield board                                           # no verdicts
    for gold_hyp in hypotheses:
        student.verdict(gold_hyp, "supported")
    yield board                                           # everybody accused


def test_hints_never_name_a_person_or_a_value_of_the_gold_over_the_standard_cases(
        tmp_path: Path) -> None:
    tiers = standard_tiers(50)
    seen_gaps: set[Gap] = set()
    for index, tier in enumerate(tiers):
        case = generate_case(0, index, tier)
        gold = case.gold
        forbidden = _forbidden(gold)
        sources = {node.source for node in case_map(gold).nodes.values()}
        assert Source.OTHER not in sources, gold.case_id  # every gold node is understood
        people = tmp_path / f"{gold.case_id}.duckdb"  # the case's people, nothing else
        with duckdb.connect(str(people)) as con:
            con.register("people_arrow", case.tables["person"])
            con.execute("CREATE TABLE person AS SELECT * FROM people_arrow")
        for stage, board in enumerate(_stages(gold)):
            pending = needs(assess(board, gold, database=people))
            seen_gaps |= {n.gap for n in pending}
            texts = [hint_text(n, level) for n in pending for level in HintLevel]
            if stage == 3:  # and through hint() itself, once per case
                texts.append(hint(board, gold, database=people).text)
            for text in texts:
                assert not _leaks(text, forbidden), (gold.case_id, text, _leaks(
                    text, forbidden))
    assert seen_gaps == set(Gap) - {Gap.BUNDLED_EVIDENCE}  # bundling: its own test
