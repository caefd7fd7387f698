"""The board's look, read from ``look.json``: colours, sizes, layout rules, stylesheet.

``look.json`` is the one description of how a board graph looks. The live widget, the
static SVG (this package) and the JupyterLab renderer (``extension/``, which imports a
build-time copy) all read it, so the three pictures cannot drift apart. Colours travel in
each element's data (``data(color)``/``data(border)`` in the stylesheet), chosen here by
:func:`hypothesis_colors` and :func:`evidence_colors`.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

LOOK: dict[str, Any] = json.loads(
    resources.files("d2_notebook.notebook").joinpath("look.json").read_text(encoding="utf-8"))
"""The parsed ``look.json``."""

MIME_TYPE: str = LOOK["mime_type"]
"""The MIME type of a board snapshot in a notebook output (the renderer's type)."""
STATUS_COLORS: dict[str, str] = LOOK["status_colors"]
"""Fill colour of a hypothesis node by status."""
STATUS_BORDERS: dict[str, str] = LOOK["status_borders"]
CHECK_BORDERS: dict[str, str] = LOOK["check_borders"]
"""Border of a hypothesis whose verdict a re-check found stale."""
EDGE_COLORS: dict[str, str] = LOOK["edge_colors"]
"""Line colour by edge kind (supports, contradicts, weak, neutral, refines, motivates)."""
EVIDENCE_COLORS: dict[str, str] = LOOK["evidence_colors"]
"""Fill colour of an evidence node by its stance to the hypothesis it sits beside."""
EVIDENCE_BORDERS: dict[str, str] = LOOK["evidence_borders"]
REDUNDANT_OPACITY = 0.35
REUSED_BORDER: str = next(rule["style"]["border-color"] for rule in LOOK["stylesheet"]
                          if rule["selector"] == "node.reused")
"""Border colour of evidence a follow-up reused (look.json's ``node.reused`` rule)."""

HYPOTHESIS_WIDTH: float = LOOK["sizes"]["hypothesis_width"]
HYPOTHESIS_HEIGHT: float = LOOK["sizes"]["hypothesis_height"]
EVIDENCE_WIDTH: float = LOOK["sizes"]["evidence_width"]
EVIDENCE_HEIGHT: float = LOOK["sizes"]["evidence_height"]


@dataclass(frozen=True)
class NodeColors:
    """Fill and border of one node."""

    fill: str
    border: str


def hypothesis_colors(status: str) -> NodeColors:
    """Colours of a hypothesis with ``status`` (a :class:`HypothesisStatus` value)."""
    return NodeColors(STATUS_COLORS[status], STATUS_BORDERS[status])


def evidence_colors(stance: str | None, human: bool = False) -> NodeColors:
    """Colours of an evidence node: by its stance (a :class:`Stance` value) to the
    hypothesis it is drawn beside, ``None`` for exploration nothing is linked to; human
    evidence keeps its stance fill with a purple border."""
    key = stance if stance in EVIDENCE_COLORS else "context"
    border = EVIDENCE_BORDERS["human"] if human else EVIDENCE_BORDERS[key]
    return NodeColors(EVIDENCE_COLORS[key], border)


def readable_zoom() -> float:
    """The smallest zoom at which every label is at least ``view.min_label_px`` on screen."""
    view = LOOK["view"]
    return float(view["min_label_px"]) / float(view["smallest_font_px"])


def cytoscape_style() -> list[dict[str, Any]]:
    """The cytoscape stylesheet (a fresh copy, safe to change)."""
    return copy.deepcopy(LOOK["stylesheet"])
