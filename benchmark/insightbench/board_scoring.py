"""Score finished boards of InsightBench tasks without investigating again.

:func:`score_board` turns the last investigation of a board into a result record
(report scored, usage and seconds from the board); :func:`score_boards` does it for a
folder of boards recorded any other way (``insightbench-score``), finding each board's
task with :func:`match_task`; :func:`rescore_record` re-scores one board of a run,
keeping what the run recorded. Only *finished* investigations are scored
(:data:`SCORED_STATE`), by runs, ``--score-only`` and ``insightbench-score`` alike.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmark.adapter import variant_name
from benchmark.insightbench.judge import InsightJudge
from benchmark.insightbench.scoring import TaskScore, claim_check_rate, score_report
from benchmark.insightbench.tasks import InsightTask, find_tasks
from benchmark.rescore import seconds_between, usage_from_board
from benchmark.results import board_path, result_path, results_dir, write_result
from d2_notebook.board import Board
from d2_notebook.errors import BoardError, ModelError

SCORED_STATE = "finished"
"""The investigation state whose report is scored; any other is left out."""


class UnscorableBoardError(ValueError):
    """A board that cannot be scored: not a board, no investigation, or not finished."""


class UnfinishedBoardError(UnscorableBoardError):
    """A board whose last investigation did not finish (or that holds none)."""


def open_board(board_file: Path) -> Board:
    """Open a board to score, or say which file is not one and what to do.

    Raises:
        FileNotFoundError: there is no file at ``board_file``.
        UnscorableBoardError: the file is not a board.
    """
    if not board_file.is_file():
        raise FileNotFoundError(f"no board at {board_file}")
    try:
        return Board.open(board_file)
    except BoardError as exc:
        raise UnscorableBoardError(
            f"{board_file}: not a board ({exc}); move it out of the boards folder") from exc


def state_of(investigation: Any) -> str:
    """An investigation's state as text."""
    return str(getattr(investigation.state, "value", investigation.state))


async def score_with_judge(task: InsightTask, report: str, judge: InsightJudge | None,
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
        UnscorableBoardError: not a board; UnfinishedBoardError (a subclass): no
            investigation, or the last one did not finish.
    """
    board = await asyncio.to_thread(open_board, board_file)
    try:
        investigations = board.list_investigations()
        if not investigations:
            raise UnfinishedBoardError(f"{board_file} holds no investigation")
        investigation = investigations[-1]
        if state_of(investigation) != SCORED_STATE:
            raise UnfinishedBoardError(f"{board_file.name}: its last investigation is "
                                       f"{state_of(investigation)}, not finished")
        report = investigation.report or ""
        score, error = await score_with_judge(task, report, judge, board, investigation.id)
        usage = usage_from_board(board, investigation.id)
        models = sorted({c.model for c in board.list_model_calls(
            investigation_id=investigation.id)})
    finally:
        board.close()
    try:
        board_ref = str(board_file.resolve().relative_to(out.resolve()))
    except ValueError:
        board_ref = str(board_file.resolve())
    return {"task_id": task.task_id,
            "variant": variant_name(investigation.settings.get("variant", "full")),
            "model": ", ".join(models) or None, "policy": None,
            "state": state_of(investigation), "stop_reason": None,
            "seconds": seconds_between(investigation.created_at, investigation.updated_at),
            "usage": usage, "report": report, "scores": score.to_dict(), "judge_error": error,
            "board": board_ref, "investigation_id": investigation.id, "complete": True}


async def rescore_record(out: Path, task: InsightTask, old: dict[str, Any] | None,
                         judge: InsightJudge | None, variant: str | None = None
                         ) -> dict[str, Any]:
    """Score a run's board again and write its record, keeping what the run recorded.

    The run's ``model``, ``policy``, ``stop_reason``, ``seconds`` and ``usage`` stay
    those of ``old`` (the earlier record) when there is one; the scores, the report and
    the judge error are new.

    Raises:
        FileNotFoundError: no board; UnscorableBoardError: the board cannot be scored
            (UnfinishedBoardError: its last investigation did not finish).
    """
    variant = variant or str((old or {})["variant"])
    board_file = out / old["board"] if old else board_path(out, task.task_id, variant)
    new = await score_board(board_file, task, judge, out)
    kept = ("model", "policy", "stop_reason", "seconds", "usage", "state")
    record = {**new, **{k: old[k] for k in kept if old and k in old}, "variant": variant}
    write_result(result_path(out, task.task_id, variant), record)
    return record


def describe(record: dict[str, Any]) -> str:
    """One progress line for a finished record."""
    s = record["scores"]
    judged = "-" if s["judge_recall"] is None else f"{s['judge_recall']:.2f}"
    note = f" [{record['judge_error']}]" if record.get("judge_error") else ""
    return (f"{record['task_id']} {record['variant']}: judge recall {judged} "
            f"proxy recall {s['proxy_recall']:.2f} ({record['seconds']:.1f} s, "
            f"${record['usage']['cost_usd']:.3f}){note}")


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
        ValueError: no boards, a file that is not a board (:class:`UnscorableBoardError`)
            or a board that matches no task.
    """
    say = progress or (lambda _: None)
    boards = sorted(boards_dir.glob("*.d2board"))
    if not boards:
        raise ValueError(f"no boards (*.d2board) in {boards_dir}")
    tasks = [t for t in find_tasks(tasks_dir) if t.scorable]
    records = []
    for board_file in boards:
        board = await asyncio.to_thread(open_board, board_file)
        try:
            investigations = board.list_investigations()
        finally:
            board.close()
        if not investigations or state_of(investigations[-1]) != SCORED_STATE:
            say(f"{board_file.name}: no finished investigation; left out")
            continue
        task = match_task(board_file, investigations[-1].question, tasks)
        record = await score_board(board_file, task, judge, out)
        write_result(results_dir(out) / f"{board_file.stem}.json", record)
        records.append(record)
        say(describe(record))
    return records
