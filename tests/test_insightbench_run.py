"""A whole offline InsightBench run: two dev tasks, the real team under a scripted policy,
through the runner, the scorers, the table and the plot; resuming; scoring boards."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchmark.insightbench.board_scoring import score_boards
from benchmark.insightbench.judge import InsightJudge, JudgeCache
from benchmark.insightbench.runner import InsightRunConfig, run_insightbench
from benchmark.insightbench.tables import table, variant_means
from benchmark.results import load_result, result_path
from d2_notebook.llm import ModelRequest
from d2_notebook.llm.offline import FunctionModel, text
from tests.shared_dir import REPO, shared_dir

TASKS = "flag-1,flag-21"


def _config(tmp_path: Path, **overrides) -> InsightRunConfig:
    fields = {"tasks_dir": shared_dir("insightbench-dev"), "out": tmp_path / "out",
              "variants": ["full", "react_sql"], "tasks": TASKS, "policy": "half", "jobs": 2}
    return InsightRunConfig(**{**fields, **overrides})


def _grading_judge(calls: list[ModelRequest]) -> FunctionModel:
    """A judge that gives 1 when the insight's text is in the report, else 0."""
    def grade(request: ModelRequest):
        calls.append(request)
        prompt = request.messages[0].text
        insight = prompt.split("GROUND-TRUTH INSIGHT:\n", 1)[1].split("\n\n", 1)[0]
        report = prompt.split("<<<REPORT\n", 1)[1]
        return text(json.dumps({"score": 1 if insight in report else 0, "reason": "checked",
                                "contradictions": []}))
    return FunctionModel(grade, name="grading-judge")


def test_two_tasks_run_offline_end_to_end_and_resume(tmp_path: Path) -> None:
    config = _config(tmp_path)
    lines: list[str] = []
    summary = asyncio.run(run_insightbench(config, progress=lines.append))
    assert (summary.ran, summary.failed, summary.skipped) == (4, 0, 0)
    by_key = {(r["task_id"], r["variant"]): r for r in summary.records}
    assert set(by_key) == {(t, v) for t in ("flag-1", "flag-21") for v in ("full", "react_sql")}
    for (task_id, variant), record in by_key.items():
        assert record["state"] == "finished" and record["complete"]
        assert (config.out / record["board"]).is_file()
        assert record["usage"]["calls"] > 0
        per_insight = record["scores"]["insights"]
        # half: flag-1 states 3 of its 6 insights, flag-21 2 of 3; each stated one whole.
        stated = sum(i["proxy"]["rouge1_recall"] == 1.0 for i in per_insight)
        assert stated == {"flag-1": 3, "flag-21": 2}[task_id], (task_id, variant)
    assert len(lines) == 4
    assert (config.out / "databases" / "flag-21.duckdb").is_file()
    means = variant_means(summary.records)
    assert set(means) == {"full", "react_sql"} and means["full"]["n"] == 2
    rendered = table(summary.records)
    assert "proxy recall" in rendered and "Ratio to react_sql" in rendered
    assert means["full"]["calls"] > means["react_sql"]["calls"]

    again = asyncio.run(run_insightbench(config))
    assert (again.ran, again.skipped) == (0, 4)


def test_an_interrupted_result_runs_again(tmp_path: Path) -> None:
    config = _config(tmp_path, variants=["react_sql"], tasks="flag-1")
    asyncio.run(run_insightbench(config))
    path = result_path(config.out, "flag-1", "react_sql")
    path.write_text(json.dumps({"task_id": "flag-1", "variant": "react_sql",
                                "complete": False, "error": "boom"}))
    summary = asyncio.run(run_insightbench(config))
    assert summary.ran == 1 and load_result(path) is not None


