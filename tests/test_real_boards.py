"""The SQL City metrics, calibrated on boards recorded with a real model (shared/real-boards).

Four standard cases, each investigated by the team (``full``) and the single agent
(``react_sql``). The cases are regenerated from the ids in the boards' result JSONs; the
boards are re-scored offline (``react_sql`` by replaying its recorded calls).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from benchmark.rescore import answer_from_board
from d2_notebook.board import Board
from d2_notebook.datasets.sql_city import generate_case, load_gold, write_case
from d2_notebook.teaching.answer import Edge, Evidence, People, SystemAnswer, oracle_answer
from d2_notebook.teaching.board_answer import PeopleIndex
from d2_notebook.teaching.scoring import score_case
from tests.shared_dir import shared_dir


@pytest.fixture(scope="module")
def rescored(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """``{(case, variant): (stored record, gold, answer, new score)}`` for every board."""
    boards = shared_dir("real-boards")
    work = tmp_path_factory.mktemp("real-boards")
    out = {}
    for result in sorted(boards.glob("*.json")):
        record = json.loads(result.read_text())
        seed, index = map(int, re.fullmatch(r"sqlcity-s(\d+)-(\d+)", record["case_id"]).groups())
        db = work / f"{record['case_id']}.duckdb"
        if not db.exists():
            write_case(generate_case(seed, index, record["tier"]), work)
        gold = load_gold(work / f"{record['case_id']}.json")
        assert gold.case_id == record["case_id"]
        board = work / result.with_suffix(".d2board").name
        shutil.copy(result.with_suffix(".d2board"), board)  # the shared copy stays as is
        _, answer = asyncio.run(answer_from_board(board, db, PeopleIndex.from_database(db)))
        with Board.open(board) as opened:  # the report the run wrote, for the text-only check
            record["report"] = opened.list_investigations()[-1].report or ""
        out[(record["case_id"], record["variant"])] = (
            record, gold, answer, score_case(answer, gold, system=record["variant"]))
    assert len(out) == 8
    return out


def test_correctness_is_unchanged_by_the_new_metrics(rescored: dict) -> None:
    for (case, variant), (record, _, _, score) in rescored.items():
        assert score.correctness == pytest.approx(record["scores"]["correctness"]), (case,
                                                                                      variant)


def test_the_teams_audit_graphs_now_earn_verifiability(rescored: dict) -> None:
    team = [s for (_, variant), (_, _, _, s) in rescored.items() if variant == "full"]
    # Under the 0.5-cliff metrics these four boards scored 0.00-0.02; each link now earns
    # at most one gold edge (one-to-one), which holds the team at 0.28-0.38.
    assert all(s.verifiability >= 0.25 for s in team), [s.verifiability for s in team]
    assert sum(s.verifiability for s in team) / len(team) >= 0.3
    assert all(s.edge_recall >= 0.2 for s in team)


def _report_only(record: dict, answer: SystemAnswer, gold: object) -> SystemAnswer:
    """The run's recorded report as a text-only agent's output: its claims, no data.

    The report is its one piece of "evidence" (each line a claim, no SQL, no result
    rows), linked to every hypothesis the run formed with the stance of its conclusion
    (supports the accused, contradicts the others), as a text-only agent citing its own
    prose would.
    """
    people = People(gold)
    accused = {people.resolve(a) for a in answer.accused}
    claims = [[line.strip()] for line in record["report"].splitlines() if line.strip()]
    report = Evidence("report", "", claims, record["report"])
    return SystemAnswer(
        accused=answer.accused, suspects_considered=answer.suspects_considered,
        hypotheses=answer.hypotheses, evidence=[report],
        edges=[Edge("report", h.id, "supports" if people.resolve(h.suspect or h.text)
                    in accused else "contradicts") for h in answer.hypotheses])


def test_the_report_text_alone_scores_near_zero(rescored: dict) -> None:
    for (case, variant), (record, gold, answer, score) in rescored.items():
        assert len(record["report"]) > 200, (case, variant)  # a real report, names and all
        text_only = score_case(_report_only(record, answer, gold), gold)
        assert text_only.verifiability <= 0.05, (case, variant, text_only.verifiability)
        assert text_only.correctness == score.correctness  # same conclusions, no data
        assert score.verifiability - text_only.verifiability >= 0.25, (case, variant)


def test_completeness_is_recall_with_extra_suspects_counted_apart(rescored: dict) -> None:
    _, _, _, medium = rescored[("sqlcity-s0-012", "full")]
    # The team analysed every gold suspect and ruled out five more people.
    assert medium.completeness == 1.0 and medium.extra_suspects == 5
    assert medium.completeness_f1 == pytest.approx(0.615, abs=0.01)  # the paper's F1
    for (case, variant), (record, _, _, score) in rescored.items():
        assert score.completeness >= record["scores"]["completeness"] - 1e-9, (case, variant)


def test_an_audit_graph_establishing_every_gold_fact_scores_high_whatever_its_sql(
        rescored: dict) -> None:
    shuffle = random.Random(0)
    for (case, variant), (_, gold, _, _) in rescored.items():
        if variant != "full":
            continue
        answer = oracle_answer(gold)
        rewritten = []
        for item in answer.evidence:
            rows = [[*row, "an extra column", 42] for row in item.rows]
            for row in rows:
                shuffle.shuffle(row)
            rewritten.append(Evidence(item.id, f"WITH x AS (SELECT 1) -- {case}", rows,
                                      "described in other words"))
        score = score_case(replace(answer, evidence=rewritten), gold)
        assert score.verifiability >= 0.99, case
        assert score.evidence_f1 >= 0.99, case


def test_a_team_board_of_the_round_based_loop_is_refused_for_replay_and_still_scores(
        rescored: dict, tmp_path: Path) -> None:
    """The real team boards were recorded by the round-based loop, whose orchestrator
    dispatched hypotheses: the streaming scheduler asks other questions, so replay
    refuses them before running any query, with the reason — and re-scoring reads the
    board as it is, with the scores it had."""
    from d2_notebook.detective import investigate
    from d2_notebook.errors import ReplayDivergenceError
    from d2_notebook.teaching.board_answer import board_answer

    case = "sqlcity-s0-038"
    _, gold, _, recorded = rescored[(case, "full")]
    db = tmp_path / f"{case}.duckdb"
    write_case(generate_case(0, 38, gold.tier), tmp_path)
    source = tmp_path / "recorded.d2board"
    shutil.copy(shared_dir("real-boards", f"{case}--full.d2board"), source)
    with Board.open(source) as board:
        with pytest.raises(ReplayDivergenceError, match=r"round-based loop.*record it again"):
            asyncio.run(investigate(db, None, replay=board, board=tmp_path / "again.d2board"))
        answer = board_answer(board, board.list_investigations()[-1].id,
                              PeopleIndex.from_database(db))
    assert not (tmp_path / "again.d2board").exists() or not Board.open(
        tmp_path / "again.d2board").list_investigations()
    assert score_case(answer, gold, system="full") == recorded


def test_the_rescore_command_prints_the_tables_and_leaves_the_boards_alone(
        tmp_path: Path) -> None:
    import hashlib
    import subprocess
    import sys

    from tests.shared_dir import REPO

    boards = shared_dir("real-boards")
    digests = {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
               for p in boards.glob("*.d2board")}
    done = subprocess.run([sys.executable, "-m", "benchmark", "rescore", "--boards",
                           str(boards), "--cases-dir", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "sqlcity-s0-012--full.d2board: correctness 1.00 completeness 1.00" in done.stdout
    assert "Table 1." in done.stdout and "compl. F1" in done.stdout
    assert digests == {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                       for p in boards.glob("*.d2board")}
    empty = subprocess.run([sys.executable, "-m", "benchmark", "rescore", "--boards",
                            str(tmp_path / "none")], cwd=REPO, capture_output=True, text=True)
    assert empty.returncode == 2 and "no boards" in empty.stderr
