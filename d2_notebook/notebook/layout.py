"""Deterministic positions for the board graph, computed in Python.

The live widget uses cytoscape's ``preset`` layout with these positions, and the static
SVG draws the same ones, so both pictures agree and nothing jumps when nodes arrive:

- every hypothesis owns a row, in id order (ids only grow, so a new hypothesis opens
  a new row at the bottom); refinements are indented by their depth in the tree;
- evidence is lined up to the right of the first hypothesis it was linked to, in the
  order of those links (a new link appends to the right end of the row);
- evidence linked to nothing waits in a row above the hypotheses.

Positions depend only on records that never change once written (ids, parents, the
first link of each evidence), which is what keeps existing nodes in place.
"""

from __future__ import annotations

from collections.abc import Sequence

from d2_notebook.board import Evidence, Hypothesis, Link

ROW_HEIGHT = 72.0
"""Vertical distance between hypothesis rows."""
INDENT = 36.0
"""Horizontal indent per refinement level."""
EVIDENCE_GAP = 170.0
"""Distance from a hypothesis' centre to the first evidence of its row."""
EVIDENCE_STEP = 40.0
"""Distance between evidence nodes in a row."""
EVIDENCE_DROP = 14.0
"""Evidence sits a little below its hypothesis' centre, so edges between rows stay visible."""

Position = tuple[float, float]


def hypothesis_depths(hypotheses: Sequence[Hypothesis]) -> dict[str, int]:
    """Depth of each hypothesis in the refinement tree (roots are 0).

    Parents always have smaller ids than their refinements, so one pass in id order
    suffices; a parent missing from ``hypotheses`` counts as a root.
    """
    depths: dict[str, int] = {}
    for hyp in hypotheses:
        parent = hyp.parent_id
        depths[hyp.id] = depths[parent] + 1 if parent in depths else 0
    return depths


def evidence_homes(links: Sequence[Link]) -> dict[str, str]:
    """The hypothesis each evidence is drawn next to: the one it was first linked to."""
    homes: dict[str, str] = {}
    for link in sorted(links, key=lambda item: item.id):
        homes.setdefault(link.evidence_id, link.hypothesis_id)
    return homes


def positions(
    hypotheses: Sequence[Hypothesis], evidence: Sequence[Evidence], links: Sequence[Link]
) -> dict[str, Position]:
    """``{node id: (x, y)}`` for every hypothesis and evidence (redundant ones too, so
    hiding them moves nothing)."""
    placed: dict[str, Position] = {}
    depths = hypothesis_depths(hypotheses)
    for row, hyp in enumerate(hypotheses):
        placed[hyp.id] = (depths[hyp.id] * INDENT, row * ROW_HEIGHT)
    homes = evidence_homes(links)
    lined_up: dict[str, int] = {}
    for link in sorted(links, key=lambda item: item.id):
        home = homes[link.evidence_id]
        if link.evidence_id in placed or home != link.hypothesis_id or home not in placed:
            continue
        slot = lined_up.get(home, 0)
        lined_up[home] = slot + 1
        x, y = placed[home]
        placed[link.evidence_id] = (x + EVIDENCE_GAP + slot * EVIDENCE_STEP, y + EVIDENCE_DROP)
    loose = [item for item in evidence if item.id not in placed]
    for slot, item in enumerate(loose):
        placed[item.id] = (EVIDENCE_GAP + slot * EVIDENCE_STEP, -ROW_HEIGHT)
    return placed
