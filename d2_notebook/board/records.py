"""The typed records of the Data Investigation Board (PAPER §3.2).

Records are frozen dataclasses: the board hands them out and takes their fields in,
never live rows. Ids are short and human-readable (``H3``, ``E12``, ``I1``) and stable
within one board file. Nothing is ever deleted: a change of state is a new value of a
field plus an :class:`Event` in the append-only log.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class HypothesisStatus(StrEnum):
    """Where a hypothesis stands. ``supported``/``contradicted``/``inconclusive`` are
    verdicts; ``abandoned`` means it does not answer the question (kept for audit)."""

    PROPOSED = "proposed"
    INVESTIGATING = "investigating"
    SUPPORTED = "supported"
    CONTRADICTED = "contradicted"
    INCONCLUSIVE = "inconclusive"
    ABANDONED = "abandoned"

    @property
    def is_settled(self) -> bool:
        """True once a verdict was given or the hypothesis was abandoned."""
        return self in SETTLED_STATUSES


SETTLED_STATUSES = frozenset(
    {
        HypothesisStatus.SUPPORTED,
        HypothesisStatus.CONTRADICTED,
        HypothesisStatus.INCONCLUSIVE,
        HypothesisStatus.ABANDONED,
    }
)
VERDICT_STATUSES = frozenset(
    {HypothesisStatus.SUPPORTED, HypothesisStatus.CONTRADICTED, HypothesisStatus.INCONCLUSIVE}
)


class Stance(StrEnum):
    """How a piece of evidence bears on a hypothesis.

    Only ``supports`` and ``contradicts`` count for or against it. ``weak`` evidence
    points one way on grounds too thin to decide by (a single unverified source, a
    handful of rows; the rationale says which way); ``neutral`` evidence bears on it
    neither way (a record that is missing, a result that fits every candidate alike).
    """

    SUPPORTS = "supports"
    CONTRADICTS = "contradicts"
    WEAK = "weak"
    NEUTRAL = "neutral"

    @property
    def is_decisive(self) -> bool:
        """True for ``supports`` and ``contradicts``: the stances that count."""
        return self in (Stance.SUPPORTS, Stance.CONTRADICTS)


class DiscountReason(StrEnum):
    """Why a judge set a piece of evidence aside when deciding a hypothesis."""

    MISSING_RECORD = "missing_record"
    """The record that would show it is absent: no evidence either way, not against."""
    UNRELIABLE_SOURCE = "unreliable_source"
    """Its source is contradicted by a more reliable one, or cannot be checked."""
    SUPERSEDED = "superseded"
    """A later, more complete or more direct result replaces it."""
    OFF_TARGET = "off_target"
    """It does not measure what the hypothesis claims."""


class ModelCallStatus(StrEnum):
    """How a recorded model call ended.

    ``answered`` and ``failed`` calls were sent and ended; a ``retried`` one was sent,
    failed (a timeout, a dropped connection, a retryable HTTP status) and was sent
    again: the same request's next row is the next send (a replay skips it, the budget
    counts it); a ``cancelled`` one was sent and the run was stopped (time budget,
    Ctrl-C) before it was recorded in its turn, with whatever usage came back; a
    ``refused`` one was never sent: the budget was spent (kept so a replay stops at the
    same point).
    """

    ANSWERED = "answered"
    FAILED = "failed"
    RETRIED = "retried"
    CANCELLED = "cancelled"
    REFUSED = "refused"

    @property
    def was_sent(self) -> bool:
        """True for a call that reached the provider (and counts as a call)."""
        return self is not ModelCallStatus.REFUSED


class InvestigationState(StrEnum):
    """Life cycle of one investigation on a board."""

    RUNNING = "running"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class _Record:
    """Shared helpers: every record converts to a JSON-ready dict."""

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON-ready values (enums as strings, tuples as lists)."""
        return _plain(asdict(self))  # type: ignore[call-overload]