def test_a_judge_added_later_rescores_from_the_boards_without_investigating(
        tmp_path: Path) -> None:
    config = _config(tmp_path, tasks="flag-21")
    asyncio.run(run_insightbench(config))
    calls: list[ModelRequest] = []
    judge = InsightJudge(_grading_judge(calls), JudgeCache(config.out / "judge-cache"))
    summary = asyncio.run(run_insightbench(config, judge=judge))
    assert (summary.ran, summary.rescored) == (0, 2)
    assert len(calls) == 2 * 3  # 2 variants x 3 insights
    for record in summary.records:
        assert record["scores"]["judge_model"] == "grading-judge"
        assert record["scores"]["judge_recall"] == pytest.approx(2 / 3)
    steady = asyncio.run(run_insightbench(config, judge=judge))
    assert (steady.rescored, steady.skipped, len(calls)) == (0, 2, 6)


def test_finished_boards_from_elsewhere_are_scored_by_their_question(tmp_path: Path) -> None:
    config = _config(tmp_path, tasks="flag-1", policy="oracle")
    asyncio.run(run_insightbench(config))
    boards = tmp_path / "collected"
    boards.mkdir()
    shutil.copy(config.out / "boards" / "flag-1--full.d2board", boards / "run-7.d2board")
    calls: list[ModelRequest] = []
    judge = InsightJudge(_grading_judge(calls))
    records = asyncio.run(score_boards(boards, shared_dir("insightbench-dev"),
                                       tmp_path / "scored", judge))
    (record,) = records
    assert (record["task_id"], record["variant"]) == ("flag-1", "full")
    assert record["scores"]["judge_recall"] == 1.0 and record["usage"]["calls"] > 0
    assert (tmp_path / "scored" / "results" / "run-7.json").is_file()
    with pytest.raises(ValueError, match="no boards"):
        asyncio.run(score_boards(tmp_path / "nothing", shared_dir("insightbench-dev"),
                                 tmp_path / "scored", None))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchmark", *args], cwd=REPO,
                          capture_output=True, text=True)


