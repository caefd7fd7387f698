"""Benchmark metrics: correctness, completeness and verifiability ease (see README.md).

Self-contained on purpose (no package of ours; scipy for the one-to-one matching): a
:class:`SystemAnswer` can be built by any adapter, and a gold file may be a ``Gold``
object or its JSON dict.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from benchmark.evidence_match import absence_mentions, coverage, normalised_rows, soft_prf

IN_SCOPE = 0.5
"""A system hypothesis at least this similar to some gold hypothesis is in scope: its
edges count for the edge precision (the others are counted as extra edges)."""
ESTABLISHED = 0.5
"""Coverage at which an evidence counts as establishing a gold fact, for two decisions
only: the net stance of an evidence that establishes several facts of one hypothesis,
and whether an evidence is context (establishes a gold node that has no edges).
Credit itself is the coverage, never cut at this value."""
STANCES = ("supports", "contradicts")
TIER_ORDER = ("easy", "medium", "hard", "very_hard")
METRICS = ("correctness", "completeness", "verifiability", "hypothesis_f1", "evidence_f1",
           "completeness_f1", "extra_suspects", "edge_precision", "edge_recall", "extra_edges")


@dataclass(frozen=True)
class Hypothesis:
    """A hypothesis node; ``suspect`` is a person name or id when it names one."""

    id: str
    text: str
    suspect: str | None = None


@dataclass(frozen=True)
class Evidence:
    """An evidence node: the SQL that was run, its result rows and a description."""

    id: str
    sql: str = ""
    rows: Sequence[Sequence[Any]] = ()
    description: str = ""


@dataclass(frozen=True)
class Edge:
    """``evidence`` ``supports`` or ``contradicts`` ``hypothesis`` (ids)."""

    evidence: str
    hypothesis: str
    stance: str


@dataclass(frozen=True)
class ConsideredSuspect:
    """A suspect the system examined; it counts as analysed iff it has a verdict or evidence."""

    suspect: str
    verdict: str | None = None
    n_evidence: int = 0


@dataclass
class SystemAnswer:
    """What every system returns for one case (names or person ids are both accepted)."""

    accused: set[str] = field(default_factory=set)
    suspects_considered: list[ConsideredSuspect] = field(default_factory=list)
    hypotheses: list[Hypothesis] = field(default_factory=list)
    evidence: list[Evidence] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


@dataclass(frozen=True)
class CaseScore:
    """Scores of one system on one case; all values in [0, 1] but the counts.

    ``completeness`` is recall over the gold suspects, ``completeness_f1`` the paper's
    F1, ``extra_suspects`` the analysed people outside the gold suspects;
    ``verifiability`` is the soft edge F1 (``edge_precision``, ``edge_recall``) and
    ``extra_edges`` counts edges on hypotheses about nobody in the gold.
    """

    case_id: str
    tier: str
    system: str
    correctness: float
    precision: float
    recall: float
    completeness: float
    verifiability: float
    hypothesis_f1: float
    evidence_f1: float
    completeness_f1: float = 0.0
    extra_suspects: int = 0
    edge_precision: float = 0.0
    edge_recall: float = 0.0
    extra_edges: int = 0


def _get(gold: Any, key: str) -> Any:
    return gold[key] if isinstance(gold, Mapping) else getattr(gold, key)


def norm_text(value: Any) -> str:
    """Casefold and collapse whitespace."""
    return " ".join(str(value).casefold().split())


def prf(predicted: set, gold: set) -> tuple[float, float, float]:
    """(precision, recall, F1). Both sets empty -> (1, 1, 1); exactly one empty -> F1 0."""
    if not predicted and not gold:
        return 1.0, 1.0, 1.0
    tp = len(predicted & gold)
    p = tp / len(predicted) if predicted else 0.0
    r = tp / len(gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


class People:
    """Resolves names (case/whitespace-insensitive) or ids to gold person ids."""

    def __init__(self, gold: Any) -> None:
        self.keys: dict[str, str] = {}
        for person in [*_get(gold, "suspects"), *_get(gold, "murderers")]:
            self.keys[norm_text(person["id"])] = str(person["id"])
            self.keys[norm_text(person["name"])] = str(person["id"])

    def resolve(self, who: Any) -> str:
        """The gold person id, or ``?<normalised text>`` for somebody not in the gold."""
        key = norm_text(who)
        return self.keys.get(key, "?" + key)


def tokens(text: str) -> set[str]:
    """Lower-case alphanumeric tokens."""
    return set(re.findall(r"[a-z0-9]+", text.casefold()))


def jaccard(a: set, b: set) -> float:
    """|a ∩ b| / |a ∪ b|; 0 when either set is empty."""
    return len(a & b) / len(a | b) if a and b else 0.0


def norm_cell(value: Any) -> str:
    """Canonical text of a result cell: numbers, dates, NULLs and strings normalised."""
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value != value:  # NaN: a missing value
        return "null"
    if isinstance(value, int | float):
        return str(int(value)) if float(value).is_integer() else f"{float(value):.6g}"
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        value = value.date()
    if isinstance(value, dt.date):
        return value.isoformat()
    return norm_text(value)


def hypothesis_similarity(sys: Hypothesis, gold: Hypothesis, people: People) -> float:
    """1/0 when both name a suspect (same/different person), else token-set Jaccard of text."""
    if sys.suspect and gold.suspect:
        return float(people.resolve(sys.suspect) == people.resolve(gold.suspect))
    return jaccard(tokens(sys.text), tokens(gold.text))


def gold_graph(gold: Any) -> tuple[list[Hypothesis], list[Evidence], list[Edge]]:
    """The gold graph as metric dataclasses."""
    g = _get(gold, "graph")
    return ([Hypothesis(h["id"], h["text"], h.get("suspect")) for h in g["hypotheses"]],
            [Evidence(e["id"], e["sql"], e["rows"], e["description"]) for e in g["evidence"]],
            [Edge(e["evidence"], e["hypothesis"], e["stance"]) for e in g["edges"]])


@dataclass(frozen=True)
class GraphScores:
    """The audit graph's scores against the gold graph (see README.md, Metrics).

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


