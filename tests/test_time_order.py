"""The schema summary says when a date or time column is, in some rows, before one it is
usually after (50 of 478 incidents closed before they were opened, which only a real-model
agent's own sanity query found: InsightBench flag-6). DuckDB here; the PostgreSQL and Spark
sources share the code and test it in their own files."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest

from d2_notebook.data import GuardedSQL
from d2_notebook.data.time_order import (
    MAX_COLUMNS,
    MAX_ROWS,
    TIME_TYPE,
    OutOfOrder,
    out_of_order,
)
from d2_notebook.errors import QueryFailedError

INCIDENTS = """
CREATE TABLE incidents AS
SELECT i AS id,
       TIMESTAMP '2023-01-01' + to_hours(i * 7) AS opened_at,
       CASE WHEN i % 20 = 0 THEN NULL
            WHEN i % 10 = 3 THEN TIMESTAMP '2023-01-01' + to_hours(i * 7 - 30)
            ELSE TIMESTAMP '2023-01-01' + to_hours(i * 7 + 50) END AS closed_at,
       DATE '2023-06-01' + CAST((i * 37) % 200 - 100 AS INTEGER) AS reviewed_on,
       CASE WHEN i = 7 THEN TIMESTAMP '2022-01-01'
            ELSE TIMESTAMP '2023-01-01' + to_hours(i * 7 + 1) END AS logged_at
FROM range(1000) r(i)
"""


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(INCIDENTS)
    return connection


def _lines(summary: str) -> dict[str, str]:
    return {line.split()[0]: line for line in summary.splitlines() if line.startswith("  ")}


def test_an_end_before_its_start_is_named_with_its_count(con) -> None:
    lines = _lines(GuardedSQL(con).schema_summary())
    # i % 10 = 3 closes 30 hours before it opens: 100 rows, of the 950 with a close
    # (and before logged_at, an hour after the opening)
    assert lines["closed_at"].endswith(
        "(5% null, earlier than opened_at in 100 of the 950 rows with both set, "
        "earlier than logged_at in 100 of the 950 rows with both set)"), lines["closed_at"]
    assert "earlier than" not in lines["opened_at"]
    # a date falling either way around the others is in no usual order with them
    assert "earlier than" not in lines["reviewed_on"] and "reviewed_on" not in lines["closed_at"]
    # one row of 1000 (under 1%) is not shown
    assert "earlier than" not in lines["logged_at"]


def test_the_counts_and_their_bounds(con) -> None:
    def query(sql: str) -> pd.DataFrame:
        return con.execute(sql).df()

    columns = [("opened_at", "TIMESTAMP"), ("closed_at", "TIMESTAMP"), ("reviewed_on", "DATE"),
               ("logged_at", "TIMESTAMP")]
    found = out_of_order(query, "incidents", 1000, columns, quote=lambda c: c)
    assert found == {"closed_at": (OutOfOrder("opened_at", 100, 950),
                                   OutOfOrder("logged_at", 100, 950))}
    assert out_of_order(query, "incidents", MAX_ROWS + 1, columns, quote=lambda c: c) == {}
    assert out_of_order(query, "incidents", 1000, columns[:1], quote=lambda c: c) == {}
    seen: list[str] = []
    out_of_order(lambda sql: seen.append(sql) or query(sql), "incidents", 1000,
                 [*columns] * 3, quote=lambda c: c)
    pairs = MAX_COLUMNS * (MAX_COLUMNS - 1) // 2
    assert len(seen) == 1 and seen[0].count(" AS d2_both") == pairs


def test_a_failing_query_gives_no_finding_and_the_profile_stays(con) -> None:
    def failing(sql: str) -> pd.DataFrame:
        raise QueryFailedError("Conversion Error: cannot compare")

    assert out_of_order(failing, "incidents", 1000, [("opened_at", "TIMESTAMP"),
                                                      ("closed_at", "TIMESTAMP")],
                        quote=lambda c: c) == {}


def test_a_date_is_compared_with_a_timestamp_by_date() -> None:
    """A ticket resolved at 14:00 on its due date is not late: compared with the due
    date's midnight it read "due_date ... earlier than resolved_at in 100 of the 1000
    rows" (a review); 20 resolved the next day are."""
    con = duckdb.connect()
    con.execute("""
        CREATE TABLE tickets AS
        SELECT DATE '2024-01-01' + CAST(i % 300 AS INTEGER) AS due_date,
               TIMESTAMP '2024-01-01' + to_days(i % 300)
                   + CASE WHEN i % 50 = 7 THEN to_hours(30)
                          WHEN i % 10 = 3 THEN to_hours(14)
                          ELSE to_hours(-48) END AS resolved_at
        FROM range(1000) r(i)""")
    lines = _lines(GuardedSQL(con).schema_summary())
    assert lines["due_date"].endswith(
        "(earlier than resolved_at in 20 of the 1000 rows with both set)"), lines["due_date"]


@pytest.mark.parametrize("name", ["DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE",
                                  "TIMESTAMP_NS", "timestamp without time zone",
                                  "TIMESTAMP(6) WITH TIME ZONE", "timestamp_ntz", "DATETIME"])
def test_date_and_time_types_of_each_source_are_compared(name: str) -> None:
    assert TIME_TYPE.fullmatch(name)


@pytest.mark.parametrize("name", ["INTERVAL", "TIME", "VARCHAR", "DATE[]", "UPDATED"])
def test_other_types_are_not(name: str) -> None:
    assert not TIME_TYPE.fullmatch(name)
