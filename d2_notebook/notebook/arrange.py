"""The live widget's view of a board for a given width: rows re-flowed, tall boards folded.

:mod:`layout` places the graph for no particular page. Here the rows are laid out again
for the width the graph gets (the kernel cannot measure it, so the widget assumes one):
each hypothesis's evidence takes as many columns as fit beside it and grows downwards,
so nothing is cut off on the right; when the board is taller than ``view.fold_above_px``
at that zoom, the evidence of each hypothesis is folded into one node ("▸ 6 evidence ·
4 supports · 2 contradicts") that unfolds on a click, rather than shrinking everything.

Folding hides nodes (classes :data:`FOLDED`, :data:`UNFOLDED`: ``display: none``)
rather than removing them: the browser re-creates every node listed after a removed
one, so a graph that only ever grows its node list stays cheap and steady to update.
The JupyterLab renderer applies the same rules (``extension/src/arrange.ts``), so both
views of a board agree.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace
from html import escape
from typing import Any

from d2_notebook.notebook import style
from d2_notebook.notebook.graph import GraphModel, GraphNode
from d2_notebook.notebook.layout import Position

RULES = style.LOOK["layout"]
VIEW = style.LOOK["view"]
FOLD_PREFIX = "fold:"
FOLDED = "folded"
"""Class of an evidence node hidden under its hypothesis's fold node."""
UNFOLDED = "unfolded"
"""Class of a fold node hidden while its evidence is shown."""
STANCE_ORDER = ("supports", "contradicts", "context")


@dataclass(frozen=True)
class Arrangement:
    """A graph laid out for one width.

    Attributes:
        model: the nodes (fold nodes included) and the edges between shown nodes.
        folded: hypotheses whose evidence is folded into one node.
        zoom: the zoom that shows the graph's whole width, never below the readable zoom.
        height_px: the graph area's height that shows every row at ``zoom``.
    """

    model: GraphModel
    folded: tuple[str, ...]
    zoom: float
    height_px: int


def shown(node: GraphNode) -> bool:
    """False for a node the view keeps hidden: evidence folded under its hypothesis, or
    the fold node of a row whose evidence is shown."""
    return not ({FOLDED, UNFOLDED} & set(node.classes.split()))


def fold_id(hypothesis_id: str) -> str:
    """The id of the node standing for the folded evidence of ``hypothesis_id``."""
    return f"{FOLD_PREFIX}{hypothesis_id}"


def folded_home(node_id: str) -> str | None:
    """The hypothesis a fold node's id stands for (None: not a fold node)."""
    return node_id[len(FOLD_PREFIX):] if node_id.startswith(FOLD_PREFIX) else None


@dataclass
class _Row:
    hypothesis: GraphNode
    evidence: list[GraphNode]


