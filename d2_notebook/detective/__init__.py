"""The Data Detective: the agent team, its tools, the control loop and its variants.

Start here: :func:`investigate` (async) or :func:`investigate_sync`.
"""

from d2_notebook.detective.investigate import (
    Conclusion,
    InvestigationResult,
    investigate,
    investigate_sync,
)
from d2_notebook.detective.loop import RunOutcome
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.variant import (
    ALL_VARIANTS,
    VARIANTS,
    Role,
    Variant,
    parse_variant,
)

__all__ = [
    "ALL_VARIANTS",
    "VARIANTS",
    "Conclusion",
    "InvestigationResult",
    "InvestigationSettings",
    "Role",
    "RunOutcome",
    "Variant",
    "investigate",
    "investigate_sync",
    "parse_variant",
]
