"""Readings checked like reports: the numbers a collector or judge writes when it links
evidence must be in that evidence's rows.

A link's reading is what judges and the reporter read of an evidence before (or instead
of) its rows, and the report's claim check counts a verdict's text as a source, so a
figure a model wrote into a reading without a query behind it could reach the report
looking verified (real-model runs stored year figures in a reading of a result that held
no year). :func:`check_reading` looks each number of a reading up the way
:func:`~d2_notebook.detective.claim_check.check_claims` looks up a report's: in the
linked evidence's stored rows (a difference, ratio or relative change of two of its
values counts), in the rows of any other evidence the reading cites by id, and in what
restating is not claiming (the evidence's description and SQL, the hypothesis, the
question). A number found nowhere is stored marked ``*(unverified)*``, and the tool's
answer names it, so the model can link the evidence that holds it or drop it; the link
itself is never refused (the reading's direction is still the model's to give).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from d2_notebook.board import Board
from d2_notebook.detective.claim_check import check_claims
from d2_notebook.errors import NotFoundError

_CITED = re.compile(r"\bE\d+\b")


@dataclass(frozen=True)
class CheckedReading:
    """A reading after the check.

    Attributes:
        text: the reading as stored: each number not found marked ``*(unverified)*``.
        unverified: those numbers, as written, in order.
    """

    text: str
    unverified: tuple[str, ...]

    def note(self, evidence_id: str) -> str | None:
        """What the tool's answer says about the unverified numbers (None: all found)."""
        if not self.unverified:
            return None
        listed = ", ".join(dict.fromkeys(self.unverified))
        return (f"note: {listed} in your reading {'is' if len(self.unverified) == 1 else 'are'}"
                f" not in {evidence_id}'s rows (nor a difference or ratio of two of its "
                "values), so it is stored marked (unverified) and no reader takes it as "
                f"{evidence_id}'s; link or record the evidence that holds it, or leave it out.")


def check_reading(board: Board, evidence_id: str, hypothesis_id: str, reading: str,
                  *, question: str = "") -> CheckedReading:
    """Look every number of ``reading`` up in ``evidence_id``'s rows (and those of the
    evidence it cites), its description and SQL, the hypothesis and ``question``."""
    if not reading.strip():
        return CheckedReading(reading, ())
    evidence = board.get_evidence(evidence_id)
    frames: dict[str, pd.DataFrame] = {evidence_id: board.evidence_frame(evidence_id)}
    texts = [evidence.description, evidence.sql, question,
             board.get_hypothesis(hypothesis_id).statement]
    for cited in dict.fromkeys(_CITED.findall(reading)):
        if cited in frames:
            continue
        try:
            other = board.get_evidence(cited)
        except NotFoundError:
            continue
        frames[cited] = board.evidence_frame(cited)
        texts += [other.description, other.sql]
    checked = check_claims(reading, frames, texts, also_cited=(evidence_id,))
    if not checked.unverified:
        return CheckedReading(reading, ())
    marked = checked.marked_report.split("\n\n---\n", 1)[0]
    return CheckedReading(marked, tuple(claim.number for claim in checked.unverified))
