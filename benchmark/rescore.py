"""Re-score SQL City boards recorded earlier (e.g. ``shared/real-boards``), offline.

A board variant's answer is read straight from its board. ``react_sql`` keeps no board
records (its queries and structured answer live only in its result), so its recorded
model calls are *replayed* (``investigate(..., replay=board)``): every query runs again
on the case database and the same final answer comes back, with no model access.
"""

from __future__ import annotations

import os
from pathlib import Path

from benchmark.adapter import PeopleIndex, board_answer, react_answer, variant_name
from benchmark.metrics import CaseScore, SystemAnswer, score_case
from d2_notebook.board import Board
from d2_notebook.datasets.sql_city import Gold
from d2_notebook.detective import investigate


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
        variant = variant_name(investigation.settings.get("variant", "full"))
        if variant != "react_sql":
            return variant, board_answer(board, investigation.id, people)
        result = await investigate(database, None, replay=board)
        try:
            return variant, react_answer(result, people)
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
