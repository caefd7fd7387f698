"""compare_within: an exposure's effect overall, within every stratum, and standardised.

The effect is the difference of the metric between exposed rows (``exposure = value``)
and reference rows (``exposure = reference``, or every other non-null value). For each
candidate dimension (a 1:N attribute value counts as its own yes/no dimension) the pass
gives the effect within each stratum; then:

- **overlap**: a stratum with rows in only one arm (an exposure share of 0 or 1) measures
  no effect and is not standardised over; such strata are named, and the standardised
  effect states the strata it was taken over and their share of the rows. An overall
  effect beyond chance that is not found within the strata with both arms (neither
  crude nor standardised effect beyond chance there, or the standardised one reversed)
  rests on the strata without overlap: the summary says the data cannot tell it from the
  dimension's, instead of "no confounding";
- **confounding** is judged by what adjustment does: direct standardisation over the
  dimension (stratum effects weighted by the strata's share of the rows) is compared
  with the crude effect over the same strata. The dimension is flagged when that removes
  (or adds) at least :data:`CHANGE_IN_ESTIMATE` of the crude effect, a material amount,
  with the change beyond chance (its standard error from the strata's moments,
  Benjamini–Hochberg over dimensions at :data:`CONFOUNDING_LEVEL`), and the exposure's
  share differs across the strata (chi-square, q below ``alpha``). The share removed is
  reported with its 95% interval. A standardised effect of the opposite sign whose
  interval excludes zero, while the crude one's does too, is a **Simpson's paradox**;
- **heterogeneity** is judged on the scale the effect lives on: Cochran's Q test that the
  stratum effects are equal, on the difference scale and, where every stratum's metric
  is positive, on the ratio scale (the log risk ratio for a 0/1 metric); the scale on
  which the effect is more nearly constant is used and named, so a constant ratio whose
  differences grow with the baseline (a flat 20% discount) is not heterogeneity. Strata
  enter with at least the minimum support and never fewer than
  :data:`HETEROGENEITY_MIN_ARM` rows in each arm; the spread of the stratum effects must
  be material; Benjamini–Hochberg across dimensions at ``alpha``. A near miss (q below
  :data:`NEAR_LEVEL` but not ``alpha``, the effects' true spread at least
  :data:`NEAR_SPREAD` of the scale) is named in the summary with its strata, unflagged.
  So is a dimension across which the effect is nearly constant on the scale chosen but
  not on the other (a constant ratio whose absolute benefit grows with the baseline):
  a claim about the absolute size and one about the relative size answer differently;
- **recorded with the outcome**: a dimension whose column lives in a table the metric
  reads that is a 1:1 satellite of another table, when the exposure's columns all come
  from other tables (ventilation beside the death, under a drug from the treatments
  table), may be a consequence of the exposure, a
  step between exposure and outcome, rather than a cause: holding it fixed removes part
  of the real effect. Its CONFOUNDING or SIMPSON'S PARADOX flag keeps its kind and carries
  a caution, and the summary lists such flags apart. No dimension is marked in a
  single-table source, nor when a column of the metric or of the exposure cannot be placed
  in a catalog table (constants, an alias of a derived table); a 1:N membership only when
  its table is the metric's (read through a subquery).

A dimension that could not be tested (too few strata with both arms) is counted as
untested, never as "no confounding". Nor is a dimension that restates the outcome tested,
since holding it fixed would hold the outcome fixed: one that determines the metric
exactly, a near-copy (:func:`~d2_notebook.data.analysis.stats.is_near_copy`, or a numeric
column of the metric's rows with ``|r| >= 0.9``), or a column the outcome sets (every row
of one outcome has one value of it, rare among the other rows: net revenue 0 on every
returned order, :func:`~d2_notebook.data.analysis.stats.is_set_by_outcome`), or a column
recorded for one outcome only (empty on every row of one outcome: a processing date no
declined expense gets, :mod:`~d2_notebook.data.analysis.one_outcome`, unless the caller
names the dimension); the summary names each.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from d2_notebook.data.analysis.common import (
    DEFAULT_ALPHA,
    Pass,
    Prepared,
    Support,
    check_settings,
    column_copies,
    definition_lines,
    prepare,
    run_pass,
)
from d2_notebook.data.analysis.inputs import literal, tables_read
from d2_notebook.data.analysis.one_outcome import one_outcome_columns
from d2_notebook.data.analysis.plan import PlannedDimension
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool, Flag, FlagKind, capped
from d2_notebook.data.analysis.stats import (
    Comparison,
    Moments,
    OutcomeValue,
    benjamini_hochberg,
    compare,
    determines_exactly,
    explained_share,
    is_binary,
    is_material,
    is_near_copy,
    metric_scale,
)
from d2_notebook.data.analysis.strata import (
    EffectScale,
    Family,
    check_heterogeneity,
    spans_zero,
    standardise,
)
from d2_notebook.data.analysis.text import (
    MISSING,
    OneOutcomeColumn,
    describe_value,
    figure,
    interval,
    name_list,
    near_copy_line,
    one_outcome_line,
    outcome_set_line,
)
from d2_notebook.data.catalog_access import dialect_sql
from d2_notebook.data.parse_tree import outer_nodes, select_node
from d2_notebook.errors import QueryFailedError

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["compare_within"]

COLUMNS = ["dimension", "stratum", "n_exposed", "metric_exposed", "n_reference",
           "metric_reference", "effect", "ci_low", "ci_high", "interaction_q",
           "standardised_effect", "standardised_low", "standardised_high", "share_removed",
           "share_removed_low", "share_removed_high", "confounding_q", "flag"]
CHANGE_IN_ESTIMATE = 0.10
"""Smallest share of the crude effect that standardising must remove (or add) to flag."""
CONFOUNDING_LEVEL = 0.05
"""False-discovery level of the change-in-estimate test across dimensions."""
CONSEQUENCE_NOTE = (
    "When each column was set the data cannot tell: a flag by one set later, by the "
    "exposure or by the outcome (a status, a progress, a result), marks a consequence, not "
    "a confounder, and its standardised effect is no adjustment.")
"""Said under confounding flags the tool cannot place before the exposure."""
HETEROGENEITY_MIN_ARM = 10
"""Fewest rows per arm for a stratum to enter the heterogeneity test, whatever min_support."""
_FLAG_ORDER = (FlagKind.SIMPSONS_PARADOX, FlagKind.CONFOUNDING, FlagKind.HETEROGENEITY)


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
    min_support: int | None = None,
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
        min_support: Fewest rows per arm for a stratum to enter the heterogeneity test
            (which also needs :data:`HETEROGENEITY_MIN_ARM`); default adapted to the data
            (:class:`~d2_notebook.data.analysis.common.Support`).
        alpha: False-discovery level of the heterogeneity and exposure-share tests.
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
    if _window_at_row_level(exposure):
        # DuckDB's own words ("WHERE clause cannot contain window functions") named SQL
        # the caller never wrote: a real-model collector could not tell what to change
        raise ValueError(
            "exposure is read row by row, so it cannot hold a window function (... OVER "
            "(...)): write the row's condition with a correlated subquery instead, e.g. "
            "for the top fifth of amounts within each department, exposure = 'e.amount >= "
            "(SELECT quantile_cont(x.amount, 0.8) FROM expenses x WHERE x.department = "
            "e.department)', value = true")
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
    total = exposed + rest
    pooled = total.var or None
    crude = compare(exposed, rest, pooled_var=pooled)
    support = Support.of(min_support, total.n, named=dimensions is not None)
    scale = metric_scale(total)
    planned_families = _families(scan, prepared, exposed, rest)
    families = [family for family, _ in planned_families]
    with_outcome = _recorded_with_outcome(planned_families, prepared, exposure)
    exact = [f.name for f in families if not f.membership and determines_exactly(
        [m1 + m0 for _, m1, m0 in f.strata], total)]
    copies = {f.name: explained_share(groups, total) for f in families
              if f.name not in exact and not f.membership
              and is_near_copy(groups := [m1 + m0 for _, m1, m0 in f.strata], total)}
    restated = column_copies(sql, prepared, total, requested=dimensions is not None,
                             known={*exact, *copies})
    copies |= restated.numeric
    # holding fixed a column recorded for one outcome holds the outcome fixed on its rows
    one_outcome, left_empty = ([], set()) if dimensions is not None else one_outcome_columns(
        {f.name: m1 + m0 for f in families if not f.membership
         for label, m1, m0 in f.strata if label == MISSING},
        prepared.plan, total, alpha, known={*exact, *copies, *restated.names})
    families = [f for f in families
                if f.name not in {*exact, *copies, *restated.names, *left_empty}]
    binary = is_binary(total)
    for family in families:
        check_heterogeneity(family, max(support.rows, HETEROGENEITY_MIN_ARM), pooled, binary,
                           scale)
        standardise(family, pooled, total.n)
    q_het = _adjusted([f.p_het if f.tested >= 2 else None for f in families])
    q_change = _adjusted([f.change.p_value if f.confounding_tested else None
                          for f in families])
    q_exposure = _adjusted([f.p_exposure if f.confounding_tested else None for f in families])
    q_other = _adjusted([f.other_scale.p if f.tested >= 2 and f.other_scale else None
                         for f in families])
    scale_dependent = [(f, qh, qo) for f, qh, qo in zip(families, q_het, q_other, strict=True)
                       if f.tested >= 2 and f.other_scale is not None
                       and qh >= max(alpha, NEAR_LEVEL)
                       and qo < NEAR_LEVEL and f.other_scale.material
                       and f.other_scale.spread >= NEAR_SPREAD]
    flags: list[Flag] = []
    label = f"{exposure} = {describe_value(str(value))}"
    # "x = True vs False": a long exposure expression is written once (a collector read
    # a regexp_matches(...) twice over in one line)
    versus = describe_value(str(reference)) if reference is not None else "the rest"
    rows = [_overall_row(exposed, rest, crude)]
    ranked = sorted(zip(families, q_het, q_change, q_exposure, strict=True),
                    key=lambda t: min(_or_one(t[1]), _or_one(t[2])))
    unflagged_moves: list[tuple[str, str]] = []  # (dimension, why it is not flagged)
    near_heterogeneity: list[tuple[Family, float]] = []  # (family, its interaction q)
    for family, qh, qc, qx in ranked:
        kinds = _judge(family, qh, qc, qx, alpha, scale)
        why = (_lost_without_overlap(family, kinds, crude)
               or _why_not_confounding(family, kinds, qc, qx, alpha, scale, crude))
        if why:
            unflagged_moves.append((family.name, why))
        if (FlagKind.HETEROGENEITY not in kinds and family.tested >= 2
                and family.het_material and family.het_spread >= NEAR_SPREAD
                and qh < NEAR_LEVEL):
            near_heterogeneity.append((family, qh))
        for kind in kinds:
            flags.append(Flag(kind, family.name, _flag_text(kind, family, qh, qc, label, top,
                                                            crude, with_outcome.get(family.name))))
        for stratum, m1, m0 in family.strata:
            effect = compare(m1, m0, pooled_var=pooled)
            rows.append({
                "dimension": family.name, "stratum": stratum, "n_exposed": int(m1.n),
                "metric_exposed": m1.mean, "n_reference": int(m0.n), "metric_reference": m0.mean,
                "effect": effect.difference if m1.n and m0.n else math.nan,
                "ci_low": effect.low if m1.n and m0.n else math.nan,
                "ci_high": effect.high if m1.n and m0.n else math.nan,
                "interaction_q": qh, "confounding_q": qc,
                "standardised_effect": family.standardised.difference
                if family.standardised else math.nan,
                "standardised_low": family.standardised.low if family.standardised else math.nan,
                "standardised_high": family.standardised.high
                if family.standardised else math.nan,
                "share_removed": family.share_removed,
                "share_removed_low": family.share_removed_interval[0],
                "share_removed_high": family.share_removed_interval[1],
                "flag": ", ".join(k.value for k in kinds),
            })
    flags.sort(key=lambda f: _FLAG_ORDER.index(f.kind))
    frame = pd.DataFrame(rows, columns=COLUMNS)
    summary = _summary(metric, label, versus, exposed, rest, crude, flags, families, alpha,
                       support, prepared, exact, unflagged_moves, copies,
                       restated.set_by_outcome, _near_misses(near_heterogeneity, alpha, top),
                       _scale_dependent(scale_dependent, top, alpha), with_outcome,
                       one_outcome)
    return capped(AnalysisTool.COMPARE_WITHIN, scan.sql, frame, sql.max_rows,
                  scan.duration_s, summary, flags)


def _window_at_row_level(expression: str) -> bool:
    """Whether ``expression`` holds a window function outside any subquery of its own (a
    window inside ``(SELECT ... OVER ...)`` is valid, and so is the text 'carry over (x)'
    in a literal), read as :func:`~d2_notebook.data.analysis.inputs.metric_value` reads
    the metric; an expression that does not parse is left to the database."""
    try:
        node = select_node(f"SELECT {expression}")
    except QueryFailedError:
        return False
    return any(inner.get("class") == "WINDOW" for inner in outer_nodes(node.get("select_list")))


def _or_one(q: float) -> float:
    return 1.0 if math.isnan(q) else q


def _adjusted(p_values: list[float | None]) -> list[float]:
    """BH q-values over the tests that ran; NaN (no q) for those that did not."""
    ran = [p for p in p_values if p is not None]
    q_values = iter(benjamini_hochberg(ran))
    return [math.nan if p is None else next(q_values) for p in p_values]


def _families(scan: Pass, prepared: Prepared, exposed: Moments,
              rest: Moments) -> list[tuple[Family, PlannedDimension]]:
    """Each dimension's strata as a family (a 1:N attribute: one yes/no family per value),
    with the planned dimension it comes from (its table, its expression)."""
    values = scan.split_by_flag()  # (exposed, reference) per dimension and value
    families = []
    for index, planned in enumerate(prepared.plan.dimensions):
        found = values.get(index, {})
        if planned.membership:
            for value, (m1, m0) in sorted(found.items()):
                families.append((Family(f"{planned.name} = {value}",
                                        [("yes", m1, m0), ("no", exposed - m1, rest - m0)],
                                        membership=True), planned))
        elif found:
            families.append((Family(planned.name, [(v, m1, m0) for v, (m1, m0)
                                                    in sorted(found.items())]), planned))
    return families


def _recorded_with_outcome(families: list[tuple[Family, PlannedDimension]],
                           prepared: Prepared, exposure: str) -> dict[str, frozenset[str]]:
    """The families recorded with the outcome, each with the metric's tables it reads.

    A dimension is recorded with the outcome when its column lives in a table the metric
    reads and the exposure's columns all live in other tables: it may then be a
    consequence of the exposure rather than a cause (ventilation in the outcomes table,
    under a drug from the treatments table). No family is marked when the exposure shares
    a table with the metric (a single-table source) or when either cannot be placed in
    tables (:func:`~d2_notebook.data.analysis.inputs.tables_read`). Only a table the
    metric reads that is a 1:1 satellite of another table (an outcomes table beside its
    admissions) is recorded with the outcome: a fact table the metric reads (a length of
    stay in admissions) also holds what was recorded before the exposure (the admission
    type). A 1:N membership's table is a child table, so it is marked only when the
    metric itself reads that table (through a subquery)."""
    source, catalog = prepared.source, prepared.catalog
    outcome = tables_read(prepared.value_sql, source, catalog)
    exposed = tables_read(exposure, source, catalog)
    if outcome is None or exposed is None or outcome & exposed:
        return {}
    outcome &= frozenset(e.child for e in catalog.graph.edges if e.one_to_one)
    found = {}
    for family, planned in families:
        tables = (frozenset({planned.dimension.table}) if planned.dimension is not None
                  else tables_read(planned.name, source, catalog)) or frozenset()
        if tables & outcome:
            found[family.name] = tables & outcome
    return found


def _judge(family: Family, q_het: float, q_change: float, q_exposure: float, alpha: float,
           scale: float) -> list[FlagKind]:
    kinds = []
    std, crude, change = family.standardised, family.crude, family.change
    if (family.confounding_tested and q_change < CONFOUNDING_LEVEL and q_exposure < alpha
            and abs(change.difference) >= CHANGE_IN_ESTIMATE * abs(crude.difference)
            and is_material(change.difference, scale) and not family.neither_beyond_chance):
        reversed_ = (std.low > 0 > crude.high) or (std.high < 0 < crude.low)
        kinds.append(FlagKind.SIMPSONS_PARADOX if reversed_ else FlagKind.CONFOUNDING)
    if family.tested >= 2 and q_het < alpha and family.het_material:
        kinds.append(FlagKind.HETEROGENEITY)
    return kinds


def _lost_without_overlap(family: Family, kinds: list[FlagKind],
                          overall: Comparison) -> str | None:
    """For a dimension not flagged as a confounder, with strata where one arm only has
    rows: the line saying the effect is not found where both arms have rows, when the
    overall effect is beyond chance but within the overlapping strata neither the crude
    nor the standardised effect is, or the standardised one points the other way, and
    the overall effect lies outside the overlapping strata's crude interval (an effect
    the same there but only just short of chance has not moved). The
    effect then rests on the strata without overlap (a user whose expenses are all large,
    the rest's small ones slow): the data cannot tell it from the dimension's, and
    "holding it fixed changes no conclusion" would be wrong. None otherwise."""
    crude, std = family.crude, family.standardised
    if (not family.one_arm or not family.confounding_tested or crude is None or std is None
            or spans_zero(overall)
            or {FlagKind.CONFOUNDING, FlagKind.SIMPSONS_PARADOX} & set(kinds)):
        return None
    against = not spans_zero(std) and (std.difference > 0) != (overall.difference > 0)
    if not family.neither_beyond_chance and not against:
        return None
    if crude.low <= overall.difference <= crude.high:  # the same effect, just less sure
        return None
    return (f"{family.name}: the effect over all rows ({figure(overall.difference)}, beyond "
            f"chance) is not found within its strata with both arms ({_strata_text(family)}):"
            f" crude there {figure(crude.difference)} (95% CI {interval(crude.low, crude.high)}"
            f"), standardised {figure(std.difference)} (95% CI "
            f"{interval(std.low, std.high)}); it rests on the strata where one arm "
            f"only has rows, so the data cannot tell the exposure's effect from "
            f"{family.name}'s")


def _why_not_confounding(family: Family, kinds: list[FlagKind], q_change: float,
                         q_exposure: float, alpha: float, scale: float,
                         overall: Comparison) -> str | None:
    """For a dimension whose standardisation moves the effect materially (by
    :data:`CHANGE_IN_ESTIMATE` or more) but is not flagged as a confounder: that move and
    the condition it failed, so no summary reads "no confounding" over it unexplained.
    The move starts from the crude effect within the strata with both arms; where some
    strata have one arm only, the all-rows crude effect (``overall``) is named beside it."""
    if (not family.confounding_tested or {FlagKind.CONFOUNDING, FlagKind.SIMPSONS_PARADOX}
            & set(kinds)):
        return None
    change, crude = family.change, family.crude
    if not (abs(change.difference) >= CHANGE_IN_ESTIMATE * abs(crude.difference)
            and is_material(change.difference, scale)):
        return None
    moved = (f"{family.name}: standardising moves the effect from {figure(crude.difference)} "
             f"({_crude_within(family, overall)}) to "
             f"{figure(family.standardised.difference)}"
             + _share_removed_note(family.share_removed) + _thin_driver(family))
    if family.neither_beyond_chance:
        return (f"{moved}, but neither effect is beyond chance (both 95% intervals hold 0): "
                "holding it fixed changes no conclusion")
    if not q_change < CONFOUNDING_LEVEL:
        return (f"{moved}, a move within chance (q = {q_change:.2g} for the change, level "
                f"{CONFOUNDING_LEVEL:g})")
    return (f"{moved}; the move is beyond chance (q = {q_change:.2g}), but the exposed "
            "share's difference across its strata, which a CONFOUNDING flag needs as well, "
            f"does not pass the false-discovery level {alpha:g} (q = {q_exposure:.2g}): "
            "possible confounding the data cannot confirm; held fixed, the effect is the "
            "standardised one")


def _share_removed_note(share: float) -> str:
    """``" (14% of it removed)"``, or ``" (it grows by 14%)"`` when standardising enlarges
    the effect (a collector read "(-14% of it removed)" backwards); empty for no share
    (an effect indistinguishable from none)."""
    if math.isnan(share):
        return ""
    return f" ({share:.0%} of it removed)" if share >= 0 else f" (it grows by {-share:.0%})"


def _thin_driver(family: Family) -> str:
    """", most of that move from <stratum>, whose exposed arm has 2 rows (0.5 vs 0.05)"
    when one stratum with fewer than :data:`HETEROGENEITY_MIN_ARM` rows in an arm makes
    at least half of the change standardising makes (its rows weigh by the stratum's
    size, however thin its arm): a reader then weighs the move by that arm, not by the
    dimension (a real-model collector spent a query finding that 2 patients of a mild
    stratum made a severity adjustment halve an effect). Empty otherwise."""
    if family.change is None or not family.change_parts or family.change.difference == 0:
        return ""
    stratum, part = max(family.change_parts, key=lambda t: abs(t[1]))
    _, m1, m0 = next(s for s in family.strata if s[0] == stratum)
    if min(m1.n, m0.n) >= HETEROGENEITY_MIN_ARM or part / family.change.difference < 0.5:
        return ""
    arm, n = ("exposed", m1.n) if m1.n <= m0.n else ("reference", m0.n)
    return (f", most of that move from {stratum}, whose {arm} arm has {int(n)} row"
            f"{'s' if n != 1 else ''} ({figure(m1.mean)} vs {figure(m0.mean)})")


def _flag_text(kind: FlagKind, family: Family, q_het: float, q_change: float, label: str,
               top: int, overall: Comparison, with_outcome: frozenset[str] | None = None
               ) -> str:
    """One flag's sentence with its figures. A confounding flag opens with a caution
    when its dimension fixes the metric in many rows (:func:`_flag_opening`), states the
    effect standardised to each arm's own mix when the share removed depends on it
    (:func:`_mix_note`), and over a dimension recorded with the outcome
    (``with_outcome``: the metric's tables it reads) carries a caution too."""
    if kind is FlagKind.HETEROGENEITY:
        scale = ("on the ratio scale, exposed / reference: the effect is nearer a constant "
                 "ratio than a constant difference" if family.effect_scale is EffectScale.RATIO
                 else "on the difference scale, exposed - reference: the effect is no nearer "
                 "a constant ratio")
        return (f"HETEROGENEITY: the effect of {label} differs across {family.name} beyond "
                f"chance (interaction test q = {q_het:.2g}, {scale}): "
                f"{_stratum_effects(family, top)}")
    name = "SIMPSON'S PARADOX" if kind is FlagKind.SIMPSONS_PARADOX else "CONFOUNDING"
    std, crude, change = family.standardised, family.crude, family.change
    if not math.isnan(family.share_removed):  # a share of an effect beyond chance
        low, high = family.share_removed_interval
        if family.share_removed < 0:  # "removes -46%" read as a shrink: say it grows
            removed = (f"standardising enlarges the crude effect by "
                       f"{-family.share_removed:.0%} (95% CI {-high:.0%} to {-low:.0%}; "
                       f"q = {q_change:.2g})")
        else:
            removed = (f"standardising removes {family.share_removed:.0%} of the crude effect "
                       f"(95% CI {low:.0%} to {high:.0%}; q = {q_change:.2g})")
    else:
        removed = (f"standardising moves it by {figure(change.difference)} (95% CI "
                   f"{interval(change.low, change.high)}; q = {q_change:.2g})")
    shares = ", ".join(f"{s}: {figure(m1.n / (m1.n + m0.n)) if m1.n + m0.n else 'n/a'}"
                       for s, m1, m0 in family.strata[:top])
    verdict = ("the effect reverses within its strata" if kind is FlagKind.SIMPSONS_PARADOX
               else "the effect changes once it is held fixed")
    return (f"{name} by {family.name}{_flag_opening(family, verdict)}. Over "
            f"{_strata_text(family)}: crude effect "
            f"{figure(crude.difference)} (95% CI {interval(crude.low, crude.high)}"
            f"{_all_rows_note(family, overall)}); "
            f"standardised over {family.name} {figure(std.difference)} (95% CI "
            f"{interval(std.low, std.high)}; weights: the strata's shares of all "
            f"rows); {removed}{_thin_driver(family)}.{_mix_note(family)} "
            f"Share exposed per stratum: {shares}."
            f"{_with_outcome_note(family, with_outcome)}")


MIX_SPREAD = 0.1
"""Shares removed, standardised to the exposed rows' mix and to the reference rows', at
least this far apart make a confounding flag state both ..."""

MIX_LEVEL = 0.01
"""... when the stratum effects also differ on the difference scale beyond this level
(Cochran's Q over the strata tested for heterogeneity): apart from that, two mixes give
different shares by chance alone."""


def _mix_note(family: Family) -> str:
    """When the stratum effects differ as differences (beyond :data:`MIX_LEVEL`) enough
    that standardising to the exposed rows' mix of strata and to the reference rows' mix
    removes shares :data:`MIX_SPREAD` or more apart, both, with those shares: how much a
    dimension "explains" then depends on whose mix is held fixed (three real-model
    answerers found a reweighting of their own that disagreed with the one share the
    flag stated). Empty otherwise."""
    differs = next((t for t in (family.heterogeneity, family.other_scale)
                    if t is not None and t.scale is EffectScale.DIFFERENCE), None)
    if (family.by_arm_mix is None or family.crude is None or differs is None
            or differs.p >= MIX_LEVEL or math.isnan(family.share_removed)):
        return ""
    crude = family.crude.difference
    exposed, reference = family.by_arm_mix
    removed = [(crude - effect) / crude for effect in (exposed, reference)]
    if not all(map(math.isfinite, removed)) or abs(removed[0] - removed[1]) < MIX_SPREAD:
        return ""

    def moved(share: float) -> str:
        return f"removes {share:.0%}" if share >= 0 else f"enlarges it by {-share:.0%}"

    return (f" The stratum effects differ as differences (Cochran's Q p = {differs.p:.2g}), "
            f"so the share depends on whose mix of {family.name} is held: to the exposed "
            f"rows' mix {figure(exposed)} ({moved(removed[0])}), to the reference rows' mix "
            f"{figure(reference)} ({moved(removed[1])}).")


def _stratum_effects(family: Family, top: int, scale: EffectScale | None = None) -> str:
    """Each stratum's two arms and its effect on ``scale`` (default: the scale the
    family's heterogeneity was judged on); strata with rows in one arm only have no
    effect and are left out."""
    scale = scale or family.effect_scale
    ratio = scale is EffectScale.RATIO

    def effect(m1: Moments, m0: Moments) -> float:
        return m1.mean / m0.mean if ratio and m0.mean else m1.mean - m0.mean

    both = [(stratum, m1, m0) for stratum, m1, m0 in family.strata if m1.n and m0.n]
    if len(both) > top:  # the strata furthest from the typical effect, in their order
        middle = float(np.median([effect(m1, m0) for _, m1, m0 in both]))
        furthest = sorted(range(len(both)),
                          key=lambda i: -abs(effect(both[i][1], both[i][2]) - middle))[:top]
        both = [both[i] for i in sorted(furthest)]
    return "; ".join(
        f"{stratum}: {figure(m1.mean)} vs {figure(m0.mean)}, "
        + (f"ratio {figure(effect(m1, m0))}" if ratio and m0.mean
           else f"effect {figure(m1.mean - m0.mean)}")
        + f" (n = {int(m1.n)} / {int(m0.n)})"
        for stratum, m1, m0 in both)


def _scale_dependent(families: list[tuple[Family, float, float]], top: int,
                     alpha: float) -> str | None:
    """The summary's line for dimensions across which the effect does not vary beyond
    chance on the scale chosen (q at least :data:`NEAR_LEVEL` and the flag level) but
    differs on the other (q below :data:`NEAR_LEVEL`, true spread at least
    :data:`NEAR_SPREAD`): a claim about its absolute size ("the benefit grows with age")
    and one about its relative size answer differently there, which a judge of either
    must know (at most three dimensions, the strongest first). Where the chosen scale's
    estimated spread is itself material (under :data:`NEAR_SPREAD` it is "no sign" of
    varying), the line says its test cannot tell: a ratio over strata with a handful of
    events is kept for its small Q, and two real-model answerers read "no
    heterogeneity" beside stratum intervals that did not overlap. Each dimension's entry
    names the scale kept and says whether the other scale's q passes the flag level
    (``alpha``): three answerers of one task could not tell which scale "No
    heterogeneity flagged" meant while the difference scale's q was below that level."""
    if not families:
        return None
    shown = []
    for family, q_chosen, q_other in sorted(families, key=lambda t: t[2])[:3]:
        chosen, other = family.effect_scale.value, family.other_scale.scale
        how = (f"no sign it varies that way (q = {_q(q_chosen)})"
               if family.het_spread < NEAR_SPREAD else
               f"its estimated spread between strata is {family.het_spread:.0%}, not beyond "
               f"chance (q = {_q(q_chosen)}: the test cannot tell with these rows)")
        level = ("below the flag level" if q_other < alpha
                 else f"below {NEAR_LEVEL:g}, not the flag level")
        shown.append(f"{family.name}: kept as a {chosen}, the scale on which its effect is "
                     f"more nearly constant, and {how}; as a {other.value} it varies (q = "
                     f"{q_other:.2g}, {level}): {_stratum_effects(family, top, other)}")
    more = f"; ... {len(families) - 3} more" if len(families) > 3 else ""
    return ("The effect's size depends on the scale (a claim about the arms' difference and "
            "one about their ratio answer differently across these strata; no HETEROGENEITY "
            "flag is raised on the scale not kept): " + "; ".join(shown) + more + ".")


def _q(q: float) -> str:
    return "n/a" if math.isnan(q) else f"{q:.2g}"


NEAR_LEVEL = 0.05
"""An interaction q below this but not below the flag level is named in the summary as a
near miss: weaker evidence a reader should see (a real 9-point harm in one comorbidity,
q = 0.0055, sat unseen in the rows under a flag level of 0.001), not a flag."""
NEAR_SPREAD = 0.1
"""A near miss must also be large: the strata's effects truly differ (their spread beyond
sampling error, the DerSimonian-Laird tau) by at least this share of the metric's scale
(on the ratio scale: exp(tau) - 1 of the log ratios, about 10%). The diabetes harm's is
0.25; on the pure-noise data of the tests, 3 of 80 calls still name one, as weaker
evidence (measured once, with 40 seeds, when the rule was written)."""


def _near_misses(near: list[tuple[Family, float]], alpha: float, top: int) -> str | None:
    """The summary's line for material heterogeneity with q between ``alpha`` and
    :data:`NEAR_LEVEL`, the strongest first (at most three dimensions)."""
    if not near:
        return None
    near = sorted(near, key=lambda t: t[1])
    shown = "; ".join(f"{family.name} (q = {q:.2g}: {_stratum_effects(family, top)})"
                      for family, q in near[:3])
    more = f"; ... {len(near) - 3} more in the rows" if len(near) > 3 else ""
    return (f"Heterogeneity near the level, not flagged (q below {NEAR_LEVEL:g} but not "
            f"{alpha:g}: weaker evidence than a flag, worth a look before a claim that the "
            f"effect is the same everywhere): {shown}{more}.")


FIXED_OUTCOME_SHARE = 0.2
"""Strata whose metric is one constant value in both arms, holding at least this share of
the rows, make a confounding flag open with a caution: the dimension may record the
outcome."""


def _flag_opening(family: Family, verdict: str) -> str:
    """The flag's opening after its dimension's name: ``: <verdict>``, or, when in strata
    holding a fifth of the rows or more every row of both arms has the same metric value,
    that caution first and the verdict as its alternative. There the outcome cannot
    vary, which is what a dimension recorded after or because of the outcome (a status,
    a stage, a progress) looks like, and holding a consequence of the outcome fixed is
    not an adjustment. (Stated after the figures, the caution read as a footnote to a
    finding: three real-model answerers took such a flag for a confounder first.)"""
    fixed = [(stratum, m1.mean) for stratum, m1, m0 in family.strata
             if m1.n >= 2 and m0.n >= 2 and m1.var == 0 and m0.var == 0
             and abs(m1.mean - m0.mean) <= 1e-12 * max(1.0, abs(m1.mean))]
    rows = sum(m1.n + m0.n for _, m1, m0 in family.strata)
    held = sum(m1.n + m0.n for stratum, m1, m0 in family.strata
               if stratum in {s for s, _ in fixed})
    if not fixed or rows == 0 or held / rows < FIXED_OUTCOME_SHARE:
        return f": {verdict}"
    named = ", ".join(f"{stratum} (always {figure(value)})" for stratum, value in fixed[:4])
    return (f", which may record the outcome itself. Caution: in {named} — {held / rows:.0%} "
            f"of the rows — the metric is the same for every row of both arms; if "
            f"{family.name} records the outcome's own progress or a consequence of it, "
            "holding it fixed is not an adjustment and this is no confounding: weigh the "
            f"other dimensions' standardised effects instead. Only if it is set before the "
            f"exposure is it a confounder: {verdict}")


def _with_outcome_note(family: Family, tables: frozenset[str] | None) -> str:
    """A caution for a dimension recorded with the outcome (in ``tables``, which the metric
    reads), not with the exposure: it may be a step between exposure and outcome, and
    holding a step fixed removes part of the real effect, which is not adjustment for a
    confounder. Empty when ``tables`` is None or empty."""
    if not tables:
        return ""
    where = " and ".join(sorted(tables))
    return (f" Caution: {family.name} is recorded with the outcome (in {where}, which the "
            "metric reads), not with the exposure, so it may be a consequence of the exposure "
            "(a step between exposure and outcome) rather than a cause; holding it fixed then "
            "removes part of the real effect: weigh the standardised effects over dimensions "
            "recorded before or with the exposure.")


def _crude_differs(family: Family, overall: Comparison) -> bool:
    """Whether strata with one arm only are left out and the crude effect within the
    others reads differently from the all-rows one (with no stratum left out, the two
    differ by rounding only)."""
    return bool(family.one_arm) and figure(family.crude.difference) != figure(
        overall.difference)


def _all_rows_note(family: Family, overall: Comparison) -> str:
    """``"; over all rows, the left-out strata included, -14.6"`` where
    :func:`_crude_differs`; empty otherwise."""
    if not _crude_differs(family, overall):
        return ""
    return f"; over all rows, the left-out strata included, {figure(overall.difference)}"


def _crude_within(family: Family, overall: Comparison) -> str:
    """``crude, over all 5 strata``, or, where :func:`_crude_differs`: ``the crude effect
    within the 8 of 10 strata with both arms (...), not the -14.6 over all rows`` (two
    collectors took the two "crude" effects of one summary for a contradiction)."""
    within = _strata_text(family)
    if not _crude_differs(family, overall):
        return f"crude, over {within}"
    return (f"the crude effect within {within}, not the {figure(overall.difference)} over "
            "all rows")


def _strata_text(family: Family) -> str:
    """``all 5 strata`` or ``4 of 5 strata (93% of rows; X: exposed only)``."""
    total = len(family.strata)
    if not family.one_arm and len(family.overlap) == total:
        return f"all {total} strata"
    left = "; ".join(f"{s}: {arm}" for s, arm in family.one_arm[:6])
    more = f"; ... {len(family.one_arm) - 6} more" if len(family.one_arm) > 6 else ""
    return (f"the {len(family.overlap)} of {total} strata with both arms "
            f"({family.overlap_share:.0%} of rows; left out, no overlap: {left}{more})")


def _overall_row(exposed: Moments, rest: Moments, crude: Comparison) -> dict:
    return {"dimension": "(overall)", "stratum": "(all)", "n_exposed": int(exposed.n),
            "metric_exposed": exposed.mean, "n_reference": int(rest.n),
            "metric_reference": rest.mean, "effect": crude.difference, "ci_low": crude.low,
            "ci_high": crude.high, "interaction_q": math.nan, "standardised_effect": math.nan,
            "standardised_low": math.nan, "standardised_high": math.nan,
            "share_removed": math.nan, "share_removed_low": math.nan,
            "share_removed_high": math.nan, "confounding_q": math.nan, "flag": ""}


def _summary(metric: str, label: str, versus: str, exposed: Moments, rest: Moments,
             crude: Comparison, flags: list[Flag], families: list[Family],
             alpha: float, support: Support, prepared: Prepared, exact: list[str],
             unflagged_moves: list[tuple[str, str]], copies: dict[str, float],
             set_by_outcome: dict[str, OutcomeValue], near_misses: str | None,
             scale_dependent: str | None, with_outcome: dict[str, frozenset[str]],
             one_outcome: list[OneOutcomeColumn]) -> str:
    lines = [
        f"compare_within: {metric} for {label} vs {versus}: {figure(exposed.mean)} (n = "
        f"{int(exposed.n)}) vs {figure(rest.mean)} (n = {int(rest.n)}); crude effect "
        f"{figure(crude.difference)} (95% CI {interval(crude.low, crude.high)}).",
    ]
    confounding = [f for f in families if f.confounding_tested]
    heterogeneity = [f for f in families if f.tested >= 2]
    if flags:
        lines.append(f"FLAGS ({len(flags)}):")
        lines += [f"- {f.text}" for f in flags]
    mediators = [f.dimension for f in flags if f.dimension in with_outcome
                 and f.kind in (FlagKind.CONFOUNDING, FlagKind.SIMPSONS_PARADOX)]
    if mediators:
        lines.append(f"Recorded with the outcome, not with the exposure (possibly steps "
                     f"between exposure and outcome, not confounders; see their cautions): "
                     f"{', '.join(mediators)}.")
    adjusting = [f.dimension for f in flags
                 if f.kind in (FlagKind.CONFOUNDING, FlagKind.SIMPSONS_PARADOX)]
    if set(adjusting) - set(mediators):  # real-model judges took a goal's state for a cause
        lines.append(CONSEQUENCE_NOTE)
    found = {f.kind for f in flags}
    if not confounding:
        lines.append("Confounding not tested: no dimension has two strata with rows in both "
                     "arms.")
    elif (FlagKind.CONFOUNDING not in found and FlagKind.SIMPSONS_PARADOX not in found
          and not unflagged_moves):
        lines.append(f"No confounding among the {len(confounding)} dimensions tested for it "
                     f"(whichever one is held fixed, standardising moves the crude effect by less "
                     f"than {CHANGE_IN_ESTIMATE:.0%} of it, or by an immaterial amount).")
    if unflagged_moves:
        lines.append("The effect moves when these are held fixed, with no CONFOUNDING flag "
                     "(read the standardised effect beside the crude one; why each is not "
                     "flagged is given): "
                     + "; ".join(why for _, why in unflagged_moves[:5])
                     + (f"; ... {len(unflagged_moves) - 5} more" if len(unflagged_moves) > 5
                        else "") + ".")
    if not heterogeneity:
        lines.append("Heterogeneity not tested on any dimension (see below).")
    elif FlagKind.HETEROGENEITY not in found:
        lines.append(
            f"No heterogeneity flagged among the {len(heterogeneity)} dimensions tested "
            f"for it, each tested on the scale on which its effect is more nearly constant "
            f"(false-discovery level {alpha:g}); the next line names those whose effect "
            "varies on the other scale."
            if scale_dependent else
            f"No heterogeneity beyond chance among the {len(heterogeneity)} dimensions "
            f"tested for it (false-discovery level {alpha:g}).")
    lines += [line for line in (scale_dependent, near_misses) if line]
    held = _held_fixed_line(confounding, flags, unflagged_moves)
    if held:
        lines.append(held)
    lines.append(f"Tested: confounding {len(confounding)} of {len(families)} dimensions, "
                 f"heterogeneity {len(heterogeneity)} of {len(families)} "
                 f"({support.describe()} per arm).")
    checked = [f.name for f in families if f.confounding_tested or f.tested >= 2]
    lines.append(f"Dimensions checked: {name_list(checked)}.")
    untested = [f for f in families if not f.confounding_tested]
    single = [f.name for f in untested if sum(1 for _, m1, m0 in f.strata if m1.n + m0.n) < 2]
    thin = [f for f in untested if f.name not in single]
    if single:  # "too few rows" misled a reader whose filter fixed the dimension
        lines.append(f"One value only in these rows (the where filter may fix it), so not "
                     f"tested: {name_list(single)}.")
    if thin:  # "too few rows per arm" hid that the exposed rows sat in one category
        lines.append("Not tested (fewer than two of their values hold rows of both arms, so "
                     "holding one fixed compares nothing): " + _untested(thin) + ".")
    unsplit = [f.name for f in families if f.confounding_tested and f.tested < 2]
    if unsplit:
        hint = (" (a smaller min_support tests thinner strata, with wider intervals)"
                if support.rows > HETEROGENEITY_MIN_ARM else "")
        lines.append(f"Heterogeneity not tested for {name_list(unsplit)}: it needs two strata "
                     f"with at least {max(support.rows, HETEROGENEITY_MIN_ARM)} rows in each "
                     f"arm{hint}.")
    partial = [f for f in families if f.one_arm and f.confounding_tested]  # thin: above
    if partial:
        shown = "; ".join(f"{f.name}: " + ", ".join(f"{s} ({arm})" for s, arm in f.one_arm[:4])
                          + (f", ... {len(f.one_arm) - 4} more" if len(f.one_arm) > 4 else "")
                          for f in partial[:6])
        more = f"; ... {len(partial) - 6} more dimensions" if len(partial) > 6 else ""
        lines.append(f"Strata without overlap (one arm only: no effect is measured in them "
                     f"and they are not standardised over): {shown}{more}.")
    lines += definition_lines(prepared.plan)
    if copies:
        lines.append(near_copy_line(copies, "not tested as confounders",
                                    "holding it fixed would hold the outcome fixed"))
    if set_by_outcome:
        lines.append(outcome_set_line(set_by_outcome, "not tested as confounders",
                                      "holding it fixed would hold the outcome fixed"))
    if one_outcome:
        lines.append(one_outcome_line(one_outcome, "not tested as confounders",
                                      "holding it fixed would hold the outcome fixed"))
    if exact:
        lines.append(f"Not tested: {name_list(exact)} determine(s) the metric exactly (each "
                     "value has a single metric value): part of the metric's definition, not a "
                     "confounder.")
    return "\n".join(lines)


HELD_FIXED_SHOWN = 30
"""Most dimensions the summary gives the standardised effect of, beyond those its flags
and its "not flagged" line already name."""


def _held_fixed_line(confounding: list[Family], flags: list[Flag],
                     unflagged_moves: list[tuple[str, str]]) -> str | None:
    """The effect with each dimension held fixed in turn (standardised; the ones that
    move it most first), for those the flags and the "not flagged" line do not already
    give: a reader may cite the effect adjusted for the dimension it cares about (a
    known confounder that does not move it, too) without running the tool again for it,
    whose rows may fall outside a preview."""
    named = {f.dimension for f in flags} | {name for name, _ in unflagged_moves}
    moved = sorted((f for f in confounding if f.name not in named and f.standardised
                    and f.change is not None), key=lambda f: -abs(f.change.difference))
    if not moved:
        return None
    shown = ", ".join(f"{f.name} {figure(f.standardised.difference)}"
                      for f in moved[:HELD_FIXED_SHOWN])
    more = (f", ... {len(moved) - HELD_FIXED_SHOWN} more in the rows"
            if len(moved) > HELD_FIXED_SHOWN else "")
    return (f"Effect with one dimension held fixed (standardised over its strata; 95% "
            f"intervals in the rows' standardised_low and standardised_high): {shown}{more}.")


def _untested(families: list[Family]) -> str:
    """Dimensions whose arms share fewer than two strata: by name when few (each with
    where its arms meet and where each arm lies alone), else counted per table."""
    if len(families) > 12:
        return name_list([f.name for f in families])
    return "; ".join(f"{f.name} ({_arms_text(f)})" for f in families)


def _arms_text(family: Family) -> str:
    """``both arms only in travel (84 exposed, 300 reference); exposed only: a, b`` (at
    most four strata named per arm)."""
    both = [(s, m1, m0) for s, m1, m0 in family.strata if m1.n > 0 and m0.n > 0]
    parts = [f"both arms only in {s} ({int(m1.n)} exposed, {int(m0.n)} reference)"
             for s, m1, m0 in both] or ["no value holds both arms"]
    for arm in ("exposed only", "reference only"):
        alone = [s for s, which in family.one_arm if which == arm]
        if alone:
            more = f", ... {len(alone) - 4} more" if len(alone) > 4 else ""
            parts.append(f"{arm}: {', '.join(alone[:4])}{more}")
    return "; ".join(parts)


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
