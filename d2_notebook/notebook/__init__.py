"""d2_notebook in Jupyter: the ``%%investigate``/``%%evidence`` magics, the live board
widget and its static fallback.

``%load_ext d2_notebook`` registers the magics; :func:`show` displays any board.
Importing this package does not import ipywidgets or ipycytoscape until a widget is
actually built.
"""

from __future__ import annotations

from typing import Any

from d2_notebook.notebook import human
from d2_notebook.notebook.graph import (
    GraphDiff,
    GraphEdge,
    GraphModel,
    GraphNode,
    board_elements,
    diff,
)
from d2_notebook.notebook.running import InvestigationRun
from d2_notebook.notebook.static import board_html, board_markdown, board_svg
from d2_notebook.notebook.views import BoardView, InvestigationView, show

__all__ = [
    "BoardView",
    "GraphDiff",
    "GraphEdge",
    "GraphModel",
    "GraphNode",
    "InvestigationRun",
    "InvestigationView",
    "board_elements",
    "board_html",
    "board_markdown",
    "board_svg",
    "diff",
    "human",
    "load_ipython_extension",
    "show",
]


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%investigate`` and ``%%evidence`` and make ``Investigate`` settable
    with ``%config`` (called by ``%load_ext d2_notebook``)."""
    from d2_notebook.notebook.magic import Investigate

    magics = Investigate(shell=ipython)
    ipython.register_magics(magics)
    if magics not in ipython.configurables:
        ipython.configurables.append(magics)
