"""Deterministic positions for the board graph, computed once in Python.

The widget (cytoscape's ``preset`` layout), the JupyterLab renderer (the positions
travel in the snapshot) and the static SVG all draw these positions, so the three
pictures agree. The rules, with their numbers in ``look.json`` (``layout``/``sizes``):

- hypotheses form the left column as a tree: each refinement directly below its parent
  (depth-first, children in id order), indented by its depth;
- every evidence is drawn just right of its *home* hypothesis (the one it was first
  linked to, else the first hypothesis it suggested: exploration sits beside what it
  led to), in a grid ``evidence_rows`` high that grows to the right, column by column;
- each hypothesis row is as tall as its grid; rows are ``block_gap`` apart;
- evidence with no hypothesis at all waits in a grid below the last row.

Positions are node centres in model pixels. They depend only on ids, parents, first
links and ``motivated_by``: a node never moves sideways, and rows move down only when a
refinement is inserted above them or a row gets its second evidence, so a live update
moves almost nothing (each moved node costs the widget a message).
"""

from __future__ import annotations

from collections.abc import Sequence

from d2_notebook.board import Evidence, Hypothesis, Link
from d2_notebook.notebook.style import (
    EVIDENCE_HEIGHT,
    EVIDENCE_WIDTH,
    HYPOTHESIS_HEIGHT,
    HYPOTHESIS_WIDTH,
    LOOK,
)

RULES = LOOK["layout"]
Position = tuple[float, float]


def tree_order(hypotheses: Sequence[Hypothesis]) -> list[tuple[Hypothesis, int]]:
    """Hypotheses depth-first through the refinement tree, each with its depth.

    A hypothesis whose parent is not in ``hypotheses`` counts as a root; roots and
    siblings keep their order in ``hypotheses`` (id order from the board).
    """
    known = {hyp.id for hyp in hypotheses}
    children: dict[str | None, list[Hypothesis]] = {}
    for hyp in hypotheses:
        parent = hyp.parent_id if hyp.parent_id in known else None
        children.setdefault(parent, []).append(hyp)
    ordered: list[tuple[Hypothesis, int]] = []
    stack = [(hyp, 0) for hyp in reversed(children.get(None, []))]
    while stack:
        hyp, depth = stack.pop()
        ordered.append((hyp, depth))
        stack.extend((child, depth + 1) for child in reversed(children.get(hyp.id, [])))
    return ordered


def evidence_homes(hypotheses: Sequence[Hypothesis], links: Sequence[Link]) -> dict[str, str]:
    """The hypothesis each evidence is drawn beside: the first it was linked to, else the
    first whose ``motivated_by`` names it. Evidence with neither is left out."""
    known = {hyp.id for hyp in hypotheses}
    homes: dict[str, str] = {}
    for link in sorted(links, key=lambda item: item.id):
        if link.hypothesis_id in known:
            homes.setdefault(link.evidence_id, link.hypothesis_id)
    for hyp in hypotheses:
        for evidence_id in hyp.motivated_by:
            homes.setdefault(evidence_id, hyp.id)
    return homes


def positions(
    hypotheses: Sequence[Hypothesis], evidence: Sequence[Evidence], links: Sequence[Link]
) -> dict[str, Position]:
    """``{node id: (x, y)}`` for every hypothesis and evidence (redundant ones too, so
    hiding them moves nothing)."""
    ordered = tree_order(hypotheses)
    homes = evidence_homes(hypotheses, links)
    beside: dict[str, list[str]] = {}
    loose: list[str] = []
    for item in evidence:
        home = homes.get(item.id)
        if home is None:
            loose.append(item.id)
        else:
            beside.setdefault(home, []).append(item.id)
    evidence_left = HYPOTHESIS_WIDTH + RULES["evidence_gap"]  # plus the row's indent
    placed: dict[str, Position] = {}
    top = 0.0
    for hyp, depth in ordered:
        indent = depth * RULES["indent"]
        placed[hyp.id] = (indent + HYPOTHESIS_WIDTH / 2, top + HYPOTHESIS_HEIGHT / 2)
        mine = beside.get(hyp.id, [])
        rows = min(len(mine), RULES["evidence_rows"])
        placed.update({evidence_id: _cell(indent + evidence_left, top, slot // rows, slot % rows)
                       for slot, evidence_id in enumerate(mine)})
        top += max(HYPOTHESIS_HEIGHT, _grid_height(rows)) + RULES["block_gap"]
    left = evidence_left if ordered else 0.0
    columns = RULES["loose_columns"]
    placed.update({evidence_id: _cell(left, top, slot % columns, slot // columns)
                   for slot, evidence_id in enumerate(loose)})
    return placed


def _cell(left: float, top: float, column: int, row: int) -> Position:
    return (left + EVIDENCE_WIDTH / 2 + column * RULES["evidence_step_x"],
            top + EVIDENCE_HEIGHT / 2 + row * RULES["evidence_step_y"])


def _grid_height(rows: int) -> float:
    if rows == 0:
        return 0.0
    return (rows - 1) * RULES["evidence_step_y"] + EVIDENCE_HEIGHT
