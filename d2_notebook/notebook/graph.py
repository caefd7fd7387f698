"""The board as graph elements, and the difference between two such graphs.

Pure functions of the board's records (no widget, no kernel, no SQL against user
data): :func:`board_elements` turns a board into a :class:`GraphModel` with stable ids
(``"H1"``, ``"E3"``, ``"E3->H1"``, ``"H1->H3"``), and :func:`diff` says what changed
between two models, which is all the live widget applies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from d2_notebook.board import Board, Evidence, Hypothesis, Link
from d2_notebook.notebook.layout import Position, positions
from d2_notebook.notebook.style import STATUS_COLORS

LABEL_CHARS = 64
"""Hypothesis labels are cut to this many characters of the statement."""


@dataclass(frozen=True)
class GraphNode:
    """One node: a hypothesis or a piece of evidence.

    ``classes`` carry the kind and state the stylesheet colours by (``"hypothesis
    supported"``, ``"evidence redundant"``); ``data`` is what a click or tooltip shows.
    """

    id: str
    kind: str
    label: str
    classes: str
    position: Position
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphEdge:
    """One edge: evidence → hypothesis (``supports``/``contradicts``) or parent →
    refinement (``refines``)."""

    id: str
    source: str
    target: str
    kind: str
    classes: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphModel:
    """Nodes and edges keyed by their stable ids, in drawing order."""

    nodes: dict[str, GraphNode] = field(default_factory=dict)
    edges: dict[str, GraphEdge] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphDiff:
    """What to change to turn one :class:`GraphModel` into another."""

    added_nodes: list[GraphNode] = field(default_factory=list)
    updated_nodes: list[GraphNode] = field(default_factory=list)
    removed_nodes: list[str] = field(default_factory=list)
    added_edges: list[GraphEdge] = field(default_factory=list)
    updated_edges: list[GraphEdge] = field(default_factory=list)
    removed_edges: list[str] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the two graphs are the same."""
        return not (self.added_nodes or self.updated_nodes or self.removed_nodes
                    or self.added_edges or self.updated_edges or self.removed_edges)


def board_elements(board: Board, include_redundant: bool = True) -> GraphModel:
    """The board's hypotheses, evidence, links and refinements as a graph.

    Args:
        board: the board to read (records only; evidence rows are not loaded).
        include_redundant: False leaves out evidence marked redundant, and its edges.
    """
    hypotheses = board.list_hypotheses()
    evidence = board.list_evidence()
    links = board.list_links()
    return elements_from_records(hypotheses, evidence, links, include_redundant)


def elements_from_records(
    hypotheses: list[Hypothesis],
    evidence: list[Evidence],
    links: list[Link],
    include_redundant: bool = True,
) -> GraphModel:
    """:func:`board_elements` on records already read from a board."""
    placed = positions(hypotheses, evidence, links)
    model = GraphModel()
    for hyp in hypotheses:
        model.nodes[hyp.id] = hypothesis_node(hyp, placed[hyp.id])
    for item in evidence:
        if item.redundant and not include_redundant:
            continue
        model.nodes[item.id] = evidence_node(item, placed[item.id])
    for hyp in hypotheses:
        if hyp.parent_id in model.nodes:
            edge_id = f"{hyp.parent_id}->{hyp.id}"
            model.edges[edge_id] = GraphEdge(edge_id, hyp.parent_id, hyp.id, "refines",
                                             "refines", {"kind": "refines"})
    for hyp in hypotheses:  # exploration that suggested a hypothesis: context, not a test
        for evidence_id in hyp.motivated_by:
            if evidence_id in model.nodes and hyp.id in model.nodes:
                edge_id = f"{evidence_id}~>{hyp.id}"
                model.edges[edge_id] = GraphEdge(edge_id, evidence_id, hyp.id, "motivates",
                                                 "motivates", {"kind": "motivates"})
    for link in links:
        if link.evidence_id not in model.nodes or link.hypothesis_id not in model.nodes:
            continue
        edge_id = f"{link.evidence_id}->{link.hypothesis_id}"
        stance = link.stance.value
        model.edges[edge_id] = GraphEdge(edge_id, link.evidence_id, link.hypothesis_id, stance,
                                         stance, {"kind": stance, "tooltip": link.rationale})
    return model


def hypothesis_node(hyp: Hypothesis, position: Position) -> GraphNode:
    """The node of one hypothesis, classed by its status."""
    status = hyp.status.value
    classes = f"hypothesis {status}" + (" human" if hyp.author_role == "human" else "")
    confidence = "" if hyp.confidence is None else f" ({hyp.confidence:.0%})"
    data = {"kind": "hypothesis", "status": status, "color": STATUS_COLORS[status],
            "tooltip": f"{hyp.id} [{status}{confidence}] {hyp.statement}"}
    return GraphNode(hyp.id, "hypothesis", f"{hyp.id}: {_cut(hyp.statement)}", classes,
                     position, data)


def evidence_node(item: Evidence, position: Position) -> GraphNode:
    """The node of one piece of evidence (dimmed when redundant)."""
    classes = "evidence" + (" redundant" if item.redundant else "")
    classes += " human" if item.author_role == "human" else ""
    rows = f"{item.row_count} row{'s' if item.row_count != 1 else ''}"
    data = {"kind": "evidence", "redundant": item.redundant,
            "tooltip": f"{item.id} ({rows}) {item.description}"}
    return GraphNode(item.id, "evidence", item.id, classes, position, data)


def diff(old: GraphModel, new: GraphModel) -> GraphDiff:
    """What changed from ``old`` to ``new``: elements added, changed in place, removed."""
    result = GraphDiff()
    for node_id, node in new.nodes.items():
        before = old.nodes.get(node_id)
        if before is None:
            result.added_nodes.append(node)
        elif before != node:
            result.updated_nodes.append(node)
    result.removed_nodes.extend(n for n in old.nodes if n not in new.nodes)
    for edge_id, edge in new.edges.items():
        before_edge = old.edges.get(edge_id)
        if before_edge is None:
            result.added_edges.append(edge)
        elif before_edge != edge:
            result.updated_edges.append(edge)
    result.removed_edges.extend(e for e in old.edges if e not in new.edges)
    return result


def _cut(text: str, limit: int = LABEL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
