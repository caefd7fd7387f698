"""Grade a class's boards at once: one row per board, as a table or a CSV file.

:func:`grade_folder` grades every ``.d2board`` under a folder (subfolders too, e.g. one
per student) against one gold file. A board that cannot be graded (not a board, a file
from a newer version) gets a row with its error, so one bad file does not stop a class.
"""

from __future__ import annotations

import csv
import os
from dataclasses import astuple, dataclass, fields
from pathlib import Path

from d2_notebook.errors import D2Error
from d2_notebook.teaching.cases import (
    CaseDatabase,
    CaseFileError,
    GoldLike,
    case_people,
    database_beside,
    read_gold,
)
from d2_notebook.teaching.grading import Grade, grade

BOARD_SUFFIX = ".d2board"


@dataclass(frozen=True)
class BoardRow:
    """One board's grade as a row (the CSV's columns, in order)."""

    board: str
    case_id: str
    correctness: float | None = None
    completeness: float | None = None
    verifiability: float | None = None
    precision: float | None = None
    recall: float | None = None
    completeness_f1: float | None = None
    edge_precision: float | None = None
    edge_recall: float | None = None
    suspects_analysed: int | None = None
    suspects: int | None = None
    wrong_accusations: int | None = None
    murderers_missed: int | None = None
    facts_linked: int | None = None
    facts: int | None = None
    hints_used: int | None = None
    error: str = ""

    @classmethod
    def of(cls, board: str, result: Grade) -> BoardRow:
        """The row of a grade."""
        s = result.score
        return cls(board, s.case_id, s.correctness, s.completeness, s.verifiability,
                   s.precision, s.recall, s.completeness_f1, s.edge_precision, s.edge_recall,
                   sum(x.analysed for x in result.suspects), len(result.suspects),
                   len(result.wrong_accusations()), len(result.missed_murderers()),
                   sum(x.facts_earned for x in result.suspects),
                   sum(len(x.facts) for x in result.suspects), result.hints_used)


def board_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Every ``.d2board`` under ``folder``, sorted by path.

    Raises:
        CaseFileError: ``folder`` is not a folder, or holds no boards.
    """
    root = Path(folder)
    if not root.is_dir():
        what = "a file" if root.exists() else "not found"
        raise CaseFileError(f"boards folder {str(root)!r}: {what}; pass the folder the "
                            f"students' {BOARD_SUFFIX} files were collected in")
    found = sorted(p for p in root.rglob(f"*{BOARD_SUFFIX}") if p.is_file())
    if not found:
        raise CaseFileError(f"no {BOARD_SUFFIX} files in {str(root)!r}; collect the "
                            "students' boards there first")
    return found


def grade_folder(folder: str | os.PathLike[str], gold: GoldLike, *,
                 database: CaseDatabase | None = None) -> list[BoardRow]:
    """Grade every board under ``folder`` against ``gold``: one row per board.

    Raises:
        CaseFileError: no boards, or a bad gold file or database (before any board).
    """
    boards = board_files(folder)
    case = read_gold(gold)
    if database is None:
        database = database_beside(gold)
    case_people(case, database)  # a bad database fails here, once, not per board
    root = Path(folder)
    rows = []
    for path in boards:
        name = str(path.relative_to(root))
        try:
            rows.append(BoardRow.of(name, grade(path, case, database=database)))
        except D2Error as exc:
            rows.append(BoardRow(name, case.case_id, error=str(exc)))
    return rows


def write_csv(rows: list[BoardRow], path: str | os.PathLike[str]) -> Path:
    """Write the rows as CSV (a header, then one line per board); returns the path.

    Raises:
        CaseFileError: ``path`` is a folder or its folder does not exist.
    """
    target = check_csv_path(path)
    with target.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow([f.name for f in fields(BoardRow)])
        for row in rows:
            writer.writerow(["" if v is None else round(v, 4) if isinstance(v, float) else v
                             for v in astuple(row)])
    return target


def check_csv_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a CSV file to write, checked before any work.

    Raises:
        CaseFileError: ``path`` is a folder or its folder does not exist.
    """
    target = Path(path)
    if target.is_dir():
        raise CaseFileError(f"{str(target)!r} is a folder; pass a file path for the CSV, "
                            f"e.g. {str(target / 'grades.csv')!r}")
    if not target.expanduser().resolve().parent.is_dir():
        raise CaseFileError(f"folder {str(target.parent)!r} does not exist; create it or "
                            "pass another path for the CSV")
    return target
