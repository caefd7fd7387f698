"""trend: the metric per time period, its slope, change points, season and a projection.

One pass groups the rows by a fine time bucket (hour for timestamps that carry hours,
else day) and returns the moments per bucket; everything else is weighted least squares
on the bucket means (weights = rows per bucket, so the residual variance absorbs any
extra day-to-day dispersion):

- **trend**: slope of a straight line, per period of the chosen grain, with its 95%
  interval (t distribution);
- **change points**: up to two breaks, each a new level and slope from a bucket on
  (up to 200 evenly spaced candidates, none in the first or last two periods), searched
  greedily; a break counts when the nested-model F test, Bonferroni corrected for the
  number of candidates tried, passes and it changes the level or the slope materially
  (by the end of the series); a second break in the period of the first is the same one;
- **season**: month of year, day of week and hour of day (those the data spans at least
  1.5 cycles of; the others are named as not tested, with the span they need), each
  tested on the detrended series: hour of day within each day, day of week within each
  week (the day's or week's own level removed, so a trend or a metric that depends only
  on the date cannot pose as a season), month of year as dummies beside the trend and
  change points (nested F test, Bonferroni over the candidates); the strongest is
  reported when its amplitude is material;
- **projection**: the last trend segment (plus the season) extended over the next
  periods, with 95% prediction intervals, labelled as a linear projection.

The three families share ``alpha`` (each gets a third), so pure noise raises a flag in
about ``alpha`` of calls. Every flag must also be material
(:func:`~d2_notebook.data.analysis.stats.is_material`: the slope over the whole span, a
level shift or slope change, a season's amplitude). A metric the straight line fits
exactly (zero residual variance) is reported as **deterministic**, an exact function of
time, with its slope and no interval or p-value: there is no chance to test against.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from d2_notebook.data.analysis.common import DEFAULT_ALPHA, check_settings, prepare, run_pass
from d2_notebook.data.analysis.least_squares import Fit, nested_p, wls
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool, Flag, FlagKind, capped
from d2_notebook.data.analysis.season import (
    SEASONS,
    Seasons,
    find_season,
    season_dummies,
    season_label,
)
from d2_notebook.data.analysis.stats import (
    RELATIVE_TOLERANCE,
    Moments,
    is_material,
    metric_scale,
    wilson_interval,
)
from d2_notebook.data.analysis.text import figure
from d2_notebook.data.catalog_access import dialect_sql

if TYPE_CHECKING:
    from d2_notebook.data.guarded_sql import GuardedSQL

__all__ = ["GRAINS", "trend"]

GRAINS: dict[str, tuple[str, float]] = {  # name -> (pandas period code, length in days)
    "hour": ("h", 1 / 24), "day": ("D", 1.0), "week": ("W", 7.0), "month": ("M", 30.4375),
    "quarter": ("Q", 91.3125), "year": ("Y", 365.25),
}  # fmt: skip
COLUMNS = ["period", "kind", "n", "metric", "ci_low", "ci_high", "fitted"]
_MAX_PERIODS = 60
_MAX_BREAK_CANDIDATES = 200  # break times tried (evenly spaced buckets, 2 periods in)
_DETERMINISTIC = 1e-7
"""A straight line whose residuals are below this share of the metric's scale fits exactly."""



