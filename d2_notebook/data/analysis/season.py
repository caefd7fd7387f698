"""Seasons for ``trend``: which seasonal grains the data covers, each tested on the
detrended metric (hour of day within each day, day of week within each week, month of
year beside the trend and change points), and the strongest kept when its Bonferroni
corrected test passes and its amplitude is material."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from d2_notebook.data.analysis.least_squares import group_mean, wls, wls_no_intercept
from d2_notebook.data.analysis.stats import is_material

__all__ = ["SEASONS", "Seasons", "find_season", "season_dummies", "season_label",
           "seasons_defined_by"]

SEASONS = {  # name -> (grouping of bucket times, cycle length in days, buckets needed)
    "month_of_year": (lambda t: t.month, 365.25, "D"),
    "day_of_week": (lambda t: t.day_of_week, 7.0, "D"),
    "hour": (lambda t: t.hour, 1.0, "h"),
}
_WITHIN = {  # season -> the period whose own level is removed before its test
    "day_of_week": lambda t: t.to_period("W").dt.start_time,
    "hour": lambda t: t.floor("D"),
}
_CYCLES = 1.5  # cycles of a season the data must span for it to be tested
_DEFINING_PARTS = {  # date part, as SQL names it -> the season it defines
    "hour": "hour", "dayofweek": "day_of_week", "dow": "day_of_week",
    "isodow": "day_of_week", "dayname": "day_of_week", "weekday": "day_of_week",
    "month": "month_of_year", "monthname": "month_of_year",
}
_PART_CALL = re.compile(r"\b(\w+)\s*\(\s*([^()]*)\)")
_DATE_PART = re.compile(r"\bdate_?part\s*\(\s*'(\w+)'\s*,\s*([^()]*)\)", re.IGNORECASE)
_EXTRACT = re.compile(r"\bextract\s*\(\s*(\w+)\s+from\s+([^()]*)\)", re.IGNORECASE)
_NAME = re.compile(r'"((?:[^"]|"")+)"(?!\s*\.)|\b([A-Za-z_]\w*)\b(?!\s*\.)')
"""A column's name, not the table alias or schema qualifying it (``i.closed_at``)."""
_NOT_NAMES = frozenset({"cast", "try_cast", "as", "timestamp", "timestamptz", "date",
                        "datetime", "with", "time", "zone"})

DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class Seasons:
    """The season tests of one call: which grains were tested, which could not be."""

    tested: tuple[str, ...]
    untested: tuple[str, ...]  # "month_of_year (needs 18 months, the data span 13)"
    best: str | None = None
    p_value: float = 1.0
    amplitude: float = 0.0


def seasons_defined_by(metric: str, time: str) -> dict[str, str]:
    """The seasons ``metric`` is computed from, each with why: a metric that reads a date
    part of the time column itself (the share of closures after hours, by ``hour`` of the
    closing time) varies with that season by its definition, and testing it would flag
    an amplitude of 1 (a real-model collector had to argue one away)."""
    column = _names(time) - _NOT_NAMES
    found: dict[str, str] = {}
    calls = [(m.group(1), m.group(2), m.group(0)) for pattern in (_DATE_PART, _EXTRACT)
             for m in pattern.finditer(metric)]
    calls += [(m.group(1), m.group(2), m.group(0)) for m in _PART_CALL.finditer(metric)]
    for part, argument, text in calls:
        season = _DEFINING_PARTS.get(part.lower())
        if season and season not in found and column & _names(argument):
            found[season] = f"the metric is computed from {text.strip()}, so it varies " \
                            "with that season by its definition"
    return found


def _names(text: str) -> set[str]:
    return {(quoted or bare).lower() for quoted, bare in _NAME.findall(text)}


