"""Settings of one investigation: team size, limits, budgets and the variant.

They are stored on the board with the investigation, so a resumed or replayed run
uses the same ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from d2_notebook.errors import InvalidRecordError

VARIANTS = (
    "full",
    "no_reporter",
    "no_judge",
    "merged_planner",
    "single_agent_board",
    "react_sql",
)
"""Configurations of the same code, for the ablation study (PAPER §4.2)."""


@dataclass(frozen=True)
class InvestigationSettings:
    """How an investigation runs.

    Attributes:
        collectors: evidence collectors running at once.
        max_rounds: orchestrator rounds (dispatch → collect → judge) at most.
        max_steps: model calls one agent may make in one turn (tool-call iterations).
        max_steps_alone: model calls of the single-agent variants (``react_sql``,
            ``single_agent_board``), which do every job in one turn: a fair baseline
            gets about what the whole team would use.
        max_evidence_returns: times a judge may send a hypothesis back for more evidence.
        max_hypothesizer_calls: times the hypothesizer runs (first pass included).
        max_calls, max_tokens, max_usd: the model budget for the whole investigation.
        max_seconds: wall-time budget.
        reporter_reserve: share of the call/token/dollar budget kept for the reporter.
        preview_rows: rows of a query result shown to a model.
        sql_timeout_s: per-query time limit.
        context_window_tokens: the model's context window in tokens, against which
            prompts are budgeted; None uses the model's known window
            (:func:`d2_notebook.llm.context_window`).
        variant: one of :data:`VARIANTS`.
    """

    collectors: int = 4
    max_rounds: int = 4
    max_steps: int = 12
    max_steps_alone: int = 80
    max_evidence_returns: int = 1
    max_hypothesizer_calls: int = 2
    max_calls: int | None = None
    max_tokens: int | None = None
    max_usd: float | None = None
    max_seconds: float | None = None
    reporter_reserve: float = 0.15
    preview_rows: int = 20
    sql_timeout_s: float = 30.0
    context_window_tokens: int | None = None
    variant: str = "full"

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise InvalidRecordError(
                f"unknown variant {self.variant!r}; use one of: {', '.join(VARIANTS)}"
            )
        for name in ("collectors", "max_rounds", "max_steps", "max_steps_alone",
                     "max_hypothesizer_calls", "preview_rows"):
            if getattr(self, name) < 1:
                raise InvalidRecordError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.context_window_tokens is not None and self.context_window_tokens < 1_000:
            raise InvalidRecordError(
                f"context_window_tokens must be at least 1000, got {self.context_window_tokens}; "
                "pass the model's context window in tokens, or None for its known window")
        if not 0.0 <= self.reporter_reserve < 1.0:
            raise InvalidRecordError("reporter_reserve must be in [0, 1)")

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON form, as stored on the board."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InvestigationSettings:
        """Rebuild settings stored on a board (unknown keys are ignored)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
