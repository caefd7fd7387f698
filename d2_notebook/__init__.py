"""d2_notebook: data investigations in Jupyter.

A team of LLM agents explores a DuckDB database, proposes competing hypotheses,
collects SQL evidence for and against each, judges, refines and reports. Their shared
state, the Data Investigation Board, is a SQLite file (:class:`Board`).
"""

__version__ = "0.1.0"

from d2_notebook.board import Board
from d2_notebook.detective import (
    InvestigationResult,
    InvestigationSettings,
    investigate,
    investigate_sync,
)
from d2_notebook.detective.recheck import RecheckResult, recheck, recheck_sync

__all__ = [
    "Board",
    "InvestigationResult",
    "InvestigationSettings",
    "RecheckResult",
    "__version__",
    "investigate",
    "investigate_sync",
    "recheck",
    "recheck_sync",
]


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext d2_notebook``: register ``%%investigate`` and ``%%evidence``.

    Imported lazily so that ``import d2_notebook`` does not load the notebook layer.
    """
    from d2_notebook.notebook import load_ipython_extension as load

    load(ipython)
