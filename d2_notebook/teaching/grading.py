"""Grade any board of a SQL City case — a student's, the detective's — like the benchmark.

``grade(board, gold)`` returns the paper's three metrics (the benchmark's own
implementation, :mod:`d2_notebook.teaching.scoring`) with a breakdown a teacher and a
student can read: per gold suspect whether the board analysed and accused them, which of
their gold facts its evidence establishes and which links earn them; which links are
right, point the wrong way or show nothing; and whom it accuses wrongly.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from d2_notebook.teaching.assessment import Assessment, BoardLike, assess, opened
from d2_notebook.teaching.case_map import Source
from d2_notebook.teaching.cases import CaseDatabase, GoldLike
from d2_notebook.teaching.graph_match import ESTABLISHED, Unscored
from d2_notebook.teaching.scoring import CaseScore, score_with_match


class Outcome(Enum):
    """What a board concluded about one gold suspect."""

    CAUGHT = "caught"
    MISSED = "missed"
    WRONGLY_ACCUSED = "wrongly accused"
    CLEARED = "cleared"
    NOT_ANALYSED = "not analysed"


class LinkOutcome(Enum):
    """How one link of the board fares against the gold graph."""

    RIGHT = "right"
    WRONG_STANCE = "wrong stance"
    ALREADY_EARNED = "already earned"
    NO_FACT = "shows no fact of its hypothesis"
    OUTSIDE_THE_CASE = "about nobody in the case"
    CONTEXT = "cites context"
    NOT_DECISIVE = "weak or neutral: claims nothing for or against"


@dataclass(frozen=True)
class FactGrade:
    """One gold fact (a gold evidence node with its stance) against the board.

    Attributes:
        gold_evidence: its id in the gold graph.
        description: what it shows (the gold's words).
        source: the kind of source it comes from.
        stance: ``supports`` or ``contradicts`` (empty for context: report, interviews).
        established: the share of it the board's best evidence establishes (0..1).
        established_by: that evidence's id, or None.
        earned: the credit a link earns for it (0..1; one link per fact).
        earned_by: that link as ``(evidence id, hypothesis id)``, or None.
    """

    gold_evidence: str
    description: str
    source: Source
    stance: str
    established: float
    established_by: str | None
    earned: float = 0.0
    earned_by: tuple[str, str] | None = None

    @property
    def is_established(self) -> bool:
        """Whether the board's evidence shows at least half of it."""
        return self.established >= ESTABLISHED


@dataclass(frozen=True)
class SuspectGrade:
    """One gold suspect against the board.

    Attributes:
        id: the person id (text).
        name: the person's name.
        role: ``murderer``, ``lookalike`` or ``decoy`` (the gold's words).
        murderer: whether they are a murderer.
        hypotheses: the board's hypotheses about them.
        analysed: a hypothesis about them has evidence or a verdict.
        accused: a hypothesis about them is supported.
        facts: their gold facts.
    """

    id: str
    name: str
    role: str
    murderer: bool
    hypotheses: tuple[str, ...]
    analysed: bool
    accused: bool
    facts: tuple[FactGrade, ...]

    @property
    def outcome(self) -> Outcome:
        """Caught, missed, wrongly accused, cleared or not analysed."""
        if self.murderer:
            return Outcome.CAUGHT if self.accused else Outcome.MISSED
        if self.accused:
            return Outcome.WRONGLY_ACCUSED
        return Outcome.CLEARED if self.analysed else Outcome.NOT_ANALYSED

    @property
    def facts_earned(self) -> int:
        """Facts a link earns at least half the credit of."""
        return sum(f.earned >= ESTABLISHED for f in self.facts)

    @property
    def facts_established(self) -> int:
        """Facts the board's evidence establishes (linked or not)."""
        return sum(f.is_established for f in self.facts)


@dataclass(frozen=True)
class LinkGrade:
    """One link of the board (``evidence`` ``stance`` ``hypothesis``) and its credit."""

    evidence_id: str
    hypothesis_id: str
    stance: str
    outcome: LinkOutcome
    credit: float = 0.0


@dataclass(frozen=True)
class Accusation:
    """A supported hypothesis about somebody who is not a suspect of the case."""

    hypothesis_id: str
    statement: str


@dataclass(frozen=True, repr=False)
class Grade:
    """A board's grade on one case (see :func:`grade`); renders as text and HTML.

    Attributes:
        board: the board's file.
        investigation_id: the investigation graded.
        score: every figure of the benchmark (:class:`CaseScore`).
        suspects: per gold suspect, in the gold's order.
        context: the report, witness searches and interviews: shown on the board or not.
        links: every link of the board's audit graph.
        accused_outside: accusations of people who are not suspects at all.
        hints_used: hints recorded on the board.
    """

    board: str
    investigation_id: str | None
    score: CaseScore
    suspects: tuple[SuspectGrade, ...]
    context: tuple[FactGrade, ...]
    links: tuple[LinkGrade, ...]
    accused_outside: tuple[Accusation, ...]
    hints_used: int

    @property
    def correctness(self) -> float:
        """F1 of the accused against the murderers (0..1)."""
        return self.score.correctness

    @property
    def completeness(self) -> float:
        """Share of the gold suspects the board analysed (0..1)."""
        return self.score.completeness

    @property
    def verifiability(self) -> float:
        """Soft F1 of the board's links against the gold edges (0..1)."""
        return self.score.verifiability

    @property
    def case_id(self) -> str:
        """The case graded against."""
        return self.score.case_id

    def wrong_accusations(self) -> list[str]:
        """Everybody accused who is not a murderer: suspects by name, others by statement."""
        return ([f"{s.name} ({s.id})" for s in self.suspects
                 if s.outcome is Outcome.WRONGLY_ACCUSED]
                + [f"{a.hypothesis_id}: {a.statement}" for a in self.accused_outside])

    def missed_murderers(self) -> list[str]:
        """Murderers the board does not accuse."""
        return [f"{s.name} ({s.id})" for s in self.suspects if s.outcome is Outcome.MISSED]

    def not_analysed(self) -> list[str]:
        """Gold suspects without evidence or a verdict on the board."""
        return [f"{s.name} ({s.id})" for s in self.suspects if not s.analysed]

    def text(self) -> str:
        """The grade as plain text (metrics, suspects, facts, links)."""
        from d2_notebook.teaching.grade_view import grade_text

        return grade_text(self)

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        return (f"<Grade of {self.board} on {self.case_id}: correctness "
                f"{self.correctness:.2f}, completeness {self.completeness:.2f}, "
                f"verifiability {self.verifiability:.2f}>")

    def _repr_html_(self) -> str:
        from d2_notebook.teaching.grade_view import grade_html

        return grade_html(self)


def grade(board: BoardLike, gold: GoldLike, *, database: CaseDatabase | None = None,
          investigation: str | None = None) -> Grade:
    """Grade a board of a SQL City case against the case's gold.

    The figures are the benchmark's (:func:`~d2_notebook.teaching.scoring.score_case` on
    the board read as the benchmark reads a team's board): the gold graph itself scores
    1/1/1.

    Args:
        board: a :class:`~d2_notebook.board.Board` or the path of a ``.d2board`` file
            (opened read-only).
        gold: the case's gold: a ``Gold``, its JSON dict or the path of its JSON file.
        database: the case database (a path or an open DuckDB connection), to know
            everybody a hypothesis may name. Default:
            the ``.duckdb`` beside the gold file, else the case rebuilt from its seed.
        investigation: the investigation to grade (default: the board's latest).

    Raises:
        BoardError: no board at the path, or not a board.
        CaseFileError: a bad gold file or database path.
    """
    with opened(board) as handle:
        found = assess(handle, gold, database=database, investigation=investigation)
    return grade_assessment(found)


def grade_assessment(found: Assessment) -> Grade:
    """The :class:`Grade` of an :class:`Assessment`."""
    score = score_with_match(found.answer, found.gold, found.match, system="board")
    facts = _facts(found)
    people = found.people
    accused = {people.resolve(a) for a in found.answer.accused}
    analysed = {people.resolve(s.suspect) for s in found.answer.suspects_considered
                if s.verdict or s.n_evidence > 0}
    about: dict[str, list[str]] = {}
    for hyp in found.answer.hypotheses:
        if hyp.suspect:
            about.setdefault(people.resolve(hyp.suspect), []).append(hyp.id)
    murderers = {str(m["id"]) for m in found.gold.murderers}
    suspects = tuple(
        SuspectGrade(str(s["id"]), s["name"], s.get("role", ""), str(s["id"]) in murderers,
                     tuple(about.get(str(s["id"]), [])), str(s["id"]) in analysed,
                     str(s["id"]) in accused, tuple(facts.get(f"H{s['id']}", [])))
        for s in found.gold.suspects)
    known = {s.id for s in suspects}
    outside = tuple(Accusation(h.id, h.text) for h in found.answer.hypotheses
                    if h.suspect and people.resolve(h.suspect) in accused - known
                    and found.hypotheses[h.id].status.value == "supported")
    return Grade(found.board_path, found.investigation_id, score, suspects,
                 tuple(facts.get("", [])), _links(found), outside, found.hints_used)


def _facts(found: Assessment) -> dict[str, list[FactGrade]]:
    """Per gold hypothesis id the facts of its gold edges; context nodes under ``""``."""
    match = found.match
    earned = match.earned()
    out: dict[str, list[FactGrade]] = {}
    by_id = {g.id: g for g in match.gold_evidence}
    for index, edge in enumerate(match.gold_edges):
        node = by_id[edge.evidence]
        best = match.established_by(edge.evidence)
        link, credit = earned.get(index, (None, 0.0))
        out.setdefault(edge.hypothesis, []).append(FactGrade(
            node.id, node.description, found.nodes.node(node.id).source, edge.stance,
            _best_cover(found, node.id), best[0][0] if best else None, credit,
            (link[0], link[1]) if link else None))
    for gold_id in sorted(match.context_ids(), key=_natural):
        node = by_id[gold_id]
        best = match.established_by(gold_id)
        out.setdefault("", []).append(FactGrade(
            gold_id, node.description, found.nodes.node(gold_id).source, "",
            _best_cover(found, gold_id), best[0][0] if best else None))
    return out


def _best_cover(found: Assessment, gold_id: str) -> float:
    return max((cover.get(gold_id, 0.0) for cover in found.match.cover.values()), default=0.0)


def _links(found: Assessment) -> tuple[LinkGrade, ...]:
    """Every system edge with its outcome, in (evidence, hypothesis) order."""
    match = found.match
    paid = {sys: value for sys, _, value in match.pairs}
    out = []
    for (evidence, hypothesis, stance), why in match.unscored.items():
        outcome = {Unscored.OUTSIDE_THE_CASE: LinkOutcome.OUTSIDE_THE_CASE,
                   Unscored.CONTEXT: LinkOutcome.CONTEXT,
                   Unscored.NOT_DECISIVE: LinkOutcome.NOT_DECISIVE}[why]
        out.append(LinkGrade(evidence, hypothesis, stance, outcome))
    for index, (evidence, hypothesis, stance) in enumerate(match.scored):
        if index in paid:
            outcome, credit = LinkOutcome.RIGHT, paid[index]
        elif any(value > 0 for value in match.credit[index]):
            outcome, credit = LinkOutcome.ALREADY_EARNED, 0.0
        elif _shows_fact_the_other_way(found, evidence, hypothesis, stance):
            outcome, credit = LinkOutcome.WRONG_STANCE, 0.0
        else:
            outcome, credit = LinkOutcome.NO_FACT, 0.0
        out.append(LinkGrade(evidence, hypothesis, stance, outcome, credit))
    return tuple(sorted(out, key=lambda g: (_natural(g.evidence_id),
                                            _natural(g.hypothesis_id))))


def _shows_fact_the_other_way(found: Assessment, evidence: str, hypothesis: str,
                              stance: str) -> bool:
    """Whether the evidence establishes a fact of the hypothesis's gold suspect whose
    stance is not ``stance``."""
    match = found.match
    target = match.about(hypothesis)
    cover = match.cover.get(evidence, {})
    return any(edge.hypothesis == target and cover.get(edge.evidence, 0.0) >= ESTABLISHED
               and match.wanted_stance(evidence, edge) != stance for edge in match.gold_edges)


def _natural(record_id: str) -> tuple[str, int]:
    """``E10`` after ``E9``."""
    digits = record_id.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return (record_id[: len(record_id) - len(digits)],
            int(digits) if digits.isdigit() else 0)
