"""The schema summary's column profile: NULL and placeholder-zero shares, on real DuckDB files.

A column shows ``(73% null)`` when at least 1 % of its rows are NULL and, if numeric,
``(0 in 73% of rows)`` when at least 10 % are exactly 0; a column with neither reads as
it always did. One aggregate query per readable table computes it; a profile that fails
or times out leaves the table shown without one.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from d2_notebook.data import GuardedSQL, schema
from d2_notebook.data.schema import (
    NULL_PERCENT_SHOWN,
    ZERO_PERCENT_SHOWN,
    ColumnInfo,
    profile_note,
)
from d2_notebook.errors import QueryFailedError, QueryTimeoutError

# 500 expense lines: 366 not processed yet (processing time 0, no processed date).
EXPENSES = """
CREATE TABLE expenses AS
SELECT i AS line, ((i % 7) * 10.5 + 1)::DOUBLE AS amount,
       CASE WHEN i < 366 THEN 0.0 ELSE 1.0 + i % 9 END::DOUBLE AS processing_time,
       CASE WHEN i < 366 THEN NULL ELSE DATE '2024-01-01' + i::INT END AS processed_date,
       CASE WHEN i % 4 = 0 THEN 0 ELSE i END AS "Refund Cents",
       i % 2 = 0 AS flag, CASE WHEN i % 3 = 0 THEN '0' ELSE 'x' END AS code,
       CASE WHEN i = 7 THEN NULL ELSE 'k' END AS rare_null,
       CAST(NULL AS VARCHAR) AS never_set, 0::DECIMAL(6, 2) AS fee,
       CASE WHEN i % 5 = 0 THEN -1.5 - i % 13 ELSE 2.5 + i % 13 END AS wait_hours,
       CASE WHEN i = 3 THEN -2 ELSE i + 1 END AS one_negative,
       -1 - i AS debit
FROM range(500) t(i)
"""
CLEAN = """
CREATE TABLE clean AS
SELECT i + 1 AS id, 'name ' || i AS name, ((i % 5) * 2.5 + 1)::DOUBLE AS score
FROM range(40) t(i)
"""
CLEAN_TEXT = """clean (table, 40 rows)
  id BIGINT e.g. 1 | 2 | 3
  name VARCHAR e.g. name 0 | name 1 | name 2
  score DOUBLE e.g. 1.0 | 3.5 | 6.0 | 8.5 | 11.0"""


@pytest.fixture
def db_file(tmp_path: Path) -> Path:
    path = tmp_path / "expenses.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(EXPENSES)
        con.execute(CLEAN)
        con.execute("CREATE TABLE empty (n INTEGER, d DATE)")
    return path


def column_lines(summary: str) -> dict[str, str]:
    """Each column's line by its name as written (quoted if needed)."""
    lines = {}
    for line in summary.splitlines():
        if line.startswith("  ") and not line.startswith("   "):
            text = line.strip()
            name = text[: text.index('" ') + 1] if text.startswith('"') else text.split()[0]
            lines[name] = text
    return lines


def test_placeholder_zeros_and_missing_dates_are_shown(db_file: Path) -> None:
    with GuardedSQL(db_file) as guard:
        summary = guard.schema_summary()
    lines = column_lines(summary)
    assert "expenses (table, 500 rows)" in summary
    assert lines["processing_time"] == "processing_time DOUBLE e.g. 0.0 (0 in 73% of rows)"
    assert lines["processed_date"].endswith(" (73% null)")
    assert lines['"Refund Cents"'] == '"Refund Cents" BIGINT e.g. 0 | 1 | 2 (0 in 25% of rows)'
    assert lines["never_set"] == "never_set VARCHAR (all null)"
    assert lines["fee"] == "fee DECIMAL(6,2) e.g. 0.0 (all 0)"
    # 1 NULL in 500 rows is under the 1 % bar; a false or a '0' text is not a zero
    assert lines["rare_null"] == "rare_null VARCHAR e.g. k (one value where not null)"
    assert lines["flag"] == "flag BOOLEAN e.g. True | False"
    assert lines["code"] == "code VARCHAR e.g. 0 | x"
    assert lines["line"] == "line BIGINT e.g. 0 | 1 | 2"  # one zero in 500 rows
    # below 0 in a fifth of the rows (an end before its start), though the samples are not
    assert lines["wait_hours"] == "wait_hours DECIMAL(21,1) e.g. -1.5 | 3.5 | 4.5 " \
        "(below 0 in 20% of rows)"
    assert lines["one_negative"] == "one_negative BIGINT e.g. 1 | 2 | 3"  # under 1 %
    assert lines["debit"].endswith(" (all below 0)")
    assert "empty (table, 0 rows)\n  n INTEGER\n  d DATE\n" in summary