def trend(
    sql: GuardedSQL,
    *,
    source: str,
    metric: str,
    time: str,
    grain: str | None = None,
    where: str | None = None,
    periods: int = 3,
    alpha: float = DEFAULT_ALPHA,
    min_support: int = 2,
) -> AnalysisResult:
    """The metric per period of ``grain`` with slope, change points, season and projection.

    Args:
        sql: The guarded connection; the generated statement runs through it.
        source: A table, or a FROM clause with joins and aliases.
        metric: One mean over rows, ``avg(<per-row expression>)``.
        time: A date or timestamp column expression over the source.
        grain: ``hour``, ``day``, ``week``, ``month``, ``quarter`` or ``year``; default the
            finest that gives at most 60 periods.
        where: Optional filter on the population (one boolean expression).
        periods: Periods to project after the last one (0 for none, at most 24).
        alpha: Level shared by the trend, change-point and season tests.
        min_support: Fewest rows a period of ``grain`` needs to enter the fit.

    Returns:
        One row per observed period, then the projected ones (``kind`` = ``projection``).

    Raises:
        ValueError: Unknown grain, too few periods to fit, bad settings.
        UnsafeSQLError / QueryFailedError: As :func:`segment_scan` (``time`` must bind).
    """
    check_settings(min_support, alpha)
    sql = dialect_sql(sql)  # any source: its SQL is transpiled and guarded there
    if grain is not None and grain not in GRAINS:
        raise ValueError(f"grain must be one of {', '.join(GRAINS)}, got {grain!r}")
    if not isinstance(periods, int) or not 0 <= periods <= 24:
        raise ValueError(f"periods must be an integer from 0 to 24, got {periods!r}")
    if not isinstance(time, str) or not time.strip():
        raise ValueError("time is required: a date or timestamp column over the source")
    prepared = prepare(sql, source=source, metric=metric, where=where, dimensions=[],
                       exclude={"time": time}, with_dimensions=False)
    bucket = f"date_trunc('hour', ({time})::TIMESTAMP)"
    scan = run_pass(sql, prepared, extra=((bucket, "__t"),), by=("__t",))
    buckets = _buckets(scan.moments)
    if buckets.empty:
        raise ValueError(f"no row of the population has a {time} value; check time and where")
    if (buckets["t"].dt.hour == 0).all():  # dates, or timestamps at midnight: days
        buckets = _regroup(buckets, buckets["t"].dt.floor("D"))
    grain = grain or _auto_grain(buckets["t"])
    code, length = GRAINS[grain]
    buckets["period"] = buckets["t"].dt.to_period(code).dt.start_time
    # Support counts per period of the grain, not per hourly bucket: a period of many
    # sparse hours is as well supported as one busy hour.
    support = buckets.groupby("period")["n"].transform("sum")
    buckets = buckets[support >= min_support].reset_index(drop=True)
    if buckets["period"].nunique() < 3:
        raise ValueError(f"trend needs at least 3 periods of {grain}; use a finer grain")
    days = (buckets["t"] - buckets["t"].min()).dt.total_seconds().to_numpy() / 86400.0
    y, w = buckets["mean"].to_numpy(), buckets["n"].to_numpy()
    scale = metric_scale(Moments(float(buckets["n"].sum()), float(buckets["s1"].sum()),
                                 float(buckets["s2"].sum())))
    each = alpha / 3
    t = days / length
    base = np.column_stack([np.ones_like(days), t])
    linear = wls(base, y, w)
    # an exact function of the time, or of the date alone (rows at any hour of a day
    # share the day's value): no chance to test against
    days_only = np.column_stack([np.ones_like(days), np.floor(days + 1e-9) / length])
    for exact in (base, days_only):
        line = wls(exact, y, w)
        if _is_deterministic(line, w, scale):
            frame = _rows(buckets, exact @ line.coef, line, [], (None, []), grain, periods,
                          length)
            summary = _summary(metric, time, grain, frame, [], periods,
                               _deterministic_line(line, grain), None)
            return capped(AnalysisTool.TREND, scan.sql, frame, sql.max_rows,
                          scan.duration_s, summary, [])
    breaks = _breaks(base, t, y, w, buckets["period"], each, scale)
    seasons = find_season(buckets, np.column_stack([base, *_break_columns(t, breaks)]), y, w,
                      each, scale)
    season = seasons.best
    levels = sorted(set(SEASONS[season][0](buckets["t"].dt))) if season else []
    extra = season_dummies(buckets["t"], season, levels)
    if season:
        breaks = _breaks(np.column_stack([base, *extra]), t, y, w, buckets["period"], each,
                         scale)
    design = np.column_stack([base, *_break_columns(t, breaks), *extra])
    fit = wls(design, y, w)
    flags = _flags(linear, fit, breaks, seasons, buckets, grain, each, metric, scale,
                   float(t.max()))
    frame = _rows(buckets, design @ fit.coef, fit, breaks, (season, levels), grain, periods,
                  length)
    summary = _summary(metric, time, grain, frame, flags, periods, None, seasons)
    return capped(AnalysisTool.TREND, scan.sql, frame, sql.max_rows, scan.duration_s,
                  summary, flags)