def arrange(model: GraphModel, width_px: float, expanded: Collection[str] = (),
            unfold_all: bool = False) -> Arrangement:
    """Lay ``model`` (positions from :mod:`layout`) out for a graph area ``width_px`` wide.

    Args:
        model: the graph to show (already filtered).
        width_px: the width of the graph area on screen.
        expanded: hypotheses whose evidence stays unfolded even on a tall board.
        unfold_all: never fold.
    """
    hypotheses = sorted((n for n in model.nodes.values() if n.kind == "hypothesis"),
                        key=lambda n: (n.position[1], n.position[0]))
    rows = {h.id: _Row(h, []) for h in hypotheses}
    loose: list[GraphNode] = []
    for node in sorted((n for n in model.nodes.values() if n.kind == "evidence"),
                       key=lambda n: (n.position[0], n.position[1])):
        row = rows.get(str(node.data.get("home") or ""))
        (row.evidence if row else loose).append(node)

    room = max(width_px - 2 * VIEW["padding"], 1.0)
    min_left = min([h.position[0] - style.HYPOTHESIS_WIDTH / 2 for h in hypotheses] + [0.0])

    def evidence_left(row: _Row) -> float:
        return (row.hypothesis.position[0] - min_left + style.HYPOTHESIS_WIDTH / 2
                + RULES["evidence_gap"])

    widest = max([evidence_left(r) for r in rows.values()]
                 + [style.HYPOTHESIS_WIDTH + RULES["evidence_gap"]]) + style.EVIDENCE_WIDTH
    zoom = max(style.readable_zoom(), min(1.0, room / widest))

    def columns(left: float) -> int:
        return max(1, int((room / zoom - left - style.EVIDENCE_WIDTH)
                          // RULES["evidence_step_x"]) + 1)

    def grid_rows(row: _Row) -> int:
        return -(-len(row.evidence) // columns(evidence_left(row)))

    unfolded_height = sum(max(style.HYPOTHESIS_HEIGHT, _grid_height(grid_rows(r)))
                          + RULES["block_gap"] for r in rows.values())
    tall = unfolded_height * zoom > VIEW["fold_above_px"] and not unfold_all

    placed: dict[str, GraphNode] = {}
    folded: list[str] = []
    top = 0.0
    for row in rows.values():
        hyp = row.hypothesis
        placed[hyp.id] = replace(hyp, position=(hyp.position[0] - min_left,
                                                top + style.HYPOTHESIS_HEIGHT / 2))
        left = evidence_left(row)
        first = _cell(left, top, 0, 0)
        if tall and len(row.evidence) > 1 and hyp.id not in expanded:
            folded.append(hyp.id)
            fold = fold_node(hyp.id, row.evidence, first)
            placed[fold.id] = fold
            for node in row.evidence:  # kept, hidden under the fold (see the docstring)
                placed[node.id] = replace(node, position=first,
                                          classes=f"{node.classes} {FOLDED}")
            used_rows = 1
        else:
            cols = columns(left)
            for slot, node in enumerate(row.evidence):
                placed[node.id] = replace(node, position=_cell(left, top, slot % cols,
                                                               slot // cols))
            if len(row.evidence) > 1:
                fold = fold_node(hyp.id, row.evidence, first)
                placed[fold.id] = replace(fold, classes=f"{fold.classes} {UNFOLDED}")
            used_rows = grid_rows(row)
        top += max(style.HYPOTHESIS_HEIGHT, _grid_height(used_rows)) + RULES["block_gap"]
    loose_left = style.HYPOTHESIS_WIDTH + RULES["evidence_gap"] if hypotheses else 0.0
    loose_columns = columns(loose_left)
    for slot, node in enumerate(loose):
        placed[node.id] = replace(node, position=_cell(loose_left, top, slot % loose_columns,
                                                       slot // loose_columns))
    edges = {k: e for k, e in model.edges.items() if e.source in placed and e.target in placed}
    return Arrangement(GraphModel(nodes=placed, edges=edges), tuple(folded), zoom,
                       _height_px([n for n in placed.values() if shown(n)], zoom))


def fold_node(hypothesis_id: str, evidence: list[GraphNode], position: Position) -> GraphNode:
    """The node standing for ``evidence`` folded under ``hypothesis_id``: its count by
    stance on the label; its panel lists each folded evidence's label."""
    counts: dict[str, int] = {}
    for node in evidence:
        stance = str(node.data.get("stance") or "context")
        counts[stance] = counts.get(stance, 0) + 1
    parts = [f"{counts[s]} {'exploration' if s == 'context' else s}"
             for s in STANCE_ORDER if s in counts]
    colors = style.evidence_colors(None)
    listing = "".join(f"<li>{_first_line(node)}</li>" for node in evidence)
    data: dict[str, Any] = {
        "kind": "fold", "home": hypothesis_id, "color": colors.fill, "border": colors.border,
        "width": style.EVIDENCE_WIDTH, "height": style.EVIDENCE_HEIGHT,
        "hover": f"{len(evidence)} evidence on {hypothesis_id} ({', '.join(parts)}): "
                 "click to show them",
        "details": (f"<b>{len(evidence)} evidence on {hypothesis_id}</b> "
                    f"({', '.join(parts)}); they unfold in the graph once the kernel is "
                    f"free:<ul>{listing}</ul>"),
    }
    label = f"▸ {len(evidence)} evidence\n{' · '.join(parts)}"
    return GraphNode(fold_id(hypothesis_id), "fold", label, "evidence fold", position, data)


def _first_line(node: GraphNode) -> str:
    return escape(node.label.split("\n", 1)[0])


def _cell(left: float, top: float, column: int, row: int) -> Position:
    return (left + style.EVIDENCE_WIDTH / 2 + column * RULES["evidence_step_x"],
            top + style.EVIDENCE_HEIGHT / 2 + row * RULES["evidence_step_y"])


def _grid_height(rows: int) -> float:
    if rows == 0:
        return 0.0
    return (rows - 1) * RULES["evidence_step_y"] + style.EVIDENCE_HEIGHT


def _height_px(nodes: Any, zoom: float) -> int:
    boxes = [(n.position[1] - n.data["height"] / 2, n.position[1] + n.data["height"] / 2)
             for n in nodes]
    if not boxes:
        return int(VIEW["height_px"])
    span = max(b[1] for b in boxes) - min(b[0] for b in boxes)
    return int(-(-(span * zoom + 2 * VIEW["padding"]) // 1))
