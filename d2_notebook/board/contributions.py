"""The rules a verdict's size must follow before the board stores it.

A verdict on a factor may state its size (:class:`~d2_notebook.board.records.Contribution`):
the role it plays (major, minor or none), an effect with its 95% interval from one cited
evidence, and for a change the share of it explained; the size is judged against what the
hypothesis claims about the factor (:class:`~d2_notebook.board.records.FactorClaim`). The
board checks that the size fits the verdict; that the numbers are in the evidence's rows
is the detective's check (the board stores rows, it does not read them for a caller).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from d2_notebook.board.records import (
    MINOR_SHARE_LIMIT,
    NEGLIGIBLE_SHARE,
    Contribution,
    ContributionRole,
    FactorClaim,
    HypothesisStatus,
)
from d2_notebook.errors import InvalidRecordError

__all__ = ["check_contribution", "fitting_status", "read_claim", "states_absence"]


_EFFECT_WORDS = (r"explain|matter|affect|drive|differ|account|contribute|change|influence|"
                 r"cause|predict|vary|depend|impact|relate|correlate|shift|move|make|"
                 r"reduce|increase|lower|raise|improve|worsen|lead|help|hurt|play|add|"
                 r"associated|linked|related|correlated|tied|significant|different|"
                 r"higher|lower|larger|smaller|better|worse|rise|fall|drop|decline|grow")
"""Verbs (any ending) and predicates whose negation says a factor does not matter."""
_EFFECT_NOUNS = (r"effect|difference|association|relationship|impact|role|contribution|"
                 r"link|correlation|influence|bearing|gap|dependence|advantage|penalty|"
                 r"rise|increase|decrease|decline|drop|fall|change|shift|growth|trend")
_AUXILIARY = (r"do|does|did|is|are|was|were|has|have|had|can|could|will|would|may|might|"
              r"should|ca|wo")  # ca(n't), wo(n't)
_NEGATED_EFFECT = re.compile(
    rf"\b(?P<aux>{_AUXILIARY})(?:\s+not|n't)\s+(?:\w+\s+){{0,2}}?"
    rf"(?:{_EFFECT_WORDS})(?:s|es|d|ed|ing)?\b"
    rf"|\b(?P<aux2>is|are|was|were)\s+(?:\w+\s+)?(?:unrelated\s+to|independent\s+of|"
    r"unaffected\s+by)\b", re.IGNORECASE)
_NO_EFFECT = re.compile(rf"\bno\s+(?:\w+\s+){{0,2}}?(?:{_EFFECT_NOUNS})s?\b", re.IGNORECASE)
_OTHER_ABSENCE = re.compile(
    r"\bnot\s+(?:an?\s+|the\s+)?(?:\w+\s+)?(?:driver|cause|factor|contributor|"
    r"explanation|predictor)s?\b"
    r"|(?:\bcannot|\bnot|n't)\s+(?:be\s+)?(?:explained|driven|caused)\s+by\b|\bnot\s+due\s+to\b"
    r"|\bcannot\s+explain|\bfails?\s+to\s+explain|\bnothing\s+to\s+do\s+with\b"
    r"|\b(?:stay|stays|stayed|remain|remains|remained)\s+(?:about\s+|roughly\s+|at\s+)?"
    r"(?:the\s+same|unchanged|flat|stable|constant)\b"
    r"|\b(?:is|are|was|were)\s+unchanged\b|\bh(?:old|olds|eld)\s+steady\b"
    rf"|\bneither\b.*\bnor\b.*\b(?:{_EFFECT_WORDS})", re.IGNORECASE)
_RELATIVE = re.compile(r"\b(?:who|that|which|where|whose(?:\s+\w+){0,3})\s*$",
                       re.IGNORECASE)
"""A negation right after one of these describes a group ("stores that did not raise
prices", "products whose price did not fall"), it does not deny an effect."""
_WITH = re.compile(r"\bwith\s*$", re.IGNORECASE)
""""with no link to a promotion" describes a group too."""

_SIDE_CLAUSE = re.compile(r";|\s(?:while|whereas|although|though)\s|,\s*(?:but|and)\s",
                          re.IGNORECASE)
"""Where the main claim ends: "X caused the drop; prices stayed the same" says nothing
about X's absence."""

_ADDITIVE = re.compile(r"\bnot\s+(?:only|just|merely|simply|solely|entirely)\b", re.IGNORECASE)
""""Not only X but Y" adds an effect; it never states an absence."""


def states_absence(statement: str) -> bool:
    """Whether a hypothesis says a factor has no effect, read from its wording: a negated
    effect verb or predicate ("does not explain", "can't affect", "is not associated
    with", "is not significantly higher", "did not rise"), "no effect / no difference /
    no rise", "not a driver", "is unrelated to", "stayed the same", "neither X nor Y
    explains". A negation that describes a group
    ("customers who have not changed plans", "products with no link to a promotion",
    "customers without a discount") or adds to an effect ("not only X") states none, and
    only the main claim counts: what follows "; while although, but" is a side remark
    ("the discount caused the drop; prices stayed the same"). A judge can state the claim
    where the wording hides it (the size's ``claim``, see :func:`read_claim`)."""
    text = _SIDE_CLAUSE.split(_ADDITIVE.sub(" ", statement), maxsplit=1)[0]
    negations = [*_NEGATED_EFFECT.finditer(text), *_OTHER_ABSENCE.finditer(text)]
    return (any(not _RELATIVE.search(text[:found.start()]) for found in negations)
            or any(not _WITH.search(text[:found.start()]) for found in _NO_EFFECT.finditer(text)))


def read_claim(statement: str) -> FactorClaim:
    """The claim a hypothesis's wording makes about a factor: that it does not matter
    when :func:`states_absence` reads an absence, else that it matters (a claim that it
    is the main cause is the judge's to state: many wordings of an effect say "drives")."""
    return FactorClaim.ABSENT if states_absence(statement) else FactorClaim.MATTERS


_SUPPORTING_ROLES = {
    FactorClaim.MATTERS: (ContributionRole.MAJOR, ContributionRole.MINOR),
    FactorClaim.ABSENT: (ContributionRole.NONE,),
    FactorClaim.MAIN: (ContributionRole.MAJOR,),
    FactorClaim.ONLY: (ContributionRole.MAJOR,),
}
"""Under each claim, the roles that support the hypothesis; the others contradict it."""
_EITHER_WAY = {(FactorClaim.ONLY, ContributionRole.MAJOR)}
"""Claim and role pairs the size does not decide: whether a major factor is the only
cause depends on whether the evidence shows other real factors, the judge's call."""
_CLAIM_NOTE = {
    FactorClaim.MATTERS: "",
    FactorClaim.ABSENT: " (the hypothesis says the factor does not matter)",
    FactorClaim.MAIN: " (the hypothesis says the factor is the main cause)",
    FactorClaim.ONLY: " (the hypothesis says the factor is the only cause)",
}


def _check_opposite(role: ContributionRole, claim: FactorClaim,
                    status: HypothesisStatus) -> None:
    """An effect the other way to the claimed one: real (major or minor), against a claim
    that has a direction (not "it does not matter"), and it contradicts the hypothesis."""
    if role is ContributionRole.NONE:
        raise InvalidRecordError("opposite is for a real effect the other way (role major or "
                                 "minor); no effect is role none without opposite")
    if claim is FactorClaim.ABSENT:
        raise InvalidRecordError("a hypothesis that the factor does not matter claims no "
                                 "direction: a real effect contradicts it without opposite")
    if status is not HypothesisStatus.CONTRADICTED:
        raise InvalidRecordError("an effect the other way to the claimed one contradicts the "
                                 "hypothesis: give status contradicted, its size kept")


def fitting_status(role: ContributionRole, claim: FactorClaim) -> HypothesisStatus:
    """The verdict a size makes of a hypothesis with this claim about the factor: under
    "it matters" a major or minor contributor supports it and none contradicts it; under
    "it does not matter" the polarity turns; under "it is the main cause" only a major
    contributor supports it, a minor one or none contradicts it; under "it is the only
    cause" likewise, though a major contributor may also contradict it (other real
    factors: see :data:`_EITHER_WAY`, which :func:`check_contribution` allows)."""
    return (HypothesisStatus.SUPPORTED if role in _SUPPORTING_ROLES[claim]
            else HypothesisStatus.CONTRADICTED)


def check_contribution(contribution: Contribution, status: HypothesisStatus,
                       cited: Sequence[str], *, claim: FactorClaim = FactorClaim.MATTERS,
                       row_scale: float | None = None) -> None:
    """Refuse a size that does not fit the verdict.

    Rules: the status is the one :func:`fitting_status` gives the size's role under
    ``claim`` (for a hypothesis that says the factor matters: a major or minor
    contributor is supported, no contributor contradicted; for one that says it does not
    matter the polarity turns; for one that says it is the main cause only a major
    contributor supports it, and a minor one contradicts it with its size kept; for one
    that says it is the only cause a minor one or none contradicts it, and a major one
    supports or contradicts it as the judge finds other real factors or not, though not
    supports it with a share of the change whose interval stays below
    :data:`SOLE_CAUSE_SHARE`). No
    contributor means the effect's interval holds zero — an effect whose interval
    excludes zero is real, so a small one is a minor contributor, not no contributor,
    unless it is a negligible exact figure (see :func:`_negligible_exact`: its interval
    equal to it, and its share of the change, when given, under
    :data:`~d2_notebook.board.records.NEGLIGIBLE_SHARE`; given without a share, under
    that fraction of ``row_scale``, the scale of the levels it compares that the caller
    read from the evidence, such as
    :func:`~d2_notebook.detective.contribution_check.row_scale`); an inconclusive
    verdict gives no size. The effect lies in its interval; a share, when given, lies
    in its interval, and a minor contributor's is below
    :data:`~d2_notebook.board.records.MINOR_SHARE_LIMIT`. The evidence the size is read
    from is one the verdict cites.

    Raises:
        InvalidRecordError: The first rule broken, with the fix.
    """
    role = contribution.role
    if not isinstance(role, ContributionRole):
        raise InvalidRecordError(f"contribution role must be major, minor or none, not {role!r}")
    if not isinstance(claim, FactorClaim):
        raise InvalidRecordError(f"the hypothesis's claim must be one of "
                                 f"{[c.value for c in FactorClaim]}, not {claim!r}")
    if status is HypothesisStatus.INCONCLUSIVE:
        raise InvalidRecordError("an inconclusive verdict gives no size: omit the contribution, "
                                 "or decide the hypothesis")
    fitting = fitting_status(role, claim)
    if (claim, role) in _EITHER_WAY and status is HypothesisStatus.CONTRADICTED:
        fitting = status  # a major factor among others: not the only cause, size kept
    if contribution.opposite:
        _check_opposite(role, claim, status)
        fitting = status
    note = _CLAIM_NOTE[claim]
    misread = (" If the hypothesis's claim about this factor was read wrongly, state in the "
               "size what it says (that the factor matters, that it does not, that it is "
               "the main cause, or that it is the only cause).")
    if status is not fitting:
        if role is ContributionRole.NONE:
            fix = ("give role major if the factor is the main cause." if claim is FactorClaim.MAIN
                   else "give role major if the factor is the only cause."
                   if claim is FactorClaim.ONLY
                   else "give role major or minor if the factor is real.")
        elif claim is FactorClaim.ONLY:
            fix = ("a minor contributor is not the only cause: it contradicts the claim, its "
                   "size kept on the verdict.")
        elif claim is FactorClaim.MAIN:
            fix = ("supported goes with role major; a real but smaller factor is a minor "
                   "contributor that contradicts the claim, its size kept on the verdict."
                   if role is ContributionRole.MINOR else
                   "contradicted goes with role minor (real, not the main cause) or none.")
        else:
            fix = (f"{status.value} goes with role none (the data shows no effect); a real "
                   "effect the other way to the one claimed is given with its role and "
                   "opposite: true, and contradicts the hypothesis.")
            if claim is FactorClaim.MATTERS:
                fix += (" If the hypothesis says the factor is the main cause and it is not, "
                        "say so in the size (that it is the main cause): a minor contributor "
                        "then contradicts it, its size kept.")
        subject = ("a factor with no contribution" if role is ContributionRole.NONE
                   else f"a {role.value} contributor")
        raise InvalidRecordError(f"{subject} makes this hypothesis {fitting.value}, not "
                                 f"{status.value}{note}: {fix}{misread}")
    numbers = {"effect": contribution.effect, "ci_low": contribution.ci_low,
               "ci_high": contribution.ci_high, "share": contribution.share,
               "share_low": contribution.share_low, "share_high": contribution.share_high}
    for name, value in numbers.items():
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)
                                  or not math.isfinite(value)):
            raise InvalidRecordError(f"contribution {name} must be a finite number, got {value!r}")
    if not contribution.ci_low <= contribution.effect <= contribution.ci_high:
        raise InvalidRecordError(
            f"the effect {contribution.effect:g} is not inside its interval "
            f"[{contribution.ci_low:g}, {contribution.ci_high:g}]: give ci_low <= effect <= "
            "ci_high as the evidence's row states them")
    if (role is ContributionRole.NONE and (contribution.ci_low > 0 or contribution.ci_high < 0)
            and not _negligible_exact(contribution, row_scale)):
        if contribution.ci_low != contribution.ci_high:
            exact = ""
        elif contribution.share is not None:
            exact = (f" An exact figure (interval equal to it) given with a share of the change "
                     f"is no effect only when its share of the change, copied from a cited "
                     f"row, is under {NEGLIGIBLE_SHARE:.0%}.")
        else:
            exact = (f" An exact figure (interval equal to it) given without a share is no "
                     f"effect only when it is under {NEGLIGIBLE_SHARE:.0%} of the largest "
                     "figure in its row that is a level it compares (a fractional mean or "
                     "rate, not a count, year or id), in every row of the evidence holding "
                     "it; for a question about a change, give its share of the change, "
                     f"copied from a cited row: under {NEGLIGIBLE_SHARE:.0%} is no effect.")
        minor = fitting_status(ContributionRole.MINOR, claim)
        fix = ("support it as a minor contributor with its size (role minor) instead of "
               "contradicting it" if minor is HypothesisStatus.SUPPORTED else
               f"give it role minor with its size: the verdict stays {minor.value}{note}")
        raise InvalidRecordError(
            f"the effect's interval [{contribution.ci_low:g}, {contribution.ci_high:g}] excludes "
            f"zero, so the factor is real: {fix}.{exact}")
    _check_share(contribution)
    _check_sole_cause(contribution, status, claim)
    if contribution.evidence_id not in cited:
        raise InvalidRecordError(
            f"the size is read from {contribution.evidence_id}, which the verdict does not cite;"
            f" cite it in evidence_ids or read the size from one of: "
            f"{', '.join(cited) or 'no evidence'}")
    if not contribution.measure.strip():
        raise InvalidRecordError("say what the effect measures (contribution measure, e.g. "
                                 "'rate change of the segment')")


