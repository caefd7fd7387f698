"""Speed of the analysis tools: ``python -m benchmark.perf_analysis [--rows N] [--repeat K]``.

A fact table of ``--rows`` rows (default 10 million) with 12 categorical columns and a
date over three years, a customers table (100,000 rows at 10 M, 3 attributes, declared
primary key and foreign key) and a 1:N ``tags`` table: 20 candidate dimensions scanned from the
facts (12 columns + 4 date parts + 3 customer attributes + 1 membership). Each tool runs
``--repeat`` times on a warm database; the figure is the median wall time of the whole
call (catalog, profiling, the one-pass query, statistics; ``decompose`` splits the change
from the first year to the last over every dimension, with its rest-of-dimension rounds),
with the one pass alone beside it, and a floor for scale: raw DuckDB grouping the fact
table by 14 of its columns one by one. Target: each tool under 2 s. A measurement on a
shared machine, not a timed test.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable

import duckdb

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import (
    AnalysisResult,
    compare_within,
    decompose,
    segment_scan,
    trend,
)
from d2_notebook.data.dimensions import candidate_dimensions

TARGET_S = 2.0
SOURCE = "facts f"
METRIC = "avg(CASE WHEN f.converted THEN 1 ELSE 0 END)"


def build(rows: int) -> duckdb.DuckDBPyConnection:
    """The benchmark database (deterministic: values are hashes of the row number).

    Customers: one per 100 fact rows, at most 100,000; tags: 1.5 per customer.
    """
    customers = min(100_000, max(100, rows // 100))
    con = duckdb.connect()
    con.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, region VARCHAR, "
                "tier VARCHAR, segment INTEGER)")
    con.execute("INSERT INTO customers SELECT i, 'r' || (hash(i) % 6), 't' || (hash(i * 7) % 3),"
                f" (hash(i * 13) % 5)::INTEGER FROM range(1, {customers + 1}) t(i)")
    con.execute("CREATE TABLE tags (customer_id INTEGER REFERENCES customers (customer_id), "
                "tag VARCHAR)")
    con.execute(f"INSERT INTO tags SELECT 1 + hash(i) % {customers}, 'g' || (i % 8) "
                f"FROM range({customers * 3 // 2}) t(i)")
    columns = ", ".join(f"d{k} {'VARCHAR' if k % 2 else 'SMALLINT'}" for k in range(12))
    con.execute(f"CREATE TABLE facts (customer_id INTEGER REFERENCES customers (customer_id), "
                f"{columns}, day DATE, converted BOOLEAN)")
    values = ", ".join(
        (f"'v' || (hash(i * {k + 3}) % {3 + k})" if k % 2 else f"(hash(i * {k + 3}) % {3 + k})")
        for k in range(12))
    con.execute(f"INSERT INTO facts SELECT 1 + hash(i * 31) % {customers}, {values}, "
                "DATE '2021-01-01' + (hash(i * 17) % 1095)::INTEGER, hash(i * 41) % 10 < 3 "
                f"FROM range({rows}) t(i)")
    return con


def timed(call: Callable[[], AnalysisResult], repeat: int) -> tuple[float, float, int]:
    """Median wall seconds of the call, median seconds of its one pass, rows returned."""
    walls, passes, rows = [], [], 0
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        walls.append(time.perf_counter() - start)
        passes.append(result.duration_s)
        rows = result.row_count or 0
    return statistics.median(walls), statistics.median(passes), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"Python {platform.python_version()}, DuckDB {duckdb.__version__}, "
          f"{os.cpu_count()} cores, load average {load}")
    start = time.perf_counter()
    con = build(args.rows)
    print(f"built {args.rows:,} fact rows in {time.perf_counter() - start:.1f} s")
    sql = GuardedSQL(con, timeout_s=120)
    dimensions = candidate_dimensions(sql)
    reachable = [d.name for d in dimensions if d.table in ("facts", "customers", "tags")]
    print(f"candidate dimensions reachable from facts: {len(reachable)}")
    calls = {
        "segment_scan": lambda: segment_scan(sql, source=SOURCE, metric=METRIC),
        "compare_within": lambda: compare_within(sql, source=SOURCE, metric=METRIC,
                                                 exposure="f.d0", value=1),
        "trend": lambda: trend(sql, source=SOURCE, metric=METRIC, time="f.day"),
        "decompose": lambda: decompose(sql, source=SOURCE, metric=METRIC,
                                       period="year(f.day)"),
    }
    floor = " UNION ALL ".join(
        f"SELECT '{c}' AS d, {c}::VARCHAR AS v, count(*), sum(converted::INTEGER) FROM facts "
        f"GROUP BY {c}" for c in [f"d{k}" for k in range(12)] + ["year(day)", "month(day)"])
    con.execute(floor).fetchall()
    start = time.perf_counter()
    for _ in range(args.repeat):
        con.execute(floor).fetchall()
    floor_s = (time.perf_counter() - start) / args.repeat
    print(f"  floor: raw DuckDB GROUP BY of 14 fact columns one by one, {floor_s:.2f} s "
          "(the machine's speed right now, for scale)")
    met = True
    for name, call in calls.items():
        call()  # warm-up: first scan of the table
        wall, one_pass, rows = timed(call, args.repeat)
        met &= wall < TARGET_S
        status = "MET" if wall < TARGET_S else "NOT MET"
        print(f"  {name:15s} {wall:6.2f} s whole call ({one_pass:.2f} s the one pass), "
              f"{rows} result rows; target < {TARGET_S:g} s: {status}")
    print(f"  => analysis tools over {args.rows:,} rows: {'all MET' if met else 'NOT all MET'}")


if __name__ == "__main__":
    main()
