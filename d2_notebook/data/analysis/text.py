"""Wording shared by the tools' summaries: numbers, values and segment names."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from d2_notebook.data.analysis.stats import (
    NEAR_COPY_SHARE,
    NUMERIC_COPY_CORRELATION,
    Moments,
    OutcomeValue,
)

__all__ = ["MISSING", "OneOutcomeColumn", "describe_value", "figure", "interval", "name_list",
           "near_copy_line", "one_outcome_line", "outcome_set_line", "segment_label",
           "table_of"]

MISSING = "(missing)"


def figure(value: float, significant: int = 3) -> str:
    """A number as a model should read it: ``significant`` digits (3 unless told), no
    exponent for usual sizes."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e6:
        digits = max(0, significant - 1 - math.floor(math.log10(magnitude)))
        return f"{value:.{digits}f}"
    return f"{value:.{significant}g}"


_MOST_DIGITS = 12
"""Significant digits :func:`interval` goes up to to tell an interval's ends apart."""


def interval(low: float, high: float) -> str:
    """An interval as ``"low to high"``: each end at 3 significant digits, or with as
    many more as it takes for two different ends to read differently, so a very narrow
    interval is never shown as one point ("6.09 to 6.09" read as "given as exact": a
    real-model reporter took a slope of 6.087 to 6.093 for a suspiciously perfect one).
    """
    significant = 3
    while (_reads_alike(figure(low, significant), figure(high, significant)) and low != high
           and significant < _MOST_DIGITS):
        significant += 1
    return f"{figure(low, significant)} to {figure(high, significant)}"


def _reads_alike(low: str, high: str) -> bool:
    """Whether two printed ends are the same number ("1000.0" and "1000", "1e+06" and
    "1000000" are)."""
    try:
        return float(low) == float(high)
    except ValueError:  # "n/a"
        return low == high


def describe_value(value: str | None) -> str:
    """A dimension value as text; NULL reads as ``(missing)``."""
    return MISSING if value is None else value


def segment_label(dimension: str, value: str) -> str:
    """``patients.sex = F``; for a 1:N attribute ``has comorbidities.condition = asthma``."""
    return f"{dimension} = {value}"


_LISTED = 20
"""Most names a summary lists one by one; beyond, it counts them per table."""


def table_of(name: str) -> str:
    """The table a dimension name reads: ``customers`` for ``customers.region``,
    ``month(orders.ordered_on)`` and ``has tags.tag = x``; an expression is ``(expression)``."""
    bare = name.removeprefix("has ")
    match = re.fullmatch(r"(?:[a-z_]+\()?([^().\s]+(?:\.[^().\s]+)*?)\.[^().\s]+\)?"
                         r"(?: = .*)?", bare)
    return match.group(1) if match else "(expression)"


def name_list(names: list[str]) -> str:
    """Names one by one when few; else a count per table (``orders: 7, customers: 3``),
    so a summary never lists hundreds of names."""
    if not names:
        return "(none)"
    if len(names) <= _LISTED:
        return ", ".join(names)
    counts = Counter(table_of(n) for n in names)
    return f"{len(names)} — " + ", ".join(f"{t}: {c}" for t, c in sorted(counts.items()))


def near_copy_line(copies: dict[str, float], treated: str, consequence: str) -> str:
    """The summary line for dimensions that nearly copy the metric (name -> the share of
    its variance they explain): what the tool did with them (``treated``) and why."""
    named = ", ".join(f"{name} (explains {share:.0%} of its variance)"
                      for name, share in copies.items())
    return (f"Near-copies of the metric, {treated}: {named} — its values almost fix the "
            f"metric (at least {NEAR_COPY_SHARE:.0%}; for a numeric column of the metric's "
            f"own rows, a correlation of {NUMERIC_COPY_CORRELATION:g} or more): the same fact "
            f"recorded twice, a consequence of the outcome, or a cause that fixes it by rule "
            f"(a time or fee set from a size); {consequence}. Whether it is a cause is a "
            f"question for the schema and a direct test (the metric by its bands, or its "
            f"slope), not for this tool.")


def outcome_set_line(columns: dict[str, OutcomeValue], treated: str, consequence: str) -> str:
    """The summary line for columns the outcome sets (name -> the value every row of one
    outcome has): the value, how many of the other outcome's rows have it, what the tool
    did with the column (``treated``) and why."""
    def value(found: OutcomeValue) -> str:
        if found.value is None:
            return "empty (NULL)"
        number = found.value
        return f"= {int(number) if number.is_integer() else f'{number:.10g}'}"

    named = "; ".join(
        f"{name} ({value(found)} on every row whose metric is {found.outcome}, and on "
        f"{found.others_with} of the {found.others} rows whose metric is {1 - found.outcome})"
        for name, found in columns.items())
    return (f"Columns the outcome sets, {treated}: {named} — a value one outcome always has "
            f"and the other almost never (the split by it explains at least "
            f"{NEAR_COPY_SHARE:.0%} of the metric's variance): the outcome recorded again, a "
            f"consequence of it, not a cause; {consequence}.")


@dataclass(frozen=True)
class OneOutcomeColumn:
    """A column recorded for one outcome only
    (:func:`~d2_notebook.data.analysis.stats.outcome_left_empty`): ``name``, empty on all
    ``outcome_rows`` rows whose metric is ``outcome``, filled on ``filled`` of the
    ``others`` rows of the other outcome."""

    name: str
    outcome: int
    outcome_rows: int
    filled: int
    others: int

    @classmethod
    def of(cls, name: str, outcome: int, missing: Moments, total: Moments) -> OneOutcomeColumn:
        """From the column's missing-value moments and the population's."""
        ones = round(total.s1)
        outcome_rows = ones if outcome == 1 else round(total.n) - ones
        return cls(name, outcome, outcome_rows, round(total.n - missing.n),
                   round(total.n) - outcome_rows)


def one_outcome_line(columns: list[OneOutcomeColumn], treated: str, consequence: str) -> str:
    """The summary line naming the columns recorded for one outcome only: what the tool
    did with them (``treated``), why, and the check a reader makes."""
    named = "; ".join(
        f"{c.name}: empty on all {c.outcome_rows} rows whose metric is {c.outcome}, filled "
        f"on {c.filled} of the {c.others} rows whose metric is {1 - c.outcome}"
        for c in columns)
    return (f"Recorded for one outcome only, {treated}: {named}. A field filled only at a "
            "later step of one outcome (a date or code the other outcome never gets) "
            "restates the outcome: its filled values have a rate of exactly 0 or 1 by "
            f"construction; {consequence}. A cause that rules the outcome out would look "
            "the same: check which before reading it as a cause.")
