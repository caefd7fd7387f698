"""The statistics behind the analysis tools, on per-group moments (n, Σv, Σv²).

Every tool's one SQL pass returns, per group, the count, sum and sum of squares of the
per-row metric value; means, variances and the tests below follow from those, and a
group's complement ("the rest") is the total minus the group. Tests are two-sided;
families of tests are corrected with Benjamini–Hochberg so that pure noise raises no
flag at the default level (about ``alpha`` chance of any flag per call).

A flag needs practical significance too: :func:`is_material` asks that a difference be
at least :data:`RELATIVE_TOLERANCE` of the metric's scale (the larger of its overall mean's
size and its per-row standard deviation) and above :data:`ABSOLUTE_FLOOR`, so that
floating-point noise and ±1e-05 shifts never qualify however small their p-value.
Minimum support adapts to the population (:func:`adaptive_min_support`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = [
    "ABSOLUTE_FLOOR",
    "MIN_SUPPORT_CAP",
    "MIN_SUPPORT_FLOOR",
    "NEAR_COPY_SHARE",
    "NUMERIC_COPY_CORRELATION",
    "RELATIVE_TOLERANCE",
    "Comparison",
    "Moments",
    "OutcomeValue",
    "adaptive_min_support",
    "benjamini_hochberg",
    "chi_square_independence",
    "cochran_q",
    "compare",
    "determines_exactly",
    "explained_share",
    "is_binary",
    "is_constant",
    "is_material",
    "is_near_copy",
    "is_set_by_outcome",
    "metric_scale",
    "same_moments",
    "wilson_interval",
]

Z95 = 1.959963984540054
RELATIVE_TOLERANCE = 0.01
"""Smallest flagged difference, as a share of the metric's scale (:func:`metric_scale`)."""
ABSOLUTE_FLOOR = 1e-9
"""Differences below this are floating-point noise in any unit: never flagged."""
MIN_SUPPORT_FLOOR = 10
"""Fewest rows any test runs on (a segment, each arm of a stratum): below it the normal
approximation does not hold, and the value is reported as too small to test."""
MIN_SUPPORT_CAP = 30
"""The default minimum support of a large population."""
_MIN_SUPPORT_SHARE = 0.01


@dataclass(frozen=True)
class Moments:
    """Count, sum and sum of squares of a metric's per-row values in one group."""

    n: float
    s1: float
    s2: float

    def __sub__(self, other: Moments) -> Moments:
        return Moments(self.n - other.n, self.s1 - other.s1, self.s2 - other.s2)

    def __add__(self, other: Moments) -> Moments:
        return Moments(self.n + other.n, self.s1 + other.s1, self.s2 + other.s2)

    @property
    def mean(self) -> float:
        """The group's metric (NaN when empty)."""
        return self.s1 / self.n if self.n > 0 else math.nan

    @property
    def var(self) -> float:
        """Sample variance of the per-row values (0 for fewer than two rows)."""
        if self.n < 2:
            return 0.0
        return max(0.0, (self.s2 - self.s1 * self.s1 / self.n) / (self.n - 1))

    @property
    def se(self) -> float:
        """Standard error of the mean."""
        return math.sqrt(self.var / self.n) if self.n > 0 else math.inf


@dataclass(frozen=True)
class Comparison:
    """``a`` minus ``b``: difference of means, its standard error, 95% interval, p-value."""

    difference: float
    se: float
    low: float
    high: float
    p_value: float


def compare(a: Moments, b: Moments, *, pooled_var: float | None = None) -> Comparison:
    """Welch-style normal comparison of two means (a large-sample z test).

    Args:
        a, b: The two groups.
        pooled_var: A variance to use when a group's own is 0 (a rate of exactly 0 or 1
            in a small group), so that such a group does not look infinitely precise.
    """
    va, vb = a.var, b.var
    if pooled_var is not None:
        va, vb = (v if v > 0 else pooled_var for v in (va, vb))
    se = math.sqrt(va / a.n + vb / b.n) if a.n > 0 and b.n > 0 else math.inf
    return normal_comparison(a.mean - b.mean, se)