def _is_deterministic(fit: Fit, w: np.ndarray, scale: float) -> bool:
    """Whether the line fits every bucket exactly (residuals are rounding noise)."""
    residual = math.sqrt(max(fit.rss, 0.0) / max(float(w.sum()), 1.0))
    return residual <= _DETERMINISTIC * max(scale, abs(float(fit.coef[0])), 1e-300)


def _deterministic_line(fit: Fit, grain: str) -> str:
    slope = float(fit.coef[1])
    change = "constant" if abs(slope) <= 1e-12 * max(1.0, abs(float(fit.coef[0]))) else (
        f"{'rises' if slope > 0 else 'falls'} by exactly {figure(abs(slope))} per {grain}")
    return (f"DETERMINISTIC: the metric is an exact function of time — a straight line that "
            f"{change} (zero residual variance: no interval, p-value, change point or "
            f"season test applies).")


def _buckets(moments: dict) -> pd.DataFrame:
    rows = [(pd.Timestamp(key[2]), m.n, m.s1, m.s2) for key, m in moments.items()
            if key[0] < 0 and key[2] is not None and m.n > 0]
    frame = pd.DataFrame(rows, columns=["t", "n", "s1", "s2"]).sort_values("t")
    frame = frame.reset_index(drop=True)
    frame["mean"] = frame["s1"] / frame["n"]
    return frame


def _regroup(buckets: pd.DataFrame, key: pd.Series) -> pd.DataFrame:
    grouped = buckets.assign(t=key).groupby("t", as_index=False)[["n", "s1", "s2"]].sum()
    grouped["mean"] = grouped["s1"] / grouped["n"]
    return grouped


def _auto_grain(times: pd.Series) -> str:
    hourly = not (times.dt.hour == 0).all()
    for name, (code, _) in GRAINS.items():
        if name == "hour" and not hourly:
            continue
        if times.dt.to_period(code).nunique() <= _MAX_PERIODS:
            return name
    return "year"


def _break_columns(t: np.ndarray, breaks: list[float]) -> list[np.ndarray]:
    columns = []
    for tau in breaks:
        columns += [(t >= tau).astype(float), np.clip(t - tau, 0, None)]
    return columns


def _breaks(base: np.ndarray, t: np.ndarray, y: np.ndarray, w: np.ndarray,
            period: pd.Series, alpha: float, scale: float) -> list[float]:
    """Up to two break times (in grain units), each kept when its Bonferroni test passes
    and it shifts the level or the slope materially; one per period of the grain."""
    starts = sorted(set(period))
    inner = (period >= starts[2]).to_numpy() & (period <= starts[-3]).to_numpy()
    positions = np.unique(t[inner]) if len(starts) > 4 else np.array([])
    step = max(1, math.ceil(len(positions) / _MAX_BREAK_CANDIDATES))
    candidates = list(positions[::step])
    period_of = dict(zip(t.tolist(), period.tolist(), strict=False))
    breaks: list[float] = []
    end = float(t.max())
    for _ in range(2):
        current = np.column_stack([base, *_break_columns(t, breaks)])
        small = wls(current, y, w)
        taken = {period_of.get(b) for b in breaks}
        best, best_fit = None, None  # the least residual sum of squares (p may underflow)
        for tau in candidates:
            if period_of.get(tau) in taken or current.shape[0] <= current.shape[1] + 4:
                continue
            fit = wls(np.column_stack([current, *_break_columns(t, [tau])]), y, w)
            if best_fit is None or fit.rss < best_fit.rss:
                best, best_fit = tau, fit
        if best is None or nested_p(small, best_fit, 2) * max(1, len(candidates)) >= alpha:
            break
        shift, slope_change = best_fit.coef[-2], best_fit.coef[-1]
        if not (is_material(shift, scale) or is_material(slope_change * (end - best), scale)):
            break
        breaks.append(best)
    return sorted(breaks)


