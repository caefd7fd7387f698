"""`d2 board show|export|import` on boards built in the test."""

from __future__ import annotations

import json
import subprocess
import sys

import pandas as pd
from click.testing import CliRunner

from d2_notebook.board import Board
from d2_notebook.cli import main


def _build(path) -> None:
    with Board.open(path) as board:
        inv = board.start_investigation("Which treatment is most effective for older patients?")
        board.add_hypothesis("Drug A improves outcomes for patients aged 65+",
                             investigation_id=inv.id)
        board.add_hypothesis("The effect of Drug A depends on comorbidities",
                             investigation_id=inv.id)
        board.add_hypothesis("Drug A helps older patients with asthma", parent_id="H2",
                             investigation_id=inv.id)
        e1 = board.add_evidence("SELECT drug, avg(died) FROM t GROUP BY drug",
                                pd.DataFrame({"drug": ["A", "B"], "rate": [0.2, 0.21]}),
                                description="Death rate by drug, age 65+")
        e2 = board.add_evidence("SELECT ...", pd.DataFrame({"n": range(3)}),
                                description="Asthma subgroup death rates")
        board.add_evidence("SELECT 1", pd.DataFrame({"n": [1]}), description="Schema probe")
        board.link(e1.id, "H1", "contradicts", "same death rate", actor="collector-1")
        board.link(e2.id, "H3", "supports", "lower with Drug A", actor="collector-2")
        board.add_verdict("H1", "contradicted", 0.8, "treated and untreated die alike", [e1.id],
                          author="judge")
        board.mark_redundant("E3", "exploration only", actor="reporter")


def test_show_prints_a_legible_tree(tmp_path):
    path = tmp_path / "covid.d2board"
    _build(path)
    result = CliRunner().invoke(main, ["board", "show", str(path)])
    assert result.exit_code == 0, result.output
    out = result.output
    print(out)
    assert "Investigation I1 [running]: Which treatment is most effective" in out
    assert "✘ H1 [contradicted 0.80] Drug A improves outcomes" in out
    assert "verdict: treated and untreated die alike [E1]" in out
    assert "└─ E1 contradicts Death rate by drug, age 65+ (2 rows) — same death rate" in out
    # The refinement sits under its parent, indented.
    assert "\n    · H3 [proposed] Drug A helps older patients with asthma" in out
    assert "E3 Schema probe (1 row) (redundant)" in out
    hidden = CliRunner().invoke(main, ["board", "show", "--hide-redundant", str(path)])
    assert "Schema probe" not in hidden.output


def test_export_and_import_round_trip(tmp_path):
    path = tmp_path / "b.d2board"
    _build(path)
    exported = CliRunner().invoke(main, ["board", "export", str(path), "--json"])
    assert exported.exit_code == 0
    document = json.loads(exported.output)
    assert document["format"] == "d2-board" and len(document["evidence"]) == 3
    json_path = tmp_path / "b.json"
    CliRunner().invoke(main, ["board", "export", str(path), "--json", "-o", str(json_path)])
    imported = CliRunner().invoke(main, ["board", "import", str(json_path),
                                         str(tmp_path / "copy.d2board")])
    assert imported.exit_code == 0, imported.output
    with Board.open(tmp_path / "copy.d2board") as copy, Board.open(path) as original:
        assert copy.to_json() == original.to_json()


def test_missing_board_is_a_one_line_error_not_a_traceback(tmp_path):
    missing = tmp_path / "nope.d2board"
    result = subprocess.run([sys.executable, "-m", "d2_notebook", "board", "show", str(missing)],
                            capture_output=True, text=True)
    assert result.returncode == 1
    expected = f"Error: no board at '{missing}'; pass the path of a .d2board file"
    assert result.stderr.strip() == expected
    assert not missing.exists(), "show must not create a board"


def test_import_into_a_busy_board_names_the_fix(tmp_path):
    path = tmp_path / "b.d2board"
    _build(path)
    json_path = tmp_path / "b.json"
    json_path.write_text(Board.open(path).to_json())
    result = CliRunner().invoke(main, ["board", "import", str(json_path), str(path)])
    assert result.exit_code == 1
    assert "import into a new path" in result.output


def test_import_of_a_non_json_file_is_one_line_and_leaves_no_board(tmp_path):
    json_path = tmp_path / "notes.txt"
    json_path.write_text("this is not an export\n")
    target = tmp_path / "copy.d2board"
    result = CliRunner().invoke(main, ["board", "import", str(json_path), str(target)])
    assert result.exit_code == 1
    assert result.output.startswith("Error: not JSON: ")
    assert len(result.output.strip().splitlines()) == 1
    assert not target.exists()


def test_import_with_a_dangling_link_is_one_line_and_can_be_retried(tmp_path):
    path = tmp_path / "b.d2board"
    _build(path)
    with Board.open(path) as original:
        document = json.loads(original.to_json())
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(document))
    bad.write_text(json.dumps(dict(document, evidence=document["evidence"][1:])))  # drop E1
    target = tmp_path / "copy.d2board"
    result = CliRunner().invoke(main, ["board", "import", str(bad), str(target)])
    assert result.exit_code == 1
    assert len(result.output.strip().splitlines()) == 1
    assert "links record 1 refers to missing evidence 'E1'" in result.output
    assert not target.exists()
    retried = CliRunner().invoke(main, ["board", "import", str(good), str(target)])
    assert retried.exit_code == 0, retried.output
    with Board.open(target) as copy:
        assert copy.counts()["links"] == 2 and copy.counts()["evidence"] == 3
