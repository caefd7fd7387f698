"""One dimension's strata in ``compare_within``: heterogeneity on the effect's own scale,
and direct standardisation over the strata with overlap.

:func:`check_heterogeneity` runs Cochran's Q on the difference scale and, where every
stratum's metric is positive, the ratio scale (the log risk ratio for a 0/1 metric), and
keeps the scale on which the effect is more nearly constant. :func:`standardise` weights
the stratum effects by the strata's share of the rows, over the strata with rows in both
arms, and gives the change from the crude effect over the same strata with its standard
error (the weights held fixed: the change is linear in the stratum means), and beside it
the effect standardised to each arm's own mix of strata.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import Enum

from scipy import stats

from d2_notebook.data.analysis.stats import (
    ABSOLUTE_FLOOR,
    Z95,
    Comparison,
    Moments,
    between_strata_sd,
    chi_square_independence,
    cochran_q,
    compare,
    is_material,
)

__all__ = ["EffectScale", "Family", "check_heterogeneity", "standardise"]


class EffectScale(Enum):
    """The scale heterogeneity is judged on."""

    DIFFERENCE = "difference"
    RATIO = "ratio"


@dataclass(frozen=True)
class ScaleTest:
    """Cochran's Q of one family's stratum effects on one scale.

    Attributes:
        scale: difference (exposed - reference) or ratio (exposed / reference, in logs).
        q_statistic, p: the test.
        material: the effects' spread is large enough to matter.
        spread: their spread beyond sampling error (the DerSimonian-Laird tau) as a
            share of the metric's scale; on the ratio scale, exp(tau) - 1 of the log ratios.
    """

    scale: EffectScale
    q_statistic: float
    p: float
    material: bool
    spread: float


@dataclass
class Family:
    """One dimension's strata (label, exposed, reference) and what the tests found."""

    name: str
    strata: list[tuple[str, Moments, Moments]]
    membership: bool = False  # a 1:N "has <value>" yes/no split
    heterogeneity: ScaleTest | None = None  # on the scale the effect is nearer constant
    other_scale: ScaleTest | None = None  # the test on the scale not chosen, if defined
    tested: int = 0  # strata that enter the heterogeneity test
    p_exposure: float = 1.0
    overlap: list[str] = field(default_factory=list)
    one_arm: list[tuple[str, str]] = field(default_factory=list)  # (stratum, which arm)
    overlap_share: float = 0.0
    crude: Comparison | None = None  # over the strata with overlap
    standardised: Comparison | None = None
    change: Comparison | None = None  # crude - standardised, with its p-value
    change_parts: list[tuple[str, float]] = field(default_factory=list)
    """Each overlapping stratum's term of ``change`` (they sum to it), in stratum order."""
    by_arm_mix: tuple[float, float] | None = None
    """The effect standardised to the exposed rows' mix of strata and to the reference
    rows' mix (``standardised`` uses all rows' mix): apart when the effect differs by
    stratum, so the share a dimension "explains" depends on whose mix is held fixed."""

    @property
    def p_het(self) -> float:
        """The heterogeneity test's p-value (1 when it did not run)."""
        return self.heterogeneity.p if self.heterogeneity else 1.0

    @property
    def effect_scale(self) -> EffectScale:
        """The scale heterogeneity was judged on (difference when it was not tested)."""
        return self.heterogeneity.scale if self.heterogeneity else EffectScale.DIFFERENCE

    @property
    def het_material(self) -> bool:
        """Whether the stratum effects' spread is large enough to matter."""
        return self.heterogeneity is not None and self.heterogeneity.material

    @property
    def het_spread(self) -> float:
        """The effects' spread beyond chance as a share of the scale (0 untested)."""
        return self.heterogeneity.spread if self.heterogeneity else 0.0

    @property
    def confounding_tested(self) -> bool:
        """Two strata or more have rows in both arms: standardising can move the effect."""
        return len(self.overlap) >= 2 and self.change is not None

    @property
    def share_removed(self) -> float:
        """The share of the crude effect (over the same strata) standardising removes;
        NaN when the crude effect is within chance (its 95% interval holds 0): a share
        of an effect indistinguishable from none means nothing ("1151% removed")."""
        if self.change is None or self.crude is None or spans_zero(self.crude):
            return math.nan
        return self.change.difference / self.crude.difference

    @property
    def share_removed_interval(self) -> tuple[float, float]:
        """The 95% interval of :attr:`share_removed` (the change's interval over the crude
        effect), low end first; NaNs when the share is NaN."""
        if self.change is None or self.crude is None or math.isnan(self.share_removed):
            return math.nan, math.nan
        low, high = sorted((self.change.low / self.crude.difference,
                            self.change.high / self.crude.difference))
        return low, high

    @property
    def neither_beyond_chance(self) -> bool:
        """Both the crude and the standardised effect are within chance: holding the
        dimension fixed changes no conclusion, however far the estimate moves."""
        return (self.crude is not None and self.standardised is not None
                and spans_zero(self.crude) and spans_zero(self.standardised))


def spans_zero(comparison: Comparison) -> bool:
    """Whether the 95% interval of ``comparison`` holds 0 (or it has no interval)."""
    return not (comparison.low > 0 or comparison.high < 0)


