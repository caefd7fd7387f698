"""Run InsightBench tasks × variants of the Data Detective and score the reports.

Layout of ``<out>``:

- ``databases/<task>.duckdb``: each task's CSVs, loaded once per run;
- ``boards/<task>--<variant>.d2board``: the investigation's board (the whole history);
- ``results/<task>--<variant>.json``: the result record, written atomically when done;
- ``judge-cache/``: one JSON file per judge call (prompt, answers, tokens, cost).

Rerunning the same command resumes: complete results are kept; a complete result whose
judging is missing or incomplete (another judge, malformed answers, a judge outage) is
re-scored from its board without investigating again; the rest run on a fresh board.
:func:`score_boards` scores boards recorded elsewhere (``insightbench-score``).
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmark.adapter import variant_name
from benchmark.insightbench.judge import InsightJudge, JudgeCache
from benchmark.insightbench.policies import policy_for
from benchmark.insightbench.scoring import TaskScore, claim_check_rate, score_report
from benchmark.insightbench.tasks import InsightTask, find_tasks, load_into_duckdb
from benchmark.rescore import seconds_between, usage_from_board
from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.detective import investigate
from d2_notebook.errors import ModelConfigError, ModelError
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


@dataclass
class InsightRunSummary:
    """Every result of the run (finished earlier or now) and what happened."""

    records: list[dict[str, Any]]
    ran: int
    rescored: int
    skipped: int
    failed: int


def result_path(out: Path, name: str) -> Path:
    """Where a result record lives (``name`` is ``<task>--<variant>``)."""
    return out / "results" / f"{name}.json"


def board_path(out: Path, task_id: str, variant: str) -> Path:
    """Where the board of one task × variant lives."""
    return out / "boards" / f"{task_id}--{variant}.d2board"


def load_result(path: Path) -> dict[str, Any] | None:
    """A complete result record, or None (missing, unreadable or incomplete)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("complete") else None


