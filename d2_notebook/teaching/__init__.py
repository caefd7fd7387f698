"""Teaching with the SQL City murder cases: grade a student's board, give hints, run a class.

- :func:`grade` — the paper's three metrics of any board of a case (the benchmark's own
  implementation) with a per-suspect breakdown; renders as text and HTML.
- :func:`compare` — grades of several boards side by side (yours and the detective's).
- :func:`hint` — the next thing to look at, more specific on each call, never the answer;
  recorded on the board (:func:`hints_used`).
- :func:`new_case`, :func:`grade_folder` — a class: write a case to hand out (the gold
  kept apart), then grade every board handed back (``d2 case new`` / ``d2 case grade``).

Typical use::

    from d2_notebook.teaching import grade, hint
    hint("student.d2board", "answers/sqlcity-s7-000.json")
    grade("student.d2board", "answers/sqlcity-s7-000.json")
"""

from d2_notebook.teaching.assessment import hints_used
from d2_notebook.teaching.cases import CaseFileError, CaseFiles, new_case, read_gold
from d2_notebook.teaching.class_grades import BoardRow, grade_folder, write_csv
from d2_notebook.teaching.grade_view import GradeComparison, compare
from d2_notebook.teaching.grading import (
    FactGrade,
    Grade,
    LinkGrade,
    LinkOutcome,
    Outcome,
    SuspectGrade,
    grade,
)
from d2_notebook.teaching.hints import Hint, HintLevel, hint
from d2_notebook.teaching.needs import Gap

__all__ = [
    "BoardRow",
    "CaseFileError",
    "CaseFiles",
    "FactGrade",
    "Gap",
    "Grade",
    "GradeComparison",
    "Hint",
    "HintLevel",
    "LinkGrade",
    "LinkOutcome",
    "Outcome",
    "SuspectGrade",
    "compare",
    "grade",
    "grade_folder",
    "hint",
    "hints_used",
    "new_case",
    "read_gold",
    "write_csv",
]