def test_the_command_prints_the_table_and_saves_json_and_png(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    done = _cli("insightbench", "--tasks", str(shared_dir("insightbench-dev")), "--only",
                TASKS, "--policy", "oracle", "--out", str(out), "--jobs", "2")
    assert done.returncode == 0, done.stderr
    assert "InsightBench: insight recall and cost per variant" in done.stdout
    assert "react_sql" in done.stdout and "Ratio to react_sql" in done.stdout
    saved = json.loads((out / "results.json").read_text())
    assert saved["variants"]["full"]["proxy_recall"] == 1.0
    assert (out / "recall_vs_cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rescored = _cli("insightbench", "--tasks", str(shared_dir("insightbench-dev")),
                    "--out", str(out), "--score-only")
    assert rescored.returncode == 0, rescored.stderr
    assert rescored.stdout.count("proxy recall 1.00") == 4


def test_bad_invocations_name_the_fix(tmp_path: Path) -> None:
    tasks = str(shared_dir("insightbench-dev"))
    neither = _cli("insightbench", "--tasks", tasks, "--out", str(tmp_path))
    assert neither.returncode == 2 and "--policy oracle|half" in neither.stderr
    bad_variant = _cli("insightbench", "--tasks", tasks, "--policy", "oracle",
                       "--variants", "full,fastest", "--out", str(tmp_path))
    assert bad_variant.returncode == 2 and "unknown variant 'fastest'" in bad_variant.stderr
    no_key = _cli("insightbench", "--tasks", tasks, "--policy", "oracle", "--judge-model",
                  "anthropic:claude-sonnet-4-6", "--out", str(tmp_path))
    assert no_key.returncode == 2 and "ANTHROPIC_API_KEY" in no_key.stderr
    unknown = _cli("insightbench", "--tasks", tasks, "--policy", "oracle", "--only",
                   "flag-999", "--out", str(tmp_path))
    assert unknown.returncode == 2 and "unknown task ids: flag-999" in unknown.stderr


def test_a_judge_outage_keeps_the_proxy_scores_and_is_rescored_next_run(
        tmp_path: Path) -> None:
    from d2_notebook.errors import ModelAPIError

    config = _config(tmp_path, variants=["react_sql"], tasks="flag-21")
    calls: list[ModelRequest] = []
    grading = _grading_judge(calls)

    def down(_: ModelRequest):
        raise ModelAPIError("judge server unreachable after 4 retries")
    first = asyncio.run(run_insightbench(config, judge=InsightJudge(
        FunctionModel(down, name="grading-judge"), JudgeCache(config.out / "judge-cache"))))
    (record,) = first.records
    assert "judge server unreachable" in record["judge_error"]
    assert record["scores"]["proxy_recall"] > 0 and record["scores"]["judge_recall"] is None
    again = asyncio.run(run_insightbench(config, judge=InsightJudge(
        grading, JudgeCache(config.out / "judge-cache"))))
    assert (again.ran, again.rescored) == (0, 1)
    assert again.records[0]["judge_error"] is None
    assert again.records[0]["scores"]["judge_recall"] == pytest.approx(2 / 3)


def test_the_claim_check_rate_of_each_report_is_recorded(tmp_path: Path) -> None:
    summary = asyncio.run(run_insightbench(_config(tmp_path, tasks="flag-1")))
    for record in summary.records:
        check = record["scores"]["claim_check"]
        assert check is not None and check["numbers_checked"] >= 0
        assert check["unverified_rate"] is None or 0 <= check["unverified_rate"] <= 1
    assert "unverified" in table(summary.records)


def test_a_missing_board_fails_its_rescore_and_keeps_the_earlier_scores(
        tmp_path: Path) -> None:
    config = _config(tmp_path, variants=["react_sql"], tasks="flag-1")
    asyncio.run(run_insightbench(config))
    (config.out / "boards" / "flag-1--react_sql.d2board").unlink()
    lines: list[str] = []
    calls: list[ModelRequest] = []
    summary = asyncio.run(run_insightbench(config, judge=InsightJudge(_grading_judge(calls)),
                                           progress=lines.append))
    assert (summary.rescored, summary.failed, len(summary.records)) == (0, 1, 1)
    assert any("re-score FAILED FileNotFoundError: no board at" in line for line in lines)
    assert not (config.out / "boards" / "flag-1--react_sql.d2board").exists()
    assert summary.records[0]["scores"]["judge_model"] is None


def test_results_of_another_model_or_policy_are_not_resumed(tmp_path: Path) -> None:
    config = _config(tmp_path, variants=["react_sql"], tasks="flag-21")
    asyncio.run(run_insightbench(config))
    with pytest.raises(ValueError, match=r"another configuration .*policy half.*"
                                         r"policy oracle.*pass a fresh --out"):
        asyncio.run(run_insightbench(_config(tmp_path, variants=["react_sql"],
                                             tasks="flag-21", policy="oracle")))
    record = json.loads(result_path(config.out, "flag-21", "react_sql").read_text())
    assert record["policy"] == "half"  # left as it was
    refused = _cli("insightbench", "--tasks", str(shared_dir("insightbench-dev")), "--only",
                   "flag-21", "--variants", "react_sql", "--policy", "oracle", "--out",
                   str(config.out))
    assert refused.returncode == 2 and "pass a fresh --out" in refused.stderr


def _mark_failed(board_file: Path) -> None:
    from d2_notebook.board import Board

    with Board.open(board_file) as board:
        last = board.list_investigations()[-1]
        board.set_investigation_state(last.id, "failed", actor="test", error="crashed")


def test_score_only_honours_the_selection_and_keeps_the_runs_fields(tmp_path: Path) -> None:
    from benchmark.insightbench.runner import score_run

    config = _config(tmp_path)
    asyncio.run(run_insightbench(config))
    _mark_failed(config.out / "boards" / "flag-21--full.d2board")
    lines: list[str] = []
    chosen = _config(tmp_path, tasks="flag-1", variants=["react_sql"])
    (record,) = asyncio.run(score_run(chosen, None, progress=lines.append))
    assert (record["task_id"], record["variant"]) == ("flag-1", "react_sql")
    assert (record["policy"], record["model"]) == ("half", None)
    assert record["stop_reason"] is None and record["usage"]["calls"] > 0
    # The whole run: the unfinished board is left out, as insightbench-score does.
    records = asyncio.run(score_run(config, None, progress=lines.append))
    assert {(r["task_id"], r["variant"]) for r in records} == {
        ("flag-1", "full"), ("flag-1", "react_sql"), ("flag-21", "react_sql")}
    assert "flag-21--full.d2board: no finished investigation; left out" in lines
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.copy(config.out / "boards" / "flag-21--full.d2board", elsewhere / "x.d2board")
    with pytest.raises(ValueError, match="no finished"):
        asyncio.run(score_run(_config(tmp_path, tasks="flag-21", variants=["full"]), None))
    assert asyncio.run(score_boards(elsewhere, shared_dir("insightbench-dev"),
                                    tmp_path / "scored", None)) == []
    done = _cli("insightbench", "--tasks", str(shared_dir("insightbench-dev")), "--out",
                str(config.out), "--score-only", "--only", "flag-1", "--variants", "full")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("proxy recall") == 2  # one progress line, one table header


def test_a_file_that_is_not_a_board_is_one_clear_error(tmp_path: Path) -> None:
    config = _config(tmp_path, variants=["react_sql"], tasks="flag-1")
    asyncio.run(run_insightbench(config))
    (config.out / "boards" / "flag-1--react_sql.d2board").write_text("not a board at all")
    tasks = str(shared_dir("insightbench-dev"))
    score_only = _cli("insightbench", "--tasks", tasks, "--out", str(config.out),
                      "--score-only", "--only", "flag-1", "--variants", "react_sql")
    scored = _cli("insightbench-score", "--tasks", tasks, "--boards",
                  str(config.out / "boards"), "--out", str(tmp_path / "scored"))
    for done in (score_only, scored):
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert "flag-1--react_sql.d2board: not a board" in done.stderr
        assert "move it out of the boards folder" in done.stderr


def test_judge_calls_in_flight_stay_within_the_judge_concurrency(tmp_path: Path) -> None:
    from benchmark.insightbench.scoring import score_report
    from benchmark.insightbench.tasks import find_tasks

    async def slow(_: ModelRequest):
        await asyncio.sleep(0.01)
        return text('{"score": 1, "reason": "ok"}')

    (task,) = find_tasks(shared_dir("insightbench-dev"), "flag-1")
    judge = InsightJudge(FunctionModel(slow, name="j"), concurrency=2)

    async def three_reports() -> None:
        await asyncio.gather(*(score_report(task, f"report {i}", judge=judge)
                               for i in range(3)))
    asyncio.run(three_reports())
    assert judge.most_in_flight == 2  # 18 calls, never more than 2 at once
    unbounded = InsightJudge(FunctionModel(slow, name="j"))
    asyncio.run(score_report(task, "report", judge=unbounded))
    assert unbounded.most_in_flight == len(task.insights)
    with pytest.raises(ValueError, match="at least 1"):
        InsightJudge(FunctionModel(slow, name="j"), concurrency=0)


def test_ratios_to_react_sql_compare_the_tasks_both_completed() -> None:
    from benchmark.insightbench.tables import ratios_to_baseline

    def record(task: str, variant: str, recall: float, cost: float) -> dict:
        return {"task_id": task, "variant": variant, "complete": True, "seconds": 1.0,
                "scores": {"proxy_recall": recall, "judge_model": None},
                "usage": {"calls": 1, "cost_usd": cost}}
    records = [record("easy", "full", 1.0, 2.0), record("hard", "full", 0.2, 8.0),
               record("easy", "react_sql", 0.5, 1.0),
               {"task_id": "hard", "variant": "react_sql", "complete": False, "error": "x"}]
    n, ratios = ratios_to_baseline(records)["full"]
    assert n == 1  # only "easy": react_sql did not complete "hard"
    assert ratios["proxy_recall"] == pytest.approx(2.0) and ratios["cost_usd"] == 2.0
    rendered = table(records)
    assert "over the tasks both completed" in rendered and "paired n" in rendered
    assert variant_means(records)["full"]["proxy_recall"] == pytest.approx(0.6)  # all tasks