def write_result(path: Path, record: dict[str, Any]) -> None:
    """Write a record atomically (a result file is either whole or absent)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _named_model(name: str, timeout: float | None) -> Model:
    return get_model(name) if timeout is None else get_model(name, timeout=timeout)


def make_judge(judge_model: str | None, out: Path, *, timeout: float | None = None,
               model: Model | None = None) -> InsightJudge | None:
    """The LLM judge of a run (cached under ``<out>/judge-cache``), or None.

    Raises:
        ModelConfigError: the judge model is not configured (e.g. no API key).
    """
    if model is None and judge_model is None:
        return None
    return InsightJudge(model or _named_model(str(judge_model), timeout),
                        JudgeCache(out / "judge-cache"))


def needs_judging(record: dict[str, Any], judge: InsightJudge | None) -> bool:
    """Whether a complete record must be re-scored for ``judge``."""
    if judge is None:
        return False
    scores = record.get("scores", {})
    return scores.get("judge_model") != judge.name or not scores.get("fully_judged")


async def _score(task: InsightTask, report: str, judge: InsightJudge | None,
                 board: Board, investigation_id: str) -> tuple[TaskScore, str | None]:
    """Scores of a report; a failing judge leaves the proxy scores and its error."""
    check = await asyncio.to_thread(claim_check_rate, board, investigation_id)
    try:
        return await score_report(task, report, judge=judge, claim_check=check), None
    except ModelError as exc:
        error = f"judge failed: {type(exc).__name__}: {exc}"
        return await score_report(task, report, claim_check=check), error


async def score_board(board_file: Path, task: InsightTask, judge: InsightJudge | None,
                      out: Path) -> dict[str, Any]:
    """A result record for the last investigation of a finished board (no model run).

    Raises:
        FileNotFoundError: there is no board at ``board_file``.
        ValueError: the board holds no investigation.
    """
    if not board_file.is_file():
        raise FileNotFoundError(f"no board at {board_file}")
    board = await asyncio.to_thread(Board.open, board_file)
    try:
        investigations = board.list_investigations()
        if not investigations:
            raise ValueError(f"{board_file} holds no investigation")
        investigation = investigations[-1]
        report = investigation.report or ""
        score, error = await _score(task, report, judge, board, investigation.id)
        usage = usage_from_board(board, investigation.id)
        models = sorted({c.model for c in board.list_model_calls(
            investigation_id=investigation.id)})
    finally:
        board.close()
    state = investigation.state
    try:
        board_ref = str(board_file.resolve().relative_to(out.resolve()))
    except ValueError:
        board_ref = str(board_file.resolve())
    return {"task_id": task.task_id,
            "variant": variant_name(investigation.settings.get("variant", "full")),
            "model": ", ".join(models) or None, "policy": None,
            "state": getattr(state, "value", state), "stop_reason": None,
            "seconds": seconds_between(investigation.created_at, investigation.updated_at),
            "usage": usage, "report": report, "scores": score.to_dict(), "judge_error": error,
            "board": board_ref, "investigation_id": investigation.id, "complete": True}


async def run_one(config: InsightRunConfig, task: InsightTask, variant: str, database: Path,
                  judge: InsightJudge | None) -> dict[str, Any]:
    """Investigate one task with one variant, score it and write its result record."""
    board_file = board_path(config.out, task.task_id, variant)
    board_file.parent.mkdir(parents=True, exist_ok=True)
    board_file.unlink(missing_ok=True)  # a stale board of an interrupted run starts afresh
    if config.policy is not None:
        model: Model | str = policy_for(config.policy, task).model(name=f"policy-{config.policy}")
    else:
        model = _named_model(str(config.model), config.timeout)
    start = time.perf_counter()
    board = await asyncio.to_thread(Board.open, board_file)
    try:
        with GuardedSQL(database) as sql:
            result = await investigate(sql, task.question, board=board, model=model,
                                       variant=variant, **config.options)
        seconds = time.perf_counter() - start
        score, error = await _score(task, result.report or "", judge, board,
                                    result.investigation_id)
    finally:
        board.close()
    usage = result.usage
    record = {
        "task_id": task.task_id, "variant": variant, "model": config.model,
        "policy": config.policy, "state": result.state, "stop_reason": result.stop_reason,
        "seconds": round(seconds, 3),
        "usage": {"calls": usage.calls, "input_tokens": usage.input_tokens,
                  "output_tokens": usage.output_tokens,
                  "cache_read_tokens": usage.cache_read_tokens,
                  "cache_write_tokens": usage.cache_write_tokens,
                  "cost_usd": usage.cost_usd, "unpriced_calls": usage.unpriced_calls},
        "report": result.report or "", "scores": score.to_dict(), "judge_error": error,
        "board": str(board_file.relative_to(config.out)),
        "investigation_id": result.investigation_id, "complete": True,
    }
    write_result(result_path(config.out, f"{task.task_id}--{variant}"), record)
    return record


def describe(record: dict[str, Any]) -> str:
    """One progress line for a finished record."""
    s = record["scores"]
    judged = "-" if s["judge_recall"] is None else f"{s['judge_recall']:.2f}"
    note = f" [{record['judge_error']}]" if record.get("judge_error") else ""
    return (f"{record['task_id']} {record['variant']}: judge recall {judged} "
            f"proxy recall {s['proxy_recall']:.2f} ({record['seconds']:.1f} s, "
            f"${record['usage']['cost_usd']:.3f}){note}")


async def run_insightbench(config: InsightRunConfig, *, judge: InsightJudge | None = None,
                           progress: Callable[[str], None] | None = None
                           ) -> InsightRunSummary:
    """Run every chosen task × variant not finished yet, ``config.jobs`` at a time.

    Tasks without ground-truth insight texts are left out (reported through
    ``progress``). ``ModelConfigError`` stops the run at once; any other failing
    investigation writes an incomplete record (``"complete": false`` with its error),
    so a later run retries it.

    Raises:
        ValueError: bad task selection; ModelConfigError: the model is not configured.
    """
    say = progress or (lambda _: None)
    chosen = find_tasks(config.tasks_dir, config.tasks if not config.tasks.isdigit() else "all")
    for task in chosen:
        if not task.scorable and not config.tasks.isdigit():
            say(f"{task.task_id}: no ground-truth insight texts; left out")
    tasks = [t for t in chosen if t.scorable]
    if config.tasks.isdigit():
        tasks = tasks[: int(config.tasks)]
    records: list[dict[str, Any]] = []
    todo: list[tuple[InsightTask, str]] = []
    rescore: list[tuple[InsightTask, dict[str, Any]]] = []
    for task in tasks:
        for variant in config.variants:
            done = load_result(result_path(config.out, f"{task.task_id}--{variant}"))
            if done is None:
                todo.append((task, variant))
            elif needs_judging(done, judge):
                rescore.append((task, done))
            else:
                records.append(done)
    skipped = len(records)
    databases: dict[str, Path] = {}
    for task in {t.task_id: t for t, _ in todo}.values():
        databases[task.task_id] = await asyncio.to_thread(
            load_into_duckdb, task, config.out / "databases")
    limit = asyncio.Semaphore(max(1, config.jobs))
    failed = rescore_failed = 0

    async def one(task: InsightTask, variant: str) -> None:
        nonlocal failed
        async with limit:
            try:
                record = await run_one(config, task, variant, databases[task.task_id], judge)
            except ModelConfigError:
                raise  # no model can run: stop the whole run, not every task
            except Exception as exc:  # one failure must not stop the run
                failed += 1
                error = f"{type(exc).__name__}: {exc}"
                write_result(result_path(config.out, f"{task.task_id}--{variant}"),
                             {"task_id": task.task_id, "variant": variant,
                              "complete": False, "error": error})
                say(f"{task.task_id} {variant}: FAILED {error}")
                return
        records.append(record)
        say(describe(record))

    async def again(task: InsightTask, old: dict[str, Any]) -> None:
        nonlocal rescore_failed
        async with limit:
            try:
                new = await score_board(config.out / old["board"], task, judge, config.out)
            except Exception as exc:  # e.g. the board was deleted: keep the old scores
                rescore_failed += 1
                records.append(old)
                say(f"{task.task_id} {old['variant']}: re-score FAILED "
                    f"{type(exc).__name__}: {exc} (kept the earlier scores)")
                return
        record = {**old, "scores": new["scores"], "judge_error": new["judge_error"],
                  "report": new["report"]}
        write_result(result_path(config.out, f"{task.task_id}--{old['variant']}"), record)
        records.append(record)
        say(describe(record) + " (re-scored)")

    await asyncio.gather(*(one(t, v) for t, v in todo), *(again(t, r) for t, r in rescore))
    order = {(t.task_id, v): i for i, (t, v) in enumerate(
        (t, v) for t in tasks for v in config.variants)}
    records.sort(key=lambda r: order.get((r["task_id"], r["variant"]), 0))
    return InsightRunSummary(records, ran=len(todo) - failed,
                             rescored=len(rescore) - rescore_failed, skipped=skipped,
                             failed=failed + rescore_failed)


def match_task(board_file: Path, question: str, tasks: list[InsightTask]) -> InsightTask:
    """The task a board investigated: by its question, else by its file name's prefix.

    Raises:
        ValueError: no task matches (the message names the board and the fix).
    """
    for task in tasks:
        if task.question.strip() == question.strip():
            return task
    by_id = {t.task_id: t for t in tasks}
    prefix = board_file.stem.split("--")[0]
    if prefix in by_id:
        return by_id[prefix]
    raise ValueError(f"{board_file.name}: its question matches no task and its name does "
                     "not start with a task id; name it <task>--<variant>.d2board")


async def score_boards(boards_dir: Path, tasks_dir: Path, out: Path,
                       judge: InsightJudge | None, *,
                       progress: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Score every finished ``*.d2board`` in ``boards_dir``; records go to ``out/results``.

    Boards whose last investigation did not finish are reported and left out.

    Raises:
        ValueError: no boards, or a board that matches no task.
    """
    say = progress or (lambda _: None)
    boards = sorted(boards_dir.glob("*.d2board"))
    if not boards:
        raise ValueError(f"no boards (*.d2board) in {boards_dir}")
    tasks = [t for t in find_tasks(tasks_dir) if t.scorable]
    records = []
    for board_file in boards:
        board = await asyncio.to_thread(Board.open, board_file)
        try:
            investigations = board.list_investigations()
        finally:
            board.close()
        if not investigations or getattr(investigations[-1].state, "value",
                                         investigations[-1].state) != "finished":
            say(f"{board_file.name}: no finished investigation; left out")
            continue
        task = match_task(board_file, investigations[-1].question, tasks)
        record = await score_board(board_file, task, judge, out)
        write_result(result_path(out, board_file.stem), record)
        records.append(record)
        say(describe(record))
    return records
