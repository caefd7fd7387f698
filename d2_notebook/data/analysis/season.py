"""Seasons for ``trend``: which seasonal grains the data covers, each tested on the
detrended metric (hour of day within each day, day of week within each week, month of
year beside the trend and change points), and the strongest kept when its Bonferroni
corrected test passes and its amplitude is material."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd
from scipy import stats

from d2_notebook.data.analysis.least_squares import group_mean, wls, wls_no_intercept
from d2_notebook.data.analysis.stats import is_material
from d2_notebook.data.parse_tree import iter_nodes, parser_cursor, select_node, serialize
from d2_notebook.errors import QueryFailedError

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
    # parts within the year fix the month too (a share closed in Q4, in week 52)
    "quarter": "month_of_year", "dayofyear": "month_of_year", "week": "month_of_year",
    "weekofyear": "month_of_year",
}
_PART_SPELLINGS = {  # date_part's other names of those parts -> the season
    **dict.fromkeys(("hours", "h", "hr", "hrs"), "hour"),
    **dict.fromkeys(("months", "mon", "mons", "doy", "weeks", "w", "isoweek"),
                    "month_of_year"),
}
_PART_ARGUMENT = frozenset({"date_part", "datepart"})  # EXTRACT parses as date_part
_FORMATS = frozenset({"strftime"})
_FORMAT_SEASONS = {  # strftime directive -> the season it reads
    **dict.fromkeys(("H", "-H", "I", "-I", "p", "X", "T"), "hour"),
    **dict.fromkeys(("a", "A", "w", "u"), "day_of_week"),
    **dict.fromkeys(("b", "h", "B", "m", "-m", "j", "-j", "U", "W", "V"), "month_of_year"),
}
_FORMAT_YEARS = frozenset({"Y", "y", "-y", "G", "c", "x"})
"""Directives naming the year: such a format reads a calendar period (``'%Y-%m'`` is a
``date_trunc('month', ...)``), not a season."""
_DIRECTIVE = re.compile(r"%(-?.)")

DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


@dataclass(frozen=True)
class Seasons:
    """The season tests of one call: which grains were tested, which could not be."""

    tested: tuple[str, ...]
    untested: tuple[str, ...]  # "month_of_year (needs 18 months ..., the data span 12.0)"
    best: str | None = None
    p_value: float = 1.0
    amplitude: float = 0.0


def seasons_defined_by(metric: str, time: str) -> dict[str, str]:
    """The seasons ``metric`` is computed from, each with why: a metric that reads a date
    part of the time column itself (the share of closures after hours, by ``hour`` of the
    closing time) varies with that season by its definition, and testing it would flag
    an amplitude of 1 (a real-model collector had to argue one away).

    Both texts are read from DuckDB's parse trees (nothing runs). A function call defines
    a season when it takes a date part (:data:`_DEFINING_PARTS`) of an expression that
    reads a column ``time`` reads, matched by column name whatever its table qualifier,
    case and quoting (``t.closed_at``, ``"Closed At"``, ``closed_at::TIMESTAMP``,
    ``closed_at + INTERVAL 1 HOUR``): ``date_part('hour', ...)``, ``datepart``,
    ``extract(hour FROM ...)``, the one-word calls (``hour(...)``, ``dayname(...)``,
    ``closed_at.hour()``...)
    and ``strftime`` with a format holding a directive of the season
    (:data:`_FORMAT_SEASONS`) but not the year. ``date_trunc`` and a format naming the
    year read a calendar period, not a season; a date part of another column, or of a
    duration (``closed_at - opened_at``, ``age(...)``: its hours are a length), is still
    tested. Parts within the year (quarter, week, day of year) fix the month of year.
    Each season's reason quotes the first call defining it as written (DuckDB's
    rendering when the tree holds no position for it). A metric or time that does not
    parse defines no season: ``{}``.
    """
    statement = f"SELECT {metric}"
    try:
        tree = serialize(statement)
        columns = _columns(select_node(f"SELECT {time}"))
    except QueryFailedError:
        return {}
    found: dict[str, str] = {}
    for node in iter_nodes(tree["statements"][0]["node"]):
        if node.get("class") != "FUNCTION":
            continue
        seasons = [s for s in _seasons_of(node) if s not in found]
        if seasons and columns & _read_by(node) and not _reads_a_duration(node):
            reason = (f"the metric is computed from {_call_text(node, statement)}, so "
                      "it varies with that season by its definition")
            found.update(dict.fromkeys(seasons, reason))
    return found


def _columns(node: object) -> set[str]:
    """The lower-cased names of the columns an expression reads, without qualifiers."""
    return {str(inner["column_names"][-1]).lower() for inner in iter_nodes(node)
            if inner.get("class") == "COLUMN_REF" and inner.get("column_names")}


def _read_by(call: dict) -> set[str]:
    """The columns a function call reads: in its arguments, or before its dot when it
    has none (``closed_at.hour()`` parses as a function ``hour`` of a schema
    ``closed_at``; in ``main.hour(x)`` the qualifier is a schema)."""
    arguments = call.get("arguments")
    receiver = ({str(call["schema"]).lower()} if call.get("schema") and not arguments
                else set())
    return _columns(arguments) | receiver


def _reads_a_duration(call: dict) -> bool:
    """Whether a date-part call reads a duration, not a time: a difference of two
    column expressions (``closed_at - opened_at``) or ``age(...)``, whose hour is a
    length, not the time of day."""
    for inner in iter_nodes(call.get("arguments")):
        if inner.get("class") != "FUNCTION":
            continue
        name = str(inner.get("function_name", "")).lower()
        operands = [a.get("expression", a) for a in inner.get("arguments") or []]
        if name == "age" or (name == "-" and len(operands) == 2
                             and all(_columns(o) for o in operands)):
            return True
    return False


def _seasons_of(call: dict) -> list[str]:
    """The seasons a function call reads a date part for, from its name, its part
    argument (``date_part``; ``extract`` parses as one) or its ``strftime`` format."""
    name = str(call.get("function_name", "")).lower()
    arguments = [a.get("expression", a) for a in call.get("arguments") or []]
    if name in _PART_ARGUMENT:
        parts = _strings(arguments[:1])
        spellings = _DEFINING_PARTS | _PART_SPELLINGS
        return [spellings[p.lower()] for p in parts if p.lower() in spellings]
    if name in _FORMATS:  # the format is a direct argument, not a nested call's
        formats = [a for a in arguments if isinstance(a, dict) and a.get("class") == "CONSTANT"]
        return [season for text in _strings(formats) for season in _format_seasons(text)]
    return [_DEFINING_PARTS[name]] if name in _DEFINING_PARTS else []


def _strings(node: object) -> list[str]:
    """The string constants in a parse (sub)tree (``'hour'``, ``['hour', 'minute']``)."""
    return [str(inner["literal"].get("text", "")) for inner in iter_nodes(node)
            if inner.get("class") == "CONSTANT"
            and (inner.get("literal") or {}).get("kind") == "STRING"]


def _format_seasons(text: str) -> list[str]:
    """The seasons a ``strftime`` format reads: ``'%H'`` the hour, ``'%a'`` the day of
    week, ``'%m'`` the month of year; none if it names the year (a calendar period)."""
    directives = _DIRECTIVE.findall(text)
    if _FORMAT_YEARS.intersection(directives):
        return []
    return [_FORMAT_SEASONS[d] for d in directives if d in _FORMAT_SEASONS]


def _call_text(call: dict, statement: str) -> str:
    """A function call as written in ``statement`` (the tree's positions count UTF-8
    bytes), or DuckDB's own rendering of it when the tree holds no position for it."""
    encoded = statement.encode()
    start = int(call.get("query_location", -1))
    end = start + int(call.get("query_location_length", 0))
    if 0 <= start < end <= len(encoded):
        return encoded[start:end].decode(errors="replace").strip()
    alone = serialize("SELECT NULL")
    alone["statements"][0]["node"]["select_list"] = [call]
    try:
        row = parser_cursor().execute("SELECT json_deserialize_sql(?::JSON)",
                                      [json.dumps(alone)]).fetchone()
    except duckdb.Error:
        return f"{call.get('function_name', 'a date part')}(...)"
    return str(row[0]).removeprefix("SELECT ")


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
    untested = tuple(f"{n} ({defined[n]})" if n in defined
                     else _needs(n, span, times.min(), times.max())
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


def _needs(name: str, span_days: float, first: pd.Timestamp, last: pd.Timestamp) -> str:
    """``month_of_year (needs 18 months from the first period to the last, the data span
    12.0)``: months are counted on the calendar (2023-01-01 to 2024-01-01 is 12.0, not
    11.9 days-over-30.4) and cut down to a tenth, never rounded up, so a span short of the
    need never reads as reaching it (17.6 months had read "the data span 18"); "from the
    first period to the last" says why 13 monthly periods span 12 (a collector read "13
    periods" beside "the data span 12" as a contradiction)."""
    cycle = SEASONS[name][1]
    if cycle >= 365:
        return (f"{name} (needs {_CYCLES * 12:.0f} months from the first period to the last, "
                f"the data span {math.floor(_months_between(first, last) * 10) / 10:.1f})")
    if cycle >= 7:
        return (f"{name} (needs {_CYCLES * 7:.1f} days of data, the data span "
                f"{math.floor(span_days * 10) / 10:.1f})")
    return (f"{name} (needs {_CYCLES * 24:.0f} hours of data, the data span "
            f"{math.floor(span_days * 24):.0f})")


def _months_between(first: pd.Timestamp, last: pd.Timestamp) -> float:
    """Calendar months from ``first`` to ``last``: whole months, then the rest in days
    over an average month."""
    whole = (last.year - first.year) * 12 + last.month - first.month
    if first + pd.DateOffset(months=whole) > last:
        whole -= 1
    rest = last - (first + pd.DateOffset(months=whole))
    return whole + rest.total_seconds() / 86400.0 / 30.4375


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
