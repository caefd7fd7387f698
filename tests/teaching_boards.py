"""Boards of a SQL City case for the teaching tests: the gold graph itself, and students'.

Evidence comes from real queries on the case database (``GuardedSQL``) when a database
is given, else from the gold's stored rows (the hint-leak test over the 50 standard
cases, which keeps its cases in memory).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.datasets.sql_city import Gold

FLIP = {"supports": "contradicts", "contradicts": "supports"}


class StudentBoard:
    """A board a test fills the way a student would: hypotheses, evidence, links, verdicts."""

    def __init__(self, board: Board, gold: Gold, database: Path | None = None) -> None:
        self.board, self.gold, self.database = board, gold, database
        self.investigation = board.start_investigation(gold.description, actor="student")
        self.nodes = {e["id"]: e for e in gold.graph["evidence"]}
        self.hypothesis_of: dict[str, str] = {}
        self.evidence_of: dict[str, str] = {}

    def frame(self, node: dict[str, Any]) -> tuple[str, pd.DataFrame]:
        """``(sql, result)`` of a gold node: run for real, or its stored rows."""
        if self.database is not None:
            with GuardedSQL(self.database) as sql:
                result = sql.run(node["sql"])
            return result.sql, result.frame
        rows = node["rows"]
        width = max((len(r) for r in rows), default=1)
        return node["sql"], pd.DataFrame(rows, columns=[f"c{i}" for i in range(width)])

    def add_evidence(self, gold_id: str) -> str:
        """Record a gold node's query and result; returns the board's evidence id."""
        if gold_id not in self.evidence_of:
            sql, frame = self.frame(self.nodes[gold_id])
            self.evidence_of[gold_id] = self.board.add_evidence(
                sql, frame, description=self.nodes[gold_id]["description"],
                author_role="human", author="student",
                investigation_id=self.investigation.id).id
        return self.evidence_of[gold_id]

    def add_hypothesis(self, gold_hypothesis: str, statement: str | None = None) -> str:
        """A hypothesis about the gold hypothesis's suspect; returns its board id."""
        text = statement or next(h["text"] for h in self.gold.graph["hypotheses"]
                                 if h["id"] == gold_hypothesis)
        self.hypothesis_of[gold_hypothesis] = self.board.add_hypothesis(
            text, author_role="human", author="student",
            investigation_id=self.investigation.id).id
        return self.hypothesis_of[gold_hypothesis]

    def link_gold_edges(self, *, flip: bool = False, only: set[str] | None = None) -> None:
        """Record and link every gold edge (of the ``only`` gold hypotheses)."""
        for edge in self.gold.graph["edges"]:
            if only is not None and edge["hypothesis"] not in only:
                continue
            if edge["hypothesis"] not in self.hypothesis_of:
                continue
            evidence = self.add_evidence(edge["evidence"])
            stance = FLIP[edge["stance"]] if flip else edge["stance"]
            self.board.link(evidence, self.hypothesis_of[edge["hypothesis"]], stance,
                            "from the data", actor="student")

    def verdict(self, gold_hypothesis: str, status: str) -> None:
        """The student's verdict on the hypothesis about a gold hypothesis's suspect."""
        self.board.add_verdict(self.hypothesis_of[gold_hypothesis], status, 0.9,
                               "weighed the evidence", [], author="student")

    def gold_verdicts(self) -> None:
        """Supported for the murderers, contradicted for everyone else on the board."""
        murderers = {f"H{m['id']}" for m in self.gold.murderers}
        for gold_hypothesis in self.hypothesis_of:
            self.verdict(gold_hypothesis,
                         "supported" if gold_hypothesis in murderers else "contradicted")


def gold_board(board: Board, gold: Gold, database: Path | None = None) -> StudentBoard:
    """The gold graph as a board: every node, every edge, the gold verdicts."""
    student = StudentBoard(board, gold, database)
    for node in gold.graph["evidence"]:
        student.add_evidence(node["id"])
    for hypothesis in gold.graph["hypotheses"]:
        student.add_hypothesis(hypothesis["id"])
    student.link_gold_edges()
    student.gold_verdicts()
    return student
