"""Static checks of check_sql: hostile statements refused, analytical ones allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from d2_notebook.data import check_sql
from d2_notebook.data.sql_guard import analyze_sql
from d2_notebook.errors import QueryFailedError, UnsafeSQLError

CORPUS = Path(__file__).parent / "sql_corpus"


def load_corpus(name: str) -> list[str]:
    """Statements of a corpus file: one per line, ``-- `` lines are comments."""
    lines = (CORPUS / name).read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("-- ")]


HOSTILE = load_corpus("hostile.sql")
LEGIT = load_corpus("legit.sql")


def test_corpus_sizes() -> None:
    assert len(HOSTILE) >= 40
    assert len(LEGIT) >= 25


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_statement_is_refused(sql: str) -> None:
    with pytest.raises(UnsafeSQLError) as info:
        check_sql(sql.replace("{csv}", "/tmp/data.csv"))
    message = str(info.value)
    assert "refused" in message
    assert "only one read-only statement per call" in message


@pytest.mark.parametrize("sql", LEGIT)
def test_legit_statement_is_allowed(sql: str) -> None:
    assert check_sql(sql)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1;", "SELECT 1"),
        ("  SELECT 1 ;; ", "SELECT 1"),
        ("SELECT 1 -- note", "SELECT 1"),
        ("/* c */ SELECT 1", "SELECT 1"),
        ("SELECT ';DROP TABLE t' AS s;", "SELECT ';DROP TABLE t' AS s"),
        ("SELECT '--' AS s", "SELECT '--' AS s"),
        ("CALL pragma_table_info('t')", "SELECT * FROM pragma_table_info('t')"),
    ],
)
def test_normalized_statement(sql: str, expected: str) -> None:
    assert check_sql(sql) == expected


def test_string_with_semicolon_allowed_but_chained_statement_refused() -> None:
    assert check_sql("SELECT ';DROP TABLE t'") == "SELECT ';DROP TABLE t'"
    with pytest.raises(UnsafeSQLError, match="2 statements"):
        check_sql("SELECT 1; DROP TABLE t")


@pytest.mark.parametrize("sql", ["", "   ", ";", "-- only a comment"])
def test_empty_input_refused(sql: str) -> None:
    with pytest.raises(UnsafeSQLError):
        check_sql(sql)


def test_syntax_error_is_query_failed_with_hint() -> None:
    with pytest.raises(QueryFailedError, match="Hint"):
        check_sql("SELEC 1")


@pytest.mark.parametrize("word", ["month", "year", "day"])
def test_a_keyword_as_a_bare_alias_gets_the_hint_that_fixes_it(word: str) -> None:
    """``count(*) month`` fails at the keyword (a real-model collector lost a turn on it);
    the hint says to write AS or quote it, and the fixed statement passes."""
    with pytest.raises(QueryFailedError, match=f'"{word}" is a DuckDB keyword: put AS '
                                               "before it where it names a column"):
        check_sql(f"SELECT count(*) {word} FROM t")
    assert check_sql(f"SELECT count(*) AS {word} FROM t")
    for wrong in ("SELEC 1", "SELECT count(*) FROM FROM t",  # no keyword, a reserved one,
                  "SELECT x FROM t WHERE x NOT IS NULL"):  # or an operator word
        with pytest.raises(QueryFailedError) as failed:
            check_sql(wrong)
        assert "keyword" not in str(failed.value)


def test_messages_name_the_reason() -> None:
    with pytest.raises(UnsafeSQLError, match="writes data"):
        check_sql("DELETE FROM t")
    with pytest.raises(UnsafeSQLError, match="read_csv"):
        check_sql("SELECT * FROM t JOIN read_csv('x') USING (id)")
    with pytest.raises(UnsafeSQLError, match="looks like a file"):
        check_sql("SELECT * FROM 'x.parquet'")
    with pytest.raises(UnsafeSQLError, match="changes a setting"):
        check_sql("SET threads = 1")


@pytest.mark.parametrize(
    ("sql", "types"),
    [
        ("SELECT 1", set()),
        ("SELECT '1.2.3.4'::INET AS x", {"inet"}),
        ("SELECT TRY_CAST('{}' AS JSON)", {"json"}),
        ("SELECT INET '1.2.3.4'", {"inet"}),
        ("SELECT CAST(1 AS DECIMAL(10, 2)), 1::INT, 'a'::TEXT", {"decimal", "integer", "text"}),
        ("SELECT CAST(NULL AS STRUCT(a INET, b INTEGER[]))", {"struct", "inet", "list", "integer"}),
        ("SELECT CAST(NULL AS MAP(VARCHAR, INET))", {"map", "varchar", "inet"}),
        ("SELECT [1]::INT[3]", {"array", "integer"}),
        ("SELECT CAST('a' AS ENUM('a', 'b'))", {"enum"}),
        ("SELECT list_transform([1], x -> x::INET)", {"inet"}),
        ("EXPLAIN SELECT 1::UUID", {"uuid"}),
        ("WITH t AS (SELECT 1::HUGEINT AS h) SELECT h::BLOB FROM t", {"hugeint", "blob"}),
    ],
)
def test_types_named_by_a_statement(sql: str, types: set[str]) -> None:
    assert analyze_sql(sql).types == types


def test_json_structure_types_are_collected_and_must_be_literal() -> None:
    sql = """SELECT from_json(j, '{"a": "INET", "b": ["STRUCT(x UUID)"]}') FROM t"""
    assert analyze_sql(sql).types == {"inet", "struct", "uuid"}
    with pytest.raises(UnsafeSQLError, match="must be a JSON string literal"):
        analyze_sql("SELECT json_transform(j, s) FROM t")


def test_group_by_all_with_a_window_over_an_aggregate_gets_the_hint_that_fixes_it() -> None:
    """Two real-model agents wrote GROUP BY ALL beside sum(count(*)) OVER (PARTITION BY
    x); DuckDB's "Cannot mix aggregates with non-aggregated columns" came with the hint
    to DESCRIBE the table, which does not help."""
    import duckdb

    from d2_notebook.data import GuardedSQL

    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT (i % 3)::VARCHAR AS drug, (i % 4)::VARCHAR AS sev "
                "FROM range(30) r(i)")
    sql = GuardedSQL(con)
    share = "count(*) * 1.0 / sum(count(*)) OVER (PARTITION BY drug) AS share"
    with pytest.raises(QueryFailedError, match="name the GROUP BY columns explicitly"):
        sql.run(f"SELECT drug, sev, count(*) AS n, {share} FROM t GROUP BY ALL")
    assert len(sql.run(f"SELECT drug, sev, count(*) AS n, {share} FROM t "
                         "GROUP BY drug, sev").frame) == 12
