"""Benchmark metrics: correctness, completeness and verifiability ease (see README.md).

Self-contained on purpose (standard library + scipy): a :class:`SystemAnswer` can be
built by any adapter, and a gold file may be a ``Gold`` object or its JSON dict.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

THRESHOLD = 0.5
"""Minimum similarity for a matched hypothesis or evidence pair."""
STANCES = ("supports", "contradicts")
TIER_ORDER = ("easy", "medium", "hard", "very_hard")
METRICS = ("correctness", "completeness", "verifiability", "hypothesis_f1", "evidence_f1")


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
    """Scores of one system on one case; all values in [0, 1]."""

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


def count_f1(matched: int, n_sys: int, n_gold: int) -> float:
    """F1 from counts: precision ``matched/n_sys``, recall ``matched/n_gold``; 0/0 -> 1.0."""
    if n_sys == 0 and n_gold == 0:
        return 1.0
    if matched == 0:
        return 0.0
    p, r = matched / n_sys, matched / n_gold
    return 2 * p * r / (p + r)


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
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return str(int(value)) if float(value).is_integer() else f"{float(value):.6g}"
    if isinstance(value, dt.datetime) and value.time() == dt.time(0):
        value = value.date()
    if isinstance(value, dt.date):
        return value.isoformat()
    return norm_text(value)


def row_set(rows: Iterable[Sequence[Any]]) -> set[tuple[str, ...]]:
    """Rows as a set of tuples of normalised cells, sorted within the row (column order free)."""
    return {tuple(sorted(norm_cell(v) for v in row)) for row in rows}


def sql_tokens(sql: str) -> list[str]:
    """SQL tokens after casefolding (identifiers, numbers, quoted strings, symbols)."""
    text = sql.casefold().strip().rstrip(";")
    return re.findall(r"'[^']*'|[a-z_][a-z0-9_]*|\d+(?:\.\d+)?|[^\s\w]", text)


def hypothesis_similarity(sys: Hypothesis, gold: Hypothesis, people: People) -> float:
    """1/0 when both name a suspect (same/different person), else token-set Jaccard of text."""
    if sys.suspect and gold.suspect:
        return float(people.resolve(sys.suspect) == people.resolve(gold.suspect))
    return jaccard(tokens(sys.text), tokens(gold.text))


def evidence_similarity(sys: Evidence, gold: Evidence) -> float:
    """Max of: row Jaccard, SQL token sequence ratio, description token-set Jaccard."""
    rows = jaccard(row_set(sys.rows), row_set(gold.rows))
    a, b = sql_tokens(sys.sql), sql_tokens(gold.sql)
    sql = difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() if a and b else 0.0
    return max(rows, sql, jaccard(tokens(sys.description), tokens(gold.description)))


def match(sys_nodes: Sequence[Any], gold_nodes: Sequence[Any], sim: Any,
          threshold: float = THRESHOLD) -> dict[str, str]:
    """Max-similarity one-to-one matching ``{system id: gold id}`` (pairs below threshold dropped).

    Nodes are sorted by id before the cost matrix is built, so ties break deterministically.
    """
    s_nodes = sorted(sys_nodes, key=lambda n: n.id)
    g_nodes = sorted(gold_nodes, key=lambda n: n.id)
    if not s_nodes or not g_nodes:
        return {}
    scores = np.array([[sim(s, g) for g in g_nodes] for s in s_nodes], dtype=float)
    rows, cols = linear_sum_assignment(scores, maximize=True)
    return {s_nodes[i].id: g_nodes[j].id for i, j in zip(rows, cols, strict=True)
            if scores[i, j] >= threshold}


def gold_graph(gold: Any) -> tuple[list[Hypothesis], list[Evidence], list[Edge]]:
    """The gold graph as metric dataclasses."""
    g = _get(gold, "graph")
    return ([Hypothesis(h["id"], h["text"], h.get("suspect")) for h in g["hypotheses"]],
            [Evidence(e["id"], e["sql"], e["rows"], e["description"]) for e in g["evidence"]],
            [Edge(e["evidence"], e["hypothesis"], e["stance"]) for e in g["edges"]])


def graph_scores(answer: SystemAnswer, gold: Any) -> tuple[float, float, float]:
    """(edge F1 = verifiability ease, hypothesis node F1, evidence node F1)."""
    people = People(gold)
    g_hyp, g_ev, g_edges = gold_graph(gold)
    h_map = match(answer.hypotheses, g_hyp, lambda s, g: hypothesis_similarity(s, g, people))
    e_map = match(answer.evidence, g_ev, evidence_similarity)
    sys_edges = {(e.evidence, e.hypothesis, e.stance.casefold()) for e in answer.edges}
    mapped = {(e_map[e], h_map[h], st) for e, h, st in sys_edges if e in e_map and h in h_map}
    gold_edges = {(e.evidence, e.hypothesis, e.stance) for e in g_edges}
    return (count_f1(len(mapped & gold_edges), len(sys_edges), len(gold_edges)),
            count_f1(len(h_map), len(answer.hypotheses), len(g_hyp)),
            count_f1(len(e_map), len(answer.evidence), len(g_ev)))


def score_case(answer: SystemAnswer, gold: Any, system: str = "") -> CaseScore:
    """Score one answer against one gold file (a ``Gold`` object or its JSON dict)."""
    people = People(gold)
    murderers = {str(m["id"]) for m in _get(gold, "murderers")}
    suspects = {str(s["id"]) for s in _get(gold, "suspects")}
    accused = {people.resolve(a) for a in answer.accused}
    p, r, correctness = prf(accused, murderers)
    analysed = {people.resolve(s.suspect) for s in answer.suspects_considered
                if s.verdict or s.n_evidence > 0}
    completeness = prf(analysed, suspects)[2]
    verifiability, hyp_f1, ev_f1 = graph_scores(answer, gold)
    return CaseScore(_get(gold, "case_id"), _get(gold, "tier"), system, correctness, p, r,
                     completeness, verifiability, hyp_f1, ev_f1)


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