def _negligible_exact(contribution: Contribution, row_scale: float | None) -> bool:
    """Whether the size is an exact figure (its interval is the figure itself) too small
    to be an effect: no effect, though not zero.

    With a share of the change given, only the share decides: under
    :data:`NEGLIGIBLE_SHARE` of the change (a figure small against its levels may still
    be most of a small change). Without a share, the figure must be under
    :data:`NEGLIGIBLE_SHARE` of ``row_scale``, the scale of the levels it compares (None:
    no scale known, so the figure is real)."""
    if not contribution.ci_low == contribution.effect == contribution.ci_high:
        return False
    share, size = contribution.share, abs(contribution.effect)
    if share is not None:
        return isinstance(share, int | float) and abs(share) < NEGLIGIBLE_SHARE
    return row_scale is not None and size < NEGLIGIBLE_SHARE * abs(row_scale)


SOLE_CAUSE_SHARE = 0.9
"""Least share of a change whose interval a factor must reach to be supported as its only
cause: a factor that explains at most half of it leaves the rest to others."""


def _check_sole_cause(contribution: Contribution, status: HypothesisStatus,
                      claim: FactorClaim) -> None:
    """Refuse supporting "it is the only cause" with a share of the change whose interval
    stays below :data:`SOLE_CAUSE_SHARE`."""
    share = contribution.share
    if claim is not FactorClaim.ONLY or status is not HypothesisStatus.SUPPORTED or share is None:
        return
    if contribution.share_high is None and share < SOLE_CAUSE_SHARE:
        # a point share alone cannot say whether the rest is beyond chance (a real-model
        # judge was told to contradict where the rest's own interval held 0)
        raise InvalidRecordError(
            f"a factor that explains ~{share:.0%} of the change, given without the share's "
            f"interval, is not shown to be the only cause: give share_low and share_high "
            f"from a cited row if its interval reaches {SOLE_CAUSE_SHARE:.0%}; otherwise "
            "contradict the claim (its size kept on the verdict) when the rest of the change "
            "is real, or give the verdict inconclusive, without a size, when the rest is "
            "within chance")
    if contribution.share_high is not None and contribution.share_high < SOLE_CAUSE_SHARE:
        raise InvalidRecordError(
            f"a factor that explains ~{share:.0%} of the change (at most "
            f"{contribution.share_high:.0%}) leaves the rest to other factors: it is not the "
            "only cause; contradict the claim, its size kept on the verdict")


def _check_share(contribution: Contribution) -> None:
    share, low, high = contribution.share, contribution.share_low, contribution.share_high
    if share is None:
        if low is not None or high is not None:
            raise InvalidRecordError("a share interval needs the share itself (contribution "
                                     "share, e.g. 0.08 for 8%)")
        return
    if (low is None) != (high is None):
        raise InvalidRecordError("give both ends of the share's interval (share_low and "
                                 "share_high) or neither")
    if low is not None and high is not None and not low <= share <= high:
        raise InvalidRecordError(f"the share {share:g} is not inside its interval "
                                 f"[{low:g}, {high:g}]")
    if contribution.role is ContributionRole.MINOR and abs(share) >= MINOR_SHARE_LIMIT:
        raise InvalidRecordError(
            f"a share of {share:.0%} is not minor: a factor that explains "
            f"{MINOR_SHARE_LIMIT:.0%} or more of the change is a major contributor")
