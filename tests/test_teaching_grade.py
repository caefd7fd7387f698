"""Grading a board of a SQL City case: the benchmark's figures, with a breakdown."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path

import duckdb
import pytest

from benchmark.runner import RunConfig, run_benchmark
from d2_notebook.board import Board
from d2_notebook.datasets.sql_city import generate_case, load_gold, write_case
from d2_notebook.errors import BoardError
from d2_notebook.teaching import (
    CaseFileError,
    LinkOutcome,
    Outcome,
    compare,
    grade,
    new_case,
    read_gold,
)
from d2_notebook.teaching.cases import case_people
from tests.teaching_boards import StudentBoard, gold_board

HARD = "sqlcity-s3-001"  # two murderers, look-alikes and decoys


@pytest.fixture(scope="module")
def case_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hard case written to disk: <id>.duckdb, <id>.json, <id>.txt."""
    out = tmp_path_factory.mktemp("case")
    write_case(generate_case(3, 1, "hard"), out)
    return out


@pytest.fixture(scope="module")
def gold_path(case_dir: Path) -> Path:
    return case_dir / f"{HARD}.json"


def test_the_gold_graph_grades_one_one_one(case_dir: Path, gold_path: Path,
                                           tmp_path: Path) -> None:
    gold = load_gold(gold_path)
    with Board.open(tmp_path / "gold.d2board") as board:
        gold_board(board, gold, case_dir / f"{HARD}.duckdb")
        result = grade(board, gold_path)
    assert (result.correctness, result.completeness, result.verifiability) == (1.0, 1.0, 1.0)
    assert result.score.evidence_f1 == 1.0 and result.score.hypothesis_f1 == 1.0
    assert {s.outcome for s in result.suspects} == {Outcome.CAUGHT, Outcome.CLEARED}
    assert [s.outcome for s in result.suspects].count(Outcome.CAUGHT) == 2
    assert all(link.outcome is LinkOutcome.RIGHT for link in result.links)
    assert all(f.is_established for f in result.context)
    assert result.wrong_accusations() == [] and result.missed_murderers() == []


@pytest.mark.parametrize("policy", ["oracle", "greedy"])
def test_grade_equals_the_benchmark_on_the_policies_boards(case_dir: Path, gold_path: Path,
                                                           tmp_path: Path, policy: str) -> None:
    config = RunConfig(cases_dir=case_dir, out=tmp_path, variants=["full"], cases=HARD,
                       policy=policy, jobs=1)
    summary = asyncio.run(run_benchmark(config))
    (record,) = summary.records
    result = grade(tmp_path / record["board"], gold_path)
    ours = dataclasses.asdict(result.score)
    theirs = dict(record["scores"])
    assert ours.pop("system") == "board" and theirs.pop("system") == "full"
    assert ours == theirs  # one implementation: the very same numbers
    if policy == "greedy":  # it accuses one murderer on one piece of evidence
        assert result.correctness < 1.0 and result.completeness < 0.5
        assert len(result.missed_murderers()) == 1
        assert len(result.not_analysed()) == len(result.suspects) - 1


def test_the_breakdown_names_a_wrong_accusation_and_a_missing_suspect(
        case_dir: Path, gold_path: Path, tmp_path: Path) -> None:
    gold = load_gold(gold_path)
    lookalike = next(s for s in gold.suspects if s["role"] == "lookalike")
    murderer = gold.murderers[0]
    missing = next(s for s in gold.suspects if s["role"] != "murderer" and s is not lookalike)
    with Board.open(tmp_path / "student.d2board") as board:
        student = StudentBoard(board, gold, case_dir / f"{HARD}.duckdb")
        for suspect in gold.suspects:
            if suspect is not missing:
                student.add_hypothesis(f"H{suspect['id']}")
        student.link_gold_edges()
        for gold_hyp in student.hypothesis_of:
            student.verdict(gold_hyp, "supported" if gold_hyp == f"H{lookalike['id']}"
                            else "contradicted")
    result = grade(tmp_path / "student.d2board", gold_path)
    by_id = {s.id: s for s in result.suspects}
    assert by_id[str(lookalike["id"])].outcome is Outcome.WRONGLY_ACCUSED
    assert by_id[str(murderer["id"])].outcome is Outcome.MISSED
    assert by_id[str(missing["id"])].outcome is Outcome.NOT_ANALYSED
    assert not by_id[str(missing["id"])].analysed and by_id[str(missing["id"])].hypotheses == ()
    assert result.wrong_accusations() == [f"{lookalike['name']} ({lookalike['id']})"]
    assert f"{missing['name']} ({missing['id']})" in result.not_analysed()
    assert result.correctness == 0.0
    assert result.completeness == pytest.approx((len(gold.suspects) - 1) / len(gold.suspects))
    for shown in (result.text(), result._repr_html_()):
        assert lookalike["name"] in shown and missing["name"] in shown
        assert "wrongly accused" in shown and "not analysed" in shown