def _plain(value: Any) -> Any:
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class Investigation(_Record):
    """One question asked of the data, with the settings it ran with."""

    id: str
    question: str
    state: InvestigationState
    settings: dict[str, Any]
    created_at: str
    updated_at: str
    report: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Hypothesis(_Record):
    """A candidate answer. ``parent_id`` is set for refinements (H2 → H3, H4);
    ``motivated_by`` lists the exploration evidence that suggested it (context, not a
    test of it: tests are links)."""

    id: str
    statement: str
    status: HypothesisStatus
    confidence: float | None
    rationale: str
    parent_id: str | None
    author_role: str
    author: str
    round: int
    investigation_id: str | None
    created_at: str
    updated_at: str
    status_reason: str | None = None
    motivated_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class ColumnSpec(_Record):
    """One column of a stored query result: its name and pandas dtype.

    ``na`` is the missing-value marker used in object columns (``"NA"`` for
    ``pd.NA``, ``"None"``) so they read back identically; ``lossy`` is True when the
    column held Python objects Arrow cannot store and was kept as text.
    """

    name: str
    dtype: str
    na: str | None = None
    lossy: bool = False


@dataclass(frozen=True)
class Evidence(_Record):
    """The result of one SQL query, recorded by the tool that ran it.

    ``row_count`` is the true number of rows of the query; ``stored_rows`` how many
    are on the board (fewer when ``truncated``). The rows themselves are read with
    :meth:`Board.evidence_frame`.
    """

    id: str
    sql: str
    description: str
    columns: tuple[ColumnSpec, ...]
    row_count: int
    stored_rows: int
    truncated: bool
    result_hash: str
    author_role: str
    author: str
    duration_s: float | None
    round: int
    investigation_id: str | None
    created_at: str
    updated_at: str
    redundant: bool = False
    redundant_reason: str | None = None


@dataclass(frozen=True)
class Link(_Record):
    """How evidence ``evidence_id`` bears on hypothesis ``hypothesis_id`` (its stance)."""

    id: int
    evidence_id: str
    hypothesis_id: str
    stance: Stance
    rationale: str
    author: str
    created_at: str


@dataclass(frozen=True)
class DimensionDismissal(_Record):
    """A candidate dimension the team chose not to examine, and why.

    The orchestrator may end an investigation while a candidate dimension of the data is
    untouched by every evidence only by dismissing it; the report lists the dismissals
    under "Not examined".
    """

    id: int
    investigation_id: str | None
    dimension: str
    reason: str
    author: str
    created_at: str


class ContributionRole(StrEnum):
    """How much a factor accounts for the outcome, as a verdict sizes it."""

    MAJOR = "major"
    """A main cause: it explains a large share (half or more of a change)."""
    MINOR = "minor"
    """Real but small: its effect's interval excludes zero, its share is small."""
    NONE = "none"
    """Measured and found without effect: its effect's interval holds zero (or, for an
    exact figure, its share of the change is negligible: :data:`NEGLIGIBLE_SHARE`)."""


class FactorClaim(StrEnum):
    """What a hypothesis says about the factor a verdict sizes: the claim the size is
    judged against (:func:`~d2_notebook.board.contributions.check_contribution`)."""

    MATTERS = "it matters"
    """The factor has an effect: a major or minor contributor supports it, none contradicts."""
    ABSENT = "it does not matter"
    """The factor has no effect: none supports it, a major or minor contributor contradicts."""
    MAIN = "it is the main cause"
    """The factor is the main cause: a major contributor supports it; a minor one or none
    contradicts it (a minor one keeps its size on the contradicted verdict)."""
    ONLY = "it is the only cause"
    """The factor alone accounts for the outcome, nothing else does ("a single device
    drives it, rather than a broad rise"): a major contributor supports it when the
    evidence shows no other real factor and contradicts it when it does, its size kept;
    a minor one or none contradicts it (a minor one keeps its size)."""


