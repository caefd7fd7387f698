"""compare_within: an exposure's effect overall, within every stratum, and standardised.

The effect is the difference of the metric between exposed rows (``exposure = value``)
and reference rows (``exposure = reference``, or every other non-null value). For each
candidate dimension (a 1:N attribute value counts as its own yes/no dimension) the pass
gives the effect within each stratum; then:

- **heterogeneity**: Cochran's Q test that the stratum effects are equal (strata with at
  least ``min_support`` rows in both arms, and never fewer than
  :data:`HETEROGENEITY_MIN_ARM`: the test's normal approximation does not hold on a
  handful of rows, and a flag calls for a split), Benjamini–Hochberg across dimensions. For a
  0/1 metric (a rate) the test is on the log risk ratio, the scale on which a treatment
  that halves the risk everywhere is homogeneous (a constant ratio gives differences
  that grow with the baseline risk); for other metrics on the difference of means;
- **confounding**: the exposure's share differs across the strata (chi-square test of
  independence), the dimension moves the metric among reference rows (Q test of their
  means), both beyond chance after correction, and direct standardisation over the
  dimension (stratum effects weighted by the strata's share of the population) moves
  the effect by at least 10% of the crude one (the epidemiologists' change-in-estimate
  rule). A standardised effect of the opposite sign whose interval excludes zero, while
  the crude one's does too, is called a **Simpson's paradox**.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from d2_notebook.data.analysis.common import (
    DEFAULT_ALPHA,
    Pass,
    Prepared,
    check_settings,
    prepare,
    run_pass,
)
from d2_notebook.data.analysis.inputs import literal
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool, Flag, FlagKind, capped
from d2_notebook.data.analysis.stats import (
    Z95,
    Comparison,
    Moments,
    benjamini_hochberg,
    chi_square_independence,
    cochran_q,
    compare,
    means_differ,
)
from d2_notebook.data.analysis.text import describe_value, figure
from d2_notebook.data.catalog_access import dialect_sql

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["compare_within"]

COLUMNS = ["dimension", "stratum", "n_exposed", "metric_exposed", "n_reference",
           "metric_reference", "effect", "ci_low", "ci_high", "interaction_q",
           "standardised_effect", "confounding_q", "flag"]
_CHANGE_IN_ESTIMATE = 0.10
HETEROGENEITY_MIN_ARM = 10
"""Fewest rows per arm for a stratum to enter the heterogeneity test, whatever min_support."""
_FLAG_ORDER = (FlagKind.SIMPSONS_PARADOX, FlagKind.CONFOUNDING, FlagKind.HETEROGENEITY)


@dataclass
class _Family:
    """One dimension's strata: label -> (exposed, reference) moments."""

    name: str
    strata: list[tuple[str, Moments, Moments]]
    p_het: float = 1.0
    p_exposure: float = 1.0
    p_metric: float = 1.0
    standardised: Comparison | None = None
    usable: int = 0  # strata with min_support rows per arm (standardisation)
    tested: int = 0  # of those, strata that enter the heterogeneity test


