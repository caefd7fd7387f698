"""Colours and the cytoscape stylesheet shared by the live widget and the static SVG."""

from __future__ import annotations

from typing import Any

STATUS_COLORS = {
    "proposed": "#9e9e9e",
    "investigating": "#1e88e5",
    "supported": "#43a047",
    "contradicted": "#e53935",
    "inconclusive": "#ffb300",
    "abandoned": "#eeeeee",
}
"""Fill colour of a hypothesis node by status."""

EDGE_COLORS = {"supports": "#43a047", "contradicts": "#e53935", "refines": "#757575",
               "motivates": "#bdbdbd"}
EVIDENCE_COLOR = "#607d8b"
HUMAN_COLOR = "#8e24aa"
REDUNDANT_OPACITY = 0.3
HYPOTHESIS_WIDTH = 230
HYPOTHESIS_HEIGHT = 50
EVIDENCE_SIZE = 26


def cytoscape_style() -> list[dict[str, Any]]:
    """The stylesheet for :class:`ipycytoscape.CytoscapeWidget` (selectors on classes)."""
    style: list[dict[str, Any]] = [
        {"selector": "node.hypothesis", "style": {
            "shape": "round-rectangle", "label": "data(label)", "text-wrap": "wrap",
            "text-max-width": f"{HYPOTHESIS_WIDTH - 12}px", "text-valign": "center",
            "font-size": "12px", "width": HYPOTHESIS_WIDTH, "height": HYPOTHESIS_HEIGHT,
            "border-width": 1, "border-color": "#616161", "color": "#212121",
            # The status colour travels in the node's data: compound class selectors
            # (node.hypothesis.supported) are not applied reliably by ipycytoscape.
            "background-color": "data(color)"}},
        {"selector": "node.evidence", "style": {
            "shape": "ellipse", "label": "data(label)", "font-size": "9px",
            "text-valign": "center", "color": "#ffffff", "width": EVIDENCE_SIZE,
            "height": EVIDENCE_SIZE, "background-color": EVIDENCE_COLOR}},
        {"selector": "node.evidence.human", "style": {"background-color": HUMAN_COLOR}},
        {"selector": "node.hypothesis.human", "style": {
            "border-color": HUMAN_COLOR, "border-width": 2}},
        {"selector": "node.redundant", "style": {"opacity": REDUNDANT_OPACITY}},
        {"selector": "node.abandoned", "style": {
            "border-style": "dashed", "color": "#616161"}},
        {"selector": "node:selected", "style": {"border-width": 3, "border-color": "#000000"}},
        {"selector": "edge", "style": {
            "width": 2, "curve-style": "bezier", "target-arrow-shape": "triangle",
            "arrow-scale": 0.8}},
        {"selector": "edge.refines", "style": {"line-style": "dashed"}},
        {"selector": "edge.motivates", "style": {"line-style": "dotted", "width": 1}},
    ]
    for kind, color in EDGE_COLORS.items():
        style.append({"selector": f"edge.{kind}",
                      "style": {"line-color": color, "target-arrow-color": color}})
    return style
