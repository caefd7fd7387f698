"""On the user's own connection, a dotted name that is no table (``planted.csv``,
``other.db``) is refused before DuckDB reads it as a file, and a name that is no table
never reads a Python variable (replacement scans are off while a guarded statement runs,
and the user's setting is restored); qualified names of real tables and views still run."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest

from d2_notebook.data import GuardedSQL
from d2_notebook.errors import UnsafeSQLError


@pytest.fixture
def user_sql(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GuardedSQL:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "planted.csv").write_text("secret\nPLANTED-csv\n")
    (tmp_path / "data.json").write_text('{"k": "PLANTED-json"}\n')
    other = duckdb.connect(str(tmp_path / "other.db"))
    other.execute("CREATE TABLE db AS SELECT 'PLANTED-db' AS secret")
    other.close()
    con = duckdb.connect()
    con.execute("CREATE TABLE patients AS SELECT 1 AS id, 72 AS age")
    con.execute("CREATE SCHEMA ward; CREATE TABLE ward.beds AS SELECT 3 AS n")
    con.execute("CREATE VIEW ward.old AS SELECT * FROM main.patients WHERE age > 70")
    return GuardedSQL(con)


@pytest.mark.parametrize("statement", [
    "SELECT * FROM planted.csv",
    'SELECT * FROM "planted"."csv"',
    "FROM data.json",
    "SELECT * FROM other.db",
    "SELECT p.id FROM patients p JOIN planted.csv c ON true",
    "WITH c AS (SELECT * FROM planted.csv) SELECT * FROM c",
    "SELECT * FROM patients WHERE id IN (SELECT 1 FROM planted.csv)",
    "DESCRIBE SELECT * FROM planted.csv",
    "SUMMARIZE SELECT * FROM planted.csv",
    "EXPLAIN ANALYZE SELECT * FROM planted.csv",
])
def test_a_dotted_name_that_is_no_table_is_refused_not_read_as_a_file(
        user_sql: GuardedSQL, statement: str) -> None:
    with pytest.raises(UnsafeSQLError, match=r"is no table or view of the database .*"
                                             r"Query the tables listed by SHOW TABLES"):
        user_sql.run(statement)


def test_a_view_over_a_dotted_file_name_is_refused(user_sql: GuardedSQL) -> None:
    user_sql._con.execute("CREATE VIEW leak AS SELECT * FROM planted.csv")
    with pytest.raises(UnsafeSQLError, match=r"planted\.csv is no table or view"):
        user_sql.run("SELECT * FROM leak")


@pytest.mark.parametrize("statement, expected", [
    ("SELECT id FROM main.patients", 1),
    ("SELECT id FROM memory.main.patients", 1),
    ("SELECT id FROM memory.patients", 1),
    ("SELECT n FROM ward.beds", 3),
    ("SELECT n FROM WARD.Beds", 3),
    ("SELECT count(*) FROM ward.old", 1),
    ("SELECT count(*) FROM information_schema.tables WHERE table_name = 'beds'", 1),
])
def test_qualified_names_of_tables_and_views_still_run(user_sql: GuardedSQL, statement: str,
                                                       expected: int) -> None:
    assert user_sql.run(statement).frame.iloc[0, 0] == expected


def test_no_python_variable_is_read_and_the_users_setting_is_kept(
        user_sql: GuardedSQL) -> None:
    con = user_sql._con
    con.execute("SET python_scan_all_frames = true")
    notebook_frame = pd.DataFrame({"secret": ["PLANTED-frame"]})  # noqa: F841 (scanned by name)
    assert con.execute("SELECT * FROM notebook_frame").fetchall() == [("PLANTED-frame",)]
    with pytest.raises(Exception, match="notebook_frame does not exist") as refused:
        user_sql.run("SELECT * FROM notebook_frame")
    assert "PLANTED" not in str(refused.value)
    assert con.execute("SELECT current_setting('python_enable_replacements')").fetchall() == [
        (True,)]
    con.register("visits", pd.DataFrame({"id": [1, 2]}))  # registered: a table of the user's
    assert user_sql.run("SELECT count(*) FROM visits").frame.iloc[0, 0] == 2