def compare_within(
    sql: GuardedSQL,
    *,
    source: str,
    metric: str,
    exposure: str,
    value: str | float | bool,
    reference: str | float | bool | None = None,
    where: str | None = None,
    dimensions: list[str] | None = None,
    min_support: int = 30,
    alpha: float = DEFAULT_ALPHA,
    max_levels: int = 30,
    top: int = 8,
) -> AnalysisResult:
    """The effect of ``exposure = value`` on the metric, overall and within every stratum.

    Args:
        sql: The guarded connection; the generated statement runs through it.
        source: A table, or a FROM clause with joins and aliases.
        metric: One mean over rows, ``avg(<per-row expression>)``.
        exposure: A column expression over the source (e.g. ``t.drug``).
        value: The exposed value (string, number or boolean).
        reference: The value compared against; default every other non-null value.
        where: Optional filter on the population (one boolean expression).
        dimensions: Dimension names or expressions; default every reachable candidate.
        min_support: Fewest rows per arm for a stratum to count in the tests (the
            heterogeneity test also needs :data:`HETEROGENEITY_MIN_ARM`).
        alpha: False-discovery level of the tests across dimensions.
        max_levels: Most distinct values a column may have to be a dimension.
        top: Strata per flagged dimension shown in the summary.

    Returns:
        One row for the overall effect, then one per (dimension, stratum) (:data:`COLUMNS`),
        flagged dimensions first.

    Raises:
        ValueError: A bad input (e.g. no row has ``exposure = value``; the values are listed).
        UnsafeSQLError / QueryFailedError: As :func:`segment_scan`.
    """
    check_settings(min_support, alpha)
    sql = dialect_sql(sql)  # any source: its SQL is transpiled and guarded there
    if not isinstance(exposure, str) or not exposure.strip():
        raise ValueError("exposure is required: a column expression over the source, e.g. t.drug")
    arm = f"({exposure}) = {literal(value)}"
    others = f"({exposure}) = {literal(reference)}" if reference is not None else "TRUE"
    if reference is not None and literal(reference) == literal(value):
        raise ValueError("reference must differ from value; omit it to compare with the rest")
    prepared = prepare(sql, source=source, metric=metric, where=where, dimensions=dimensions,
                       exclude={"exposure": exposure}, max_levels=max_levels)
    population = f"({exposure}) IS NOT NULL AND ({arm} OR {others})"
    prepared = Prepared(prepared.catalog, prepared.source, prepared.value_sql,
                              f"({prepared.where}) AND {population}" if prepared.where
                              else population, prepared.plan)
    scan = run_pass(sql, prepared, extra=((f"CASE WHEN {arm} THEN 1 ELSE 0 END", "__x"),),
                    by=("__x",))
    exposed, rest = scan.total(1), scan.total(0)
    if exposed.n == 0 or rest.n == 0:
        _missing_arm(sql, prepared, exposure, value, reference, exposed.n == 0)
    pooled = (exposed + rest).var or None
    crude = compare(exposed, rest, pooled_var=pooled)
    families = _families(scan, prepared, exposed, rest)
    total = exposed + rest
    binary = total.n > 0 and abs(total.s2 - total.s1) <= 1e-9 * max(1.0, total.s1)
    for family in families:
        _test(family, min_support, pooled, binary)
    q_het = [q if f.tested >= 2 else math.nan  # untested: no q-value, not "q = 1"
             for f, q in zip(families, benjamini_hochberg([f.p_het for f in families]),
                             strict=True)]
    q_conf = benjamini_hochberg([max(f.p_exposure, f.p_metric) for f in families])
    flags: list[Flag] = []
    label = f"{exposure} = {describe_value(str(value))}"
    versus = f"{exposure} = {reference}" if reference is not None else "the rest"
    rows = [_overall_row(exposed, rest, crude)]
    ranked = sorted(zip(families, q_het, q_conf, strict=True), key=lambda t: min(t[1], t[2]))
    for family, qh, qc in ranked:
        kinds = _judge(family, crude, qh, qc, alpha)
        for kind in kinds:
            flags.append(Flag(kind, family.name, _flag_text(kind, family, crude, qh, qc, label,
                                                            top)))
        for stratum, m1, m0 in family.strata:
            effect = compare(m1, m0, pooled_var=pooled)
            rows.append({
                "dimension": family.name, "stratum": stratum, "n_exposed": int(m1.n),
                "metric_exposed": m1.mean, "n_reference": int(m0.n), "metric_reference": m0.mean,
                "effect": effect.difference, "ci_low": effect.low, "ci_high": effect.high,
                "interaction_q": qh, "confounding_q": qc,
                "standardised_effect": family.standardised.difference
                if family.standardised else math.nan,
                "flag": ", ".join(k.value for k in kinds),
            })
    flags.sort(key=lambda f: _FLAG_ORDER.index(f.kind))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    summary = _summary(metric, label, versus, exposed, rest, crude, flags, families, alpha,
                       min_support)
    return capped(AnalysisTool.COMPARE_WITHIN, scan.sql, frame, sql.max_rows,
                  scan.duration_s, summary, flags)


