"""Pure noise raises no flag at the default thresholds (20 seeds, every tool)."""

from __future__ import annotations

import pytest
from analysis_data import noise

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within, decompose, segment_scan, trend

SOURCE = "orders o JOIN customers c USING (customer_id)"


@pytest.mark.parametrize("seed", range(20))
def test_no_false_flags_on_pure_noise(seed: int) -> None:
    sql = GuardedSQL(noise(seed, declared=seed % 2 == 0))
    results = [
        segment_scan(sql, source=SOURCE, metric="avg(o.returned::INTEGER)"),
        segment_scan(sql, source="orders", metric="avg(amount)"),
        compare_within(sql, source=SOURCE, metric="avg(CASE WHEN o.returned THEN 1 ELSE 0 END)",
                       exposure="o.promo", value="coupon"),
        compare_within(sql, source=SOURCE, metric="avg(o.amount)", exposure="c.tier",
                       value="pro", reference="basic"),
        trend(sql, source="orders", metric="avg(returned::INTEGER)", time="ordered_on"),
        decompose(sql, source=SOURCE, metric="avg(CASE WHEN o.returned THEN 1 ELSE 0 END)",
                  period="year(o.ordered_on)"),
        decompose(sql, source=SOURCE, metric="avg(o.amount)", period="quarter(o.ordered_on)",
                  before="1", after="3"),
    ]
    for result in results:
        assert result.flags == (), result.summary
        assert len(result.frame) > 0
