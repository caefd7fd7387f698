"""Weighted least squares on per-period means: the fits behind ``trend`` and its season tests."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

__all__ = ["Fit", "group_mean", "nested_p", "wls", "wls_no_intercept"]


@dataclass(frozen=True)
class Fit:
    """Coefficients, their covariance, the weighted residual sum of squares, its dof."""

    coef: np.ndarray
    cov: np.ndarray
    rss: float
    dof: int


def wls(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> Fit:
    """Weighted least squares by the normal equations (a few columns, many rows)."""
    xtw = (x * w[:, None]).T
    inverse = np.linalg.pinv(xtw @ x)
    coef = inverse @ (xtw @ y)
    residual = y - x @ coef
    dof = max(1, len(y) - x.shape[1])
    rss = float((w * residual) @ residual)
    return Fit(coef, (rss / dof) * inverse, rss, dof)


def nested_p(small: Fit, big: Fit, extra: int) -> float:
    """p-value of the nested-model F test that ``big``'s ``extra`` columns add nothing."""
    if big.rss <= 0 or extra <= 0 or small.rss <= big.rss:
        return 1.0
    f = ((small.rss - big.rss) / extra) / (big.rss / big.dof)
    return float(stats.f.sf(f, extra, big.dof))


def group_mean(values: np.ndarray, w: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Each element's group's weighted mean."""
    sums = np.bincount(groups, weights=w * values)
    weights = np.bincount(groups, weights=w)
    return (sums / np.where(weights > 0, weights, 1.0))[groups]


def wls_no_intercept(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, float]:
    """Coefficients and weighted residual sum of squares of a fit without an intercept."""
    xtw = (x * w[:, None]).T
    coef = np.linalg.pinv(xtw @ x) @ (xtw @ y)
    residual = y - x @ coef
    return coef, float((w * residual) @ residual)
