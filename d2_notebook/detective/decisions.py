"""What each role decided in its turn, one type per role, for the control loop to act on.

A role's tools fill its decision while the agent works (the handlers are the only
writers); the role function returns it when the turn ends. The loop reads nothing
else of a turn: no role's decision carries another role's fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from d2_notebook.board import HypothesisStatus


@dataclass
class HypothesizerDecision:
    """The hypotheses a hypothesizer (or planner) added, in order."""

    added: list[str] = field(default_factory=list)


class Steering(Enum):
    """What the orchestrator (or planner) decided about the investigation as a whole."""

    NONE = "none"
    """The turn ended without a decision (step limit, no tool call)."""
    CARRY_ON = "carry_on"
    """Collection goes on with the hypotheses on the board."""
    MORE_HYPOTHESES = "more_hypotheses"
    """Coverage is thin: the hypothesizer runs again with guidance."""
    FINISH = "finish"
    """Every hypothesis is settled and coverage is enough: write the report."""


@dataclass
class OrchestratorDecision:
    """The orchestrator's (or planner's) decision and the hypotheses it abandoned."""

    steering: Steering = Steering.NONE
    guidance: str = ""
    reason: str = ""
    abandoned: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)  # the planner adds hypotheses too


@dataclass
class CollectorDecision:
    """A collector's hand-over: its summary for the judge (None if it did not submit),
    or, in the ``no_judge`` variant, its own verdict."""

    summary: str | None = None
    verdict: HypothesisStatus | None = None


class Judgement(Enum):
    """How a judge decided a hypothesis."""

    NONE = "none"
    """No decision within the step limit: the loop settles it as inconclusive."""
    VERDICT = "verdict"
    MORE_EVIDENCE = "more_evidence"
    REFINED = "refined"
    """A verdict, and refined child hypotheses that enter the queue at once."""


@dataclass
class JudgeDecision:
    """A judge's decision on one hypothesis."""

    judgement: Judgement = Judgement.NONE
    status: HypothesisStatus | None = None
    hints: str = ""
    children: list[str] = field(default_factory=list)


@dataclass
class ReportDecision:
    """The reporter's (or single agent's) Markdown report, None if it wrote none."""

    report: str | None = None


@dataclass
class ReactAnswer:
    """The ``react_sql`` agent's final answer and the structured fields it gave."""

    report: str | None = None
    answer: dict[str, Any] | None = None