def _flags(linear: Fit, fit: Fit, breaks: list[float], seasons: Seasons,
           buckets: pd.DataFrame, grain: str, alpha: float, metric: str, scale: float,
           span: float) -> list[Flag]:
    flags: list[Flag] = []
    means = buckets["mean"].to_numpy()
    if np.ptp(means) <= 1e-9 * max(1.0, float(np.abs(means).max())):
        return flags  # a constant metric: any fitted slope is rounding noise
    slope, se = linear.coef[1], math.sqrt(max(linear.cov[1, 1], 0.0))
    t_crit = stats.t.ppf(0.975, linear.dof)
    p = float(2 * stats.t.sf(abs(slope) / se, linear.dof)) if se > 0 else 1.0
    if p < alpha and is_material(slope * span, scale):
        flags.append(Flag(FlagKind.TREND, None, (
            f"TREND: {metric} {'rises' if slope > 0 else 'falls'} by {figure(abs(slope))} per "
            f"{grain} (95% CI {figure(slope - t_crit * se)} to {figure(slope + t_crit * se)}, "
            f"p = {p:.2g})")))
    origin = buckets["t"].min()
    length = GRAINS[grain][1]
    for i, tau in enumerate(breaks):
        when = _period_label((origin + pd.Timedelta(days=tau * length)).to_period(
            GRAINS[grain][0]).start_time, grain)
        before = fit.coef[1] + sum(fit.coef[3 + 2 * j] for j in range(i))
        after = before + fit.coef[3 + 2 * i]
        flags.append(Flag(FlagKind.CHANGE_POINT, None, (
            f"CHANGE POINT at {when}: slope {figure(before)} per {grain} before, "
            f"{figure(after)} after; level shift {figure(fit.coef[2 + 2 * i])}")))
    season = seasons.best
    if season:
        groups = SEASONS[season][0](buckets["t"].dt)
        by_group = (buckets.assign(g=groups.to_numpy()).groupby("g")
                 .apply(lambda f: f["s1"].sum() / f["n"].sum(), include_groups=False))
        high, low = by_group.idxmax(), by_group.idxmin()
        within = {"hour": " (within each day)", "day_of_week": " (within each week)"}
        flags.append(Flag(FlagKind.SEASON, season, (
            f"SEASON by {season}{within.get(season, '')} (p = {seasons.p_value:.2g} after "
            f"correction; amplitude {figure(seasons.amplitude)} on the detrended series): "
            f"highest in {season_label(season, high)} ({figure(by_group[high])}), lowest in "
            f"{season_label(season, low)} ({figure(by_group[low])})")))
    return flags