def check_heterogeneity(family: Family, arm_floor: int, pooled: float | None, binary: bool,
                       scale: float) -> None:
    """Cochran's Q over the strata with ``arm_floor`` rows in each arm, on the difference
    and (where defined) the ratio scale; the scale on which the effect is more nearly
    constant is kept, with its p-value and whether the effects' spread is material."""
    tested = [(m1, m0) for _, m1, m0 in family.strata
              if m1.n >= arm_floor and m0.n >= arm_floor]
    family.tested = len(tested)
    if len(tested) < 2:
        return
    effects = [compare(m1, m0, pooled_var=pooled) for m1, m0 in tested]
    candidates = [(EffectScale.DIFFERENCE, [(e.difference, e.se) for e in effects])]
    if binary:
        candidates.append((EffectScale.RATIO, [_log_risk_ratio(m1, m0) for m1, m0 in tested]))
    elif all(m1.mean > 0 and m0.mean > 0 for m1, m0 in tested):
        candidates.append((EffectScale.RATIO, [_log_ratio(m1, m0, pooled) for m1, m0 in tested]))
    tests = [_scale_test(effect_scale, pairs, scale) for effect_scale, pairs in candidates]
    family.heterogeneity = min(tests, key=lambda t: t.q_statistic)  # nearer constant
    family.other_scale = next((t for t in tests if t is not family.heterogeneity), None)


def _scale_test(effect_scale: EffectScale, pairs: list[tuple[float, float]],
                scale: float) -> ScaleTest:
    values, ses = [e for e, _ in pairs], [se for _, se in pairs]
    _, q_statistic, p = cochran_q(values, ses)
    spread = max(values) - min(values)
    tau = between_strata_sd(values, ses)
    if effect_scale is EffectScale.RATIO:
        return ScaleTest(effect_scale, q_statistic, p, is_material(math.expm1(spread), 1.0),
                         math.expm1(tau))
    return ScaleTest(effect_scale, q_statistic, p, is_material(spread, scale),
                     tau / scale if scale > 0 else 0.0)


def standardise(family: Family, pooled: float | None, population: float) -> None:
    """Standardise over the strata with rows in both arms; the change from the crude
    effect over the same strata, with its standard error (the weights held fixed)."""
    both = [(s, m1, m0) for s, m1, m0 in family.strata if m1.n > 0 and m0.n > 0]
    family.overlap = [s for s, _, _ in both]
    family.one_arm = [(s, "exposed only" if m1.n > 0 else "reference only")
                      for s, m1, m0 in family.strata if (m1.n > 0) != (m0.n > 0)]
    if not both:
        return
    n1 = sum(m1.n for _, m1, _ in both)
    n0 = sum(m0.n for _, _, m0 in both)
    rows = n1 + n0
    family.overlap_share = rows / population if population else math.nan
    family.p_exposure = chi_square_independence([[m1.n, m0.n] for _, m1, m0 in both])
    exposed = sum((m1 for _, m1, _ in both), Moments(0, 0, 0))
    reference = sum((m0 for _, _, m0 in both), Moments(0, 0, 0))
    family.crude = compare(exposed, reference, pooled_var=pooled)
    difference, change, var_std, var_change = 0.0, 0.0, 0.0, 0.0
    family.change_parts = []
    for stratum, m1, m0 in both:
        weight = (m1.n + m0.n) / rows
        v1 = (m1.var if m1.var > 0 else pooled or 0.0) / m1.n
        v0 = (m0.var if m0.var > 0 else pooled or 0.0) / m0.n
        difference += weight * (m1.mean - m0.mean)
        var_std += weight**2 * (v1 + v0)
        g1, g0 = m1.n / n1 - weight, m0.n / n0 - weight
        family.change_parts.append((stratum, g1 * m1.mean - g0 * m0.mean))
        change += family.change_parts[-1][1]
        var_change += g1**2 * v1 + g0**2 * v0
    family.by_arm_mix = (sum(m1.n / n1 * (m1.mean - m0.mean) for _, m1, m0 in both),
                         sum(m0.n / n0 * (m1.mean - m0.mean) for _, m1, m0 in both))
    se = math.sqrt(var_std)
    family.standardised = Comparison(difference, se, difference - Z95 * se,
                                     difference + Z95 * se, math.nan)
    se_change = math.sqrt(var_change)
    if se_change > 0:
        p = float(2 * stats.norm.sf(abs(change) / se_change))
    else:
        p = 1.0 if abs(change) <= ABSOLUTE_FLOOR else 0.0
    family.change = Comparison(change, se_change, change - Z95 * se_change,
                               change + Z95 * se_change, p)


def _log_risk_ratio(exposed: Moments, reference: Moments) -> tuple[float, float]:
    """log(p1/p0) and its standard error, with 0.5 added to each cell (no zero cells)."""
    a, b = exposed.s1 + 0.5, reference.s1 + 0.5
    n1, n0 = exposed.n + 1.0, reference.n + 1.0
    return (math.log((a / n1) / (b / n0)), math.sqrt(1 / a - 1 / n1 + 1 / b - 1 / n0))


def _log_ratio(exposed: Moments, reference: Moments,
               pooled: float | None) -> tuple[float, float]:
    """log(m1/m0) of two positive means and its delta-method standard error."""
    v1 = exposed.var if exposed.var > 0 else pooled or 0.0
    v0 = reference.var if reference.var > 0 else pooled or 0.0
    se = math.sqrt(v1 / exposed.n / exposed.mean**2 + v0 / reference.n / reference.mean**2)
    return math.log(exposed.mean / reference.mean), se