def compare_proportions(a: Moments, b: Moments) -> Comparison:
    """Two proportions (the means of a 0/1 metric) compared: the difference with
    Newcombe's hybrid score 95% interval (from each group's Wilson interval) and the
    two-sided p-value of the pooled score test (the variance under "no difference").

    The normal comparison of :func:`compare` takes each group's own variance, which near
    0 or 1 in a small group is far too small: 1 event in 29 rows against 26% of the rest
    had q = 3.1e-06 in a scan of 156 segments (a real-model single agent's exact test
    gave p = 0.0058 before correction). Where the smaller group expects fewer than
    :data:`EXACT_BELOW` events or non-events, the p-value is Fisher's exact test's.
    ``se`` is the interval's half-width over 1.96 (the interval is not symmetric)."""
    if a.n <= 0 or b.n <= 0:
        return normal_comparison(a.mean - b.mean, math.inf)
    pa, pb = a.s1 / a.n, b.s1 / b.n
    difference = pa - pb
    (la, ua), (lb, ub) = wilson_interval(a.s1, a.n), wilson_interval(b.s1, b.n)
    low = difference - math.sqrt((pa - la) ** 2 + (ub - pb) ** 2)
    high = difference + math.sqrt((ua - pa) ** 2 + (pb - lb) ** 2)
    pooled = (a.s1 + b.s1) / (a.n + b.n)
    expected = min(pooled * min(a.n, b.n), (1 - pooled) * min(a.n, b.n))
    if expected < EXACT_BELOW:
        # a rare outcome in a small group: the score test's p is far too small there
        # (2 events in 10 rows against 1% of the rest: 8e-09 where Fisher's is 0.005)
        table = [[round(a.s1), round(a.n - a.s1)], [round(b.s1), round(b.n - b.s1)]]
        p_value = float(stats.fisher_exact(table).pvalue)
    else:
        se0 = math.sqrt(pooled * (1 - pooled) * (1 / a.n + 1 / b.n))
        p_value = 1.0 if se0 == 0 else float(2 * stats.norm.sf(abs(difference) / se0))
    return Comparison(difference, (high - low) / (2 * Z95), low, high, p_value)


EXACT_BELOW = 5.0
"""An expected count of events (or non-events) in the smaller group below which two
proportions are compared with Fisher's exact test instead of the score test."""


def normal_comparison(difference: float, se: float) -> Comparison:
    """A difference with its standard error as a :class:`Comparison`: the 95% normal
    interval and the two-sided p-value. A standard error of 0 gives p 0 (or 1 for a
    difference of exactly 0); an infinite or NaN one gives p 1."""
    if se == 0 or not math.isfinite(se):
        p_value = 1.0 if se != 0 or difference == 0 else 0.0
    else:
        p_value = float(2 * stats.norm.sf(abs(difference) / se))
    return Comparison(difference, se, difference - Z95 * se, difference + Z95 * se, p_value)


def wilson_interval(successes: float, n: float) -> tuple[float, float]:
    """Wilson score 95% interval of a proportion (sound near 0 and 1 and for small n)."""
    if n <= 0:
        return (math.nan, math.nan)
    p = successes / n
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return (centre - half, centre + half)


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Benjamini–Hochberg adjusted p-values (q-values), in the input order.

    A NaN p-value (a test that could not be computed) counts as 1: it never poisons the
    others' adjustment.
    """
    if not p_values:
        return []
    p = np.nan_to_num(np.asarray(p_values, dtype=float), nan=1.0)
    order = np.argsort(p)
    ranked = p[order] * len(p) / np.arange(1, len(p) + 1)
    adjusted = np.minimum.accumulate(ranked[::-1])[::-1]
    q = np.empty_like(p)
    q[order] = np.minimum(adjusted, 1.0)
    return q.tolist()


def cochran_q(effects: list[float], ses: list[float]) -> tuple[float, float, float]:
    """Cochran's Q test that stratum effects are equal (the interaction test).

    Returns:
        (pooled inverse-variance effect, Q statistic, p-value on k-1 degrees of freedom);
        p is 1 for fewer than two usable strata.
    """
    pairs = [(e, s) for e, s in zip(effects, ses, strict=True) if s > 0 and math.isfinite(s)]
    if len(pairs) < 2:
        return (pairs[0][0] if pairs else math.nan, 0.0, 1.0)
    e = np.array([p[0] for p in pairs])
    w = 1.0 / np.array([p[1] for p in pairs]) ** 2
    pooled = float((w * e).sum() / w.sum())
    q = float((w * (e - pooled) ** 2).sum())
    return (pooled, q, float(stats.chi2.sf(q, len(pairs) - 1)))


def between_strata_sd(effects: list[float], ses: list[float]) -> float:
    """How far the stratum effects truly differ, beyond their sampling error: the
    DerSimonian-Laird estimate of the between-strata standard deviation (tau; 0 when Q
    does not exceed its degrees of freedom). Unlike the range of the effects it does not
    grow with the number of strata on noise."""
    pairs = [(e, s) for e, s in zip(effects, ses, strict=True) if s > 0 and math.isfinite(s)]
    if len(pairs) < 2:
        return 0.0
    _, q, _ = cochran_q([e for e, _ in pairs], [s for _, s in pairs])
    w = 1.0 / np.array([s for _, s in pairs]) ** 2
    denominator = float(w.sum() - (w ** 2).sum() / w.sum())
    excess = q - (len(pairs) - 1)
    return math.sqrt(excess / denominator) if excess > 0 and denominator > 0 else 0.0


def chi_square_independence(table: list[list[float]]) -> float:
    """p-value of Pearson's chi-square test of independence (rows × columns of counts).

    Rows or columns that are all zero are dropped; fewer than two of either gives 1.
    """
    counts = np.asarray(table, dtype=float)
    counts = counts[counts.sum(axis=1) > 0][:, counts.sum(axis=0) > 0]
    if counts.shape[0] < 2 or counts.shape[1] < 2:
        return 1.0
    return float(stats.chi2_contingency(counts, correction=False)[1])


def adaptive_min_support(population: float) -> int:
    """The default minimum support: 1% of the population's rows, at least
    :data:`MIN_SUPPORT_FLOOR` and at most :data:`MIN_SUPPORT_CAP` (a 900-row table gets 10,
    so a 28-row group in it is tested; a 100,000-row one gets 30)."""
    wanted = math.ceil(_MIN_SUPPORT_SHARE * max(0.0, population))
    return int(min(MIN_SUPPORT_CAP, max(MIN_SUPPORT_FLOOR, wanted)))


def metric_scale(total: Moments) -> float:
    """The metric's scale: the larger of |overall mean| and the per-row standard deviation."""
    if total.n <= 0:
        return 0.0
    return max(abs(total.mean), math.sqrt(total.var))


