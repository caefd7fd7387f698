"""The Data Investigation Board: hypotheses, evidence, links, verdicts and the event log
in one SQLite file. See :class:`Board`."""

from d2_notebook.board.board import DEFAULT_MAX_ROWS, Board
from d2_notebook.board.follow_ups import EvidenceReuse
from d2_notebook.board.records import (
    ChartRequest,
    ColumnSpec,
    DimensionDismissal,
    Event,
    Evidence,
    Hypothesis,
    HypothesisStatus,
    Investigation,
    InvestigationState,
    Link,
    ModelCall,
    ModelCallStatus,
    Recheck,
    RecheckedVerdict,
    RecheckOutcome,
    RecheckRun,
    Stance,
    ToolCall,
    Verdict,
    VerdictCheck,
)

__all__ = [
    "DEFAULT_MAX_ROWS",
    "Board",
    "ChartRequest",
    "ColumnSpec",
    "DimensionDismissal",
    "Event",
    "Evidence",
    "EvidenceReuse",
    "Hypothesis",
    "HypothesisStatus",
    "Investigation",
    "InvestigationState",
    "Link",
    "ModelCall",
    "ModelCallStatus",
    "Recheck",
    "RecheckOutcome",
    "RecheckRun",
    "RecheckedVerdict",
    "Stance",
    "ToolCall",
    "Verdict",
    "VerdictCheck",
]