MINOR_SHARE_LIMIT = 0.5
"""A minor contributor explains less than this share of a change; a factor that explains
this much or more is major."""

NEGLIGIBLE_SHARE = 0.01
"""An exact figure (no sampling in it: a what-if over every row, its interval equal to it)
that explains less than this share of a change is no effect: exact arithmetic makes any
non-zero figure "exclude zero", down to rounding in the data, so its share decides."""


@dataclass(frozen=True)
class Contribution(_Record):
    """The size a verdict gives a factor: an effect with its 95% interval read from one
    cited evidence's rows and, for a question about a change, the share of it explained.

    Attributes:
        role: Major, minor or no contributor.
        evidence_id: The cited evidence whose rows hold ``effect`` and its interval.
        measure: What the effect is, in words (e.g. "rate change of the segment").
        effect: The effect's estimate.
        ci_low: Its 95% interval's lower end.
        ci_high: Its upper end.
        share: The share of the change it explains, as a fraction (0.08 for 8%), or None.
        share_low: The share's 95% interval's lower end, or None.
        share_high: Its upper end, or None.
        claim: What the hypothesis says about the factor, the claim the size was judged
            against (the judge's word, else the statement's wording as the board read it);
            None on a size recorded before the board kept it, or not yet judged.
        opposite: The effect is real but goes the other way to the one the hypothesis
            claims ("it ventilates more", and it ventilates less): the verdict is
            contradicted, the factor's size kept.
    """

    role: ContributionRole
    evidence_id: str
    measure: str
    effect: float
    ci_low: float
    ci_high: float
    share: float | None = None
    share_low: float | None = None
    share_high: float | None = None
    claim: FactorClaim | None = None
    opposite: bool = False

    def describe(self) -> str:
        """``minor contributor (explains ~8% of the change, 95% CI 5% to 11%; rate change:
        0.03, 95% CI 0.021 to 0.039, E5)``; a negative share reads ``works against the
        change (~-20% of it, ...)``; an exact figure reads ``0.143, given as exact (its
        interval equal to it)`` instead of a zero-width 95% interval."""
        # a colon ends the judge's measure: one that held a number of its own ("Medium's
        # is +2.23, i.e. harder targets -0.27") read as if the size were part of it
        if self.is_exact:
            size = (f"{self.measure}: {_figure(self.effect)}, given as exact (its interval "
                    f"equal to it), {self.evidence_id}")
        else:
            size = (f"{self.measure}: {_figure(self.effect)}, 95% CI {_figure(self.ci_low)} "
                    f"to {_figure(self.ci_high)}, {self.evidence_id}")
        if self.share is None:
            return f"{self.role_label} ({size})"
        interval = (f", 95% CI {self.share_low:.0%} to {self.share_high:.0%}"
                    if self.share_low is not None and self.share_high is not None
                    and not self.share_low == self.share == self.share_high else "")
        if self.works_against_change:
            return (f"{self.role_label} (works against the change: ~{self.share:.0%} of it"
                    f"{interval}; {size})")
        return f"{self.role_label} (explains ~{self.share:.0%} of the change{interval}; {size})"

    @property
    def is_exact(self) -> bool:
        """Whether the effect is an exact figure (its interval is the figure itself, as a
        what-if over every row gives): it is told as exact, not as a zero-width 95% CI
        that reads as certainty the analysis does not claim."""
        return self.ci_low == self.effect == self.ci_high

    @property
    def works_against_change(self) -> bool:
        """Whether the share is negative, its interval too when one is given: the factor
        moved the metric the other way, so it offsets part of the change instead of
        explaining it (a share whose interval reaches zero is not told as offsetting)."""
        return (self.share is not None and self.share < 0
                and (self.share_high is None or self.share_high < 0))

    @property
    def role_label(self) -> str:
        """``major contributor``, ``minor contributor`` or ``no contributor``."""
        return {ContributionRole.MAJOR: "major contributor",
                ContributionRole.MINOR: "minor contributor",
                ContributionRole.NONE: "no contributor"}[self.role]

    @property
    def is_real(self) -> bool:
        """Whether the size names a real factor (a major or minor contributor), whatever
        the verdict made of the hypothesis's claim about it."""
        return self.role is not ContributionRole.NONE


