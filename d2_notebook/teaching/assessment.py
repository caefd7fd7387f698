"""A board read against a case's gold, once, for grades and hints alike.

:func:`assess` opens the board (a :class:`~d2_notebook.board.Board` or a path), reads
its investigation as a :class:`~d2_notebook.teaching.answer.SystemAnswer` (the
benchmark's reading), and sets its audit graph against the gold graph.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from d2_notebook.board import Board
from d2_notebook.board.records import Hypothesis as BoardHypothesis
from d2_notebook.datasets.sql_city import Gold
from d2_notebook.errors import BoardError
from d2_notebook.teaching.answer import People, SystemAnswer
from d2_notebook.teaching.board_answer import board_answer
from d2_notebook.teaching.case_map import CaseMap, case_map
from d2_notebook.teaching.cases import (
    CaseDatabase,
    GoldLike,
    case_people,
    database_beside,
    read_gold,
)
from d2_notebook.teaching.graph_match import GraphMatch, match_graph

BoardLike = Board | str | os.PathLike[str]
"""A board: an open :class:`Board` or the path of a ``.d2board`` file."""

HINT_EVENT = "hint.given"
"""The event kind a hint is recorded under on the board."""


@dataclass(frozen=True)
class Assessment:
    """A board's investigation against the gold.

    Attributes:
        gold: the case's gold.
        board_path: the board's file.
        investigation_id: the investigation read (None: a board without one).
        answer: what the board puts forward (accused, analysed, audit graph).
        match: its audit graph against the gold graph.
        people: the gold's people (names or ids to gold ids).
        nodes: what each gold node is about.
        hypotheses: the board's hypotheses read, by id.
        verdicts: per board hypothesis id, whether it has a verdict.
        hints_used: hints recorded on the board.
    """

    gold: Gold
    board_path: str
    investigation_id: str | None
    answer: SystemAnswer
    match: GraphMatch
    people: People
    nodes: CaseMap
    hypotheses: dict[str, BoardHypothesis]
    verdicts: dict[str, bool]
    hints_used: int


@contextlib.contextmanager
def opened(board: BoardLike, *, writable: bool = False) -> Iterator[Board]:
    """The board itself, or the file opened (read-only unless ``writable``) and closed after.

    Raises:
        BoardError: no board file at the path (the message names the fix).
    """
    if isinstance(board, Board):
        yield board
        return
    path = Path(board)
    if not path.is_file():
        raise BoardError(f"no board at {str(path)!r}; pass the path of a .d2board file")
    with Board.open(path, read_only=not writable) as handle:
        yield handle


def assess(board: Board, gold: GoldLike, *, database: CaseDatabase | None = None,
           investigation: str | None = None) -> Assessment:
    """Read ``board``'s investigation and set it against ``gold``.

    Args:
        board: an open board.
        gold: the case's gold (object, JSON dict or file).
        database: the case database (a path or an open DuckDB connection), to know
            everybody a hypothesis may name. Default:
            the ``.duckdb`` beside the gold file, else the case rebuilt from its seed.
        investigation: the investigation id to read. Default: the board's latest (all
            records of a board without investigations).

    Raises:
        CaseFileError: a bad gold file or database path.
        NotFoundError: no such investigation on the board.
    """
    case = read_gold(gold)
    people = case_people(case, database if database is not None else database_beside(gold))
    if investigation is None:
        investigations = board.list_investigations()
        investigation = investigations[-1].id if investigations else None
    else:
        board.get_investigation(investigation)
    answer = board_answer(board, investigation, people)
    hypotheses = {h.id: h for h in board.list_hypotheses(investigation_id=investigation)}
    verdicts = {h: board.latest_verdict(h) is not None for h in hypotheses}
    return Assessment(case, board.path, investigation, answer, match_graph(answer, case),
                      People(case), case_map(case), hypotheses, verdicts, hints_used(board))


def hints_used(board: Board) -> int:
    """How many hints :func:`~d2_notebook.teaching.hints.hint` recorded on the board."""
    return len(board.events(kinds=[HINT_EVENT]))
