"""The live board widget: header, legend, filters, graph, hover line, details panel.

The widget only reads the board. It turns the board into a :class:`GraphModel`
(:func:`board_elements`, then :func:`filter_statuses`) and applies the :func:`diff`
against what it shows, in batches: the graph's node and edge lists change in one
message, each changed element in one message (``hold_sync``), and nothing is rebuilt.
Positions come from Python (cytoscape's ``preset`` layout, :mod:`layout`, re-flowed for
the assumed width by :mod:`arrange`), so nodes never jump; a tall board folds each
hypothesis's evidence into one node that unfolds on a click, so the whole graph fits
the output's width with labels readable (:func:`initial_view`). Hover text goes to a
line under the graph, never over it.
While an investigation runs, :meth:`BoardWidget.follow` polls the board's event log on
the kernel's event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from html import escape
from typing import Any

import ipycytoscape
import ipywidgets as widgets

from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.board.scopes import choose_investigation
from d2_notebook.notebook import style
from d2_notebook.notebook.arrange import FOLDED, Arrangement, arrange, folded_home, shown
from d2_notebook.notebook.details import node_details_html, synced_details
from d2_notebook.notebook.graph import (
    GraphDiff,
    GraphEdge,
    GraphModel,
    GraphNode,
    board_elements,
    diff,
)
from d2_notebook.notebook.static import OtherInvestigation, header_html, legend_html

VIEW = style.LOOK["view"]
HINT = ("<p><i>Click a hypothesis or an evidence node to see its details (while the team "
        "runs they open beside the node: the widget holds them, no kernel needed); click a "
        "folded \"▸ N evidence\" node to unfold it.</i></p>")
HOVER_HINT = "<span style='color:#757575'>Point at a node or an edge to read it here.</span>"
STARTING = "<div><i>Starting the new investigation on this board…</i></div>"
ASSUMED_WIDTH_PX = 800
"""Width of the graph area the board is laid out for (the kernel cannot measure it):
JupyterLab's output width beside an open sidebar on a laptop screen."""


def initial_view(arranged: Arrangement) -> dict[str, Any]:
    """The preset layout options of the view: the graph's top-left corner at
    ``arranged.zoom``, where every node is inside the assumed width with readable labels.

    ipycytoscape fits the graph whenever its area is resized; the graph's ``max_zoom``
    (set to ``arranged.zoom``) keeps that fit from zooming in past this view, and in an
    output narrower than assumed it shrinks the graph rather than cut it off.
    """
    nodes = [node for node in arranged.model.nodes.values() if shown(node)]
    base = {"name": "preset", "animate": False, "padding": VIEW["padding"]}
    if not nodes:
        return {**base, "fit": True}
    left = min(n.position[0] - n.data["width"] / 2 for n in nodes)
    top = min(n.position[1] - n.data["height"] / 2 for n in nodes)
    zoom = arranged.zoom
    return {**base, "fit": False, "zoom": zoom,
            "pan": {"x": VIEW["padding"] - left * zoom, "y": VIEW["padding"] - top * zoom}}


