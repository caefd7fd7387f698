"""The Data Detective: the agent team, its tools, the control loop and its variants.

Start here: :func:`investigate` (async) or :func:`investigate_sync`.
"""

from d2_notebook.detective.investigate import (
    Conclusion,
    InvestigationResult,
    investigate,
    investigate_sync,
)
from d2_notebook.detective.settings import VARIANTS, InvestigationSettings

__all__ = [
    "VARIANTS",
    "Conclusion",
    "InvestigationResult",
    "InvestigationSettings",
    "investigate",
    "investigate_sync",
]