def test_a_text_column_sorted_in_its_table_shows_more_than_its_first_rows_value() -> None:
    """A real model read ``model_category VARCHAR e.g. Computer`` as a column of one value
    and never grouped by it: the first 100 rows were all computers, of seven categories.
    The profile's least and greatest value fill the samples, and a column that does hold
    one value says so."""
    con = duckdb.connect()
    con.execute("""CREATE TABLE assets AS SELECT i,
        CASE WHEN i < 150 THEN 'Computer' WHEN i % 2 = 0 THEN 'Server' ELSE 'Printer' END
            AS model_category, 'EUR' AS currency FROM range(300) t(i)""")
    lines = column_lines(GuardedSQL(con).schema_summary())
    assert lines["model_category"] == "model_category VARCHAR e.g. Computer | Server"
    assert lines["currency"] == "currency VARCHAR e.g. EUR (one value in every row)"


def test_a_table_without_nulls_or_zeros_reads_as_before(db_file: Path) -> None:
    with GuardedSQL(db_file) as guard:
        summary = guard.schema_summary()
        tables = [schema.describe(guard._query, i) for i in guard._catalog()]
    assert CLEAN_TEXT + "\n" in summary
    unprofiled = [replace(t, columns=tuple(replace(c, null_count=None, zero_count=None)
                                           for c in t.columns)) for t in tables]
    clean = [t for t in tables if t.name == "clean"]
    assert schema.summarize(clean) == schema.summarize(
        [t for t in unprofiled if t.name == "clean"])
    assert clean[0].columns[0].null_count == 0 and clean[0].columns[0].zero_count == 0