def _anchors(gold: Any, edges: Sequence[Edge], hypotheses: Sequence[Hypothesis]
             ) -> dict[str, frozenset[str]]:
    """Per gold evidence id: the normalised id and name of the suspects it is linked to."""
    names = {str(p["id"]): p["name"] for p in [*_get(gold, "suspects"), *_get(gold, "murderers")]}
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
    """Credit of one system edge for one gold edge (see :func:`graph_scores`)."""
    established = cover.get(evidence, {})
    weight = established.get(gold_edge.evidence, 0.0) * h_sim.get(hypothesis, {}).get(
        gold_edge.hypothesis, 0.0)
    if weight == 0.0:
        return 0.0
    facts = [g for g in gold_edges if g.hypothesis == gold_edge.hypothesis
             and established.get(g.evidence, 0.0) >= ESTABLISHED]
    if len(facts) > 1:  # one evidence, several facts: its stance is their net stance
        wanted = "contradicts" if any(g.stance == "contradicts" for g in facts) else "supports"
    else:
        wanted = gold_edge.stance
    return weight if stance == wanted else 0.0


def graph_scores(answer: SystemAnswer, gold: Any) -> GraphScores:
    """Score the audit graph: evidence by the facts it establishes, edges softly.

    An edge's credit against a gold edge is (how much of the gold evidence's fact the
    system evidence establishes) x (how well the hypotheses match), when the stance is
    right: the gold edge's stance, or, for an evidence that establishes several facts of
    the hypothesis, their net stance (contradicts if any of them contradicts). System
    and gold edges are paired one to one (:func:`soft_prf`): recall = assigned credit /
    gold edges, precision = assigned credit / scored system edges. Not
    scored (counted as extra): edges on hypotheses about nobody in the gold, and edges
    citing context evidence (what best matches a gold node without edges: the report,
    a witness's interview).
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
    scored = [(e, h, st) for e, h, st in sys_edges
              if max(h_sim.get(h, {}).values(), default=0.0) >= IN_SCOPE
              and not _cites_context(cover.get(e, {}), context)]
    credit = [[_edge_credit(e, h, stance, g, g_edges, cover, h_sim) for g in g_edges]
              for e, h, stance in scored]
    precision, recall, verifiability = soft_prf(credit, len(g_edges))
    hyp_f1 = soft_prf([[h_sim[s.id][g.id] for g in g_hyp] for s in answer.hypotheses],
                      len(g_hyp))[2]
    ev_f1 = soft_prf([[cover[s.id][g.id] for g in g_ev] for s in answer.evidence],
                     len(g_ev))[2]
    return GraphScores(verifiability, precision, recall, hyp_f1, ev_f1,
                       len(sys_edges) - len(scored))


def score_case(answer: SystemAnswer, gold: Any, system: str = "") -> CaseScore:
    """Score one answer against one gold file (a ``Gold`` object or its JSON dict)."""
    people = People(gold)
    murderers = {str(m["id"]) for m in _get(gold, "murderers")}
    suspects = {str(s["id"]) for s in _get(gold, "suspects")}
    accused = {people.resolve(a) for a in answer.accused}
    p, r, correctness = prf(accused, murderers)
    analysed = {people.resolve(s.suspect) for s in answer.suspects_considered
                if s.verdict or s.n_evidence > 0}
    _, completeness, completeness_f1 = prf(analysed, suspects)
    graph = graph_scores(answer, gold)
    return CaseScore(_get(gold, "case_id"), _get(gold, "tier"), system, correctness, p, r,
                     completeness, graph.verifiability, graph.hypothesis_f1,
                     graph.evidence_f1, completeness_f1, len(analysed - suspects),
                     graph.edge_precision, graph.edge_recall, graph.extra_edges)


def aggregate(scores: Iterable[CaseScore], by: str | Sequence[str] = "tier",
              total: bool = True) -> list[dict[str, Any]]:
    """Mean of each metric per group (``by`` = field name(s) of :class:`CaseScore`).

    Rows: ``{<by fields>, "n", <metric means>}``, tiers in difficulty order, else sorted;
    with ``total`` one more row whose ``by`` fields are ``"all"`` (per system if grouping
    by ``("system", ...)``, else overall). Example: ``aggregate(s, by=("system", "tier"))``.
    """
    keys = (by,) if isinstance(by, str) else tuple(by)
    scores = list(scores)
    groups: dict[tuple, list[CaseScore]] = {}
    for s in scores:
        groups.setdefault(tuple(getattr(s, k) for k in keys), []).append(s)
    if total:
        for s in scores:
            head = (s.system,) if keys[0] == "system" and len(keys) > 1 else ("all",)
            groups.setdefault(head + ("all",) * (len(keys) - len(head)), []).append(s)

    def order(key: tuple) -> tuple:
        return tuple((TIER_ORDER.index(v) if v in TIER_ORDER else 9 if v == "all" else -1,
                      str(v)) for v in key)

    out = []
    for key in sorted(groups, key=order):
        items = groups[key]
        row: dict[str, Any] = dict(zip(keys, key, strict=True)) | {"n": len(items)}
        row |= {m: sum(getattr(s, m) for s in items) / len(items) for m in METRICS}
        out.append(row)
    return out


def oracle_answer(gold: Any) -> SystemAnswer:
    """The perfect answer, built straight from the gold file (scores 1/1/1)."""
    hyps, evs, edges = gold_graph(gold)
    counts: dict[str, int] = {}
    for e in edges:
        counts[e.hypothesis] = counts.get(e.hypothesis, 0) + 1
    guilty = {m["id"] for m in _get(gold, "murderers")}
    return SystemAnswer(
        accused={m["name"] for m in _get(gold, "murderers")},
        suspects_considered=[
            ConsideredSuspect(s["name"], "guilty" if s["id"] in guilty else "innocent",
                              counts.get(f"H{s['id']}", 0)) for s in _get(gold, "suspects")],
        hypotheses=hyps, evidence=evs, edges=edges)


def score_dict(score: CaseScore) -> dict[str, Any]:
    """A :class:`CaseScore` as a plain dict (for JSON/CSV)."""
    return asdict(score)
