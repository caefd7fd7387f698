"""Spark as a source: a real ``local[2]`` session over the hospital data as Parquet.

One session for the module (starting the JVM costs seconds). Marked ``spark``;
``D2_SKIP_SPARK=1`` leaves the module out on a machine without Java.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
from summary_notes import profile_notes

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.data import Dialect, GuardedSQL, SourceKind, open_source, transpile
from d2_notebook.data.analysis import FlagKind, compare_within, segment_scan, trend
from d2_notebook.data.sources.spark_source import SparkSource
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import (
    DOSE_BANDS_SQL,
    DOSE_SQL,
    OVERVIEW_SQL,
    HospitalWalkthrough,
)
from d2_notebook.detective.policies.hospital import comparison_sql as compare
from d2_notebook.errors import (
    InvalidRecordError,
    QueryFailedError,
    QueryTimeoutError,
    UnsafeSQLError,
)

pytestmark = pytest.mark.spark
CORPUS = Path(__file__).parent / "sql_corpus"
HOSTILE = [line for line in (CORPUS / "spark_hostile.sql").read_text().splitlines()
           if line.strip() and not line.startswith("-- ")]
LEGIT = [
    "SELECT count(*) FROM patients",
    "SELECT sex, avg(age) AS mean_age FROM patients GROUP BY sex ORDER BY sex",
    "WITH older AS (SELECT * FROM patients WHERE age >= 65) SELECT count(*) FROM older",
    "SELECT drug, count(*) FILTER (WHERE dose_mg > 400) AS high FROM treatments GROUP BY drug",
    "SELECT patient_id, rank() OVER (PARTITION BY sex ORDER BY age DESC) AS r FROM patients",
    "SELECT percentile_approx(age, 0.5) FROM patients",
    "SELECT date_trunc('MONTH', admitted_on) AS m, count(*) FROM admissions GROUP BY 1",
    "SELECT * FROM VALUES (1, 'a'), (2, 'b') AS v(n, s)",
    "SELECT id FROM range(5)",
    "SELECT explode(array(1, 2, 3)) AS x",
    "SELECT patient_id FROM patients EXCEPT SELECT patient_id FROM comorbidities",
    "SELECT `patient_id`, 'a;b' AS s FROM patients LIMIT 3",
    "SELECT count(*) FROM patients -- trailing comment",
    "DESCRIBE patients",
]


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("D2_SKIP_SPARK") == "1":
            pytest.skip("D2_SKIP_SPARK=1: Spark tests left out")
        pytest.fail("Java is not installed: apt-get install openjdk-17-jre-headless (.ci/run "
                    "does), or set D2_SKIP_SPARK=1 to leave the Spark tests out", pytrace=False)
    from benchmark.local_servers import hospital_parquet, spark_session

    session = spark_session(hospital_parquet(tmp_path_factory.mktemp("parquet")))
    yield session
    session.stop()


@pytest.fixture(scope="module")
def source(spark):
    return open_source(spark, timeout_s=60)


def catalog_state(spark) -> list[tuple[str, bool]]:
    return sorted((t.name, t.isTemporary) for t in spark.catalog.listTables())


def test_hostile_corpus_is_refused_and_the_catalog_unchanged(source, spark):
    assert len(HOSTILE) >= 50
    before = catalog_state(spark), spark.catalog.currentDatabase()
    conf = spark.conf.get("spark.sql.ansi.enabled")
    for sql in HOSTILE:
        with pytest.raises(UnsafeSQLError, match=r"SQL refused: .+; .+"):
            source.run(sql)
    assert (catalog_state(spark), spark.catalog.currentDatabase()) == before
    assert spark.conf.get("spark.sql.ansi.enabled") == conf
    assert source.run("SELECT count(*) AS n FROM patients").frame["n"].tolist() == [5000]


def test_reflection_and_file_sources_say_why(source):
    with pytest.raises(UnsafeSQLError, match="calls arbitrary Java methods"):
        source.run("SELECT reflect('java.lang.Runtime', 'getRuntime')")
    with pytest.raises(UnsafeSQLError, match="reads files directly"):
        source.run("SELECT * FROM csv.`/etc/passwd`")


def test_legitimate_statements_run(source):
    for sql in LEGIT:
        result = source.run(sql)
        assert len(result.frame.columns) >= 1, sql


def test_open_source_describes_the_session(source):
    assert source.dialect is Dialect.SPARK and source.info.kind is SourceKind.SPARK
    assert source.info.url == "local[2]"


def test_results_match_duckdb_for_the_demo_queries(source):
    duck = open_source(hospital.create())
    for sql in (OVERVIEW_SQL, DOSE_SQL, DOSE_BANDS_SQL, compare("Corvalin", by_severity=True),
                compare("Virexa", "asthma")):
        spark_frame = source.run(transpile(sql, Dialect.SPARK)).frame
        duck_frame = duck.run(sql).frame
        # Spark rounds half up where DuckDB's double arithmetic may land one ulp below.
        pd.testing.assert_frame_equal(spark_frame, duck_frame, check_dtype=False,
                                      check_exact=False, atol=0.0011)
    duck.close()


def test_caps_count_and_catalog_summary(source):
    result = source.run("SELECT * FROM patients ORDER BY patient_id", max_rows=3)
    assert result.truncated and result.row_count == 5000
    assert result.frame["patient_id"].tolist() == [1, 2, 3]
    summary = source.schema_summary()
    assert summary.startswith("Spark SQL database: 5 tables/views")
    assert "treatments (view, 5000 rows)" in summary and "dose_mg DECIMAL(6,1)" in summary
    # the column profile reads as on DuckDB: the same notes on the same columns
    assert profile_notes(summary) == profile_notes(GuardedSQL(hospital.create())
                                                   .schema_summary())
    assert profile_notes(summary)["dose_mg"] == "(26% null)"
    assert source.foreign_keys() == []
    assert source.describe("outcomes").row_count == 4948
    with pytest.raises(QueryFailedError, match="available: admissions"):
        source.describe("nope")
    with pytest.raises(QueryFailedError, match="describe_table shows the columns"):
        source.run("SELECT nope FROM patients")


def test_placeholder_zeros_and_missing_values_are_profiled_through_the_guard(
        source, spark, monkeypatch):
    """One aggregate query per table or view, quoted for Spark, run through the guard; a
    profile that fails or times out leaves the view counted and unprofiled."""
    spark.sql(
        "CREATE OR REPLACE TEMPORARY VIEW expense_lines AS SELECT id AS line, "
        "CASE WHEN id <= 366 THEN 0.0D ELSE 1.5D + id % 9 END AS processing_time, "
        "CASE WHEN id <= 366 THEN NULL ELSE date_add(DATE'2024-01-01', CAST(id AS INT)) "
        "END AS processed_date, date_add(DATE'2024-01-01', CAST(id + CASE WHEN id % 10 = 0 "
        "THEN 5 ELSE -3 END AS INT)) AS submitted_date, "
        "CASE WHEN id % 4 = 0 THEN 0 ELSE id END AS `Refund Cents`, "
        "CASE WHEN id % 2 = 0 THEN 0 END AS `order`, id % 2 = 0 AS flag, "
        "CAST((CASE WHEN id % 4 = 0 THEN NULL WHEN id % 4 = 1 THEN 0 WHEN id % 8 = 2 "
        "THEN -id ELSE id END) / 4.0 AS DECIMAL(8, 2)) AS balance, -id AS debit, "
        "CASE WHEN id <= 4 THEN -id ELSE id END AS adjustment, "
        "CASE WHEN id <= 366 THEN 'pending' ELSE 'done' END AS stage FROM range(1, 501)")
    try:
        seen: list[str] = []
        run = source._query
        monkeypatch.setattr(source, "_query", lambda sql: seen.append(sql) or run(sql))
        summary = source.schema_summary()
        first_call = list(seen)
        assert source.schema_summary() == summary
        assert "expense_lines (view, 500 rows)" in summary
        assert "  processing_time DOUBLE e.g. 0.0 (0 in 73% of rows)\n" in summary + "\n"
        notes = profile_notes(summary)
        assert notes["processed_date"] == ("(73% null: exactly where stage is 'pending', "
                                           "earlier than submitted_date in 14 of the 134 rows with "
                                           "both set)")
        assert "submitted_date" not in notes
        assert notes['"Refund Cents"'] == "(0 in 25% of rows)"
        assert notes['"order"'] == "(50% null, 0 in 50% of rows)"
        # below 0: in 63 of the 500 rows (with NULLs and zeros), in all, in 4 (under 1 %)
        assert notes["balance"] == "(25% null, 0 in 25% of rows, below 0 in 13% of rows)"
        assert notes["debit"] == "(all below 0)"
        assert "flag" not in notes and "line" not in notes and "adjustment" not in notes
        profiles = [sql for sql in first_call if "d2_rows" in sql]
        assert len(profiles) == 6  # the hospital's 5 views and this one, one query each
        assert not any(sql.startswith("SELECT count(*) FROM") for sql in first_call)
        expense = next(sql for sql in profiles if sql.endswith("FROM expense_lines"))
        assert "count(CASE WHEN `Refund Cents` = 0 THEN 1 END)" in expense
        assert "count(CASE WHEN `order` = 0 THEN 1 END)" in expense
        assert "count(CASE WHEN `Refund Cents` < 0 THEN 1 END)" in expense
        assert "flag = 0" not in expense and "flag < 0" not in expense

        def failing(sql: str):
            if "d2_rows" in sql and sql.endswith("FROM expense_lines"):
                raise QueryTimeoutError("the profile ran past the time limit")
            return run(sql)

        monkeypatch.setattr(source, "_query", failing)
        unprofiled = source.schema_summary()
        assert "expense_lines (view, 500 rows)" in unprofiled  # counted alone
        assert "  processing_time DOUBLE e.g. 0.0\n" in unprofiled
        assert set(profile_notes(unprofiled)) == {"days_to_discharge", "dose_mg", "days"}
    finally:
        spark.catalog.dropTempView("expense_lines")


def test_results_past_the_byte_cap_fail_before_they_are_collected(spark):
    capped = SparkSource(spark, timeout_s=60, max_bytes=1_000_000)
    with pytest.raises(QueryFailedError, match=r"larger than the 0.953674 MiB cap .*"
                                                r"max_bytes=1000000"):
        capped.run("SELECT repeat('x', 100000) AS big, repeat('y', 1) AS big FROM range(20)")
    assert len(capped.run("SELECT repeat('x', 1000) AS big FROM range(20)").frame) == 20
    assert spark._jsparkSession.sharedState().cacheManager().isEmpty()  # rows released


def test_the_analysis_tools_run_on_spark(source):
    """They read Spark's catalog and run transpiled, guarded Spark SQL: DuckDB's answers."""
    joined = ("admissions a JOIN patients p USING (patient_id) JOIN treatments t "
              "USING (admission_id) JOIN outcomes o USING (admission_id)")
    deaths = "avg(CASE WHEN o.died THEN 1 ELSE 0 END)"
    scan = segment_scan(source, source=joined, metric=deaths,
                        where="p.age >= 65 AND t.drug = 'Virexa'")
    asthma = scan.frame[(scan.frame["dimension"] == "has comorbidities.condition")
                        & (scan.frame["value"] == "asthma")].iloc[0]
    assert asthma["flagged"] and asthma["difference"] < -0.1
    compared = compare_within(source, source=joined, metric=deaths, exposure="t.drug",
                              value="Corvalin", reference="Standard care", where="p.age >= 65")
    assert "admissions.severity" in {f.dimension for f in compared.flags
                                     if f.kind is FlagKind.CONFOUNDING}
    arguments = {"source": joined, "metric": deaths, "time": "a.admitted_on"}
    on_spark = trend(source, **arguments)
    assert on_spark.summary == trend(GuardedSQL(hospital.create()), **arguments).summary


def test_time_limit_cancels_the_job_group(source):
    start = time.perf_counter()
    with pytest.raises(QueryTimeoutError, match="Spark jobs were cancelled"):
        source.run("SELECT count(*) FROM range(300000) a CROSS JOIN range(300000) b "
                   "WHERE a.id + b.id = 7", timeout_s=2)
    assert time.perf_counter() - start < 45  # a 9e10-row join, stopped long before the end
    assert source.run("SELECT count(*) AS n FROM patients").frame["n"].tolist() == [5000]


def statuses(board: Board) -> dict[str, str]:
    return {h.statement: h.status.value for h in board.list_hypotheses()}


async def test_scripted_investigation_reaches_the_duckdb_verdicts(spark, tmp_path):
    on_duckdb = await investigate(hospital.create(), hospital.QUESTION,
                                  model=HospitalWalkthrough().model())
    board_path = tmp_path / "spark.d2board"
    on_spark = await investigate(spark, hospital.QUESTION, board=board_path,
                                 model=HospitalWalkthrough(dialect="spark").model())
    assert on_spark.state == "finished"
    assert statuses(on_spark.board) == statuses(on_duckdb.board)
    recorded = on_spark.board.list_investigations()[-1].settings["source"]
    assert recorded == {"kind": "spark", "dialect": "spark", "url": "local[2]"}
    with pytest.raises(InvalidRecordError, match="ran on Spark SQL"):
        await investigate(hospital.create(), None, replay=board_path,
                          board=tmp_path / "wrong.d2board")
