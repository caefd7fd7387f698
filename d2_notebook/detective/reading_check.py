"""Readings, verdicts and hypothesis rationales checked like reports: the numbers a
collector, judge or hypothesizer writes about evidence must be in that evidence's rows.

A link's reading is what judges and the reporter read of an evidence before (or instead
of) its rows, and a verdict's rationale is a source the report's claim check looks
numbers up in, so a figure a model wrote without a query behind it could reach the report
looking verified (real-model runs stored year figures in a reading of a result that held
no year), and a hypothesis's rationale is what its collector and judge read first (one
quoted a monthly low no row held). :func:`check_text` looks each number of such a text up the way
:func:`~d2_notebook.detective.claim_check.check_claims` looks up a report's, in:

- the stored rows of the evidence the text is about, and of any evidence it cites by id;
- a difference, ratio or relative change of two values of the rows the text or its
  hypothesis names (by their names or numbers, at most :data:`NAMED_ROWS` per evidence
  for each: "lowers it by 0.335" of a reading on "Pulmorex ... in critical cases"): over
  a whole large result, two-value arithmetic would match almost any figure; a number of days may be
  the span between two dates of those rows, or one of them and a date of the question,
  the hypothesis or the SQL ("19 days before the murder");
- what restating is not claiming: the evidence's SQL and row count, an analysis tool's own
  summary (not the recording model's words), the hypothesis, the question and the schema
  summary (its tables' row counts).

A number found nowhere is stored marked ``*(unverified)*`` (and a marked number is no
source for the report's check), and the tool's answer names it so the model can link
the evidence that holds it or drop it; the write itself is never refused.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from d2_notebook.board import Board, Evidence
from d2_notebook.detective.claim_check import check_claims
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.evidence_view import tool_summary
from d2_notebook.detective.result_summary import claim_rows
from d2_notebook.errors import NotFoundError

NAMED_ROWS = 6
"""Most rows of one evidence whose values a text's figure may be a difference or ratio of."""

_CITED = re.compile(r"\bE\d+\b")


@dataclass(frozen=True)
class CheckedText:
    """A reading or rationale after the check.

    Attributes:
        text: the text as stored: each number not found marked ``*(unverified)*``.
        unverified: those numbers, as written, in order.
        read: the evidence the text was checked against, for the note.
    """

    text: str
    unverified: tuple[str, ...]
    read: tuple[str, ...] = ()

    def note(self, fix: str = "link or record the evidence that holds them, or leave them "
             "out") -> str | None:
        """What the tool's answer says about the unverified numbers (None: all found);
        ``fix`` says what the writer can do about them."""
        if not self.unverified:
            return None
        listed = ", ".join(dict.fromkeys(self.unverified))
        one = len(set(self.unverified)) == 1
        where = " or ".join(self.read) if self.read else "any result it cites"
        return (f"note: {listed} in your text {'is' if one else 'are'} not in the rows of "
                f"{where} (nor a difference or ratio of two values of the rows it names, "
                f"nor a total of cells its sentence lists: a total counts once its sentence "
                f"lists the cells it adds, \"127 rows: 71 and 56\"), so "
                f"{'it is' if one else 'they are'} stored marked (unverified) and no reader "
                f"takes them as the evidence's; {fix}.")


def check_text(board: Board, evidence_ids: Sequence[str], hypothesis_id: str | None,
               text: str, *, question: str = "", statement: str | None = None,
               schema: str = "") -> CheckedText:
    """Look every number of ``text`` up in the rows of ``evidence_ids`` (and of the
    evidence it cites), their SQL and tool summaries, the hypothesis, ``question`` and
    ``schema`` (the schema summary every role reads: "the interview table's 81 rows").

    ``statement``: the hypothesis's statement, for a text written before the hypothesis
    is on the board (its rationale); else it is read from ``hypothesis_id``."""
    read = tuple(dict.fromkeys(evidence_ids))
    if not text.strip():
        return CheckedText(text, (), read)
    items: dict[str, Evidence] = {}
    for evidence_id in (*read, *_CITED.findall(text)):
        if evidence_id not in items:
            try:
                items[evidence_id] = board.get_evidence(evidence_id)
            except NotFoundError:
                continue
    frames = {e: board.evidence_frame(e) for e in items}
    if statement is None and hypothesis_id is not None:
        statement = board.get_hypothesis(hypothesis_id).statement
    named = {e: _named_rows(frame, (text, statement or "")) for e, frame in frames.items()}
    texts = [question, statement or "", schema]
    for evidence_id, item in items.items():
        texts += [item.sql, f"{item.row_count} rows"]  # "of 18 women": the rows counted
        if board.tool_call_of(evidence_id) is not None:  # the tool's words, not the model's
            texts.append(tool_summary(item.description))
    checked = check_claims(text, frames, texts,
                           also_cited=tuple(e for e in read if e in frames), derive_from=named)
    if not checked.unverified:
        return CheckedText(text, (), read)
    return CheckedText(checked.marked_text, tuple(c.number for c in checked.unverified), read)


def check_team_text(ctx: TeamContext, evidence_ids: Sequence[str], hypothesis_id: str | None,
                    text: str, *, statement: str | None = None) -> CheckedText:
    """:func:`check_text` for a text a team role writes, with what every role reads
    besides the evidence: the question and the schema summary."""
    return check_text(ctx.board, evidence_ids, hypothesis_id, text, question=ctx.question,
                      statement=statement, schema=ctx.schema_summary)


def _named_rows(frame: pd.DataFrame, texts: Sequence[str]) -> pd.DataFrame:
    """The rows each of ``texts`` names by their names or numbers (at most
    :data:`NAMED_ROWS` for each), in the texts' order."""
    positions = [p for text in texts if text.strip()
                 for p in claim_rows(frame, [text], NAMED_ROWS)]
    return frame.iloc[list(dict.fromkeys(positions))]
