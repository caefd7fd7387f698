"""``d2 case new`` and ``d2 case grade``: a class's case, and its boards graded at once."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from d2_notebook.board import Board
from d2_notebook.cli import main
from d2_notebook.teaching import read_gold
from tests.teaching_boards import StudentBoard, gold_board


@pytest.fixture(scope="module")
def classroom(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A case written by ``d2 case new`` with the gold kept apart, and three boards."""
    root = tmp_path_factory.mktemp("class")
    result = CliRunner().invoke(main, ["case", "new", "--tier", "easy", "--seed", "4",
                                       "--out", str(root / "handout"),
                                       "--gold-out", str(root / "answers" / "case.json")])
    assert result.exit_code == 0, result.output
    gold_path = root / "answers" / "case.json"
    gold = read_gold(gold_path)
    database = root / "handout" / f"{gold.case_id}.duckdb"
    boards = root / "boards"
    (boards / "bob").mkdir(parents=True)
    with Board.open(boards / "alice.d2board") as board:
        gold_board(board, gold, database)
    with Board.open(boards / "bob" / "student.d2board") as board:
        student = StudentBoard(board, gold, database)
        student.add_hypothesis(f"H{gold.murderers[0]['id']}")
        student.link_gold_edges()
        student.gold_verdicts()
    with Board.open(boards / "carol.d2board") as board:
        StudentBoard(board, gold)
    return {"root": root, "gold": gold_path, "boards": boards, "database": database,
            "handout": root / "handout"}


def test_case_new_keeps_the_gold_out_of_the_students_folder(classroom: dict) -> None:
    handout = sorted(p.suffix for p in classroom["handout"].iterdir())
    assert handout == [".duckdb", ".txt"]
    assert classroom["gold"].is_file()


def test_case_new_says_what_to_hand_out(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["case", "new", "--seed", "2", "--out",
                                       str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "Case sqlcity-s2-000 (medium) written." in result.output
    assert "hand out only the .duckdb and .txt" in result.output  # the gold is in the folder
    assert "A murder happened in SQL City on" in result.output
    inside = CliRunner().invoke(main, ["case", "new", "--seed", "2", "--out", str(tmp_path),
                                       "--gold-out", str(tmp_path / "gold.json")])
    assert inside.exit_code == 1 and "the folder students get" in inside.output
    assert "Traceback" not in inside.output


def test_grade_one_board(classroom: dict) -> None:
    result = CliRunner().invoke(main, ["case", "grade",
                                       str(classroom["boards"] / "alice.d2board"),
                                       str(classroom["gold"]), "--db",
                                       str(classroom["database"])])
    assert result.exit_code == 0, result.output
    assert "correctness    1.00" in result.output and "verifiability  1.00" in result.output


def test_grade_a_folder_writes_one_row_per_board(classroom: dict) -> None:
    out = classroom["root"] / "grades.csv"
    result = CliRunner().invoke(main, ["case", "grade", "--many", str(classroom["boards"]),
                                       str(classroom["gold"]), "--csv", str(out)])
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [r["board"] for r in rows] == ["alice.d2board", "bob/student.d2board",
                                          "carol.d2board"]
    by_board = {r["board"]: r for r in rows}
    assert by_board["alice.d2board"]["verifiability"] == "1.0"
    assert by_board["bob/student.d2board"]["correctness"] == "1.0"
    assert float(by_board["bob/student.d2board"]["completeness"]) < 1.0
    assert by_board["carol.d2board"]["suspects_analysed"] == "0"
    assert all(r["error"] == "" for r in rows)
    assert "3 board(s) graded into" in result.output
    assert "bob/student.d2board" in result.output  # the table printed too


def test_a_board_that_cannot_be_graded_gets_a_row_with_its_error(classroom: dict,
                                                                tmp_path: Path) -> None:
    boards = tmp_path / "boards"
    boards.mkdir()
    (boards / "broken.d2board").write_text("not a board", encoding="utf-8")
    (boards / "fine.d2board").write_bytes((classroom["boards"] / "alice.d2board").read_bytes())
    out = tmp_path / "grades.csv"
    result = CliRunner().invoke(main, ["case", "grade", "--many", str(boards),
                                       str(classroom["gold"]), "--csv", str(out)])
    assert result.exit_code == 1
    rows = {r["board"]: r for r in csv.DictReader(out.open(encoding="utf-8"))}
    assert rows["fine.d2board"]["correctness"] == "1.0" and rows["fine.d2board"]["error"] == ""
    assert rows["broken.d2board"]["error"] and rows["broken.d2board"]["correctness"] == ""
    assert "1 board(s) could not be graded" in result.output


@pytest.mark.parametrize("args, message", [
    (["{missing}", "{gold}"], "no board at"),
    (["--many", "{missing}", "{gold}"], "boards folder"),
    (["{boards}", "{gold}"], "pass --many"),
    (["--many", "{boards}", "{notgold}"], "not a gold file"),
    (["--many", "{boards}", "{missing}"], "not found"),
    (["--many", "{boards}", "{gold}", "--csv", "{nofolder}"], "does not exist"),
    (["--many", "{boards}", "{gold}", "--csv", "{boards}"], "is a folder"),
])
def test_bad_paths_get_one_line_errors(classroom: dict, tmp_path: Path, args: list[str],
                                       message: str) -> None:
    (tmp_path / "notgold.json").write_text("[1, 2]", encoding="utf-8")
    names = {"missing": tmp_path / "missing", "gold": classroom["gold"],
             "boards": classroom["boards"], "notgold": tmp_path / "notgold.json",
             "nofolder": tmp_path / "nowhere" / "grades.csv"}
    result = CliRunner().invoke(main, ["case", "grade",
                                       *(a.format(**{k: str(v) for k, v in names.items()})
                                         for a in args)])
    assert result.exit_code == 1, result.output
    assert message in result.output and "Traceback" not in result.output
    assert not (tmp_path / "nowhere").exists()


def test_the_installed_command_runs_case_grade(classroom: dict) -> None:
    done = subprocess.run([sys.executable, "-m", "d2_notebook", "case", "grade",
                           str(classroom["boards"] / "carol.d2board"), str(classroom["gold"])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "completeness   0.00" in done.stdout and "not analysed" in done.stdout