def _families(scan: Pass, prepared: Prepared, exposed: Moments, rest: Moments) -> list[_Family]:
    zero = Moments(0, 0, 0)
    values: dict[int, dict[str, list[Moments]]] = {}
    for (index, value, arm), group in scan.moments.items():
        if index >= 0:
            pair = values.setdefault(index, {}).setdefault(describe_value(value), [zero, zero])
            pair[0 if arm == 1 else 1] = group
    families = []
    for index, planned in enumerate(prepared.plan.dimensions):
        found = values.get(index, {})
        if planned.membership:
            for value, (m1, m0) in sorted(found.items()):
                families.append(_Family(f"{planned.name} = {value}",
                                        [("yes", m1, m0), ("no", exposed - m1, rest - m0)]))
        elif found:
            families.append(_Family(planned.name, [(v, m1, m0) for v, (m1, m0)
                                                   in sorted(found.items())]))
    return families


def _test(family: _Family, min_support: int, pooled: float | None, binary: bool) -> None:
    usable = [(m1, m0) for _, m1, m0 in family.strata if m1.n >= min_support
              and m0.n >= min_support]
    family.usable = len(usable)
    effects = [compare(m1, m0, pooled_var=pooled) for m1, m0 in usable]
    tested = [(m1, m0, e) for (m1, m0), e in zip(usable, effects, strict=True)
              if min(m1.n, m0.n) >= HETEROGENEITY_MIN_ARM]
    family.tested = len(tested)
    scale = [_log_risk_ratio(m1, m0) for m1, m0, _ in tested] if binary else [
        (e.difference, e.se) for _, _, e in tested]
    _, _, family.p_het = cochran_q([e for e, _ in scale], [se for _, se in scale])
    family.p_exposure = chi_square_independence([[m1.n, m0.n] for _, m1, m0 in family.strata])
    family.p_metric = means_differ([m0 for _, _, m0 in family.strata if m0.n >= min_support])
    if usable:
        weights = [m1.n + m0.n for m1, m0 in usable]
        total = sum(weights)
        difference = sum(w * e.difference for w, e in zip(weights, effects, strict=True)) / total
        se = math.sqrt(sum((w / total) ** 2 * e.se**2
                           for w, e in zip(weights, effects, strict=True)))
        family.standardised = Comparison(difference, se, difference - Z95 * se,
                                         difference + Z95 * se, math.nan)


def _log_risk_ratio(exposed: Moments, reference: Moments) -> tuple[float, float]:
    """log(p1/p0) and its standard error, with 0.5 added to each cell (no zero cells)."""
    a, b = exposed.s1 + 0.5, reference.s1 + 0.5
    n1, n0 = exposed.n + 1.0, reference.n + 1.0
    return (math.log((a / n1) / (b / n0)), math.sqrt(1 / a - 1 / n1 + 1 / b - 1 / n0))


def _judge(family: _Family, crude: Comparison, q_het: float, q_conf: float,
           alpha: float) -> list[FlagKind]:
    kinds = []
    std = family.standardised
    if std is not None and q_conf < alpha:
        change = abs(std.difference - crude.difference)
        if change >= _CHANGE_IN_ESTIMATE * abs(crude.difference) and change > 0:
            reversed_ = (std.low > 0 > crude.high) or (std.high < 0 < crude.low)
            kinds.append(FlagKind.SIMPSONS_PARADOX if reversed_ else FlagKind.CONFOUNDING)
    if q_het < alpha:
        kinds.append(FlagKind.HETEROGENEITY)
    return kinds


