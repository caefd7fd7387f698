"""How an audit graph meets the gold graph: evidence by the facts it establishes, edges softly.

:func:`match_graph` computes everything once — which gold facts each evidence
establishes, which gold hypothesis each hypothesis is about, which edges are scored and
which gold edge each scored edge earns — and :class:`GraphMatch` keeps it, so the scores
(:attr:`GraphMatch.scores`), a grade's breakdown and a hint all read the same numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from d2_notebook.teaching.answer import (
    Edge,
    Evidence,
    Hypothesis,
    People,
    SystemAnswer,
    gold_graph,
    gold_value,
    hypothesis_similarity,
    norm_cell,
    norm_text,
)
from d2_notebook.teaching.evidence_match import (
    absence_mentions,
    coverage,
    normalised_rows,
    one_to_one,
    soft_prf,
)

IN_SCOPE = 0.5
"""A system hypothesis at least this similar to some gold hypothesis is in scope: its
edges count for the edge precision (the others are counted as extra edges)."""
ESTABLISHED = 0.5
"""Coverage at which an evidence counts as establishing a gold fact, for two decisions
only: the net stance of an evidence that establishes several facts of one hypothesis,
and whether an evidence is context (establishes a gold node that has no edges).
Credit itself is the coverage, never cut at this value."""
STANCES = ("supports", "contradicts")
"""The stances that claim something for or against a hypothesis and are scored; a
``weak`` or ``neutral`` link claims neither and is left unscored."""

SystemEdge = tuple[str, str, str]
"""``(evidence id, hypothesis id, stance)`` of a system edge, stance casefolded."""


class Unscored(Enum):
    """Why a system edge is counted as extra rather than scored."""

    OUTSIDE_THE_CASE = "its hypothesis is about nobody in the gold"
    CONTEXT = "its evidence is context (the report, a witness, an interview)"
    NOT_DECISIVE = "its stance is weak or neutral: it claims nothing for or against"


@dataclass(frozen=True)
class GraphScores:
    """The audit graph's scores against the gold graph (see benchmark/README.md, Metrics).

    Attributes:
        verifiability: soft edge F1 over the in-scope system edges.
        edge_precision, edge_recall: its two halves.
        hypothesis_f1: soft hypothesis node F1.
        evidence_f1: soft evidence node F1 (evidence matched by the facts it establishes).
        extra_edges: system edges on hypotheses about nobody in the gold (not scored).
    """

    verifiability: float
    edge_precision: float
    edge_recall: float
    hypothesis_f1: float
    evidence_f1: float
    extra_edges: int


@dataclass(frozen=True)
class GraphMatch:
    """An audit graph set against the gold graph (built by :func:`match_graph`).

    Attributes:
        gold_hypotheses, gold_evidence, gold_edges: the gold graph.
        cover: per system evidence id, per gold evidence id, the share of that gold
            fact the evidence's rows establish (0..1).
        similarity: per system hypothesis id, per gold hypothesis id, how well they
            match (1/0 when both name a person).
        scored: the system edges that are scored, sorted.
        unscored: the other system edges and why.
        credit: per scored edge, per gold edge, the credit it could earn.
        pairs: the one-to-one assignment, ``(scored index, gold edge index, credit)``.
        scores: the figures.
    """

    gold_hypotheses: tuple[Hypothesis, ...]
    gold_evidence: tuple[Evidence, ...]
    gold_edges: tuple[Edge, ...]
    cover: Mapping[str, Mapping[str, float]]
    similarity: Mapping[str, Mapping[str, float]]
    scored: tuple[SystemEdge, ...]
    unscored: Mapping[SystemEdge, Unscored]
    credit: tuple[tuple[float, ...], ...]
    pairs: tuple[tuple[int, int, float], ...]
    scores: GraphScores

    def context_ids(self) -> set[str]:
        """Gold evidence without edges: the report, finding a witness, an interview."""
        return {g.id for g in self.gold_evidence} - {g.evidence for g in self.gold_edges}

    def about(self, hypothesis_id: str) -> str | None:
        """The gold hypothesis a system hypothesis is about (the best match in scope)."""
        sims = self.similarity.get(hypothesis_id, {})
        if not sims:
            return None
        best = max(sims, key=lambda g: (sims[g], g))
        return best if sims[best] >= IN_SCOPE else None

    def established_by(self, gold_evidence_id: str) -> list[tuple[str, float]]:
        """``(system evidence id, coverage)`` of the evidence establishing a gold fact,
        best first (coverage at least :data:`ESTABLISHED`)."""
        found = [(sid, cover[gold_evidence_id]) for sid, cover in self.cover.items()
                 if cover.get(gold_evidence_id, 0.0) >= ESTABLISHED]
        return sorted(found, key=lambda pair: (-pair[1], pair[0]))

    def earned(self) -> dict[int, tuple[SystemEdge, float]]:
        """Per gold edge index: the scored system edge that earned it and its credit."""
        return {gold: (self.scored[sys], value) for sys, gold, value in self.pairs}

    def wanted_stance(self, evidence_id: str, gold_edge: Edge) -> str:
        """The stance an edge from ``evidence_id`` must have to earn ``gold_edge``."""
        return _wanted_stance(self.cover.get(evidence_id, {}), gold_edge, self.gold_edges)


def _anchors(gold: Any, edges: Sequence[Edge], hypotheses: Sequence[Hypothesis]
             ) -> dict[str, frozenset[str]]:
    """Per gold evidence id: the normalised id and name of the suspects it is linked to."""
    names = {str(p["id"]): p["name"]
             for p in [*gold_value(gold, "suspects"), *gold_value(gold, "murderers")]}
    suspect_of = {h.id: str(h.suspect) for h in hypotheses if h.suspect}
    out: dict[str, set[str]] = {}
    for edge in edges:
        person = suspect_of.get(edge.hypothesis)
        if person is not None:
            cells = {norm_cell(int(person)) if person.isdigit() else norm_text(person)}
            if person in names:
                cells.add(norm_text(names[person]))
            out.setdefault(edge.evidence, set()).update(cells)
    return {k: frozenset(v) for k, v in out.items()}


def _cites_context(cover: Mapping[str, float], context: set[str]) -> bool:
    """Whether an evidence establishes a gold context node (report, interview...) best."""
    if not cover:
        return False
    best = max(cover, key=lambda g: (cover[g], g))
    return best in context and cover[best] >= ESTABLISHED


def _edge_credit(evidence: str, hypothesis: str, stance: str, gold_edge: Edge,
                 gold_edges: Sequence[Edge], cover: Mapping[str, Mapping[str, float]],
                 h_sim: Mapping[str, Mapping[str, float]]) -> float:
    """Credit of one system edge for one gold edge (see :func:`match_graph`)."""
    established = cover.get(evidence, {})
    weight = established.get(gold_edge.evidence, 0.0) * h_sim.get(hypothesis, {}).get(
        gold_edge.hypothesis, 0.0)
    if weight == 0.0:
        return 0.0
    return weight if stance == _wanted_stance(established, gold_edge, gold_edges) else 0.0


def _wanted_stance(established: Mapping[str, float], gold_edge: Edge,
                   gold_edges: Sequence[Edge]) -> str:
    """The gold edge's stance, or, for an evidence that establishes several facts of its
    hypothesis, their net stance (contradicts if any of them contradicts)."""
    facts = [g for g in gold_edges if g.hypothesis == gold_edge.hypothesis
             and established.get(g.evidence, 0.0) >= ESTABLISHED]
    if len(facts) > 1:
        return "contradicts" if any(g.stance == "contradicts" for g in facts) else "supports"
    return gold_edge.stance


def match_graph(answer: SystemAnswer, gold: Any) -> GraphMatch:
    """Set an answer's audit graph against the gold graph and score it.

    An edge's credit against a gold edge is (how much of the gold evidence's fact the
    system evidence establishes) x (how well the hypotheses match), when the stance is
    right: the gold edge's stance, or, for an evidence that establishes several facts of
    the hypothesis, their net stance (contradicts if any of them contradicts). System
    and gold edges are paired one to one (:func:`soft_prf`): recall = assigned credit /
    gold edges, precision = assigned credit / scored system edges. Not
    scored (counted as extra): edges whose stance is weak or neutral (they claim
    nothing), edges on hypotheses about nobody in the gold, and edges citing context
    evidence (what best matches a gold node without edges: the report, a witness's
    interview).
    """
    people = People(gold)
    g_hyp, g_ev, g_edges = gold_graph(gold)
    anchors = _anchors(gold, g_edges, g_hyp)
    gold_rows = {g.id: normalised_rows(g.rows, norm_cell) for g in g_ev}
    cover = {s.id: {g.id: coverage(gold_rows[g.id], normalised_rows(s.rows, norm_cell),
                                   anchors.get(g.id, frozenset()),
                                   absence_mentions(s.sql, s.description))
                    for g in g_ev}
             for s in answer.evidence}
    h_sim = {s.id: {g.id: hypothesis_similarity(s, g, people) for g in g_hyp}
             for s in answer.hypotheses}
    sys_edges = sorted({(e.evidence, e.hypothesis, e.stance.casefold()) for e in answer.edges})
    context = {g.id for g in g_ev} - {g.evidence for g in g_edges}
    scored: list[SystemEdge] = []
    unscored: dict[SystemEdge, Unscored] = {}
    for e, h, st in sys_edges:
        if st not in STANCES:
            unscored[(e, h, st)] = Unscored.NOT_DECISIVE
        elif max(h_sim.get(h, {}).values(), default=0.0) < IN_SCOPE:
            unscored[(e, h, st)] = Unscored.OUTSIDE_THE_CASE
        elif _cites_context(cover.get(e, {}), context):
            unscored[(e, h, st)] = Unscored.CONTEXT
        else:
            scored.append((e, h, st))
    credit = [[_edge_credit(e, h, stance, g, g_edges, cover, h_sim) for g in g_edges]
              for e, h, stance in scored]
    precision, recall, verifiability = soft_prf(credit, len(g_edges))
    hyp_f1 = soft_prf([[h_sim[s.id][g.id] for g in g_hyp] for s in answer.hypotheses],
                      len(g_hyp))[2]
    ev_f1 = soft_prf([[cover[s.id][g.id] for g in g_ev] for s in answer.evidence],
                     len(g_ev))[2]
    scores = GraphScores(verifiability, precision, recall, hyp_f1, ev_f1,
                         len(sys_edges) - len(scored))
    return GraphMatch(tuple(g_hyp), tuple(g_ev), tuple(g_edges), cover, h_sim, tuple(scored),
                      unscored, tuple(tuple(row) for row in credit),
                      tuple(one_to_one(credit, len(g_edges))), scores)


def graph_scores(answer: SystemAnswer, gold: Any) -> GraphScores:
    """The audit graph's scores (see :func:`match_graph`)."""
    return match_graph(answer, gold).scores
