"""The DerSimonian-Laird between-strata standard deviation behind the near-miss rule."""

from __future__ import annotations

import math

import pytest

from d2_notebook.data.analysis.stats import between_strata_sd, cochran_q


def test_it_matches_the_closed_form() -> None:
    effects, ses = [0.1, 0.3, -0.2, 0.25], [0.05, 0.1, 0.08, 0.12]
    w = [1 / s ** 2 for s in ses]
    _, q, _ = cochran_q(effects, ses)
    c = sum(w) - sum(x * x for x in w) / sum(w)
    assert between_strata_sd(effects, ses) == pytest.approx(math.sqrt((q - 3) / c))


@pytest.mark.parametrize(("effects", "ses"), [
    ([0.1, 0.1001, 0.0999], [0.05, 0.05, 0.05]),  # Q below its degrees of freedom
    ([0.4], [0.1]),                               # one stratum
    ([0.1, 0.9], [0.0, math.nan]),                 # no usable standard error
    ([], []),
])
def test_no_spread_beyond_chance_is_zero(effects: list[float], ses: list[float]) -> None:
    assert between_strata_sd(effects, ses) == 0.0
