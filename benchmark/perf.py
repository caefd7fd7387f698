"""Performance benchmarks: ``python -m benchmark.perf [--only NAME] [--quick]``.

Each benchmark prints its figures, its target and whether the target is met. They are
measurements on a shared machine, not timed tests. ``--quick`` shrinks every benchmark
(smaller table, shorter simulated model latency, fewer repetitions) to run in seconds.

- ``overhead``: orchestration wall time per model call, outside the model and the SQL.
- ``parallel``: 8 hypotheses plus 12 refinements, a 200 ms model, 1 vs 4 collectors.
- ``refinement``: how soon a refined child starts after its parent's verdict.
- ``calls``: model calls per role of the offline policies, before and after streaming.
- ``context``: prompt size per call as queries accumulate, D2 collectors vs ``react_sql``.
- ``sql``: GuardedSQL.run against raw DuckDB on a 10-million-row table.
- ``latency``: recorded boards replayed under a model latency model: each variant's
  simulated wall time, sequential depth and calls (:mod:`benchmark.perf_latency`).
- ``checks``: a short guard check's wait while another thread checks a long statement.
- ``demo``: time to build the hospital demo database.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import duckdb

from benchmark.perf_latency import bench_latency
from benchmark.perf_policies import (
    ClaimsPolicy,
    ReactPolicy,
    TimedWalkthrough,
    prompt_chars,
    run_sql_count,
    timed_run,
    verdict,
)
from benchmark.perf_team import bench_calls, bench_parallel, bench_refinement
from d2_notebook.data import GuardedSQL
from d2_notebook.data.sql_guard import analyze_sql, check_sql
from d2_notebook.datasets import hospital

Figures = dict[str, float]


# --- 1. orchestration overhead -----------------------------------------------------------


def bench_overhead(quick: bool) -> Figures:
    """Wall time per model call outside the policy (model) and the guarded SQL."""
    repeats = 1 if quick else 5
    print("[overhead] instant offline model, 1 collector (so time does not overlap); "
          f"median of {repeats} run(s) after a warm-up run")
    asyncio.run(timed_run(ClaimsPolicy(2), collectors=1))  # first-use costs, imports
    print(f"  {'policy':<22} {'calls':>5} {'wall s':>7} {'model s':>8} {'sql s':>7} "
          f"{'queries':>7} {'ms/call median':>15} {'best':>6}")
    figures: Figures = {}
    for label, make in (("8 claims x 2 queries", lambda: ClaimsPolicy(2)),
                        ("hospital walkthrough", TimedWalkthrough)):
        rows = []
        for _ in range(repeats):
            policy = make()
            result, wall, sql = asyncio.run(timed_run(policy, collectors=1))
            calls = len(result.board.list_model_calls())
            per_call = (wall - policy.seconds - sql.seconds) / calls
            rows.append((per_call, calls, wall, policy.seconds, sql.seconds, sql.queries))
        per_call, calls, wall, model_s, sql_s, queries = sorted(rows)[len(rows) // 2]
        best = min(rows)[0]
        print(f"  {label:<22} {calls:>5} {wall:>7.3f} {model_s:>8.4f} {sql_s:>7.3f} "
              f"{queries:>7} {per_call * 1000:>15.2f} {best * 1000:>6.2f}")
        figures[label] = per_call * 1000
    worst = max(figures.values())
    verdict("overhead", f"{worst:.2f} ms per model call (median, worst policy)", "< 3 ms",
            worst < 3)
    return {"overhead_ms": worst}


# --- 3. context growth --------------------------------------------------------------------


def _prompt_curve(board: Any) -> list[tuple[int, int, str]]:
    """(queries run before the call, prompt chars, agent) per recorded call, in order."""
    curve, queries = [], 0
    for call in board.list_model_calls():
        curve.append((queries, prompt_chars(call.request), call.agent))
        queries += run_sql_count(call.response)
    return curve


def _at(curve: list[tuple[int, int, str]], k: int) -> tuple[int, int]:
    """Prompt of the first call after query ``k``, and the largest prompt so far."""
    after = next((c for q, c, _ in curve if q >= k), curve[-1][1])
    return after, max(c for q, c, _ in curve if q <= k)


def bench_context(quick: bool) -> Figures:
    """Prompt size as an investigation grows: D2 (8 collectors x 5 queries) vs react_sql."""
    print("[context] prompt = chars of system + messages JSON + tools JSON per model call")
    d2, _, _ = asyncio.run(timed_run(ClaimsPolicy(5), collectors=1))
    react, _, _ = asyncio.run(timed_run(ReactPolicy(40), variant="react_sql", max_steps=45))
    curves = {"D2": _prompt_curve(d2.board), "react_sql": _prompt_curve(react.board)}
    counts = {name: curve[-1][0] for name, curve in curves.items()}  # none after the last
    print(f"  queries run: D2 {counts['D2']} ({len(curves['D2'])} calls), react_sql "
          f"{counts['react_sql']} ({len(curves['react_sql'])} calls)")
    print(f"  {'after query':>11} {'D2 next':>9} {'D2 max':>9} {'react next':>11} "
          f"{'react max':>10}")
    for k in (10, 20, 30, 40):
        d2_next, d2_max = _at(curves["D2"], k)
        react_next, react_max = _at(curves["react_sql"], k)
        print(f"  {k:>11} {d2_next:>9,} {d2_max:>9,} {react_next:>11,} {react_max:>10,}")
    by_role: dict[str, int] = {}
    for call in d2.board.list_model_calls():
        by_role[call.role] = max(by_role.get(call.role, 0), prompt_chars(call.request))
    print("  D2 largest prompt per role: "
          + ", ".join(f"{role} {chars:,}" for role, chars in by_role.items()))
    d2_largest = max(c for _, c, _ in curves["D2"])
    agent = next(a for _, c, a in curves["D2"] if c == d2_largest)
    react_largest = max(c for _, c, _ in curves["react_sql"])
    ratio = d2_largest / react_largest
    print(f"  largest prompt: D2 {d2_largest:,} chars ({agent}), react_sql "
          f"{react_largest:,} chars; ratio {ratio:.0%}")
    verdict("context", f"D2's largest prompt is {ratio:.0%} of react_sql's at 40 queries",
            "<= 40%", ratio <= 0.40)
    return {"d2_largest": d2_largest, "react_largest": react_largest, "ratio": ratio}


# --- 4. guarded SQL vs raw DuckDB ----------------------------------------------------------

SQL_QUERIES = {
    "group by": "SELECT g, count(*) AS n, avg(x) AS mean_x FROM t GROUP BY g ORDER BY g",
    "filter + count": "SELECT count(*) AS n FROM t WHERE x < 0.25 AND g IN (3, 5, 7)",
    "window (subset)": ("SELECT g, id, x FROM (SELECT g, id, x, row_number() OVER "
                        "(PARTITION BY g ORDER BY x DESC) AS r FROM t WHERE id < {subset}) "
                        "WHERE r <= 3 ORDER BY g, r"),
    "big result (1%)": "SELECT id, x FROM t WHERE g = 3",
}


def _raw_capped(con: duckdb.DuckDBPyConnection, sql: str, max_rows: int | None) -> int:
    """Raw DuckDB: the whole result as a DataFrame, or, with ``max_rows``, at most
    max_rows+1 rows (the guard's cap) via LIMIT."""
    if max_rows is not None:
        sql = f"SELECT * FROM ({sql}) LIMIT {max_rows + 1}"
    return len(con.execute(sql).df())


def _time_into(fn: Callable[[], object], samples: list[float]) -> None:
    """Run ``fn`` once and append its wall time to ``samples``."""
    start = time.perf_counter()
    fn()
    samples.append(time.perf_counter() - start)


def bench_sql(quick: bool) -> Figures:
    """Median time of GuardedSQL.run vs raw DuckDB for a few analytical queries."""
    rows, repeats = (1_000_000, 3) if quick else (10_000_000, 15)
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, random() AS x, (range % 100)::INT AS g "
                f"FROM range({rows})")
    guard = GuardedSQL(con)
    print(f"[sql] table t: {rows:,} rows (in-memory DuckDB {duckdb.__version__}); guard "
          f"max_rows {guard.max_rows:,}; {repeats} back-to-back pairs per query; ratio = "
          "median of the pairs' guarded/raw")
    print(f"  {'query':<16} {'rows':>8} {'raw ms':>8} {'guarded ms':>11} {'ratio':>6} "
          f"{'extra ms':>9} {'check ms':>9}")
    ratios: Figures = {}
    for name, template in SQL_QUERIES.items():
        sql = template.format(subset=rows // 10)
        result = guard.run(sql)  # warm up (and the guard's function list)
        raw: list[float] = []
        guarded: list[float] = []
        run_guarded = partial(guard.run, sql)
        cap = guard.max_rows if name.startswith("big") else None  # small: the cap is moot
        run_raw = partial(_raw_capped, con, sql, cap)
        for i in range(repeats):  # alternate which goes first
            order = [(run_guarded, guarded), (run_raw, raw)]
            for fn, samples in order if i % 2 else order[::-1]:
                _time_into(fn, samples)
        check_s = min(_check_seconds(sql) for _ in range(5))
        pairs = list(zip(guarded, raw, strict=True))
        ratio = statistics.median(g / r for g, r in pairs)
        extra = statistics.median(g - r for g, r in pairs)
        ratios[name] = ratio
        print(f"  {name:<16} {result.row_count:>8,} {statistics.median(raw) * 1000:>8.1f} "
              f"{statistics.median(guarded) * 1000:>11.1f} {ratio:>6.2f} {extra * 1000:>9.1f} "
              f"{check_s * 1000:>9.2f}")
    con.close()
    small = {k: v for k, v in ratios.items() if not k.startswith("big")}
    worst = max(small.values())
    print("  (raw = con.execute(sql).df(); for the big result under LIMIT max_rows+1, "
          "while the guard fetches 10,001 rows chunk by chunk, then runs count(*) over the "
          "query for the true count)")
    verdict("sql", f"worst ratio {worst:.2f}x on small-result queries "
            f"(big result {ratios['big result (1%)']:.2f}x)", "<= 1.05x", worst <= 1.05)
    return {"sql_worst_ratio": worst, **{f"ratio {k}": v for k, v in ratios.items()}}


def _check_seconds(sql: str) -> float:
    """Time of the guard's static checks for one run: the statement and its count(*)."""
    start = time.perf_counter()
    checked = analyze_sql(sql)
    check_sql(f"SELECT count(*) FROM (\n{checked.sql}\n)")
    return time.perf_counter() - start


def bench_checks(quick: bool) -> Figures:
    """How long a short guard check waits while another thread parses a long statement."""
    terms = 1_000 if quick else 4_000
    long_sql = "SELECT " + ", ".join(f"length('{i:04d}')" for i in range(terms))
    alone = min(_seconds(partial(check_sql, long_sql)) for _ in range(3))
    stop = threading.Event()

    def hammer() -> None:
        while not stop.is_set():
            check_sql(long_sql)

    worker = threading.Thread(target=hammer)
    worker.start()
    try:
        time.sleep(alone / 2)
        waits = [_seconds(partial(check_sql, "SELECT 1")) for _ in range(20)]
    finally:
        stop.set()
        worker.join()
    print(f"[checks] a {len(long_sql):,}-character statement checks in {alone * 1000:.0f} ms "
          f"alone; 20 checks of SELECT 1 while another thread checks it over and over: "
          f"median {statistics.median(waits) * 1000:.1f} ms, max {max(waits) * 1000:.1f} ms")
    verdict("checks", f"worst short check {max(waits) / alone:.2f} long checks",
            "< 0.5 (no lock held while a statement parses)", max(waits) < alone / 2)
    return {"checks_worst_wait_s": max(waits), "checks_long_alone_s": alone}


def bench_demo(quick: bool) -> Figures:
    """Time to build the hospital demo database (the notebook's first cell)."""
    patients = 1_000 if quick else None
    options = {} if patients is None else {"patients": patients}
    seconds = min(_seconds(partial(hospital.create, **options)) for _ in range(3))
    verdict("demo", f"hospital.create() in {seconds:.2f} s", "< 2 s", seconds < 2.0)
    return {"demo_create_s": seconds}


def _seconds(fn: Callable[[], object]) -> float:
    samples: list[float] = []
    _time_into(fn, samples)
    return samples[0]


BENCHMARKS: dict[str, Callable[[bool], Figures]] = {
    "overhead": bench_overhead,
    "parallel": bench_parallel,
    "refinement": bench_refinement,
    "calls": bench_calls,
    "context": bench_context,
    "sql": bench_sql,
    "latency": bench_latency,
    "checks": bench_checks,
    "demo": bench_demo,
}


def main(argv: list[str] | None = None) -> int:
    """Run the selected benchmarks and print their figures."""
    parser = argparse.ArgumentParser(prog="python -m benchmark.perf", description=__doc__)
    parser.add_argument("--only", choices=sorted(BENCHMARKS), action="append",
                        help="run only this benchmark (repeatable)")
    parser.add_argument("--quick", action="store_true", help="small, fast settings")
    args = parser.parse_args(argv)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"Python {sys.version.split()[0]}, DuckDB {duckdb.__version__}, {os.cpu_count()} "
          f"cores, load average {load}{', quick mode' if args.quick else ''}")
    for name in args.only or list(BENCHMARKS):
        started = time.perf_counter()
        BENCHMARKS[name](args.quick)
        print(f"  ({name}: {time.perf_counter() - started:.1f} s)\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