def _figure(value: float) -> str:
    """Three significant digits, no exponent for usual sizes."""
    if value == 0:
        return "0"
    if 1e-3 <= abs(value) < 1e6:
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return f"{value:.3g}"


@dataclass(frozen=True)
class Discount(_Record):
    """One evidence a verdict set aside, with the typed reason and the judge's words."""

    evidence_id: str
    reason: DiscountReason
    explanation: str


@dataclass(frozen=True)
class Verdict(_Record):
    """A judge's decision on one hypothesis, citing the evidence that decided it, and for
    a factor its size (:class:`Contribution`, None when the verdict gives none).

    ``discounted`` lists the evidence the judge set aside, each with its reason (a
    missing record, an unreliable source ...): weighed and not counted.
    """

    id: int
    hypothesis_id: str
    status: HypothesisStatus
    confidence: float
    rationale: str
    evidence_ids: tuple[str, ...]
    author: str
    round: int
    investigation_id: str | None
    created_at: str
    discounted: tuple[Discount, ...] = ()
    contribution: Contribution | None = None

    @property
    def status_label(self) -> str:
        """The status, or ``contradicted as the main cause`` (``as the only cause``) when
        the hypothesis claimed the factor is the main (only) cause and the verdict found
        it a real factor that is not: a minor contributor, or for the only cause one
        among others; ``contradicted, the factor matters`` when it claimed the factor
        does not matter and the verdict sized it a real contributor (a reader of a bare
        "contradicted: major contributor" beside a no-effect claim could not tell which
        of the two the size belongs to); ``supported, no effect as claimed`` when the
        verdict supports a claim that the factor does not matter with a size of none (a
        bare "supported: no contributor" read as a contradiction to a real reporter, and
        "the factor adds nothing" as the effect the hypothesis is about being nil)."""
        if (self.status is HypothesisStatus.SUPPORTED and self.contribution is not None
                and self.contribution.role is ContributionRole.NONE
                and self.contribution.claim is FactorClaim.ABSENT):
            return "supported, no effect as claimed"
        if (self.status is HypothesisStatus.CONTRADICTED and self.contribution is not None
                and self.contribution.is_real):
            if self.contribution.opposite:
                return "contradicted, the effect goes the other way"
            if self.contribution.claim is FactorClaim.MAIN:
                return "contradicted as the main cause"
            if self.contribution.claim is FactorClaim.ONLY:
                return "contradicted as the only cause"
            if self.contribution.claim is FactorClaim.ABSENT:
                return "contradicted, the factor matters"
        return self.status.value

    @property
    def headline(self) -> str:
        """``supported as a minor contributor (explains ~8% of the change, ...)``,
        ``contradicted: no contributor (...)``, ``contradicted as the main cause: minor
        contributor (...)`` (a real factor, not the main cause the hypothesis claims), or
        the status alone when the verdict gives no size."""
        if self.contribution is None:
            return self.status.value
        if self.status_label != self.status.value:
            return f"{self.status_label}: {self.contribution.describe()}"
        if (self.contribution.role is ContributionRole.NONE
                or self.status is not HypothesisStatus.SUPPORTED):
            return f"{self.status.value}: {self.contribution.describe()}"
        return f"{self.status.value} as a {self.contribution.describe()}"


@dataclass(frozen=True)
class ModelCall(_Record):
    """One request to a language model and what came back (or the error).

    ``request`` and ``response`` are the provider-neutral JSON forms of the model
    layer; they are the replay source, the audit trail and the cost meter.
    """

    id: int
    investigation_id: str | None
    role: str
    agent: str
    model: str
    request: dict[str, Any]
    response: dict[str, Any] | None
    error: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    created_at: str = ""
    status: ModelCallStatus = ModelCallStatus.ANSWERED


