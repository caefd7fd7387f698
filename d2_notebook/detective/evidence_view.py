"""Evidence for the roles that weigh it without querying (judges, the reporter).

:func:`evidence_details` renders the origin (its analysis-tool call, else its SQL) and
stored rows of some evidence within a token budget, and never leaves a piece out: when
the evidence does not fit, the largest pieces are told in less detail (whole rows → a
summary → a brief summary →
the statistics and the claim rows), one step at a time, until it fits or every piece
is at its shortest. An analysis tool's result is told by its summary (the readings, in
the evidence's description) and the few rows that carry them: its column statistics
would only repeat the summary at greater length. Read from the board, never re-queried.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property

import pandas as pd

from d2_notebook.board import Board, Evidence, ToolCall
from d2_notebook.detective.query_shape import limit_clause
from d2_notebook.detective.result_summary import (
    claim_rows,
    column_statistics,
    covering_rows,
    render_rows,
)
from d2_notebook.llm import estimate_tokens

WHOLE_ROWS = 60
"""Results of at most this many stored rows are shown whole when the budget allows."""

ANALYSIS_WHOLE_ROWS = 12
"""Analysis results of at most this many rows are shown whole when the budget allows."""


class Detail(IntEnum):
    """How much of one evidence's result a prompt shows, least first."""

    MINIMAL = 0  # column statistics and the two strongest claim rows
    BRIEF = 1    # + a few claim rows, head and tail
    SUMMARY = 2  # + up to 20 claim rows, 5 head and 5 tail rows
    WHOLE = 3    # every stored row


@dataclass(frozen=True)
class _Shape:
    claim_rows: int
    head: int
    tail: int
    top_values: int
    sql_chars: int | None
    analysis_rows: int  # claim rows of an analysis result, after its first row


_SHAPES = {
    Detail.SUMMARY: _Shape(20, 5, 5, 5, None, 8),
    Detail.BRIEF: _Shape(5, 2, 1, 3, 1_200, 4),
    Detail.MINIMAL: _Shape(2, 0, 0, 3, 400, 2),
}


def evidence_details(board: Board, evidence_ids: list[str], *,
                     budget_tokens: int | None = None, focus: str | None = None) -> str:
    """The SQL and stored rows of every evidence in ``evidence_ids``, within a budget.

    Args:
        board: where the evidence is.
        evidence_ids: the evidence to show, in this order (repeats shown once).
        budget_tokens: tokens the text may take (estimated, see
            :func:`d2_notebook.llm.estimate_tokens`); None: everything at full detail.
        focus: a hypothesis id: only what is said of the evidence about that hypothesis
            (its links and verdicts) is shown and read for the claim rows. A branch's
            prompt then never depends on what parallel branches have written meanwhile,
            so a replay asks exactly what was recorded.

    Returns:
        One block per evidence. No evidence is ever left out; if even the shortest
        form of all of them exceeds the budget, the text says so at the end.
    """
    pieces = [_Piece.of(board, e, focus) for e in dict.fromkeys(evidence_ids)]
    levels = [p.best_detail for p in pieces]
    texts = [p.render(level) for p, level in zip(pieces, levels, strict=True)]
    sizes = [estimate_tokens(t) for t in texts]
    while budget_tokens is not None and sum(sizes) > budget_tokens:
        shrinkable = [i for i, level in enumerate(levels) if level > Detail.MINIMAL]
        if not shrinkable:
            texts.append("(every piece is shown at its shortest: the evidence exceeds this "
                         "prompt's evidence budget, but none is left out)")
            break
        largest = max(shrinkable, key=lambda i: sizes[i])
        levels[largest] = Detail(levels[largest] - 1)
        texts[largest] = pieces[largest].render(levels[largest])
        sizes[largest] = estimate_tokens(texts[largest])
    return "\n\n".join(texts)


