"""The paper's three metrics of one case: correctness, completeness, verifiability ease.

One implementation for the benchmark (``benchmark/``), the grading of a student's board
(:mod:`d2_notebook.teaching.grading`) and anything else that builds a
:class:`~d2_notebook.teaching.answer.SystemAnswer`. A gold may be a ``Gold`` object or
its JSON dict. The definitions are in ``benchmark/README.md`` (Metrics).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from d2_notebook.teaching.answer import People, SystemAnswer, gold_value
from d2_notebook.teaching.graph_match import GraphMatch, match_graph


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


def prf(predicted: set, gold: set) -> tuple[float, float, float]:
    """(precision, recall, F1). Both sets empty -> (1, 1, 1); exactly one empty -> F1 0."""
    if not predicted and not gold:
        return 1.0, 1.0, 1.0
    tp = len(predicted & gold)
    p = tp / len(predicted) if predicted else 0.0
    r = tp / len(gold) if gold else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def score_case(answer: SystemAnswer, gold: Any, system: str = "") -> CaseScore:
    """Score one answer against one gold file (a ``Gold`` object or its JSON dict)."""
    return score_with_match(answer, gold, match_graph(answer, gold), system)


def score_with_match(answer: SystemAnswer, gold: Any, graph: GraphMatch,
                     system: str = "") -> CaseScore:
    """:func:`score_case` given the answer's :class:`GraphMatch` (computed once by callers
    that also read its details)."""
    people = People(gold)
    murderers = {str(m["id"]) for m in gold_value(gold, "murderers")}
    suspects = {str(s["id"]) for s in gold_value(gold, "suspects")}
    accused = {people.resolve(a) for a in answer.accused}
    p, r, correctness = prf(accused, murderers)
    analysed = {people.resolve(s.suspect) for s in answer.suspects_considered
                if s.verdict or s.n_evidence > 0}
    _, completeness, completeness_f1 = prf(analysed, suspects)
    scores = graph.scores
    return CaseScore(gold_value(gold, "case_id"), gold_value(gold, "tier"), system,
                     correctness, p, r, completeness, scores.verifiability,
                     scores.hypothesis_f1, scores.evidence_f1, completeness_f1,
                     len(analysed - suspects), scores.edge_precision, scores.edge_recall,
                     scores.extra_edges)


def score_dict(score: CaseScore) -> dict[str, Any]:
    """A :class:`CaseScore` as a plain dict (for JSON/CSV)."""
    return asdict(score)
