"""Wording shared by the tools' summaries: numbers, values and segment names."""

from __future__ import annotations

import math

__all__ = ["MISSING", "describe_value", "figure", "segment_label"]

MISSING = "(missing)"


def figure(value: float) -> str:
    """A number as a model should read it: 3 significant digits, no exponent for usual sizes."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if value == 0:
        return "0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e6:
        digits = max(0, 2 - math.floor(math.log10(magnitude)))
        return f"{value:.{digits}f}"
    return f"{value:.3g}"


def describe_value(value: str | None) -> str:
    """A dimension value as text; NULL reads as ``(missing)``."""
    return MISSING if value is None else value


def segment_label(dimension: str, value: str) -> str:
    """``patients.sex = F``; for a 1:N attribute ``has comorbidities.condition = asthma``."""
    return f"{dimension} = {value}"