def test_an_accusation_outside_the_suspects_and_wrong_stances(
        case_dir: Path, gold_path: Path, tmp_path: Path) -> None:
    gold = load_gold(gold_path)
    database = case_dir / f"{HARD}.duckdb"
    cast = {s["id"] for s in [*gold.suspects, *gold.witnesses]} | {gold.victim["id"]}
    with duckdb.connect(str(database), read_only=True) as con:
        _, name = next(row for row in con.execute(
            "SELECT id, name FROM person ORDER BY id").fetchall() if row[0] not in cast)
    with Board.open(tmp_path / "student.d2board") as board:
        student = StudentBoard(board, gold, database)
        first = gold.graph["hypotheses"][0]["id"]
        student.add_hypothesis(first)
        student.link_gold_edges(flip=True, only={first})
        stranger = board.add_hypothesis(f"{name} did it", author_role="human",
                                        author="student",
                                        investigation_id=student.investigation.id)
        board.add_verdict(stranger.id, "supported", 0.6, "a hunch", [], author="student")
        result = grade(board, gold_path)
    assert [a.hypothesis_id for a in result.accused_outside] == [stranger.id]
    assert f"{stranger.id}: {name} did it" in result.wrong_accusations()
    assert result.score.precision == 0.0
    outcomes = {link.outcome for link in result.links}
    assert LinkOutcome.WRONG_STANCE in outcomes and LinkOutcome.RIGHT not in outcomes


def test_grading_a_board_file_leaves_it_as_it_was(gold_path: Path, tmp_path: Path) -> None:
    path = tmp_path / "student.d2board"
    with Board.open(path) as board:
        StudentBoard(board, load_gold(gold_path)).add_hypothesis(
            load_gold(gold_path).graph["hypotheses"][0]["id"])
    before = path.read_bytes()
    result = grade(path, gold_path)
    assert path.read_bytes() == before
    assert result.completeness == 0.0 and "not analysed" in str(result)


def test_bad_boards_and_gold_files_get_one_line_errors(gold_path: Path,
                                                       tmp_path: Path) -> None:
    with pytest.raises(BoardError, match=r"no board at .*pass the path of a \.d2board"):
        grade(tmp_path / "missing.d2board", gold_path)
    with Board.open(tmp_path / "b.d2board"):
        pass
    (tmp_path / "notjson.json").write_text("{oops", encoding="utf-8")
    (tmp_path / "other.json").write_text(json.dumps({"case_id": "x"}), encoding="utf-8")
    for bad, reason in [(tmp_path / "absent.json", "not found"),
                        (tmp_path, "a folder"),
                        (tmp_path / "notjson.json", "not JSON"),
                        (tmp_path / "other.json", "not a SQL City gold file")]:
        with pytest.raises(CaseFileError, match=reason):
            grade(tmp_path / "b.d2board", bad)
    with pytest.raises(CaseFileError, match="no case database"):
        grade(tmp_path / "b.d2board", gold_path, database=tmp_path / "none.duckdb")


def test_the_cases_people_rebuilt_from_the_seed_match_its_database(case_dir: Path,
                                                                   gold_path: Path) -> None:
    gold = read_gold(gold_path)
    rebuilt = case_people(gold)
    assert rebuilt.by_name == case_people(gold, case_dir / f"{HARD}.duckdb").by_name
    edited = dataclasses.replace(gold, suspects=[{"id": 1, "name": "Nobody Real"}])
    with pytest.raises(CaseFileError, match="pass the case database"):
        case_people(edited)


def test_side_by_side_grades(case_dir: Path, gold_path: Path, tmp_path: Path) -> None:
    gold = load_gold(gold_path)
    with Board.open(tmp_path / "gold.d2board") as board:
        gold_board(board, gold, case_dir / f"{HARD}.duckdb")
    with Board.open(tmp_path / "empty.d2board") as board:
        StudentBoard(board, gold)
    table = compare({"teacher": grade(tmp_path / "gold.d2board", gold_path),
                     "student": grade(tmp_path / "empty.d2board", gold_path)})
    rows = {row[0]: row[1:] for row in table.rows()}
    assert rows["correctness"] == ["1.00", "0.00"]
    assert rows["suspects analysed"] == [f"{len(gold.suspects)} of {len(gold.suspects)}",
                                         f"0 of {len(gold.suspects)}"]
    murderer = gold.murderers[0]["name"]
    assert rows[f"{murderer} (murderer)"] == ["caught", "missed"]
    assert "teacher" in str(table) and "<table" in table._repr_html_()
    other = gold_path.parent / "other"
    files = new_case("easy", 3, other)
    with pytest.raises(ValueError, match="one case"):
        compare({"a": grade(tmp_path / "gold.d2board", gold_path),
                 "b": grade(tmp_path / "empty.d2board", files.gold)})


def test_new_case_keeps_the_gold_apart_when_asked(tmp_path: Path) -> None:
    files = new_case("medium", 5, tmp_path / "handout", gold_out=tmp_path / "keep" / "c.json")
    assert sorted(p.name for p in (tmp_path / "handout").iterdir()) == [
        "sqlcity-s5-000.duckdb", "sqlcity-s5-000.txt"]
    assert files.gold == tmp_path / "keep" / "c.json" and read_gold(files.gold).tier == "medium"
    assert files.handout() == (files.database, files.description)
    with pytest.raises(CaseFileError, match="inside"):
        new_case("easy", 5, tmp_path / "handout", gold_out=tmp_path / "handout" / "g.json")
    with pytest.raises(CaseFileError, match="unknown tier"):
        new_case("impossible", 5, tmp_path / "x")
