"""Run InsightBench tasks × variants of the Data Detective and score the reports.

Layout of ``<out>``:

- ``databases/<task>.duckdb``: each task's CSVs, loaded once per run;
- ``boards/<task>--<variant>.d2board``: the investigation's board (the whole history);
- ``results/<task>--<variant>.json``: the result record, written atomically when done;
- ``judge-cache/``: one JSON file per judge call (prompt, answers, tokens, cost).

Rerunning the same command resumes: complete results are kept; a complete result whose
judging is missing or incomplete (another judge, malformed answers, a judge outage) is
re-scored from its board without investigating again; the rest run on a fresh board.
Results of another model or policy are never reused: the run refuses, naming a fresh
``--out``. :func:`score_run` re-scores a run's boards (``--score-only``);
``board_scoring.score_boards`` scores boards recorded elsewhere (``insightbench-score``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.insightbench.board_scoring import (
    SCORED_STATE,
    UnfinishedBoardError,
    describe,
    rescore_record,
    score_with_judge,
)
from benchmark.insightbench.judge import InsightJudge, JudgeCache
from benchmark.insightbench.policies import policy_for
from benchmark.insightbench.tasks import InsightTask, find_tasks, load_into_duckdb
from benchmark.results import (
    DEFAULT_PRESET,
    board_path,
    check_same_config,
    fresh_board_path,
    load_result,
    result_path,
    run_or_record_failure,
    usage_record,
    write_result,
)
from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.detective import investigate
from d2_notebook.detective.preset import parse_preset, preset_models
from d2_notebook.llm import Model, get_model

DEFAULT_VARIANTS = ("full", "react_sql")


@dataclass
class InsightRunConfig:
    """What to run. Exactly one of ``model`` and ``policy`` drives the team.

    Attributes:
        tasks_dir: folder of task JSONs and their CSVs.
        out: results folder (see the module docstring).
        variants: variants to run per task.
        tasks: ``all``, ``N`` (the first N scorable tasks) or comma-separated task ids.
        model: model name for the team (``anthropic:...``, ``openai:...``).
        policy: offline policy name (``oracle`` or ``half``) instead of a model.
        judge_model: model name of the LLM judge; None scores with the proxy only.
        jobs: investigations running at once.
        timeout: seconds per model request (team and judge); None keeps the provider's.
        options: further ``investigate`` options (``max_usd=`` ...).
        preset: a role → model preset (:mod:`d2_notebook.detective.preset`) for the
            team model; its models get the same ``timeout``. None: every role on
            ``model``. Not with ``policy`` (an offline policy has no smaller model).
    """

    tasks_dir: Path
    out: Path
    variants: list[str] = field(default_factory=lambda: list(DEFAULT_VARIANTS))
    tasks: str = "all"
    model: str | None = None
    policy: str | None = None
    judge_model: str | None = None
    jobs: int = 4
    timeout: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None

    def __post_init__(self) -> None:
        if self.preset is not None:
            parse_preset(self.preset)
            if self.policy is not None:
                raise ValueError(f"--preset {self.preset} needs a --model: an offline policy "
                                 "answers every role itself")


@dataclass
class InsightRunSummary:
    """Every result of the run (finished earlier or now) and what happened."""

    records: list[dict[str, Any]]
    ran: int
    rescored: int
    skipped: int
    failed: int


def _named_model(name: str, timeout: float | None) -> Model:
    return get_model(name) if timeout is None else get_model(name, timeout=timeout)


def make_judge(judge_model: str | None, out: Path, *, timeout: float | None = None,
               model: Model | None = None, concurrency: int | None = None
               ) -> InsightJudge | None:
    """The LLM judge of a run (cached under ``<out>/judge-cache``), or None.

    ``concurrency`` bounds the judge calls in flight at once (None: no bound).

    Raises:
        ModelConfigError: the judge model is not configured (e.g. no API key).
    """
    if model is None and judge_model is None:
        return None
    return InsightJudge(model or _named_model(str(judge_model), timeout),
                        JudgeCache(out / "judge-cache"), concurrency=concurrency)


def needs_judging(record: dict[str, Any], judge: InsightJudge | None) -> bool:
    """Whether a complete record must be re-scored for ``judge``."""
    if judge is None:
        return False
    scores = record.get("scores", {})
    return scores.get("judge_model") != judge.name or not scores.get("fully_judged")


async def run_one(config: InsightRunConfig, task: InsightTask, variant: str, database: Path,
                  judge: InsightJudge | None) -> dict[str, Any]:
    """Investigate one task with one variant, score it and write its result record.

    Raises:
        RuntimeError: the investigation did not finish (nothing is scored: the record
            is left incomplete by the caller and runs again next time).
    """
    board_file = fresh_board_path(config.out, task.task_id, variant)
    if config.policy is not None:
        model: Model | str = policy_for(config.policy, task).model(name=f"policy-{config.policy}")
    else:
        model = _named_model(str(config.model), config.timeout)
    options = dict(config.options)
    if config.preset is not None:
        options["models"] = {role: _named_model(name, config.timeout) for role, name
                             in preset_models(config.preset, str(config.model)).items()}
    start = time.perf_counter()
    board = await asyncio.to_thread(Board.open, board_file)
    try:
        with GuardedSQL(database) as sql:
            result = await investigate(sql, task.question, board=board, model=model,
                                       variant=variant, **options)
        seconds = time.perf_counter() - start
        if result.state != SCORED_STATE:
            raise RuntimeError(f"the investigation is {result.state}, not finished")
        score, error = await score_with_judge(task, result.report or "", judge, board,
                                              result.investigation_id)
    finally:
        board.close()
    record = {
        "task_id": task.task_id, "variant": variant, "model": config.model,
        "policy": config.policy, "preset": config.preset or DEFAULT_PRESET,
        "state": result.state, "stop_reason": result.stop_reason,
        "seconds": round(seconds, 3),
        "usage": usage_record(result.usage),
        "report": result.report or "", "scores": score.to_dict(), "judge_error": error,
        "board": str(board_file.relative_to(config.out)),
        "investigation_id": result.investigation_id, "complete": True,
    }
    write_result(result_path(config.out, task.task_id, variant), record)
    return record


def chosen_tasks(config: InsightRunConfig, say: Callable[[str], None]) -> list[InsightTask]:
    """The scorable tasks ``config.tasks`` names (unscorable ones reported, left out).

    Raises:
        ValueError: bad task selection.
    """
    tasks = find_tasks(config.tasks_dir, config.tasks)
    for task in tasks:
        if not task.scorable:
            say(f"{task.task_id}: no ground-truth insight texts; left out")
    return [t for t in tasks if t.scorable]


def _ordered(records: list[dict[str, Any]], tasks: list[InsightTask],
             variants: list[str]) -> list[dict[str, Any]]:
    order = {(t.task_id, v): i for i, (t, v) in enumerate(
        (t, v) for t in tasks for v in variants)}
    return sorted(records, key=lambda r: order.get((r["task_id"], r["variant"]), 0))


async def run_insightbench(config: InsightRunConfig, *, judge: InsightJudge | None = None,
                           progress: Callable[[str], None] | None = None
                           ) -> InsightRunSummary:
    """Run every chosen task × variant not finished yet, ``config.jobs`` at a time.

    Tasks without ground-truth insight texts are left out (reported through
    ``progress``). ``ModelConfigError`` stops the run at once; any other failing
    investigation writes an incomplete record (``"complete": false`` with its error),
    so a later run retries it.

    Raises:
        ValueError: bad task selection, or ``config.out`` holds results of another
            model or policy; ModelConfigError: the model is not configured.
    """
    say = progress or (lambda _: None)
    tasks = chosen_tasks(config, say)
    records: list[dict[str, Any]] = []
    todo: list[tuple[InsightTask, str]] = []
    rescore: list[tuple[InsightTask, dict[str, Any]]] = []
    for task in tasks:
        for variant in config.variants:
            done = load_result(result_path(config.out, task.task_id, variant))
            if done is None:
                todo.append((task, variant))
            elif needs_judging(done, judge):
                rescore.append((task, done))
            else:
                records.append(done)
    check_same_config([*records, *(r for _, r in rescore)], config.model, config.policy,
                      config.out, config.preset)
    skipped = len(records)
    databases: dict[str, Path] = {}
    for task in {t.task_id: t for t, _ in todo}.values():
        databases[task.task_id] = await asyncio.to_thread(
            load_into_duckdb, task, config.out / "databases")
    limit = asyncio.Semaphore(max(1, config.jobs))
    failed = rescore_failed = 0

    async def one(task: InsightTask, variant: str) -> None:
        nonlocal failed
        record = await run_or_record_failure(
            limit, result_path(config.out, task.task_id, variant),
            {"task_id": task.task_id, "variant": variant},
            lambda: run_one(config, task, variant, databases[task.task_id], judge), say)
        if record is None:
            failed += 1
            return
        records.append(record)
        say(describe(record))

    async def again(task: InsightTask, old: dict[str, Any]) -> None:
        nonlocal rescore_failed
        async with limit:
            try:
                record = await rescore_record(config.out, task, old, judge)
            except Exception as exc:  # e.g. the board was deleted: keep the old scores
                rescore_failed += 1
                records.append(old)
                say(f"{task.task_id} {old['variant']}: re-score FAILED "
                    f"{type(exc).__name__}: {exc} (kept the earlier scores)")
                return
        records.append(record)
        say(describe(record) + " (re-scored)")

    await asyncio.gather(*(one(t, v) for t, v in todo), *(again(t, r) for t, r in rescore))
    return InsightRunSummary(_ordered(records, tasks, config.variants),
                             ran=len(todo) - failed, rescored=len(rescore) - rescore_failed,
                             skipped=skipped, failed=failed + rescore_failed)


async def score_run(config: InsightRunConfig, judge: InsightJudge | None, *,
                    progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Re-score the boards of a run (``--score-only``): no investigation at all.

    Honours ``config.tasks`` and ``config.variants``: each chosen task × variant whose
    board is in ``<out>/boards`` is scored, keeping its record's model, policy and stop
    reason. Boards whose last investigation did not finish are reported and left out,
    as are missing boards.

    Raises:
        ValueError: bad task selection, a file that is not a board, or no board at all.
    """
    say = progress or (lambda _: None)
    tasks = chosen_tasks(config, say)
    records = []
    for task in tasks:
        for variant in config.variants:
            board_file = board_path(config.out, task.task_id, variant)
            if not board_file.is_file():
                continue
            old = load_result(result_path(config.out, task.task_id, variant))
            try:
                record = await rescore_record(config.out, task, old, judge, variant)
            except UnfinishedBoardError:
                say(f"{board_file.name}: no finished investigation; left out")
                continue
            records.append(record)
            say(describe(record))
    if not records:
        raise ValueError(f"no finished boards of the chosen tasks and variants in "
                         f"{config.out / 'boards'}")
    return _ordered(records, tasks, config.variants)