class BoardWidget(widgets.VBox):
    """A live view of one investigation of a board.

    When the board holds several investigations (a follow-up, an ``--append`` re-run),
    a dropdown above the graph switches the investigation shown: graph, header and
    details are that investigation's only.

    Args:
        board: the board to show (it is read, never written).
        investigation: the investigation to show (``"I1"``); None follows the newest,
            so a run that adds one is shown as soon as it starts, until another is
            picked in the dropdown.
        starting_after: a run is about to add an investigation after this one (the
            ``%%investigate`` magic's ``--append`` and ``--follow-up``): the graph stays
            empty until it starts, instead of showing this one meanwhile.
        show_redundant: start with redundant evidence shown (dimmed) or hidden.
        height: height of the graph area (CSS); by default it grows with the board so
            every row shows at a readable zoom.
        width_px: the width the graph is laid out for (:data:`ASSUMED_WIDTH_PX`).
        fold: fold each hypothesis's evidence into one node when the board is too tall
            to show readably (``view.fold_above_px``); a click on it unfolds it.
    """

    def __init__(self, board: Board, *, show_redundant: bool = True,
                 height: str | None = None, width_px: float = ASSUMED_WIDTH_PX,
                 fold: bool = True, investigation: str | None = None,
                 starting_after: str | None = None) -> None:
        """Raises:
            NotFoundError: ``investigation`` is not on the board (the message names
                the ids it holds)."""
        choose_investigation(board, investigation)
        self.pinned = investigation
        self.starting_after = starting_after
        self.shown: str | None = None
        self._grow = height is None
        self.width_px = width_px
        self.expanded: set[str] = set()
        self.arrangement: Arrangement | None = None
        height = height or f"{VIEW['height_px']}px"
        self.board = board
        self.header = widgets.HTML()
        self.selector = widgets.Dropdown(description="investigation:", options=[],
                                         style={"description_width": "initial"},
                                         layout=widgets.Layout(width="auto",
                                                               display="none"))
        self._listing: list[tuple[str, str]] = []
        self._syncing = False  # the dropdown is being set from the board, not picked
        self.toggle = widgets.Checkbox(value=show_redundant, description="redundant evidence",
                                       indent=False, layout=widgets.Layout(width="auto"))
        self.exploration = widgets.Checkbox(value=False, description="exploration edges",
                                            indent=False, layout=widgets.Layout(width="auto"))
        self.fold = widgets.Checkbox(value=fold, description="fold evidence of tall boards",
                                     indent=False, layout=widgets.Layout(width="auto"))
        self.wheel_zoom = widgets.Checkbox(value=False, description="zoom with the wheel",
                                           indent=False, layout=widgets.Layout(width="auto"))
        self.status_filter = {
            status.value: widgets.Checkbox(value=True, description=status.value, indent=False,
                                           layout=widgets.Layout(width="auto"))
            for status in HypothesisStatus}
        self.legend = widgets.HTML(legend_html())
        self.hover = widgets.HTML(HOVER_HINT)
        # The graph takes the output's whole width (labels stay readable on wide boards);
        # the panel a click fills when the kernel is free sits under it.
        self.details = widgets.HTML(HINT, layout=widgets.Layout(
            width="100%", max_height=f"{VIEW['height_px']}px", overflow="auto",
            padding="0 8px"))
        self.graph = ipycytoscape.CytoscapeWidget(layout=widgets.Layout(width="100%",
                                                                        height=height))
        self.graph.min_zoom, self.graph.max_zoom = VIEW["min_zoom"], VIEW["max_zoom"]
        # Hover text goes to self.hover. A click opens the node's panel from its synced
        # data ("details") in the browser, so it works while the kernel is busy.
        self.graph.tooltip_source = "details"
        self.graph.user_zooming_enabled = False  # the wheel scrolls the notebook...
        self.wheel_link = widgets.jslink((self.wheel_zoom, "value"),  # ...unless asked
                                         (self.graph, "user_zooming_enabled"))
        self.graph.set_style(style.cytoscape_style())
        self.graph.on("node", "click", self.on_node_click)
        self.graph.on("node", "mouseover", self.on_hover)
        self.graph.on("edge", "mouseover", self.on_hover)
        self.model = GraphModel()
        self.seen_seq = 0
        self._nodes: dict[str, ipycytoscape.Node] = {}
        self._edges: dict[str, ipycytoscape.Edge] = {}
        self._task: asyncio.Task[None] | None = None
        self._panels: dict[tuple[str, str, int], str] = {}
        self.selected: str | None = None
        for box in (self.toggle, self.exploration, self.fold, *self.status_filter.values()):
            box.observe(lambda _change: self.refresh(), names="value")
        filters = widgets.HBox([widgets.HTML("<b>show:</b>&nbsp;"), *self.status_filter.values(),
                                self.toggle, self.exploration, self.fold, self.wheel_zoom],
                               layout=widgets.Layout(flex_flow="row wrap"))
        self.selector.observe(self.on_pick, names="value")
        super().__init__([self.selector, self.header, filters, self.legend, self.graph, self.hover,
                          self.details])
        self.refresh()

    # --- updating --------------------------------------------------------------------

    @property
    def investigation_id(self) -> str | None:
        """The investigation shown: the one picked, else the newest (None: none yet)."""
        if self.pinned is not None:
            return self.pinned
        shown = choose_investigation(self.board)
        return None if shown is None else shown.id

    def show_investigation(self, investigation: str | None) -> None:
        """Show ``investigation`` (None: follow the newest), as a pick in the dropdown
        does. Raises NotFoundError when it is not on the board."""
        choose_investigation(self.board, investigation)
        self.pinned = investigation
        self.refresh()

    def _starting(self) -> bool:
        """True while the run this view waits for (``starting_after``) has not yet
        added its investigation to the board."""
        if self.starting_after is None or self.pinned is not None:
            return False
        newest = choose_investigation(self.board)
        if newest is not None and newest.id != self.starting_after:
            self.starting_after = None
            return False
        return True

    def on_pick(self, change: dict[str, Any]) -> None:
        """The dropdown changed: show the investigation picked."""
        if self._syncing or change.get("new") in (None, self.investigation_id):
            return
        self.show_investigation(str(change["new"]))

    def _sync_selector(self, shown: str | None) -> None:
        """List the board's investigations in the dropdown (shown only with two or
        more) with ``shown`` selected."""
        listing = [(OtherInvestigation(inv.id, inv.question, inv.state.value).label(), inv.id)
                   for inv in self.board.list_investigations()]
        self._syncing = True
        try:
            if listing != self._listing:
                self.selector.options = listing
                self._listing = listing
            if self.selector.value != shown:  # None while a run's investigation starts
                self.selector.value = shown
        finally:
            self._syncing = False
        display = None if len(listing) > 1 else "none"
        if self.selector.layout.display != display:
            self.selector.layout.display = display

    def refresh(self) -> GraphDiff:
        """Bring the view up to date with the board; returns what changed."""
        self.seen_seq = self.board.last_seq()
        current = None if self._starting() else self.investigation_id
        self._sync_selector(current)
        if current != self.shown:  # another investigation: its own folds and selection
            self.shown = current
            self.expanded.clear()
            self.selected = None
            self.details.value = HINT
        hidden = frozenset(status for status, box in self.status_filter.items()
                           if not box.value)
        elements = GraphModel() if current is None and self.starting_after else board_elements(
            self.board, include_redundant=self.toggle.value, hidden_statuses=hidden,
            show_exploration=self.exploration.value, investigation_id=current)
        arranged = arrange(elements, self.width_px, self.expanded, unfold_all=not self.fold.value)
        new = with_details(arranged.model, synced_details(self.board, self._panels))
        changes = diff(self.model, new)
        if self.selected is not None and not shown(new.nodes.get(self.selected, _GONE)):
            self.selected = None  # filtered away or folded: its panel would be stale
            self.details.value = HINT
        if self.graph.max_zoom != arranged.zoom:  # fit never zooms past the readable view
            self.graph.max_zoom = arranged.zoom
        if not changes.empty:
            # ipycytoscape re-runs this preset layout whenever elements arrive.
            self.graph.cytoscape_layout = initial_view(arranged)
            self.apply(changes)
        self.model, self.arrangement = new, arranged
        self.header.value = (STARTING if current is None and self.starting_after
                             else header_html(self.board, current))
        if self._grow:
            tall = f"{arranged.height_px}px"
            if self.graph.layout.height != tall:  # one message, only when it changes
                self.graph.layout.height = tall
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
            # Hypotheses first: the browser re-creates every node listed after a removed
            # one, and a resize meanwhile fits the view to the nodes left; with the
            # hypotheses early in the list, those always span the whole graph.
            ordered = sorted(changes.added_nodes, key=lambda n: n.kind != "hypothesis")
            added = [_node_widget(node) for node in ordered]
            self._nodes.update(zip((n.id for n in ordered), added, strict=True))
            graph.add_nodes(added)
            new_edges = [_edge_widget(edge) for edge in changes.added_edges]
            self._edges.update(zip((e.id for e in changes.added_edges), new_edges, strict=True))
            graph.add_edges(new_edges, directed=True)


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

    def on_hover(self, element: dict[str, Any]) -> None:
        """Show the hovered element's text in the line under the graph."""
        text = str(element.get("data", {}).get("hover", ""))
        self.hover.value = f"<span>{escape(text)}</span>" if text else HOVER_HINT

    def on_node_click(self, element: dict[str, Any]) -> None:
        """Show the clicked node's details (``element`` is cytoscape's element JSON)."""
        node_id = str(element.get("data", {}).get("id", ""))
        home = folded_home(node_id)
        if home is not None:  # a folded "▸ N evidence" node: unfold it
            self.expanded.add(home)
            self.refresh()
            return
        self.selected = node_id
        try:
            self.details.value = node_details_html(self.board, node_id)
        except KeyError:
            self.details.value = f"<p>{node_id} is not on the board.</p>"


_GONE = GraphNode("", "gone", "", FOLDED, (0.0, 0.0), {})
"""Stands for a node no longer in the graph (shown as nothing)."""


def with_details(model: GraphModel, panels: dict[str, str]) -> GraphModel:
    """``model`` with each node's panel (:func:`synced_details`) in its data under
    ``"details"``: the browser shows it on a click without asking the kernel."""
    nodes = {node_id: replace(node, data={**node.data, "details": panels.get(
                 node_id, node.data.get("details", ""))})
             for node_id, node in model.nodes.items()}
    return GraphModel(nodes=nodes, edges=model.edges)


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
    """Change classes, data (and a node's position) in place, only what differs, in one
    message."""
    with element.hold_sync():
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