def test_the_summary_is_deterministic_and_one_query_profiles_a_table(db_file: Path) -> None:
    with GuardedSQL(db_file) as guard:
        seen: list[str] = []
        run = guard._query

        def spy(sql: str):
            seen.append(sql)
            return run(sql)

        guard._query = spy  # type: ignore[method-assign]
        first = guard.schema_summary()
        assert guard.schema_summary() == first
    profiles = [sql for sql in seen[: len(seen) // 2] if "d2_rows" in sql]
    assert len(profiles) == 3  # clean, empty, expenses: one aggregate query each
    assert not any("count_star() FROM" in sql for sql in seen)  # the profile counted rows
    expenses = next(sql for sql in profiles if sql.endswith("main.expenses"))
    assert 'system.main.count(CASE WHEN "Refund Cents" = 0 THEN 1 END)' in expenses
    assert 'system.main.count(CASE WHEN "Refund Cents" < 0 THEN 1 END)' in expenses
    assert "code = 0" not in expenses and "flag = 0" not in expenses


@pytest.mark.parametrize("error", [QueryFailedError("boom"), QueryTimeoutError("slow")])
def test_a_failing_profile_leaves_the_table_counted_and_unprofiled(
        db_file: Path, error: Exception) -> None:
    with GuardedSQL(db_file) as guard:
        run = guard._query

        def failing(sql: str):
            if "d2_rows" in sql and sql.endswith("main.expenses"):
                raise error
            return run(sql)

        guard._query = failing  # type: ignore[method-assign]
        summary = guard.schema_summary()
    lines = column_lines(summary)
    assert "expenses (table, 500 rows)" in summary  # counted alone, as before
    assert lines["processing_time"] == "processing_time DOUBLE e.g. 0.0"
    assert "(73% null)" not in summary and "all null" not in summary
    assert CLEAN_TEXT in summary


def test_a_profile_that_times_out_for_real_does_not_break_the_summary() -> None:
    con = duckdb.connect()
    # count(*) skips the hash; the profile's count(s) computes it for 2 million rows
    con.execute("CREATE VIEW heavy AS SELECT range AS n, md5(repeat('abcdefgh', 1000) || "
                "range) AS s, CASE WHEN range % 2 = 1 THEN range END AS half "
                "FROM range(2000000)")
    summary = GuardedSQL(con, timeout_s=2).schema_summary()
    assert "heavy (view, 2000000 rows)\n  n BIGINT e.g. 0 | 1 | 2\n" in summary
    assert "  half BIGINT e.g. 1 | 3 | 5\n" in summary  # half NULL, but no profile


def test_views_the_sql_tool_may_not_read_get_no_profile(tmp_path: Path) -> None:
    con = duckdb.connect()
    con.execute("CREATE VIEW secrets AS SELECT CAST(NULL AS INTEGER) AS x, "
                "current_setting('threads') AS t")
    guard = GuardedSQL(con)
    seen: list[str] = []
    run = guard._query
    guard._query = lambda sql: seen.append(sql) or run(sql)  # type: ignore[method-assign]
    summary = guard.schema_summary()
    assert "secrets (view, not readable by the SQL tool" in summary
    assert "  x INTEGER\n" in summary and "null" not in summary
    assert not any("d2_rows" in sql for sql in seen)


@pytest.mark.parametrize(("nulls", "zeros", "rows", "note"), [
    (0, 0, 500, ""),
    (4, None, 500, ""),                       # 0.8 %: under the bar
    (5, None, 500, " (1% null)"),             # exactly 1 %
    (366, None, 500, " (73% null)"),
    (1, None, 8, " (13% null)"),              # 12.5 % rounds half up
    (998, None, 1000, " (99% null)"),         # 99.8 %: never "100%" unless all
    (1000, None, 1000, " (all null)"),
    (0, 49, 500, ""),                         # 9.8 % zeros: under the bar
    (0, 50, 500, " (0 in 10% of rows)"),
    (0, 500, 500, " (all 0)"),
    (100, 200, 500, " (20% null, 0 in 40% of rows)"),
    (3, 3, None, ""),                         # not counted: no profile
    (0, 0, 0, ""),                            # an empty table
])
def test_the_profile_note(nulls: int, zeros: int | None, rows: int | None,
                          note: str) -> None:
    column = ColumnInfo("c", "DOUBLE", True, (), nulls, zeros)
    assert profile_note(column, rows) == note


def test_the_thresholds_are_named() -> None:
    assert (NULL_PERCENT_SHOWN, ZERO_PERCENT_SHOWN) == (1, 10)
    unprofiled = ColumnInfo("c", "DOUBLE")
    assert profile_note(unprofiled, 100) == ""


def test_keyword_columns_are_quoted_so_their_table_is_profiled() -> None:
    con = duckdb.connect()
    con.execute('CREATE TABLE t ("order" INTEGER, "null" INTEGER, "user" INTEGER)')
    con.execute("INSERT INTO t VALUES (0, NULL, 0), (NULL, NULL, 0)")
    summary = GuardedSQL(con).schema_summary()
    assert '  "order" INTEGER e.g. 0 (50% null, 0 in 50% of rows)\n' in summary
    assert '  "null" INTEGER (all null)\n' in summary  # not count(null), a literal
    assert "  user INTEGER e.g. 0 (all 0)\n" in summary  # a keyword that may stay bare


def test_the_keywords_quote_ident_quotes_are_duckdbs() -> None:
    """A DuckDB upgrade that adds a reserved keyword fails here until it is listed."""
    rows = duckdb.sql("SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category "
                      "IN ('reserved', 'type_function')").fetchall()
    assert [k for (k,) in rows if schema.quote_ident(k) == k] == []


def test_a_column_of_few_values_shows_them_all_and_dates_read_as_dates() -> None:
    """A real-model agent read "priority e.g. Medium | High | Low" and missed the Critical
    goals, and took a DATE column's "2022-03-09 00:00:00" for a timestamp. A column whose
    sampled rows repeat at most six values shows every one; a column of many values shows
    three; a DATE reads as a date, a TIMESTAMP keeps its time."""
    con = duckdb.connect()
    con.execute("""CREATE TABLE goals AS SELECT i AS id,
        ['Medium', 'High', 'Low', 'Medium', 'High', 'Low', 'Medium', 'Critical'][1 + i % 8]
            AS priority,
        'owner ' || i AS owner, DATE '2022-03-09' + i::INT AS start_date,
        TIMESTAMP '2022-03-09 00:00:00' + i * INTERVAL 1 HOUR AS opened_at
        FROM range(40) r(i)""")
    con.execute("CREATE TABLE tiny AS SELECT * FROM (VALUES ('a'), ('b'), ('c'), ('d')) v(x)")
    lines = column_lines(GuardedSQL(con).schema_summary())
    assert lines["priority"] == "priority VARCHAR e.g. Medium | High | Low | Critical"
    assert lines["owner"] == "owner VARCHAR e.g. owner 0 | owner 1 | owner 2"
    assert lines["start_date"] == "start_date DATE e.g. 2022-03-09 | 2022-03-10 | 2022-03-11"
    assert lines["opened_at"].startswith("opened_at TIMESTAMP e.g. 2022-03-09 00:00:00 | ")
    assert lines["x"] == "x VARCHAR e.g. a | b | c"  # four rows, four values: no repeats


def test_a_value_rarer_than_the_first_rows_show_is_added_from_the_profile() -> None:
    """Review finding: a value first seen after the first 100 rows stayed hidden behind
    a list that now looks complete. The profile's least and greatest value join a few
    values' list (Critical sorts first here); a DATE column's value that carries a time
    of day (an Oracle DATE through SQLAlchemy) keeps it."""
    con = duckdb.connect()
    con.execute("CREATE TABLE goals AS SELECT i AS id, CASE WHEN i >= 150 AND i % 10 = 0 "
                "THEN 'Critical' ELSE ['Medium', 'High', 'Low'][1 + i % 3] END AS priority "
                "FROM range(300) r(i)")
    lines = column_lines(GuardedSQL(con).schema_summary())
    assert lines["priority"] == "priority VARCHAR e.g. Medium | High | Low | Critical"
    stamps = pd.Series(pd.to_datetime(["2022-03-09 00:00:00", "2022-03-09 14:30:00"]))
    column = schema.with_samples_from(ColumnInfo("d", "DATE"), stamps, 3)
    assert column.samples == ("2022-03-09", "2022-03-09 14:30:00")
