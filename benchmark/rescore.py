"""Re-score SQL City boards recorded earlier (e.g. ``shared/real-boards``), offline.

A board variant's answer is read straight from its board. ``react_sql`` keeps no board
records (its queries and structured answer live only in its result), so its recorded
model calls are *replayed* (``investigate(..., replay=board)``): every query runs again
on the case database and the same final answer comes back, with no model access.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from benchmark.adapter import react_answer
from d2_notebook.board import Board
from d2_notebook.datasets.sql_city import (
    Gold,
    generate_case,
    load_gold,
    standard_tiers,
    write_case,
)
from d2_notebook.detective import investigate
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.variant import Shape, parse_variant
from d2_notebook.llm.replay import ReplayModel
from d2_notebook.teaching.answer import SystemAnswer
from d2_notebook.teaching.board_answer import PeopleIndex, board_answer
from d2_notebook.teaching.scoring import CaseScore, score_case, score_dict

_CASE_ID = re.compile(r"sqlcity-s(\d+)-(\d+)")


async def answer_from_board(board_file: str | os.PathLike[str],
                            database: str | os.PathLike[str],
                            people: PeopleIndex) -> tuple[str, SystemAnswer]:
    """``(variant, answer)`` of the last investigation on a recorded board.

    The board file is opened as is (migrated if it is older); pass a copy to keep
    the original untouched.
    """
    board = Board.open(Path(board_file))
    try:
        investigation = board.list_investigations()[-1]
        variant = parse_variant(investigation.settings.get("variant", "full"))
        if variant.shape is not Shape.REACT:
            return variant.name, board_answer(board, investigation.id, people)
        # Its answer is re-derived by running the recorded agent again; its prompts may
        # have changed since (schema summary, previews), so only the order of its calls is
        # held to the recording: the same queries run and give the same rows.
        settings = InvestigationSettings.from_dict(investigation.settings)
        result = await investigate(
            database, investigation.question, settings=settings,
            model=ReplayModel(board, investigation.id, compared=()))
        try:
            return variant.name, react_answer(result, people)
        finally:
            result.board.close()
    finally:
        board.close()


async def rescore_board(board_file: str | os.PathLike[str], gold: Gold,
                        database: str | os.PathLike[str]) -> CaseScore:
    """Score a recorded board against its case's gold with the current metrics."""
    people = PeopleIndex.from_database(database)
    variant, answer = await answer_from_board(board_file, database, people)
    return score_case(answer, gold, system=variant)


def usage_from_board(board: Board, investigation_id: str) -> dict[str, Any]:
    """Calls, tokens and cost of an investigation, from its recorded model calls."""
    calls = board.list_model_calls(investigation_id=investigation_id)
    return {"calls": len(calls), "input_tokens": sum(c.input_tokens for c in calls),
            "output_tokens": sum(c.output_tokens for c in calls),
            "cache_read_tokens": sum(c.cache_read_tokens for c in calls),
            "cache_write_tokens": sum(c.cache_write_tokens for c in calls),
            "cost_usd": sum(c.cost_usd for c in calls),
            "unpriced_calls": sum(1 for c in calls if c.cost_usd == 0 and c.response)}


def seconds_between(started: str, ended: str) -> float:
    """Seconds between two ISO timestamps of a board (0 when unreadable)."""
    try:
        return round((datetime.fromisoformat(ended)
                      - datetime.fromisoformat(started)).total_seconds(), 3)
    except ValueError:
        return 0.0


def ensure_case(case_id: str, cases_dir: Path) -> Path:
    """The gold file of a standard case, generated into ``cases_dir`` if absent.

    Raises:
        ValueError: ``case_id`` is not a standard case id (``sqlcity-s<seed>-<index>``).
    """
    gold_path = cases_dir / f"{case_id}.json"
    if gold_path.is_file() and gold_path.with_suffix(".duckdb").is_file():
        return gold_path
    found = _CASE_ID.fullmatch(case_id)
    tiers = standard_tiers(50)
    if found is None or int(found.group(2)) >= len(tiers):
        raise ValueError(f"{case_id!r} is not a standard case id (sqlcity-s<seed>-<index>, "
                         "index < 50); name boards <case>--<variant>.d2board")
    seed, index = int(found.group(1)), int(found.group(2))
    write_case(generate_case(seed, index, tiers[index]), cases_dir)
    return gold_path


async def rescore_boards(boards_dir: Path, cases_dir: Path,
                         progress: Callable[[str], None] | None = None
                         ) -> list[dict[str, Any]]:
    """Result records (as ``python -m benchmark run`` writes) for every recorded board.

    Each ``<case>--<variant>.d2board`` is copied to a temporary folder (the original is
    never migrated or written) and scored against its case, generated when missing.

    Raises:
        ValueError: no boards, or a board name without a standard case id.
    """
    say = progress or (lambda _: None)
    boards = sorted(boards_dir.glob("*.d2board"))
    if not boards:
        raise ValueError(f"no boards (*.d2board) in {boards_dir}")
    records = []
    with tempfile.TemporaryDirectory(prefix="d2-rescore-") as scratch:
        for source in boards:
            case_id = source.stem.split("--")[0]
            gold_path = ensure_case(case_id, cases_dir)
            gold = load_gold(gold_path)
            copy = Path(scratch) / source.name
            shutil.copy(source, copy)
            database = gold_path.with_suffix(".duckdb")
            variant, answer = await answer_from_board(copy, database,
                                                      PeopleIndex.from_database(database))
            with Board.open(copy) as board:
                investigation = board.list_investigations()[-1]
                usage = usage_from_board(board, investigation.id)
            score = score_case(answer, gold, system=variant)
            records.append({"case_id": case_id, "tier": gold.tier, "variant": variant,
                            "board": str(source), "usage": usage,
                            "seconds": seconds_between(investigation.created_at,
                                                       investigation.updated_at),
                            "scores": score_dict(score), "complete": True})
            say(f"{source.name}: correctness {score.correctness:.2f} completeness "
                f"{score.completeness:.2f} (F1 {score.completeness_f1:.2f}, "
                f"{score.extra_suspects} extra) verifiability {score.verifiability:.2f} "
                f"(P {score.edge_precision:.2f} R {score.edge_recall:.2f})")
    return records
