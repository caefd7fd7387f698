"""The benchmark harness: runner, adapter, offline policies and tables (offline, real SQL)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.__main__ import main
from benchmark.runner import RunConfig, RunSummary, result_path, run_benchmark
from benchmark.tables import (
    ROLE_TABLE_TITLE,
    TABLE1_TITLE,
    TABLE2_HEADER,
    TABLE2_TITLE,
    render,
)
from d2_notebook.board import Board
from d2_notebook.datasets.sql_city import generate_case, load_gold, write_case
from d2_notebook.teaching.board_answer import PeopleIndex, board_answer, named_person

ROOT = Path(__file__).resolve().parents[1]
EASY, HARD = "sqlcity-s3-000", "sqlcity-s3-001"


@pytest.fixture(scope="module")
def cases_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small cases: an easy one (1 murderer) and a hard one (2 murderers)."""
    out = tmp_path_factory.mktemp("cases")
    write_case(generate_case(3, 0, "easy"), out)
    write_case(generate_case(3, 1, "hard"), out)
    return out


@pytest.fixture(scope="module")
def oracle_run(cases_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[
        RunConfig, RunSummary]:
    """The oracle on both cases with three variants."""
    config = RunConfig(cases_dir=cases_dir, out=tmp_path_factory.mktemp("oracle"),
                       variants=["full", "no_reporter", "react_sql"], policy="oracle", jobs=4)
    return config, asyncio.run(run_benchmark(config))


def _scores(summary: RunSummary, variant: str) -> list[dict]:
    return [r["scores"] for r in summary.records if r["variant"] == variant]


def test_oracle_scores_full_marks_on_the_full_team(oracle_run: tuple) -> None:
    _, summary = oracle_run
    assert (summary.ran, summary.skipped, summary.failed) == (6, 0, 0)
    for s in _scores(summary, "full"):
        assert s["correctness"] == 1.0 and s["completeness"] == 1.0
        assert s["verifiability"] >= 0.9
    # The team without a reporter still finds and analyses everyone.
    for s in _scores(summary, "no_reporter"):
        assert s["correctness"] == 1.0 and s["completeness"] == 1.0


def test_react_sql_graph_is_what_its_answer_states(oracle_run: tuple) -> None:
    _, summary = oracle_run
    for record in (r for r in summary.records if r["variant"] == "react_sql"):
        gold = load_gold(_gold_path(oracle_run, record["case_id"]))
        assert set(record["accused"]) == {str(m["id"]) for m in gold.murderers}
        assert record["scores"]["correctness"] == 1.0
        assert record["scores"]["completeness"] == 1.0
        # The oracle baseline states which query bears on whom: those are its edges.
        assert record["scores"]["verifiability"] == 1.0
        assert record["scores"]["evidence_f1"] > 0.5  # its queries are evidence nodes


def test_react_sql_without_stated_links_has_no_edges() -> None:
    from types import SimpleNamespace

    import pandas as pd

    from benchmark.adapter import react_answer

    query = SimpleNamespace(sql="SELECT 1", frame=pd.DataFrame({"x": [1]}))
    result = SimpleNamespace(answer={"answers": ["Ann Lee"], "candidates_considered": ["Bo Li"]},
                             queries=[query])
    answer = react_answer(result, PeopleIndex([("1", "Ann Lee"), ("2", "Bo Li")]))
    assert answer.edges == [] and [e.id for e in answer.evidence] == ["Q1"]
    assert [h.suspect for h in answer.hypotheses] == ["1", "2"]
    assert answer.accused == {"1"}


def test_result_json_shape(oracle_run: tuple) -> None:
    config, _ = oracle_run
    record = json.loads(result_path(config.out, HARD, "full").read_text())
    assert record["complete"] is True and record["state"] == "finished"
    assert record["tier"] == "hard" and record["policy"] == "oracle"
    assert set(record["scores"]) >= {"correctness", "completeness", "verifiability"}
    assert record["usage"]["calls"] > 0 and record["seconds"] > 0
    assert (config.out / record["board"]).is_file()


def test_resume_skips_finished_results(oracle_run: tuple) -> None:
    config, _ = oracle_run
    again = asyncio.run(run_benchmark(config))
    assert (again.ran, again.skipped) == (0, 6)
    result_path(config.out, EASY, "react_sql").unlink()  # lost
    result_path(config.out, EASY, "full").write_text('{"complete": false}')  # interrupted
    again = asyncio.run(run_benchmark(config))
    assert (again.ran, again.skipped, again.failed) == (2, 4, 0)
    assert len(again.scores()) == 6


def test_adapter_reads_the_real_board(oracle_run: tuple) -> None:
    config, _ = oracle_run
    gold = load_gold(_gold_path(oracle_run, HARD))
    people = PeopleIndex.from_database(config.cases_dir / f"{HARD}.duckdb")
    with Board.open(config.out / "boards" / f"{HARD}--full.d2board") as board:
        answer = board_answer(board, board.list_investigations()[-1].id, people)
    assert answer.accused == {str(m["id"]) for m in gold.murderers}
    assert {c.suspect for c in answer.suspects_considered} == {str(s["id"]) for s in
                                                               gold.suspects}
    assert all(h.suspect for h in answer.hypotheses)
    assert "E1" not in {e.id for e in answer.evidence}  # marked redundant by the reporter
    assert all(row and isinstance(row, tuple) for e in answer.evidence for row in e.rows)


def test_people_index_matches_names_and_ids() -> None:
    people = PeopleIndex([(1, "Ann Lee"), (2, "Ann Leeds"), (3, "Bo Day")])
    assert people.person("ANN  LEEDS did it") == "2"  # longest name, case/space-insensitive
    assert people.person("Ann Lee, not Bo Day") == "1"  # leftmost
    assert people.person("Person 3 is the murderer") == "3"
    assert people.person("person 99 or Annie Leek") is None


def test_a_statement_of_absence_names_nobody() -> None:
    """Supporting "No person meets all of <witness>'s clues" accuses no one."""
    people = PeopleIndex([(1, "Ann Lee"), (2, "Bo Day")])
    for absent in ("No person meets all six of Ann Lee's clues",
                   "None of Ann Lee's leads holds", "No one matches Bo Day's account",
                   "Neither Ann Lee nor Bo Day lied", "  no interview names Ann Lee",
                   # the exception is a thing of Bo Day's (his interview), not Bo Day
                   "No testimony points to a second killer apart from Bo Day's",
                   "No interview, apart from Bo Day’s, names anyone",
                   "Nobody but the cook saw Ann Lee",
                   "No one except Bo Days' friends lied"):
        assert named_person(absent, people) is None, absent
    for named in ("Ann Lee is the murderer", "Notably, Bo Day lied about the gym",
                  "Nora's neighbour Bo Day did it", "The killer is person 1",
                  "Nobody but Bo Day had the key", "None other than Ann Lee killed him",
                  "No one except Bo Day could have done it",
                  "Nobody but person 2 had the key", "None other than Ann Lee, the cook"):
        assert named_person(named, people) is not None, named


def test_greedy_stops_at_the_first_culprit(cases_dir: Path, tmp_path: Path) -> None:
    config = RunConfig(cases_dir=cases_dir, out=tmp_path, variants=["full"], policy="greedy")
    summary = asyncio.run(run_benchmark(config))
    by_case = {r["case_id"]: r["scores"] for r in summary.records}
    assert by_case[EASY]["correctness"] == 1.0
    assert by_case[HARD]["correctness"] < 1.0  # missed the second murderer
    assert all(s["completeness"] < 0.6 for s in by_case.values())


def test_every_variant_runs_the_oracle(cases_dir: Path, tmp_path: Path) -> None:
    config = RunConfig(cases_dir=cases_dir, out=tmp_path, cases=EASY, policy="oracle",
                       variants=["no_judge", "merged_planner", "single_agent_board"])
    summary = asyncio.run(run_benchmark(config))
    assert summary.failed == 0 and len(summary.records) == 3
    for record in summary.records:
        assert record["scores"]["correctness"] == 1.0, record["variant"]
        assert record["scores"]["completeness"] == 1.0, record["variant"]
        assert record["scores"]["verifiability"] >= 0.9, record["variant"]


def test_tables_have_the_papers_headers(oracle_run: tuple) -> None:
    _, summary = oracle_run
    text = render(summary.records)
    assert TABLE1_TITLE in text and TABLE2_TITLE in text
    for word in ("easy", "hard", "all", "full", "react_sql", *TABLE2_HEADER):
        assert word in text
    assert render([]) == "no complete results yet"
    roles = text.split(ROLE_TABLE_TITLE, 1)[1]
    for role in ("hypothesizer", "orchestrator", "collector", "judge", "reporter", "react"):
        assert role in roles
    full = next(r for r in summary.records if r["variant"] == "full")
    by_role = full["usage"]["by_role"]
    assert sum(u["calls"] for u in by_role.values()) == full["usage"]["calls"]


def test_cli_runs_one_case_offline(cases_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "benchmark", "run", "--cases-dir", str(cases_dir),
         "--cases", EASY, "--variants", "full", "--policy", "oracle", "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "1 investigations run" in done.stdout and TABLE2_TITLE in done.stdout
    assert json.loads(result_path(out, EASY, "full").read_text())["complete"]


def test_cli_without_model_names_the_fix(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    assert main(["run", "--cases-dir", str(tmp_path), "--out", str(tmp_path)]) == 2
    assert "--model" in capsys.readouterr().err


def test_unconfigured_model_stops_the_run_at_once(cases_dir: Path, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--cases-dir", str(cases_dir), "--out", str(tmp_path), "--variants",
            "full", "--model", "anthropic:claude-sonnet-4-5"]
    assert main(argv) == 2
    assert "error:" in capsys.readouterr().err


def _gold_path(oracle_run: tuple, case_id: str) -> Path:
    return oracle_run[0].cases_dir / f"{case_id}.json"


def test_results_of_another_policy_are_not_resumed(cases_dir: Path, tmp_path: Path) -> None:
    config = RunConfig(cases_dir=cases_dir, out=tmp_path, cases=EASY, policy="oracle",
                       variants=["react_sql"])
    asyncio.run(run_benchmark(config))
    other = RunConfig(cases_dir=cases_dir, out=tmp_path, cases=EASY, policy="greedy",
                      variants=["react_sql"])
    with pytest.raises(ValueError, match=r"another configuration.*pass a fresh --out"):
        asyncio.run(run_benchmark(other))
    assert asyncio.run(run_benchmark(config)).skipped == 1  # the same one resumes


def test_the_economy_preset_gives_the_team_its_models_by_role(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """SQL City cases run at the economy preset like InsightBench tasks (a driver of
    its own was needed before), each role's model with the run's timeout."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-never-sent")
    config = RunConfig(cases_dir=Path("."), out=Path("."), model="anthropic:claude-sonnet-4-6",
                       preset="economy", timeout=900.0, options={"max_usd": 1.0})
    options = config.team_options()
    assert options["max_usd"] == 1.0
    models = options["models"]
    assert {"collector", "judge", "orchestrator"} <= set(models)
    assert all("haiku" in m.name for m in models.values())
    assert RunConfig(cases_dir=Path("."), out=Path("."), policy="oracle").team_options() == {}


def test_a_preset_without_a_model_names_the_fix(capsys: pytest.CaptureFixture[str],
                                                tmp_path: Path) -> None:
    assert main(["run", "--cases-dir", str(tmp_path), "--out", str(tmp_path), "--policy",
                 "oracle", "--preset", "economy"]) == 2
    assert "--preset economy needs a --model" in capsys.readouterr().err