@dataclass(frozen=True)
class _Piece:
    """One evidence with what is said about it (its stances and the claim texts)."""

    item: Evidence
    frame: pd.DataFrame
    stances: tuple[str, ...]
    claims: tuple[str, ...]
    call: ToolCall | None
    focus_claims: tuple[str, ...] = ()
    """What the focus hypothesis says (its statement and rationale, its links'
    readings): the rows carrying these come first, after those showing the numbers of
    :attr:`focus_readings`."""
    focus_readings: tuple[str, ...] = ()
    """The readings of its links to the focus hypothesis: the rows showing each number
    they state come before all others."""

    @classmethod
    def of(cls, board: Board, evidence_id: str, focus: str | None = None) -> _Piece:
        item = board.get_evidence(evidence_id)
        links = [link for link in board.list_links(evidence_id=evidence_id)
                 if focus is None or link.hypothesis_id == focus]
        claims = [item.description, *(link.rationale for link in links)]
        for link in links:
            claims.append(board.get_hypothesis(link.hypothesis_id).statement)
        claims += [v.rationale for v in board.list_verdicts()
                   if evidence_id in v.evidence_ids
                   and (focus is None or v.hypothesis_id == focus)]
        focus_claims: list[str] = []
        if focus is not None:  # exploration that motivated it has no link to read from
            hypothesis = board.get_hypothesis(focus)
            focus_claims = [hypothesis.statement, hypothesis.rationale or "",
                            *(link.rationale for link in links)]
        return cls(item, board.evidence_frame(evidence_id),
                   tuple(f"{link.stance.value} {link.hypothesis_id}" for link in links),
                   tuple(claims), board.tool_call_of(evidence_id), tuple(focus_claims),
                   tuple(link.rationale for link in links) if focus is not None else ())

    @property
    def best_detail(self) -> Detail:
        whole = ANALYSIS_WHOLE_ROWS if self.call is not None else WHOLE_ROWS
        return Detail.WHOLE if len(self.frame) <= whole else Detail.SUMMARY

    def render(self, detail: Detail) -> str:
        item = self.item
        bears = f" ({', '.join(self.stances)})" if self.stances else ""
        shape = _SHAPES.get(detail)
        if self.call is not None:  # its generated SQL says nothing the call does not
            origin = f"From {call_text(self.call)}"
        else:
            sql = " ".join(item.sql.split())
            if shape is not None and shape.sql_chars is not None:
                sql = cut_at_word(sql, shape.sql_chars)
            origin = f"SQL: {sql}"
        lines = [f"[{item.id}] {' '.join(item.description.split())}{bears}", origin]
        cut = limit_clause(item.sql, item.row_count) if self.call is None else ""
        size = (f"{item.row_count:,} row{'s' if item.row_count != 1 else ''} x "
                f"{len(self.frame.columns)} columns{cut}")
        stored = len(self.frame)
        if shape is None or len(self.frame.columns) == 0:
            lines.append(f"Result ({size}, all shown):" if stored == item.row_count
                         else f"Result ({size}; the {stored:,} stored rows):")
            lines.append(render_rows(self.frame) if len(self.frame.columns) else "(none)")
            return "\n".join(lines)
        kept = f"; {stored:,} stored" if stored < item.row_count else ""
        if self.call is not None:  # the summary states the readings: show their rows
            lines.append(f"Result ({size}{kept}; the summary above gives its readings). "
                         f"Columns: {', '.join(map(str, self.frame.columns))}.")
            lines += self._analysis_rows(shape)
            return "\n".join(lines)
        lines.append(f"Result ({size}{kept}), summarised. Columns, over the {stored:,} "
                     "stored rows:")
        lines += column_statistics(self.frame, top=shape.top_values)
        lines += self._rows(shape)
        return "\n".join(lines)

    @cached_property
    def _claim_rows(self) -> list[int]:
        """The rows that carry the claims, strongest first (as many as any shape shows):
        the fewest rows showing every number the readings for the focus hypothesis state
        (a reading quoting six strata is shown its six rows, not the strongest five
        matches), then those carrying what the focus hypothesis says (a segment_scan's
        summary names its strongest segments, not the one a hypothesis was proposed on),
        then those carrying the evidence's own readings."""
        most = max(shape.claim_rows for shape in _SHAPES.values())
        first = claim_rows(self.frame, self.focus_claims, most) if self.focus_claims else []
        covered = covering_rows(self.frame, self.focus_readings, most, about=first)
        rest = claim_rows(self.frame, self.claims, most)
        return list(dict.fromkeys([*covered, *first, *rest]))[:most]

    def _analysis_rows(self, shape: _Shape) -> list[str]:
        """The first row (the overall figures, or the strongest segment) and the rows
        that carry the readings."""
        if self.frame.empty:
            return ["(no rows)"]
        carrying = [p for p in self._claim_rows if p != 0][: shape.analysis_rows]
        positions = sorted({0, *carrying})
        label = "row 1 (first)" + (f"; {', '.join(str(p + 1) for p in carrying)} (they "
                                   "carry the numbers or names of the readings)"
                                   if carrying else "")
        return [f"Rows shown: {label}:", render_rows(self.frame, positions)]

    def _rows(self, shape: _Shape) -> list[str]:
        total = len(self.frame)
        head = list(range(min(shape.head, total)))
        tail = list(range(max(len(head), total - shape.tail), total))
        carrying = [p for p in self._claim_rows[: shape.claim_rows]
                    if p not in head and p not in tail]
        if not (head or tail or carrying):
            return ["(no row carries a number or name of the readings)"]
        parts = []
        if head:
            parts.append(f"{_span(head)} (first)")
        if carrying:
            parts.append(f"{', '.join(str(p + 1) for p in sorted(carrying))} (they carry the "
                         "numbers or names of the readings)")
        if tail:
            parts.append(f"{_span(tail)} (last)")
        return [f"Rows shown: {'; '.join(parts)}:",
                render_rows(self.frame, sorted({*head, *carrying, *tail}))]


def _span(positions: list[int]) -> str:
    first, last = positions[0] + 1, positions[-1] + 1
    return f"row {first}" if first == last else f"rows {first}-{last}"


RECORDED_AS = "\nRecorded as:"
"""What separates an analysis evidence's summary from the recording agent's words in its
description (see :func:`~d2_notebook.detective.sql_tools.analysis_description`)."""


def tool_summary(description: str) -> str:
    """The analysis tool's own summary in an evidence's description, without the
    recording agent's words."""
    return description.split(RECORDED_AS, 1)[0]


def call_text(call: ToolCall) -> str:
    """An analysis-tool call as one line: ``segment_scan(table=visits, outcome=died)``."""
    args = ", ".join(f"{k}={_arg(v)}" for k, v in call.args.items())
    return f"{call.tool}({args})"


def _arg(value: object) -> str:
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_arg(v) for v in value) + "]"
    return cut_at_word(str(value), 80)


def evidence_source(board: Board, item: Evidence) -> str:
    """Where an evidence came from, in a few words: its analysis-tool call, else "SQL"."""
    call = board.tool_call_of(item.id)
    return f"from {call_text(call)}" if call is not None else "from SQL"


def cut_at_word(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else its longest prefix that ends at
    a word boundary, with "…"; never a word cut in two."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    head = flat[: limit + 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else flat.split(" ", 1)[0]
    return cut.rstrip(",;:") + " …"