@dataclass(frozen=True)
class Event(_Record):
    """One entry of the append-only history. ``seq`` is gap-free and increasing."""

    seq: int
    time: str
    actor: str
    kind: str
    payload: dict[str, Any] = field(default_factory=dict)
    investigation_id: str | None = None


# --- re-checks (d2_notebook.board.rechecks) ------------------------------------


class RecheckOutcome(StrEnum):
    """What re-running one evidence found."""

    SAME = "same"
    CHANGED = "changed"
    FAILS = "fails"
    UNCHECKED = "unchecked"
    """It could not be re-run (e.g. an analysis evidence recorded without its call)."""


class VerdictCheck(StrEnum):
    """What a re-check means for a verdict."""

    CONFIRMED = "confirmed"
    STALE = "stale"


@dataclass(frozen=True)
class ChartRequest:
    """The columns a collector asked an evidence's chart to show (None: the chart rules
    choose). Names are columns of the evidence's stored result."""

    x: str | None = None
    y: str | None = None
    color: str | None = None


@dataclass(frozen=True)
class ToolCall:
    """The analysis-tool call that produced an evidence: its tool and arguments."""

    tool: str
    args: dict[str, Any]


@dataclass(frozen=True)
class RecheckRun:
    """One re-check of an investigation's evidence."""

    id: str
    investigation_id: str
    source: str
    created_at: str
    finished_at: str | None


@dataclass(frozen=True)
class Recheck:
    """One evidence re-run in one re-check run.

    Attributes:
        detail: For *changed*, the diff in words ("rows 4 -> 5; death_rate[icu] 0.41 ->
            0.12"); for *fails*, the error; for *unchecked*, why; empty for *same*.
        row_count: The new result's true row count (None unless it ran).
    """

    run_id: str
    evidence_id: str
    outcome: RecheckOutcome
    detail: str
    row_count: int | None
    created_at: str


@dataclass(frozen=True)
class RecheckedVerdict:
    """What a re-check run decided for one hypothesis's verdict, and on what evidence."""

    run_id: str
    hypothesis_id: str
    check: VerdictCheck
    evidence_ids: tuple[str, ...]
    created_at: str


# --- re-judges and report versions (d2_notebook.board.rejudges) -----------------


class RejudgeOutcome(StrEnum):
    """What the judge did with a stale verdict when it saw the old and the new evidence."""

    CONFIRMED = "confirmed"
    """The verdict stands on the new data (recorded again, citing the re-run evidence)."""
    REVISED = "revised"
    """A new verdict: another status, confidence or rationale (the old one is kept)."""
    REFINED = "refined"
    """A new verdict and refined child hypotheses, collected and judged like any others."""
    UNDECIDED = "undecided"
    """The judge's turn ended without a decision; the verdict stays stale."""


@dataclass(frozen=True)
class Rejudge:
    """One stale hypothesis re-judged after re-check run ``run_id``.

    Attributes:
        previous_verdict_id: The verdict that went stale.
        verdict_id: The verdict the judge gave (None when undecided).
        rerun_evidence_ids: The evidence recorded from the re-run queries (new rows).
        children: Refined child hypotheses, if any.
    """

    run_id: str
    hypothesis_id: str
    outcome: RejudgeOutcome
    previous_verdict_id: int | None
    verdict_id: int | None
    rerun_evidence_ids: tuple[str, ...]
    children: tuple[str, ...]
    created_at: str


@dataclass(frozen=True)
class ReportVersion:
    """One version of an investigation's report. Version 1 is the report the
    investigation finished with; each re-judge adds the next (``recheck_run_id`` names
    the re-check it answers), and so does each later finish of a reopened investigation
    (resumed after a budget stop or for additions; ``recheck_run_id`` None)."""

    investigation_id: str
    version: int
    report: str
    recheck_run_id: str | None
    created_at: str