def is_material(difference: float, scale: float) -> bool:
    """Whether a difference is large enough to matter (see the module docstring)."""
    size = abs(difference)
    return math.isfinite(size) and size >= ABSOLUTE_FLOOR and size >= RELATIVE_TOLERANCE * scale


NEAR_COPY_SHARE = 0.95
"""A dimension whose values explain this share of the metric's variance (or more) is a
near-copy of the metric: the same fact recorded twice, or a consequence of it."""


NUMERIC_COPY_CORRELATION = 0.9
"""A numeric column of the metric's own rows whose values correlate with the metric's row
value at least this strongly (``|r|``) is the outcome recorded again (revenue beside net
revenue): its bins sort the rows by their outcome, so holding it fixed "explains" any
effect and splitting by it compares equal outcomes."""


def explained_share(groups: list[Moments], total: Moments) -> float:
    """The share of the metric's variance between the ``groups`` (eta squared): 1 minus
    the within-group sum of squares over the total sum of squares (0 when the metric does
    not vary)."""
    total_ss = total.s2 - total.s1 * total.s1 / total.n if total.n > 0 else 0.0
    if total_ss <= 0:
        return 0.0
    within = sum(max(0.0, g.s2 - g.s1 * g.s1 / g.n) for g in groups if g.n > 0)
    return max(0.0, 1.0 - within / total_ss)


def is_binary(total: Moments) -> bool:
    """Whether a metric's rows (their moments ``total``) are all 0 or 1, as far as the
    moments tell: every value's square is itself (``Σv² = Σv``)."""
    return total.n > 0 and abs(total.s2 - total.s1) <= 1e-9 * max(1.0, total.s1)


def is_near_copy(groups: list[Moments], total: Moments) -> bool:
    """Whether a dimension splitting the population into ``groups`` (two or more) nearly
    copies a yes/no metric: it explains at least :data:`NEAR_COPY_SHARE` of its variance,
    so nearly every row's outcome follows from its value. Only for a 0/1 metric: a numeric
    metric with a strong cause and little noise is explained as well, and must stay a
    finding."""
    return (is_binary(total) and sum(1 for g in groups if g.n > 0) >= 2
            and explained_share(groups, total) >= NEAR_COPY_SHARE)


def determines_exactly(groups: list[Moments], total: Moments) -> bool:
    """Whether a dimension whose values split the population into ``groups`` determines
    the metric exactly: the metric varies, but not within any of its values (every group
    of two rows or more, covering nine tenths of the rows, has a single metric value).
    Such a dimension is part of the metric's definition, not an explanation of it."""
    if total.n < 2 or total.var <= 0:
        return False
    sized = [g for g in groups if g.n >= 2]
    covered = sum(g.n for g in sized)
    return (len(sized) >= 2 and covered >= 0.9 * total.n
            and all(g.var <= 1e-12 * total.var for g in sized))


_FLOAT_TOLERANCE = 1e-10
"""Relative tolerance of moments that should be equal but were summed in another order
(the same rows reached through two dimensions, a group and the total minus its rest)."""
_CONSTANT_SHARE = 1e-9
"""Largest share of the population's variance a group's variance may have to count as
one value on every row: floating-point residue, not spread."""


