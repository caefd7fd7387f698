"""The analysis tools as model tools: name, a description stating every constraint, schema.

The detective wraps each :class:`AnalysisToolSpec` as a tool without re-describing it:
``input_schema`` is JSON Schema whose properties are exactly the keyword arguments of the
Python function (``spec.function(sql, **tool_input)``), and the description says what
the tool does, what each input must be and what is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from d2_notebook.data.analysis.common import DEFAULT_ALPHA
from d2_notebook.data.analysis.compare_within import compare_within
from d2_notebook.data.analysis.decompose import decompose
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool
from d2_notebook.data.analysis.segment_scan import segment_scan
from d2_notebook.data.analysis.trend import GRAINS, trend

__all__ = ["TOOL_SPECS", "AnalysisToolSpec", "spec_for"]


@dataclass(frozen=True)
class AnalysisToolSpec:
    """One analysis tool as offered to a model.

    Attributes:
        tool: Which tool (``tool.value`` is the name models call).
        description: Model-facing text: what it does, each constraint, what it returns.
        input_schema: JSON Schema of the input object (required keys listed).
        function: ``function(sql, **input)`` runs it.
    """

    tool: AnalysisTool
    description: str
    input_schema: dict[str, Any]
    function: Callable[..., AnalysisResult] = field(repr=False)

    @property
    def name(self) -> str:
        """The tool name models call."""
        return self.tool.value


_COMMON = {
    "source": {"type": "string", "minLength": 1, "description": (
        "A table name, or a FROM clause with joins and aliases (without the word FROM), "
        "e.g. \"orders o JOIN customers c USING (customer_id)\". Tables only: no SELECT, "
        "WHERE, GROUP BY or LIMIT here.")},
    "metric": {"type": "string", "minLength": 1, "description": (
        "Exactly one mean over rows, avg(<per-row expression>) over the source's columns: a "
        "rate as avg(CASE WHEN <predicate> THEN 1 ELSE 0 END), a mean as avg(<numeric "
        "column>). A per-entity yes/no is an EXISTS or IN test: avg(CASE WHEN EXISTS "
        "(SELECT 1 FROM <table> x WHERE x.<key> = <alias>.<key> AND <predicate>) THEN 1 "
        "ELSE 0 END), one row per source row, no join that repeats rows. Sums, counts, "
        "ratios of aggregates, DISTINCT, FILTER, windows and subqueries that return a "
        "value are refused.")},
    "where": {"type": "string", "description": (
        "Optional filter on the population: one boolean SQL expression over the source "
        "(no WHERE keyword, no subquery that writes; one statement only).")},
}
_DIMENSIONS = {"type": "array", "items": {"type": "string", "minLength": 1}, "description": (
    "Optional dimensions to split by: names as the tool lists them (e.g. \"customers.region\", "
    "\"month_of_year(orders.ordered_on)\", \"has order_items.category\" for a 1:N table; an alias"
    " or a bare column may stand for table.column: \"month_of_year(o.ordered_on)\", but "
    "month(...) and quarter(...) of an alias or a bare column are SQL, the month or quarter of "
    "the year with every year together: write the table for the calendar month or quarter with "
    "its year) or SQL expressions over the source's aliases. Default: every candidate dimension "
    "reachable from the source by key. A named dimension is used even where the default leaves it"
    " out (a column only the where filter reads, such as c.tenure under c.tenure >= 12, is split "
    "within the filtered rows), except a column the metric is defined from (the metric, a join "
    "clause or another input reads it): the summary names which input reads it.")}
_DIMENSIONS_AS_IN_SCAN = {**_DIMENSIONS, "description": (
    "Optional dimensions to split by, named as segment_scan's dimensions input says. "
    "Default: every candidate dimension reachable from the source by key.")}
"""The ``dimensions`` input of the tools offered with segment_scan, pointing to its rules."""
_SETTINGS = {
    "min_support": {"type": "integer", "minimum": 2, "description": (
        "Fewest rows a group needs to be tested. Default: adapted to the data (1% of the "
        "rows, at least 10 and at most 30; named dimensions are tested down to 10 rows), "
        "stated in the summary. Groups below it carry no p or q: 'not tested (n = ...)'.")},
    "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1,
              "default": DEFAULT_ALPHA, "description": (
                  "False-discovery level over all the tests of one call (default "
                  f"{DEFAULT_ALPHA:g}).")},
}
_VALUE = {"type": ["string", "number", "boolean"]}

_CANDIDATES = (
    "Candidate dimensions: low-cardinality columns (at most 30 values) of the source's "
    "tables and of every table reachable by key (N:1 joins add attributes; 1:N tables "
    "become yes/no flags 'has <table.column> = <value>'), numeric columns cut into "
    "five quantile bins, and date parts (year, quarter, month, month of year, day of "
    "week, hour). Never used: the columns the metric's definition reads (the metric, the "
    "source's join clauses, an exposure or time input), except the date parts of a "
    "metric's time column that has no NULL (the start of a time span). Left out unless "
    "named: the columns only the where filter reads (the summary names them; the date "
    "parts of a time window stay in), and the other columns of a table the metric reads "
    "that is joined 1:1 to another source table (a results table: they are recorded with "
    "the result). "
)
"""Which dimensions the candidate-dimension tools split by: stated once, in
``segment_scan`` (always offered with ``compare_within`` and ``decompose``, which point to
it instead of repeating ~900 characters in every request)."""

_CANDIDATES_AS_IN_SCAN = (
    "Candidate dimensions, and the columns never used or left out unless named: as in "
    "segment_scan. "
)

_FLAGS_AND_SQL = (
    "A flag needs a difference of at least 1% of the metric's scale as well as passing "
    "its test, so rounding noise is never flagged. The summary says how many of the "
    "groups or dimensions were tested and which were not, with their size. The "
    "generated SQL runs read-only through the SQL guard, in one pass."
)

TOOL_SPECS: tuple[AnalysisToolSpec, ...] = (
    AnalysisToolSpec(
        AnalysisTool.SEGMENT_SCAN,
        "Find the segments whose metric deviates most from the rest of the population, "
        "across every candidate dimension at once. Each row: dimension, value, n, metric, "
        "the rest's metric, difference with its 95% interval, p and Benjamini–Hochberg q, "
        "and a score that accounts for sample size (the interval end nearest zero). "
        "Segments are tested when both sides have at least min_support rows and flagged "
        "when q < alpha and the difference is material; the summary lists the flagged "
        "segments first, each once (segments of other dimensions that are the same rows "
        "are named with it), and names apart, unflagged, a segment whose metric is one "
        "value on every row (a placeholder such as 0 for rows not measured yet) with a "
        "where that leaves it out. " + _CANDIDATES + _FLAGS_AND_SQL,
        {"type": "object", "additionalProperties": False,
         "required": ["source", "metric"],
         "properties": {**_COMMON, "dimensions": _DIMENSIONS, **_SETTINGS}},
        segment_scan,
    ),
    AnalysisToolSpec(
        AnalysisTool.COMPARE_WITHIN,
        "Measure the effect of an exposure (exposure = value, against exposure = reference "
        "or every other non-null value) on the metric: overall, within each stratum of "
        "each candidate dimension (each 1:N yes/no flag is its own dimension), "
        "and directly standardised over each dimension (over the strata that have both "
        "arms; strata with one arm only are named, and an effect that rests on them is said "
        "so; every row gives the "
        "standardised effect with its 95% interval). Flags, named in "
        "words first: CONFOUNDING (standardising over the dimension removes 10% or more of "
        "the crude effect, beyond chance, and the exposure's share differs across its "
        "strata; the share removed is given with its interval, in the rows' "
        "share_removed, share_removed_low and share_removed_high, standardised to all rows' "
        "mix of strata; where the effect differs by stratum, the flag also gives it for "
        "each arm's own mix; a flag by a dimension that fixes the metric in many rows "
        "opens with a caution that it may record the outcome itself), SIMPSON'S PARADOX (the "
        "standardised effect has the opposite sign, both intervals excluding zero), "
        "HETEROGENEITY (the effect differs between strata beyond chance on the scale it "
        "lives on, ratio or difference, whichever is more nearly constant and named: a "
        "constant ratio is not heterogeneity; Cochran's Q over strata with at least "
        "min_support and never fewer than 10 rows in each arm; the strata and their "
        "effects are listed; interaction_q and confounding_q are Benjamini–Hochberg "
        "adjusted over the dimensions of the call, so one split reads differently in "
        "calls over other dimensions). Time dimensions (year, quarter, month of a date column) are "
        "candidates like any other. One call is the heterogeneity check a "
        "verdict on an effect needs. value and reference must be values that occur in "
        "the population; reference must differ from value. "
        + _CANDIDATES_AS_IN_SCAN + _FLAGS_AND_SQL,
        {"type": "object", "additionalProperties": False,
         "required": ["source", "metric", "exposure", "value"],
         "properties": {
             **_COMMON,
             "exposure": {"type": "string", "minLength": 1, "description": (
                 "A column expression over the source whose value defines the exposed "
                 "group, e.g. t.variant. Its columns are not used as dimensions.")},
             "value": {**_VALUE, "description": "The exposed value of exposure."},
             "reference": {**_VALUE, "description": (
                 "Optional value compared against (default: every other non-null value).")},
             "dimensions": _DIMENSIONS_AS_IN_SCAN, **_SETTINGS,
         }},
        compare_within,
    ),
    AnalysisToolSpec(
        AnalysisTool.TREND,
        "The metric per period of a date or timestamp column: each period's n, metric and "
        "95% interval, the fitted line, the slope per period with its interval (TREND "
        "flag), up to two change points (CHANGE POINT flag, Bonferroni over the period "
        "starts tried), each with its level before and after and a 95% range of dates; a "
        "metric that moves as flat levels with a step (steps beat the line by BIC) is given as "
        "the step, not as a trend, and the summary says which shape won and by how much; "
        "the strongest seasonal grain among month of year, day "
        "of week and hour that the data covers 1.5 cycles of, tested on the detrended "
        "metric (SEASON flag; grains with fewer cycles are named as not tested), and a "
        "clearly labelled LINEAR PROJECTION of the next periods with 95% prediction "
        "intervals. Every flag needs a material size (1% of the metric's scale) as well as "
        "its test; a metric that is an exact function of time is reported as "
        "DETERMINISTIC, with no interval or p-value. Needs at least 3 periods of the "
        "grain. The generated SQL runs read-only through "
        "the SQL guard in one pass.",
        {"type": "object", "additionalProperties": False,
         "required": ["source", "metric", "time"],
         "properties": {
             **_COMMON,
             "time": {"type": "string", "minLength": 1, "description": (
                 "A DATE or TIMESTAMP column expression over the source.")},
             "grain": {"type": "string", "enum": list(GRAINS), "description": (
                 "Period length; default the finest giving at most 60 periods.")},
             "periods": {"type": "integer", "minimum": 0, "maximum": 24, "default": 3,
                         "description": "Periods to project after the last (default 3)."},
             "alpha": _SETTINGS["alpha"],
         }},
        trend,
    ),
    AnalysisToolSpec(
        AnalysisTool.DECOMPOSE,
        "Split the change of the metric between two periods into the share each segment "
        "explains, over every candidate dimension: per segment, the rate part (its own "
        "metric moved, weighted by its mean row share), the mix part (its share of the "
        "rows moved, times how far its metric lies from the overall one: a segment that "
        "grew below the average pulls the metric down) and their sum, the contribution; "
        "over one dimension's segments the contributions add up to the whole change, so "
        "share_of_change = contribution / change (negative: the segment worked against "
        "the change). Each row: n, row share and metric in each period, the rate change "
        "with its 95% interval and Benjamini–Hochberg q, rate part, mix part, "
        "contribution with its 95% interval, share_of_change with its 95% interval "
        "(given the row shares; empty for a segment with rows in one period only, whose "
        "contribution is all mix and no clean size). The first row is the whole change "
        "with its interval; "
        "then one '(mix of all segments)' row per dimension: its whole mix shift with its "
        "interval and share of the change. Each row also compares the segment's rate "
        "change with the rest of its dimension's (rest_rate_change; vs_rest, the "
        "difference, with its 95% interval and q). DRIVER flag: a segment whose rate "
        "change is beyond chance and beyond the rest's in the direction it moved, with a "
        "material contribution; a dimension whose segments all moved alike (by the same "
        "amount, not the same percentage) gets none, and "
        "the summary says its shares follow row counts and localise nothing. Shares of "
        "different dimensions never add up across dimensions. Use it to size a "
        "factor's part in a rise or fall (a minor contributor explains a small share). "
        + _CANDIDATES_AS_IN_SCAN + _FLAGS_AND_SQL,
        {"type": "object", "additionalProperties": False,
         "required": ["source", "metric", "period"],
         "properties": {
             **_COMMON,
             "period": {"type": "string", "minLength": 1, "description": (
                 "A column expression over the source naming each row's period, e.g. "
                 "year(o.placed_on) or date_trunc('month', o.placed_on); compared with "
                 "before and after as text. Its columns are not used as dimensions.")},
             "before": {"type": ["string", "number"], "description": (
                 "The earlier period (as period gives it, e.g. 2023, or '2023-01-01' "
                 "for a date_trunc); "
                 "default the smallest value.")},
             "after": {"type": ["string", "number"], "description": (
                 "The later period; default the largest value.")},
             "dimensions": _DIMENSIONS_AS_IN_SCAN, **_SETTINGS,
         }},
        decompose,
    ),
)


def spec_for(name: str) -> AnalysisToolSpec:
    """The spec of the tool called ``name``.

    Raises:
        KeyError: No such tool (the message lists the names).
    """
    for spec in TOOL_SPECS:
        if spec.name == name:
            return spec
    raise KeyError(f"no analysis tool {name!r}; tools: {', '.join(s.name for s in TOOL_SPECS)}")
