"""Guard overhead on PostgreSQL and Spark: ``python -m benchmark.perf_sources [--quick]``.

For each query, the median wall time of the guarded ``SQLSource.run`` (sqlglot parse
and check, READ ONLY transaction with statement_timeout and rollback / job group and
deadline, capped fetch, DataFrame) against the raw query through the plain driver
(psycopg ``execute`` + ``fetchall``; ``spark.sql(...).toArrow()``), and their ratio.
PostgreSQL runs on a throwaway local cluster, Spark on a ``local[2]`` session, both over
the hospital demo data. Figures, not a timed test; target: overhead ratio <= 1.5 on
analytical queries, and a few milliseconds at most on trivial ones.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable

from benchmark.local_servers import PostgresCluster, hospital_parquet, spark_session
from d2_notebook.data import Dialect, open_source, transpile
from d2_notebook.detective.policies.hospital import OVERVIEW_SQL, comparison_sql

QUERIES = {
    "point": "SELECT * FROM patients WHERE patient_id = 42",
    "overview": OVERVIEW_SQL,
    "per-severity": comparison_sql("Corvalin", by_severity=True),
}


def median_s(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm caches, plans and pools
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def report(engine: str, name: str, raw: float, guarded: float) -> None:
    print(f"{engine:10s} {name:13s} raw {raw * 1000:8.2f} ms  guarded {guarded * 1000:8.2f} ms"
          f"  overhead {(guarded - raw) * 1000:7.2f} ms  ratio {guarded / raw:5.2f}")


def postgres(repeats: int) -> None:
    import psycopg

    cluster = PostgresCluster().start()
    try:
        source = open_source(cluster.load_hospital())
        raw_con = psycopg.connect(host=str(cluster.socket_dir), dbname="hospital",
                                  user="analyst", autocommit=True)
        for name, duckdb_sql in QUERIES.items():
            sql = transpile(duckdb_sql, Dialect.POSTGRES)
            raw = median_s(lambda s=sql: raw_con.execute(s).fetchall(), repeats)
            guarded = median_s(lambda s=sql: source.run(s), repeats)
            report("PostgreSQL", name, raw, guarded)
        raw_con.close()
        source.close()
    finally:
        cluster.stop()


def spark(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        session = spark_session(hospital_parquet(scratch))
        source = open_source(session)
        for name, duckdb_sql in QUERIES.items():
            sql = transpile(duckdb_sql, Dialect.SPARK)
            raw = median_s(lambda s=sql: session.sql(s).toArrow(), repeats)
            guarded = median_s(lambda s=sql: source.run(s), repeats)
            report("Spark", name, raw, guarded)
        session.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only", choices=("postgres", "spark"))
    args = parser.parse_args()
    if args.only in (None, "postgres"):
        postgres(10 if args.quick else 50)
    if args.only in (None, "spark"):
        spark(3 if args.quick else 10)


if __name__ == "__main__":
    main()