def _rows(buckets: pd.DataFrame, fitted: np.ndarray, fit: Fit, breaks: list[float],
          season: tuple[str | None, list], grain: str, periods: int,
          length: float) -> pd.DataFrame:
    frame = buckets.assign(fitted_sum=fitted * buckets["n"])
    grouped = frame.groupby("period").agg(n=("n", "sum"), s1=("s1", "sum"), s2=("s2", "sum"),
                                          fitted_sum=("fitted_sum", "sum"))
    rows = []
    binary = bool(np.allclose(grouped["s2"], grouped["s1"], rtol=1e-9, atol=1e-9))
    for period, g in grouped.iterrows():
        mean = g.s1 / g.n
        if binary:  # a rate: Wilson's interval stays within 0 to 1 on small periods
            low, high = wilson_interval(g.s1, g.n)
        else:
            var = max(0.0, (g.s2 - g.s1**2 / g.n) / (g.n - 1)) if g.n > 1 else 0.0
            half = 1.959964 * math.sqrt(var / g.n)
            low, high = mean - half, mean + half
        rows.append({"period": _period_label(period, grain), "kind": "observed",
                     "n": int(g.n), "metric": mean, "ci_low": low,
                     "ci_high": high, "fitted": g.fitted_sum / g.n})
    if periods:
        code = GRAINS[grain][0]
        last = buckets["period"].max().to_period(code)
        rows_per = float(grouped["n"].tail(3).mean())
        sigma2 = fit.rss / fit.dof
        t_crit = stats.t.ppf(0.975, fit.dof)
        for step in range(1, periods + 1):
            start = (last + step).start_time
            t = (start - buckets["t"].min()).total_seconds() / 86400.0 / length + 0.5
            x = np.concatenate([[1.0, t], *[[1.0, max(0.0, t - tau)] for tau in breaks],
                                _season_row(start, season)])
            value = float(x @ fit.coef)
            half = t_crit * math.sqrt(max(0.0, x @ fit.cov @ x) + sigma2 / max(rows_per, 1))
            low, high = value - half, value + half
            if binary:  # a projected rate stays a rate
                value, low, high = (min(1.0, max(0.0, v)) for v in (value, low, high))
            rows.append({"period": _period_label(start, grain), "kind": "projection", "n": 0,
                         "metric": value, "ci_low": low, "ci_high": high, "fitted": value})
    return pd.DataFrame(rows, columns=COLUMNS)


def _period_label(start: pd.Timestamp, grain: str) -> str:
    """``2021-03`` for a month, ``2021-Q1``, ``2021``, a week by its first day."""
    if grain in ("day", "week"):
        return str(start.date())
    if grain == "hour":
        return start.strftime("%Y-%m-%d %H:00")
    return str(start.to_period(GRAINS[grain][0]))


def _season_row(start: pd.Timestamp, season: tuple[str | None, list]) -> list[float]:
    name, levels = season
    if name is None:
        return []
    level = SEASONS[name][0](pd.Series([start]).dt).iloc[0]
    return [1.0 if level == v else 0.0 for v in levels[1:]]


def _summary(metric: str, time: str, grain: str, frame: pd.DataFrame, flags: list[Flag],
             periods: int, deterministic: str | None, seasons: Seasons | None) -> str:
    observed = frame[frame["kind"] == "observed"]
    lines = [f"trend of {metric} by {grain} of {time}: {len(observed)} periods, "
             f"{observed['period'].iloc[0]} to {observed['period'].iloc[-1]}, "
             f"{int(observed['n'].sum())} rows."]
    if deterministic:
        lines.append(deterministic)
    elif flags:
        lines.append("FLAGS:")
        lines += [f"- {f.text}" for f in flags]
    found = {f.kind for f in flags}
    if seasons is not None:
        missing = [word for kind, word in ((FlagKind.TREND, "trend"),
                                           (FlagKind.CHANGE_POINT, "change point"))
                   if kind not in found]
        if missing:
            lines.append(f"No {' or '.join(missing)} both beyond chance and material (at least "
                         f"{RELATIVE_TOLERANCE:.0%} of the metric's scale).")
        if seasons.tested and FlagKind.SEASON not in found:
            lines.append(f"No season among {', '.join(seasons.tested)} (tested on the "
                         "detrended series).")
        if seasons.untested:
            lines.append(f"Season not tested: {'; '.join(seasons.untested)}.")
    projected = frame[frame["kind"] == "projection"]
    if periods and len(projected):
        values = "; ".join(f"{r.period}: {figure(r.metric)} (95% PI {figure(r.ci_low)} to "
                           f"{figure(r.ci_high)})" for r in projected.itertuples())
        lines.append(f"LINEAR PROJECTION (the last trend segment extended, not a forecast "
                     f"model): {values}")
    return "\n".join(lines)
