"""Round 5 of the DuckDB guard: what a table or macro computes when it is read, and values
quadratic in the data built inside one call.

- A generated column is computed when its table is read, like a view: a table whose
  generated column reads a variable, a setting or a registered Python function is
  refused (naming the column), and the schema summary shows it without samples.
- A macro parameter's default is folded by DuckDB from any expression at creation and
  kept out of the catalog: a call that leaves a parameter out is refused.
- A lambda may not capture a value from outside it, and a quadratic string distance may
  not compare a string the query built.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from d2_notebook.data import GuardedSQL
from d2_notebook.data.execution import with_hint
from d2_notebook.errors import UnsafeSQLError

SECRET_VARIABLE = "PLANTED-variable-6b21"
SECRET_TEMP = "PLANTED-tempdir-93fa"
UDF_RAN = "PLANTED-udf-ran-0c4d"


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    con = duckdb.connect()
    con.execute("CREATE TABLE sales (price INTEGER, qty INTEGER, "
                "total INTEGER AS (price * qty), name VARCHAR)")
    con.execute("INSERT INTO sales (price, qty, name) VALUES (3, 4, 'Ann'), (5, 1, 'Bob')")
    con.execute("CREATE TABLE events (id INTEGER, note VARCHAR AS (getvariable('myvar')), "
                "tmp VARCHAR AS (current_setting('temp_directory')))")
    con.execute("INSERT INTO events (id) VALUES (1)")
    con.create_function("home_of", lambda a: UDF_RAN, [int], str)
    con.execute("CREATE TABLE g_udf (a INTEGER, s VARCHAR AS (home_of(a)))")
    con.execute("INSERT INTO g_udf (a) VALUES (1)")
    con.execute(f"SET VARIABLE api_token = '{SECRET_VARIABLE}'")
    con.execute("CREATE MACRO with_token(path, token := getvariable('api_token')) AS "
                "path || '?token=' || token")
    con.execute("CREATE MACRO tmpdir(d := current_setting('temp_directory')) AS d")
    con.execute("CREATE MACRO add_tax(amount, rate := 0.2) AS amount * (1 + rate)")
    con.execute("CREATE VIEW v_token AS SELECT with_token('p') AS u")
    con.execute(f"SET VARIABLE myvar = '{SECRET_VARIABLE}'")
    con.execute(f"SET temp_directory = '/tmp/{SECRET_TEMP}'")
    yield con
    con.close()


def _refused(guard: GuardedSQL, sql: str) -> str:
    with pytest.raises(UnsafeSQLError) as info:
        guard.run(sql)
    message = str(info.value)
    assert SECRET_VARIABLE not in message and SECRET_TEMP not in message
    return message


# --- generated columns ---------------------------------------------------------------


@pytest.mark.parametrize("sql", [
    "SELECT * FROM events",
    "SELECT note FROM events",
    "SELECT count(*) FROM main.events",
    "SELECT * FROM sales JOIN events ON events.id = sales.qty",
    "SELECT * FROM (SELECT tmp FROM events)",
])
def test_a_table_whose_generated_column_reads_state_is_refused(
        con: duckdb.DuckDBPyConnection, sql: str) -> None:
    message = _refused(GuardedSQL(con), sql)
    assert "table main.events has a generated column" in message
    assert "getvariable()" in message or "current_setting()" in message
    assert "view over its other columns" in message


def test_a_generated_column_calling_a_python_function_is_refused(
        con: duckdb.DuckDBPyConnection) -> None:
    message = _refused(GuardedSQL(con), "SELECT * FROM g_udf")
    assert "generated column s" in message and "home_of()" in message


def test_the_schema_summary_shows_no_generated_state(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)
    summary = guard.schema_summary()
    assert SECRET_VARIABLE not in summary and SECRET_TEMP not in summary
    assert UDF_RAN not in summary
    assert "events (table, not readable by the SQL tool" in summary
    tables = {t.name: t for t in guard.list_tables()}
    assert tables["events"].unreadable and tables["events"].row_count is None
    assert tables["g_udf"].unreadable
    described = guard.describe("events")
    assert all(not c.samples for c in described.columns)
    with pytest.raises(UnsafeSQLError):
        guard.sample("events")


def test_a_plain_generated_column_is_read_and_summarized(
        con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)
    frame = guard.run("SELECT name, total FROM sales ORDER BY name").frame
    assert frame["total"].tolist() == [12, 5]
    assert guard.run("SELECT * FROM sales").row_count == 2
    tables = {t.name: t for t in guard.list_tables()}
    assert not tables["sales"].unreadable and tables["sales"].row_count == 2
    summary = guard.schema_summary()
    assert "sales (table, 2 rows)" in summary and "total INTEGER e.g. 12 | 5" in summary


# --- macro parameter defaults ------------------------------------------------------------


@pytest.mark.parametrize("sql, parameter", [
    ("SELECT with_token('https://api/x') AS u", "with_token(path, token)"),
    ("SELECT tmpdir() AS d", "tmpdir(d)"),
    ("SELECT with_token(path := 'x') AS u", "with_token(path, token)"),
    ("SELECT 'x'.with_token() AS u", "with_token(path, token)"),
    ("SELECT * FROM v_token", "with_token(path, token)"),
    ("SELECT add_tax(price) FROM sales", "add_tax(amount, rate)"),
])
def test_a_call_leaving_a_parameter_to_its_default_is_refused(
        con: duckdb.DuckDBPyConnection, sql: str, parameter: str) -> None:
    message = _refused(GuardedSQL(con), sql)
    assert parameter in message and "Pass every parameter explicitly" in message


def test_a_macro_called_with_every_parameter_runs(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)
    assert guard.run("SELECT with_token('p', 't') AS u").frame["u"].tolist() == ["p?token=t"]
    assert guard.run("SELECT tmpdir('d') AS d").frame["d"].tolist() == ["d"]
    frame = guard.run("SELECT add_tax(price, rate := 0.5) AS v FROM sales ORDER BY v").frame
    assert frame["v"].tolist() == [4.5, 7.5]


def test_struct_and_list_defaults_are_hidden_whole_in_binder_errors() -> None:
    con = duckdb.connect()
    con.execute(f"SET VARIABLE s = '{SECRET_VARIABLE}'")
    con.execute("CREATE MACRO m(a, b := {'x': getvariable('s'), 'y': 2}, "
                "c := [getvariable('s'), 'z']) AS a")
    with pytest.raises(duckdb.BinderException) as info:
        con.execute("SELECT m(1, 2, 3, 4)")
    assert SECRET_VARIABLE in str(info.value)  # the trap is live
    text = with_hint(info.value)
    assert SECRET_VARIABLE not in text and "m(a, b := …)" in text
    con.close()


# --- values quadratic in the data ------------------------------------------------------


@pytest.mark.parametrize("sql, words", [
    ("WITH l AS (SELECT list(i) AS xs FROM range(6000) r(i)) "
     "SELECT len(flatten(list_transform(xs, lambda x: xs))) FROM l", "uses xs"),
    ("WITH l AS (SELECT list(i) AS xs FROM range(6000) r(i)) "
     "SELECT len(flatten([xs FOR x IN xs])) FROM l", "uses xs"),
    ("WITH l AS (SELECT [list(i)] AS xs FROM range(6000) r(i)) "
     "SELECT list_transform(xs, x -> list_transform(x, y -> x)) FROM l", "uses x,"),
    ("WITH l AS (SELECT string_agg(i::VARCHAR, '') AS s FROM range(6000) r(i)) "
     "SELECT list_transform(range(100), x -> s) FROM l", "uses s"),
    ("SELECT list_transform(xs, x -> range(5000)) FROM (SELECT [1, 2] AS xs)",
     "per list element"),
    ("WITH x AS (SELECT string_agg(chr((65 + i % 26)::INTEGER), '') AS s, "
     "string_agg(chr((66 + i % 25)::INTEGER), '') AS t FROM range(6000) r(i)) "
     "SELECT damerau_levenshtein(s, t) FROM x", "a CTE"),
    ("SELECT levenshtein(s, 'x') FROM (SELECT string_agg(name, '') AS s FROM sales)",
     "in FROM"),
    ("SELECT string_agg(name, '') AS s, levenshtein(s, s) FROM sales", "the alias s"),
    ("SELECT list_transform([repeat('a', 9000)], x -> levenshtein(x, x))",
     "a lambda parameter"),
])
def test_quadratic_values_refused_before_running(con: duckdb.DuckDBPyConnection, sql: str,
                                                 words: str) -> None:
    assert words in _refused(GuardedSQL(con, timeout_s=2), sql)


@pytest.mark.parametrize("sql, expected", [
    ("SELECT list_transform([1, 2, 3], lambda x: x * 2) AS v", [2, 4, 6]),
    ("SELECT [x * 2 FOR x IN [1, 2, 3] IF x > 1] AS v", [4, 6]),
    ("SELECT list_reduce([1, 2, 3], lambda a, b: a + b) AS v", 6),
    ("SELECT list_transform([{'a': 1}], lambda x: x.a + 1) AS v", [2]),
    ("SELECT list_transform([1, 2], lambda x: list_transform([x, x], lambda y: y + 1)) AS v",
     [[2, 2], [3, 3]]),
    ("SELECT list_transform(xs, lambda x: x * n::DOUBLE) AS v FROM (SELECT [1, 2] AS xs, 3 AS n)",
     [3.0, 6.0]),
    ("SELECT min(levenshtein(lower(name), 'ann')) AS v FROM sales", 0),
    ("SELECT min(jaro_similarity(a.name, b.name)) AS v FROM sales a JOIN sales b "
     "ON a.price = b.price", 1.0),
    ("SELECT levenshtein('kitten', 'sitting') AS v", 3),
])
def test_legitimate_lambdas_and_distances_run(con: duckdb.DuckDBPyConnection, sql: str,
                                              expected: object) -> None:
    assert _plain(GuardedSQL(con).run(sql).frame["v"].tolist()[0]) == expected


def _plain(value: object) -> object:
    """A result cell with its (nested) arrays as lists."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [_plain(v) for v in value] if isinstance(value, list) else value
