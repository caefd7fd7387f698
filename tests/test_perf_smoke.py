"""Smoke test of the performance benchmarks: ``--quick`` runs and prints every figure.

No timing is asserted (the machine is shared and noisy); only that each benchmark runs
its whole investigation or query set and reports its figures against its target.
"""

from __future__ import annotations

import math

import pytest

from benchmark import perf

EXPECTED = {
    "overhead": ["overhead_ms"],
    "parallel": ["speedup_whole", "speedup_collection", "bound"],
    "refinement": ["first_child_latencies", "median_child_latencies"],
    "calls": ["calls_now"],
    "context": ["d2_largest", "react_largest", "ratio"],
    "sql": ["sql_worst_ratio", "ratio big result (1%)"],
    "latency": ["latency_worst_ratio", "hospital full wall_s", "hospital react_sql wall_s"],
    "checks": ["checks_worst_wait_s", "checks_long_alone_s"],
    "demo": ["demo_create_s"],
}


@pytest.mark.parametrize("name", list(perf.BENCHMARKS))
def test_each_benchmark_runs_quickly_and_prints_its_target(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = perf.BENCHMARKS[name](True)
    out = capsys.readouterr().out
    assert f"=> {name}:" in out and "target" in out
    assert ": MET" in out or ": NOT MET" in out
    for key in EXPECTED[name]:
        assert math.isfinite(figures[key]) and figures[key] > 0, key


def test_the_command_line_runs_one_benchmark(capsys: pytest.CaptureFixture[str]) -> None:
    assert perf.main(["--quick", "--only", "context"]) == 0
    out = capsys.readouterr().out
    assert "DuckDB" in out and "=> context:" in out and "=> sql:" not in out
