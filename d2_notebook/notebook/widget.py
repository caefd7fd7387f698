"""The live board widget: header, graph, redundant-evidence toggle and a details panel.

The widget only reads the board. It turns the board into a :class:`GraphModel`
(:func:`board_elements`) and applies the :func:`diff` against what it shows, inside
``graph.hold_sync()``: new elements are added, changed ones updated in place (classes,
data), and nothing is rebuilt. Positions come from Python (cytoscape's ``preset``
layout), so nodes never jump. While an investigation runs, :meth:`BoardWidget.follow`
polls the board's event log on the kernel's event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import ipycytoscape
import ipywidgets as widgets

from d2_notebook.board import Board
from d2_notebook.notebook import style
from d2_notebook.notebook.details import node_details_html
from d2_notebook.notebook.graph import (
    GraphDiff,
    GraphEdge,
    GraphModel,
    GraphNode,
    board_elements,
    diff,
)
from d2_notebook.notebook.static import header_html

PRESET_LAYOUT = {"name": "preset", "fit": True, "padding": 30, "animate": False}
HINT = "<p><i>Click a hypothesis or an evidence node to see its details.</i></p>"


class BoardWidget(widgets.VBox):
    """A live view of one board.

    Args:
        board: the board to show (it is read, never written).
        show_redundant: start with redundant evidence shown (dimmed) or hidden.
        height: height of the graph area (CSS).
    """

    def __init__(self, board: Board, *, show_redundant: bool = True,
                 height: str = "520px") -> None:
        self.board = board
        self.header = widgets.HTML()
        self.toggle = widgets.Checkbox(value=show_redundant, description="redundant evidence",
                                       indent=False)
        self.details = widgets.HTML(HINT, layout=widgets.Layout(
            width="38%", max_height=height, overflow="auto", padding="0 8px"))
        self.graph = ipycytoscape.CytoscapeWidget(layout=widgets.Layout(width="62%",
                                                                        height=height))
        self.graph.set_layout(**PRESET_LAYOUT)
        self.graph.set_style(style.cytoscape_style())
        self.graph.on("node", "click", self.on_node_click)
        self.model = GraphModel()
        self.seen_seq = 0
        self._nodes: dict[str, ipycytoscape.Node] = {}
        self._edges: dict[str, ipycytoscape.Edge] = {}
        self._task: asyncio.Task[None] | None = None
        self.toggle.observe(lambda _change: self.refresh(), names="value")
        super().__init__([widgets.HBox([self.header, self.toggle]),
                          widgets.HBox([self.graph, self.details])])
        self.refresh()

    # --- updating --------------------------------------------------------------------

    def refresh(self) -> GraphDiff:
        """Bring the view up to date with the board; returns what changed."""
        self.seen_seq = self.board.last_seq()
        new = board_elements(self.board, include_redundant=self.toggle.value)
        changes = diff(self.model, new)
        if not changes.empty:
            self.apply(changes)
        self.model = new
        self.header.value = header_html(self.board)
        return changes

    def apply(self, changes: GraphDiff) -> None:
        """Apply a diff to the cytoscape graph in one batch of messages."""
        graph = self.graph.graph
        with graph.hold_sync():
            for edge_id in changes.removed_edges:
                graph.remove_edge(self._edges.pop(edge_id))
            for node_id in changes.removed_nodes:
                graph.remove_node(self._nodes.pop(node_id))
            for node in changes.updated_nodes:
                _update_element(self._nodes[node.id], node)
            for edge in changes.updated_edges:
                _update_element(self._edges[edge.id], edge)
            added = [_node_widget(node) for node in changes.added_nodes]
            self._nodes.update(zip((n.id for n in changes.added_nodes), added, strict=True))
            graph.add_nodes(added)
            new_edges = [_edge_widget(edge) for edge in changes.added_edges]
            self._edges.update(zip((e.id for e in changes.added_edges), new_edges, strict=True))
            graph.add_edges(new_edges, directed=True)
        if changes.added_nodes:  # re-fit the view (positions are preset: nothing moves)
            self.graph.set_layout(**PRESET_LAYOUT)

    async def follow(self, stop: asyncio.Event | None = None, interval: float = 0.5) -> None:
        """Refresh whenever new events appear on the board, until ``stop`` is set
        (then once more, so the view ends complete)."""
        async for _batch in self.board.follow(since=self.seen_seq, interval=interval, stop=stop):
            self.refresh()
        self.refresh()

    def start_following(self, interval: float = 0.5) -> asyncio.Task[None]:
        """Follow the board in a task on the running loop (e.g. a board another process
        writes); stop with :meth:`stop_following`."""
        self.stop_following()
        self._task = asyncio.get_running_loop().create_task(self.follow(interval=interval))
        return self._task

    def stop_following(self) -> None:
        """Stop the task started by :meth:`start_following`, if any."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    # --- clicks ----------------------------------------------------------------------

    def on_node_click(self, element: dict[str, Any]) -> None:
        """Show the clicked node's details (``element`` is cytoscape's element JSON)."""
        node_id = str(element.get("data", {}).get("id", ""))
        try:
            self.details.value = node_details_html(self.board, node_id)
        except KeyError:
            self.details.value = f"<p>{node_id} is not on the board.</p>"


def _node_widget(node: GraphNode) -> ipycytoscape.Node:
    return ipycytoscape.Node(
        data={"id": node.id, "label": node.label, **node.data}, classes=node.classes,
        position={"x": node.position[0], "y": node.position[1]}, grabbable=True)


def _edge_widget(edge: GraphEdge) -> ipycytoscape.Edge:
    return ipycytoscape.Edge(
        data={"id": edge.id, "source": edge.source, "target": edge.target, **edge.data},
        classes=f"{edge.classes} directed")


def _update_element(element: ipycytoscape.Node | ipycytoscape.Edge,
                    new: GraphNode | GraphEdge) -> None:
    """Change classes, data (and a node's position) in place, only what differs."""
    if isinstance(new, GraphNode):
        classes, data = new.classes, {"id": new.id, "label": new.label, **new.data}
        position = {"x": new.position[0], "y": new.position[1]}
        if dict(element.position) != position:
            element.position = position
    else:
        classes = f"{new.classes} directed"  # ipycytoscape's marker for directed edges
        data = {"id": new.id, "source": new.source, "target": new.target, **new.data}
    if element.classes != classes:
        element.classes = classes
    if dict(element.data) != data:
        element.data = data
