"""The board as graph elements, and the difference between two such graphs.

Pure functions of the board's records (no widget, no kernel, no SQL against user
data): :func:`board_elements` turns a board into a :class:`GraphModel` with stable ids
(``"H1"``, ``"E3"``, ``"E3->H1"``, ``"H1->H3"``), and :func:`diff` says what changed
between two models, which is all the live widget applies.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from d2_notebook.board import Board, Evidence, EvidenceReuse, Hypothesis, Link
from d2_notebook.board.follow_ups import reuse_text
from d2_notebook.board.records import RecheckedVerdict, VerdictCheck
from d2_notebook.board.scopes import InvestigationScope, investigation_scope
from d2_notebook.notebook import style
from d2_notebook.notebook.checks import check_mark, verdict_checks
from d2_notebook.notebook.evidence_labels import (
    distinguishing_filters,
    format_number,
    key_number,
    sibling_groups,
)
from d2_notebook.notebook.layout import Position, evidence_homes, positions

HYPOTHESIS_CHARS: int = style.LOOK["labels"]["hypothesis_chars"]
"""Hypothesis labels show this many characters of the statement (the hover text all)."""
EVIDENCE_CHARS: int = style.LOOK["labels"]["evidence_chars"]
"""Evidence labels show this many characters of the description."""


@dataclass(frozen=True)
class GraphNode:
    """One node: a hypothesis or a piece of evidence.

    ``classes`` carry the kind and state (``"hypothesis supported"``, ``"evidence
    redundant"``); ``data`` carries what the stylesheet draws (``color``, ``border``,
    ``width``, ``height``) and the ``hover`` text shown beside the graph.
    """

    id: str
    kind: str
    label: str
    classes: str
    position: Position
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphEdge:
    """One edge: evidence → hypothesis (its stance: ``supports``, ``contradicts``,
    ``weak`` or ``neutral``, each drawn in its own style), evidence → the hypothesis it
    suggested (``motivates``) or parent → refinement (``refines``)."""

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


def board_elements(board: Board, include_redundant: bool = True,
                   hidden_statuses: frozenset[str] = frozenset(),
                   show_exploration: bool = True,
                   investigation_id: str | None = None) -> GraphModel:
    """One investigation's hypotheses, evidence, links and refinements as a graph.

    Args:
        board: the board to read (records only; evidence rows are not loaded).
        include_redundant: False leaves out evidence marked redundant, and its edges.
        hidden_statuses: hypothesis statuses to leave out, with the evidence that bears
            only on them (:func:`filter_statuses`); what remains is laid out afresh, so
            a filter leaves no holes.
        show_exploration: False leaves out the "motivated by" edges (exploration that
            suggested a hypothesis), which otherwise cross the graph.
        investigation_id: the investigation to draw (None: the newest); see
            :func:`~d2_notebook.board.scopes.investigation_scope` for what it holds.

    Raises:
        NotFoundError: ``investigation_id`` is not on the board.
    """
    scope = investigation_scope(board, investigation_id)
    hypotheses, evidence, links = scope.hypotheses, scope.evidence, scope.links
    if hidden_statuses:
        kept = filter_statuses(elements_from_records(hypotheses, evidence, links),
                               set(hidden_statuses)).nodes
        hypotheses = [hyp for hyp in hypotheses if hyp.id in kept]
        evidence = [item for item in evidence if item.id in kept]
        links = [link for link in links
                 if link.evidence_id in kept and link.hypothesis_id in kept]
    model = elements_from_records(hypotheses, evidence, links, include_redundant,
                                  key_numbers=stored_key_numbers(board, evidence),
                                  reuses=scope.reuses,
                                  checks=scope_checks(board, scope))
    if show_exploration:
        return model
    edges = {k: e for k, e in model.edges.items() if e.kind != "motivates"}
    return GraphModel(nodes=model.nodes, edges=edges)


_KEY_NUMBERS: dict[tuple[str, str, str], float | None] = {}


def scope_checks(board: Board, scope: InvestigationScope) -> dict[str, RecheckedVerdict]:
    """The re-check marks a view of ``scope`` shows (the whole board's, or its
    investigation's only)."""
    return verdict_checks(board, None if scope.whole_board else scope.investigation_id)


def stored_key_numbers(board: Board, evidence: Sequence[Evidence]) -> dict[str, float]:
    """The key number (:func:`~d2_notebook.notebook.evidence_labels.key_number`) of each
    evidence with a one-row stored result, read once per result (cached by its hash)."""
    found: dict[str, float] = {}
    for item in evidence:
        if item.stored_rows != 1:
            continue
        cache_key = (str(board.path), item.id, item.result_hash)
        if cache_key not in _KEY_NUMBERS:
            _KEY_NUMBERS[cache_key] = key_number(board.evidence_frame(item.id))
        number = _KEY_NUMBERS[cache_key]
        if number is not None:
            found[item.id] = number
    return found


def elements_from_records(
    hypotheses: list[Hypothesis],
    evidence: list[Evidence],
    links: list[Link],
    include_redundant: bool = True,
    key_numbers: Mapping[str, float] | None = None,
    reuses: Sequence[EvidenceReuse] = (),
    checks: Mapping[str, RecheckedVerdict] | None = None,
) -> GraphModel:
    """:func:`board_elements` on records already read from a board; ``key_numbers``
    (evidence id → number, :func:`stored_key_numbers`) go into the evidence labels,
    evidence a follow-up reused (``reuses``) is marked, and ``checks`` (hypothesis id →
    its verdict's latest re-check, :func:`~d2_notebook.notebook.checks.verdict_checks`)
    mark stale and confirmed verdicts."""
    placed = positions(hypotheses, evidence, links)
    homes = evidence_homes(hypotheses, links)
    siblings = sibling_groups(homes, {item.id: item.description for item in evidence})
    sql_of = {item.id: item.sql for item in evidence}
    key_numbers = key_numbers or {}
    first_stance: dict[str, str] = {}
    for link in sorted(links, key=lambda item: item.id):
        first_stance.setdefault(link.evidence_id, link.stance.value)
    model = GraphModel()
    for hyp in hypotheses:
        model.nodes[hyp.id] = hypothesis_node(hyp, placed[hyp.id], (checks or {}).get(hyp.id))
    for item in evidence:
        if item.redundant and not include_redundant:
            continue
        distinct = distinguishing_filters(item.sql, [sql_of[o] for o in siblings[item.id]])
        model.nodes[item.id] = evidence_node(item, placed[item.id],
                                             first_stance.get(item.id), distinct,
                                             key_numbers.get(item.id), homes.get(item.id),
                                             [r for r in reuses if r.evidence_id == item.id])
    for hyp in hypotheses:
        if hyp.parent_id in model.nodes:
            edge_id = f"{hyp.parent_id}->{hyp.id}"
            hover = f"{hyp.id} refines {hyp.parent_id}"
            model.edges[edge_id] = GraphEdge(edge_id, hyp.parent_id, hyp.id, "refines",
                                             "refines", _edge_data("refines", hover))
    for hyp in hypotheses:  # exploration that suggested a hypothesis: context, not a test
        for evidence_id in hyp.motivated_by:
            if evidence_id in model.nodes and hyp.id in model.nodes:
                edge_id = f"{evidence_id}~>{hyp.id}"
                model.edges[edge_id] = GraphEdge(
                    edge_id, evidence_id, hyp.id, "motivates", "motivates",
                    _edge_data("motivates", f"{evidence_id} suggested {hyp.id}"))
    for link in links:
        if link.evidence_id not in model.nodes or link.hypothesis_id not in model.nodes:
            continue
        edge_id = f"{link.evidence_id}->{link.hypothesis_id}"
        stance = link.stance.value
        hover = f"{link.evidence_id} {stance} {link.hypothesis_id}: {link.rationale}"
        model.edges[edge_id] = GraphEdge(edge_id, link.evidence_id, link.hypothesis_id, stance,
                                         stance, _edge_data(stance, hover))
    return model


def hypothesis_node(hyp: Hypothesis, position: Position,
                    check: RecheckedVerdict | None = None) -> GraphNode:
    """The node of one hypothesis: id, status and confidence over the statement, and
    what the latest re-check says of its verdict (``check``): a stale verdict gets the
    ``stale`` class, an orange border and "⚠ stale"; a confirmed one its date."""
    status = hyp.status.value
    classes = f"hypothesis {status}" + (" human" if hyp.author_role == "human" else "")
    confidence = "" if hyp.confidence is None else f" {hyp.confidence:.0%}"
    colors = style.hypothesis_colors(status)
    mark = "" if check is None else f" · {check_mark(check)}"
    stale = check is not None and check.check is VerdictCheck.STALE
    data = {"kind": "hypothesis", "status": status, "color": colors.fill,
            "border": style.CHECK_BORDERS["stale"] if stale else colors.border,
            "width": style.HYPOTHESIS_WIDTH, "height": style.HYPOTHESIS_HEIGHT,
            "check": None if check is None else check.check.value,
            "hover": f"{hyp.id} [{status}{confidence}{mark}"
                     f"{'' if check is None else ' on ' + check.created_at[:10]}] "
                     f"{hyp.statement}"}
    if stale:
        classes += " stale"
    label = (f"{hyp.id} · {status}{confidence}{mark}\n"
             f"{_cut(hyp.statement, HYPOTHESIS_CHARS)}")
    return GraphNode(hyp.id, "hypothesis", label, classes, position, data)


def evidence_node(item: Evidence, position: Position, stance: str | None = None,
                  distinct: Sequence[str] = (), key: float | None = None,
                  home: str | None = None,
                  reused: Sequence[EvidenceReuse] = ()) -> GraphNode:
    """The node of one piece of evidence, coloured by ``stance`` (its first link's;
    ``None``: not linked) and dimmed when redundant.

    Its first line is the id, then what sets it apart from its siblings (``distinct``,
    e.g. ``"asthma"``) and its key number (``key``), else its row count; the second
    line the start of its description. ``home`` is the hypothesis it is drawn beside
    (:func:`~d2_notebook.notebook.layout.evidence_homes`; ``None``: none), under which a
    view may fold it. Evidence a follow-up reused (``reused``) gets the ``reused`` class,
    ``data.reused`` and ``data.reused_by`` (the follow-ups), and says so in its hover.
    """
    human = item.author_role == "human"
    classes = ("evidence" + (" redundant" if item.redundant else "")
               + (" human" if human else "") + (" reused" if reused else ""))
    reused_by = [r.investigation_id for r in reused]
    rows = f"{item.row_count} row{'s' if item.row_count != 1 else ''}"
    colors = style.evidence_colors(stance, human)
    data = {"kind": "evidence", "redundant": item.redundant, "stance": stance or "context",
            "color": colors.fill, "border": colors.border, "width": style.EVIDENCE_WIDTH,
            "height": style.EVIDENCE_HEIGHT,
            "hover": f"{item.id} ({rows}) {item.description}" + (
                f" [{reuse_text(item.investigation_id, reused_by)}]" if reused else ""),
            "distinct": list(distinct), "key_number": key, "home": home,
            "reused": bool(reused), "reused_by": reused_by}
    head = [item.id, *(_cut(text, 24) for text in distinct)]
    head.append(rows if key is None else format_number(key))
    label = f"{_cut(' · '.join(head), 40)}\n{_cut(item.description, EVIDENCE_CHARS)}"
    return GraphNode(item.id, "evidence", label, classes, position, data)


def _edge_data(kind: str, hover: str) -> dict[str, Any]:
    return {"kind": kind, "color": style.EDGE_COLORS[kind], "hover": hover}


def filter_statuses(model: GraphModel, hidden: set[str]) -> GraphModel:
    """``model`` without the hypotheses whose status is in ``hidden``, the edges that
    touch them, and the evidence that bears only on hidden hypotheses (evidence linked
    to nothing stays). The JupyterLab renderer applies the same rule
    (``extension/src/elements.ts``)."""
    if not hidden:
        return model
    gone = {node_id for node_id, node in model.nodes.items()
            if node.kind == "hypothesis" and node.data["status"] in hidden}
    targets: dict[str, set[str]] = {}
    for edge in model.edges.values():
        if edge.kind != "refines":
            targets.setdefault(edge.source, set()).add(edge.target)
    gone |= {evidence_id for evidence_id, bears_on in targets.items() if bears_on <= gone}
    nodes = {k: v for k, v in model.nodes.items() if k not in gone}
    edges = {k: e for k, e in model.edges.items()
             if e.source not in gone and e.target not in gone}
    return GraphModel(nodes=nodes, edges=edges)


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


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
