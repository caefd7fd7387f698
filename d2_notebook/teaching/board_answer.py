"""Read a board as a :class:`~d2_notebook.teaching.answer.SystemAnswer`: who it accuses,
who it analysed, and its audit graph.

The accused are the people named by supported hypotheses; suspects considered are
people named by hypotheses that have evidence links or a verdict; the graph is the audit
graph (hypotheses, evidence not marked redundant, and the links between them).

A hypothesis "names" a person when its statement contains the full name of somebody in
the case database (case-insensitive, longest name first, leftmost occurrence) or, failing
that, ``person <id>`` / ``id <id>`` of a person in the database. A statement of absence,
one that opens with "No", "None", "Nobody", "No one" or "Neither" ("No person meets all
of <witness>'s clues"), names nobody: supporting it accuses no one — unless it makes an
exception ("Nobody but X", "None other than X", "No one except X"), which names X when
X's full name follows the exception word at once and is not possessive ("No testimony
names anyone apart from X's" excepts X's testimony, not X).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.teaching.answer import (
    ConsideredSuspect,
    Edge,
    Evidence,
    Hypothesis,
    SystemAnswer,
)

_ABSENCE = re.compile(r"^\W*(?:no|none|nobody|no\s+one|neither)\b", re.IGNORECASE)
_EXCEPTION = re.compile(r"\b(?:but|except|other\s+than|apart\s+from|besides|save\s+for)\b",
                        re.IGNORECASE)
_ID_MENTION = re.compile(r"\b(?:person|id)\s*(?:id\s*)?[#:=]?\s*(\d+)\b", re.IGNORECASE)


class PeopleIndex:
    """Finds the person a text names, among the people of one case database."""

    def __init__(self, people: Iterable[tuple[Any, str]]) -> None:
        """Index ``(id, full name)`` pairs."""
        self.by_name: dict[str, str] = {}
        self.ids: set[str] = set()
        for pid, name in people:
            self.by_name[" ".join(str(name).casefold().split())] = str(pid)
            self.ids.add(str(pid))
        names = sorted(self.by_name, key=lambda n: (-len(n), n))
        alternatives = "|".join(re.escape(n).replace(r"\ ", r"\s+") for n in names)
        self._pattern = re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE) \
            if names else None

    @classmethod
    def from_database(cls, database: duckdb.DuckDBPyConnection | str | os.PathLike[str]
                      ) -> PeopleIndex:
        """Load ``person (id, name)`` of a case DuckDB file (opened read-only) or connection."""
        with GuardedSQL(database, max_rows=1_000_000) as sql:
            frame = sql.run("SELECT id, name FROM person ORDER BY id").frame
        return cls(zip(frame["id"].tolist(), frame["name"].tolist(), strict=True))

    def excepted(self, text: str) -> str | None:
        """The id of the person whose full name opens ``text`` (what follows "nobody
        but", "apart from"), or None: no name there, or the name is possessive ("apart
        from Ann Lee's, every interview...": the exception is a thing of hers, not her)."""
        opening = text.lstrip()
        found = self._pattern.match(opening) if self._pattern is not None else None
        if found is not None:
            person = self.by_name[" ".join(found.group(0).casefold().split())]
        else:
            found = _ID_MENTION.match(opening)  # "nobody but person 16371"
            if found is None or found.group(1) not in self.ids:
                return None
            person = found.group(1)
        after = opening[found.end():]
        possessive = re.match(r"['’]s\b", after) or (
            found.group(0).endswith("s") and re.match(r"['’](?!\w)", after))
        return None if possessive else person

    def person(self, text: str) -> str | None:
        """The id (as text) of the person ``text`` names, or None."""
        if self._pattern is not None:
            found = self._pattern.search(text)
            if found:
                return self.by_name[" ".join(found.group(0).casefold().split())]
        for match in _ID_MENTION.finditer(text):
            if match.group(1) in self.ids:
                return match.group(1)
        return None


def frame_rows(frame: pd.DataFrame) -> list[tuple[Any, ...]]:
    """Rows of a result frame as tuples of plain Python values (missing values -> None)."""
    out = []
    for row in frame.itertuples(index=False, name=None):
        cells = []
        for value in row:
            if isinstance(value, np.ndarray):  # a LIST cell from DuckDB
                value = value.tolist()
            elif isinstance(value, np.generic):
                value = value.item()
            if value is pd.NaT or (isinstance(value, float) and math.isnan(value)):
                value = None
            cells.append(value)
        out.append(tuple(cells))
    return out


def named_person(statement: str, people: PeopleIndex) -> str | None:
    """The id of the person a hypothesis statement is about, or None (none named, or a
    statement of absence: see the module docstring)."""
    if not _ABSENCE.match(statement):
        return people.person(statement)
    exception = _EXCEPTION.search(statement)
    if exception is None:
        return None
    return people.excepted(statement[exception.end():])


def board_answer(board: Board, investigation_id: str, people: PeopleIndex) -> SystemAnswer:
    """The answer of a board variant (see the module docstring)."""
    hypotheses = board.list_hypotheses(investigation_id=investigation_id)
    hyp_ids = {h.id for h in hypotheses}
    evidence = board.list_evidence(include_redundant=False, investigation_id=investigation_id)
    kept = {e.id for e in evidence}
    links = [link for link in board.list_links() if link.hypothesis_id in hyp_ids]
    answer = SystemAnswer()
    for hyp in hypotheses:
        person = named_person(hyp.statement, people)
        answer.hypotheses.append(Hypothesis(hyp.id, hyp.statement, person))
        if person is None:
            continue
        if hyp.status.value == "supported":
            answer.accused.add(person)
        verdict = board.latest_verdict(hyp.id)
        n_links = sum(link.hypothesis_id == hyp.id for link in links)
        if verdict is not None or n_links:
            answer.suspects_considered.append(ConsideredSuspect(
                person, verdict.status.value if verdict else None, n_links))
    for item in evidence:
        answer.evidence.append(Evidence(item.id, item.sql, frame_rows(board.evidence_frame(
            item.id)), item.description))
    answer.edges = [Edge(link.evidence_id, link.hypothesis_id, link.stance.value)
                    for link in links if link.evidence_id in kept]
    return answer
