"""What the latest re-check says of each verdict, in the words every notebook view uses.

A re-check (``d2 board recheck``, ``%investigate --recheck``) re-runs a board's evidence
on the data as it is now and marks each verdict *stale* (something it cites changed or
fails) or *confirmed on <date>* (:mod:`d2_notebook.board.rechecks`). The widget, the
snapshot the JupyterLab extension draws, and the static SVG show those marks on the
hypothesis node, in its details pane and as a count in the header, the way
``d2 board show`` and the HTML report do.
"""

from __future__ import annotations

from dataclasses import dataclass

from d2_notebook.board import Board
from d2_notebook.board.records import RecheckedVerdict, VerdictCheck


@dataclass(frozen=True)
class CheckCounts:
    """The header's re-check numbers: verdicts stale and confirmed, and when."""

    stale: tuple[str, ...]
    confirmed: int
    checked_on: str

    def line(self) -> str:
        """``"re-checked 2026-12-01: 2 stale (H1, H3), 4 confirmed"``."""
        stale = (f"{len(self.stale)} stale ({', '.join(self.stale)})" if self.stale
                 else "0 stale")
        return f"re-checked {self.checked_on}: {stale}, {self.confirmed} confirmed"


def verdict_checks(board: Board,
                   investigation_id: str | None = None) -> dict[str, RecheckedVerdict]:
    """Per hypothesis, what the latest finished re-check of its investigation decided
    (empty when the board was never re-checked); of one investigation when
    ``investigation_id`` is given."""
    if investigation_id is not None:
        return board.latest_verdict_checks(investigation_id)
    checks: dict[str, RecheckedVerdict] = {}
    for investigation in board.list_investigations():
        checks.update(board.latest_verdict_checks(investigation.id))
    return checks


def check_counts(checks: dict[str, RecheckedVerdict]) -> CheckCounts | None:
    """The header's numbers for ``checks`` (None: never re-checked)."""
    if not checks:
        return None
    stale = tuple(sorted((h for h, c in checks.items() if c.check is VerdictCheck.STALE),
                         key=_id_order))
    return CheckCounts(stale, len(checks) - len(stale),
                       max(c.created_at for c in checks.values())[:10])


def check_mark(check: RecheckedVerdict) -> str:
    """The short mark on a hypothesis node: ``"⚠ stale"`` or ``"✓ confirmed"`` (the date
    is in its hover text, its details and the header)."""
    if check.check is VerdictCheck.STALE:
        return "⚠ stale"
    return "✓ confirmed"


def check_sentence(check: RecheckedVerdict) -> str:
    """The details pane's sentence on a verdict's re-check."""
    day = check.created_at[:10]
    cited = ", ".join(check.evidence_ids) or "no evidence"
    if check.check is VerdictCheck.STALE:
        return (f"Stale since {day} ({check.run_id}): evidence it cites ({cited}) changed "
                "or fails on the data as it is now; the verdict needs judging again.")
    return (f"Confirmed on {day} ({check.run_id}): every evidence it cites ({cited}) came "
            "back the same.")


def _id_order(hypothesis_id: str) -> tuple[int, str]:
    digits = hypothesis_id.lstrip("H")
    return (int(digits), "") if digits.isdigit() else (0, hypothesis_id)