def is_constant(group: Moments, total: Moments) -> bool:
    """Whether the metric is one value on every row of ``group`` (two rows or more) of a
    population ``total`` whose metric varies: its variance is floating-point residue
    (at most :data:`_CONSTANT_SHARE` of the population's). Judged against the population,
    not the value's size, so that a spread that is small beside a large value (timestamps
    in seconds) is not taken for a single value."""
    return group.n >= 2 and total.var > 0 and group.var <= _CONSTANT_SHARE * total.var


def same_moments(a: Moments, b: Moments, total: Moments) -> bool:
    """Whether two groups of the population ``total`` have the same count and, to floating
    tolerance (relative to the population's sums, which bound every group's rounding),
    the same sum and sum of squares: as far as the moments tell, the same rows. Equal
    moments of different rows are a coincidence the caller must guard against where it
    is likely (a 0/1 metric's moments are only a count and a count of ones)."""
    if a.n != b.n or a.n <= 0:
        return False
    size = abs(total.s2)
    return (abs(a.s2 - b.s2) <= _FLOAT_TOLERANCE * size
            and abs(a.s1 - b.s1) <= _FLOAT_TOLERANCE * math.sqrt(abs(total.n) * size))


@dataclass(frozen=True)
class OutcomeValue:
    """A value of a column that every row of one outcome of a 0/1 metric has (net revenue
    0 on every returned order), counted against the rows of the other outcome.

    Attributes:
        outcome: The metric's value (1 or 0) on the rows that all have ``value``.
        value: The column's value on them; None: the column is empty (NULL) on them.
        rows: Rows with that outcome.
        others: Rows with the other outcome.
        others_with: How many of ``others`` have ``value`` too.
    """

    outcome: int
    value: float | None
    rows: int
    others: int
    others_with: int

    @property
    def explained(self) -> float:
        """The share of the metric's variance that the yes/no split "the column has
        ``value``" explains (:func:`explained_share` of its two groups)."""
        rest = self.others - self.others_with
        if self.outcome == 1:
            ones, with_, without = self.rows, Moments(self.rows + self.others_with,
                                                      self.rows, self.rows), Moments(rest, 0, 0)
        else:
            ones = self.others
            with_ = Moments(self.rows + self.others_with, self.others_with, self.others_with)
            without = Moments(rest, rest, rest)
        return explained_share([with_, without], Moments(self.rows + self.others, ones, ones))


def outcome_left_empty(missing: Moments, total: Moments, alpha: float) -> int | None:
    """The outcome (1 or 0) of a 0/1 metric whose every row is in ``missing`` (a column's
    missing-value group), while the rows where the column is filled (``total`` less it,
    at least :data:`MIN_SUPPORT_FLOOR`) are all the other outcome; None if neither is.

    Such a column is recorded for one outcome only (a processing date no declined
    expense gets): each filled value has a rate of exactly 0 or 1 and its missing value
    holds the whole outcome, by construction. It must be beyond chance: were the column
    filled regardless of the outcome, finding none of the outcome's rows (at least
    :data:`MIN_SUPPORT_FLOOR`) among the filled ones has a probability below ``alpha``."""
    filled = total - missing
    if not is_binary(total) or filled.n < MIN_SUPPORT_FLOOR:
        return None
    ones, filled_ones = round(total.s1), round(filled.s1)
    if filled_ones == 0:
        outcome, rows = 1, ones
    elif filled_ones == round(filled.n):
        outcome, rows = 0, round(total.n) - ones
    else:
        return None
    if rows < MIN_SUPPORT_FLOOR or (1.0 - rows / total.n) ** filled.n >= alpha:
        return None
    return outcome


def is_set_by_outcome(found: OutcomeValue) -> bool:
    """Whether a column is one the outcome sets: every row of one outcome (at least
    :data:`MIN_SUPPORT_FLOOR` of them) has the same value of it, and that value is so rare
    among the other rows that "the column has this value" is a near-copy of the metric
    (it explains at least :data:`NEAR_COPY_SHARE` of its variance). Net revenue set to 0
    on every returned order is the outcome recorded again inside the lowest of its bins,
    however much it varies among the orders kept: holding it fixed holds the outcome fixed.

    Not such a column: one whose shared value is common among the other rows too (every
    returned order had no discount, like most orders kept), nor one whose values merely
    correlate with the outcome or where the outcome is merely frequent (no single value on
    every row of one outcome)."""
    return (found.rows >= MIN_SUPPORT_FLOOR and found.others > 0
            and found.explained >= NEAR_COPY_SHARE)