def _flag_text(kind: FlagKind, family: _Family, crude: Comparison, q_het: float,
               q_conf: float, label: str, top: int) -> str:
    std = family.standardised
    if kind is FlagKind.HETEROGENEITY:
        effects = "; ".join(
            f"{stratum}: {figure(m1.mean)} vs {figure(m0.mean)}, effect "
            f"{figure(m1.mean - m0.mean)} (n = {int(m1.n)} / {int(m0.n)})"
            for stratum, m1, m0 in family.strata[:top]
        )
        return (f"HETEROGENEITY: the effect of {label} differs across {family.name} beyond "
                f"chance (interaction test q = {q_het:.2g}): {effects}")
    name = "SIMPSON'S PARADOX" if kind is FlagKind.SIMPSONS_PARADOX else "CONFOUNDING"
    shares = ", ".join(f"{s}: {figure(m1.n / (m1.n + m0.n)) if m1.n + m0.n else 'n/a'}"
                       for s, m1, m0 in family.strata[:top])
    verdict = ("the effect reverses within its strata" if kind is FlagKind.SIMPSONS_PARADOX
               else "the effect changes once it is held fixed")
    return (f"{name} by {family.name}: {verdict}. Crude effect {figure(crude.difference)} "
            f"(95% CI {figure(crude.low)} to {figure(crude.high)}); standardised over "
            f"{family.name} {figure(std.difference)} (95% CI {figure(std.low)} to "
            f"{figure(std.high)}). Share exposed per stratum: {shares}; {family.name} also "
            f"moves the metric (q = {q_conf:.2g}).")


def _overall_row(exposed: Moments, rest: Moments, crude: Comparison) -> dict:
    return {"dimension": "(overall)", "stratum": "(all)", "n_exposed": int(exposed.n),
            "metric_exposed": exposed.mean, "n_reference": int(rest.n),
            "metric_reference": rest.mean, "effect": crude.difference, "ci_low": crude.low,
            "ci_high": crude.high, "interaction_q": math.nan, "standardised_effect": math.nan,
            "confounding_q": math.nan, "flag": ""}


def _summary(metric: str, label: str, versus: str, exposed: Moments, rest: Moments,
             crude: Comparison, flags: list[Flag], families: list[_Family],
             alpha: float, min_support: int) -> str:
    lines = [
        f"compare_within: {metric} for {label} vs {versus}: {figure(exposed.mean)} (n = "
        f"{int(exposed.n)}) vs {figure(rest.mean)} (n = {int(rest.n)}); crude effect "
        f"{figure(crude.difference)} (95% CI {figure(crude.low)} to {figure(crude.high)}).",
    ]
    if flags:
        lines.append(f"FLAGS ({len(flags)}; false-discovery level {alpha:g}):")
        lines += [f"- {f.text}" for f in flags]
    else:
        lines.append(f"No confounding and no heterogeneity beyond chance across "
                     f"{len(families)} dimensions (false-discovery level {alpha:g}).")
    checked = ", ".join(f.name for f in families if f.usable >= 2)
    thin = [f.name for f in families if f.usable < 2]
    untested = [f.name for f in families if f.usable >= 2 and f.tested < 2]
    lines.append(f"Dimensions checked: {checked or '(none)'}.")
    if thin:
        lines.append(f"Too few rows per arm to test: {', '.join(thin)} (a dimension needs two "
                     f"strata with at least {min_support} rows in each arm; a smaller "
                     "min_support tests thinner strata, with wider intervals).")
    if untested:
        lines.append(f"Heterogeneity not tested for {', '.join(untested)}: it needs two strata "
                     f"with at least {HETEROGENEITY_MIN_ARM} rows in each arm.")
    return "\n".join(lines)


def _missing_arm(sql: GuardedSQL, prepared: Prepared, exposure: str, value: object,
                 reference: object, exposed_missing: bool) -> None:
    seen = sql.run(
        f"SELECT DISTINCT ({exposure})::VARCHAR AS v FROM {prepared.source.sql} "
        f"WHERE ({exposure}) IS NOT NULL ORDER BY 1 LIMIT 20", max_rows=20,
    ).frame["v"].tolist()
    wanted = value if exposed_missing else reference if reference is not None else "any other"
    raise ValueError(
        f"no row of the population has {exposure} = {wanted!r}; values of {exposure}: "
        f"{', '.join(map(str, seen)) or '(none)'} — pass one of them (check the where filter)"
    )
