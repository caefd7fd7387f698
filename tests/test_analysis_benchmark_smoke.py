"""Smoke test of ``benchmark/perf_analysis.py`` on a small table (no timing asserted)."""

from __future__ import annotations

import sys

import pytest

from benchmark import perf_analysis


def test_perf_analysis_runs_every_tool_and_prints_the_target(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["perf_analysis", "--rows", "20000", "--repeat", "1"])
    perf_analysis.main()
    out = capsys.readouterr().out
    assert "candidate dimensions reachable from facts: 2" in out  # 20 and more
    for tool in ("segment_scan", "compare_within", "trend", "decompose"):
        assert f"  {tool}" in out and "the one pass" in out
    assert "=> analysis tools over 20,000 rows:" in out