def find_season(buckets: pd.DataFrame, design: np.ndarray, y: np.ndarray, w: np.ndarray,
                alpha: float, scale: float, *,
                defined: Mapping[str, str] | None = None) -> Seasons:
    """Test each seasonal grain the data covers on the detrended series; keep the
    strongest whose Bonferroni-corrected test passes and whose amplitude is material.
    A season in ``defined`` (see :func:`seasons_defined_by`) is not tested and is listed
    as untested with its reason."""
    defined = defined or {}
    times = buckets["t"]
    span = (times.max() - times.min()).total_seconds() / 86400.0
    hourly = not (times.dt.hour == 0).all()
    applicable = [name for name, (_, _, need) in SEASONS.items() if need == "D" or hourly]
    tested = [n for n in applicable if span >= _CYCLES * SEASONS[n][1] and n not in defined]
    untested = tuple(f"{n} ({defined[n]})" if n in defined else _needs(n, span)
                     for n in applicable if n not in tested)
    best, best_p, best_f, best_amplitude = None, 1.0, -1.0, 0.0
    for name in tested:
        found = _season_test(times, name, design, y, w)
        if found is None:
            continue
        f, p, amplitude = found
        if f > best_f:  # the F statistic ranks candidates even when p underflows to 0
            best, best_p, best_f, best_amplitude = name, p, f, amplitude
    if (best is None or best_p * max(1, len(tested)) >= alpha
            or not is_material(best_amplitude, scale)):
        return Seasons(tuple(tested), untested, None, min(1.0, best_p * max(1, len(tested))))
    return Seasons(tuple(tested), untested, best, best_p * len(tested), best_amplitude)


def _needs(name: str, span_days: float) -> str:
    """``month_of_year (needs 18 months of data, the data span 13)``."""
    cycle = SEASONS[name][1]
    if cycle >= 365:
        return (f"{name} (needs {_CYCLES * 12:.0f} months of data, the data span "
                f"{span_days / 30.4375:.0f})")
    if cycle >= 7:
        return f"{name} (needs {_CYCLES * 7:.1f} days of data, the data span {span_days:.1f})"
    return f"{name} (needs {_CYCLES * 24:.0f} hours of data, the data span {span_days * 24:.0f})"


def _season_test(times: pd.Series, name: str, design: np.ndarray, y: np.ndarray,
                 w: np.ndarray) -> tuple[float, float, float] | None:
    """(F statistic, p-value, amplitude) of one seasonal grain, or None if untestable.

    Hour of day and day of week are tested within each day / week (each period's own
    weighted mean removed from the metric and from the dummies); month of year beside
    ``design`` (the trend and change points)."""
    levels = sorted(set(SEASONS[name][0](times.dt)))
    dummies = season_dummies(times, name, levels)
    if not dummies:
        return None
    x = np.column_stack(dummies)
    if name in _WITHIN:
        groups = pd.factorize(_WITHIN[name](times.dt))[0]
        if len(y) <= groups.max() + 1 + x.shape[1] + 2:
            return None
        y_within = y - group_mean(y, w, groups)
        x_within = x - np.column_stack([group_mean(c, w, groups) for c in x.T])
        small_rss = float((w * y_within) @ y_within)
        coef, big_rss = wls_no_intercept(x_within, y_within, w)
        dof = len(y) - (groups.max() + 1) - x.shape[1]
    else:
        if len(y) <= design.shape[1] + x.shape[1] + 2:
            return None
        small_rss = wls(design, y, w).rss
        big = wls(np.column_stack([design, x]), y, w)
        coef, big_rss, dof = big.coef[design.shape[1]:], big.rss, big.dof
    amplitude = float(np.ptp(np.concatenate([[0.0], coef])))
    if small_rss <= 0 or dof <= 0:
        return None
    f = ((small_rss - big_rss) / x.shape[1]) / max(big_rss / dof, 1e-300)
    p = float(stats.f.sf(f, x.shape[1], dof)) if big_rss > 0 else 0.0
    return f, p, amplitude


def season_dummies(times: pd.Series, name: str | None, levels: list) -> list[np.ndarray]:
    """One 0/1 column per season level but the first (the first is the baseline)."""
    if name is None:
        return []
    groups = SEASONS[name][0](times.dt)
    return [(groups == level).to_numpy(dtype=float) for level in levels[1:]]


def season_label(name: str, level: int) -> str:
    if name == "day_of_week":
        return DAY_NAMES[level]
    return f"{level:02d}" if name == "hour" else f"month {level}"
