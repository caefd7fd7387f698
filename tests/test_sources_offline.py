"""The parts of the sources layer that need no server: transpile, guard rules, open_source."""

from __future__ import annotations

import duckdb
import pytest
from sqlalchemy.engine import make_url

from d2_notebook.data import Dialect, GuardedSQL, SourceInfo, SourceKind, open_source, transpile
from d2_notebook.data.sources import DuckDBSource
from d2_notebook.data.sources.sqlalchemy_source import redact_url
from d2_notebook.data.sqlglot_guard import StatementKind, check_statement
from d2_notebook.datasets import hospital
from d2_notebook.errors import QueryFailedError, UnsafeSQLError


def test_transpile_expands_group_by_all_and_order_by_all():
    sql = "SELECT drug, severity, count(*) AS n FROM t GROUP BY ALL ORDER BY ALL"
    assert transpile(sql, Dialect.POSTGRES) == (
        "SELECT drug, severity, COUNT(*) AS n FROM t GROUP BY 1, 2 ORDER BY 1, 2, 3")
    assert transpile(sql, Dialect.DUCKDB) == sql
    assert "CAST(x AS DOUBLE PRECISION) / 2" in transpile("SELECT x / 2 FROM t", "postgres")
    with pytest.raises(ValueError):
        transpile("SELECT 1", "no-such-dialect")


def test_guard_runs_the_regenerated_sql_not_the_text():
    checked = check_statement("select /* hi */ 1 AS one -- bye", Dialect.POSTGRES, timeout_s=5)
    assert checked.sql == "SELECT 1 AS one" and checked.kind is StatementKind.QUERY
    # A Unicode-escaped name reads as harmless, and harmless is what runs.
    escaped = check_statement("""SELECT U&"pg\\005fread_file"('x')""", Dialect.POSTGRES,
                              timeout_s=5)
    assert "pg_read_file" not in escaped.sql


@pytest.mark.parametrize(("sql", "reason"), [
    ("SELECT pg_read_file('/etc/passwd')", "reads or writes server files"),
    ("SELECT lo_import('/x')", "large objects"),
    ("COPY (SELECT 1) TO PROGRAM 'id'", "copies data to or from files or programs"),
    ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE: it writes data"),
    ("SELECT pg_sleep(60)", "within the 5 s time limit"),
    ("SELECT current_setting('ssl_key_file')", "may reveal secrets"),
    ("SELECT * FROM pg_shadow", "role passwords"),
    ("SELECT 1; SELECT 2", "got 2 statements"),
    ("", "empty"),
])
def test_postgres_refusals_give_the_reason(sql, reason):
    with pytest.raises(UnsafeSQLError, match=reason):
        check_statement(sql, Dialect.POSTGRES, timeout_s=5)


def test_an_untested_dialect_gets_the_common_rules():
    assert check_statement("SELECT a FROM t", Dialect.TRINO, timeout_s=5).sql == "SELECT a FROM t"
    with pytest.raises(UnsafeSQLError, match="writes data"):
        check_statement("INSERT INTO t VALUES (1)", Dialect.SNOWFLAKE, timeout_s=5)


def test_redacted_urls_keep_no_secret():
    url = make_url("postgresql+psycopg://ana:s3cret@db:5432/shop?sslmode=require&password=x")
    assert redact_url(url) == "postgresql+psycopg://ana@db:5432/shop?sslmode=require"
    info = SourceInfo.from_dict({"kind": "sqlalchemy", "dialect": "postgres", "url": "u"})
    assert info.kind is SourceKind.SQLALCHEMY and info.describe() == "PostgreSQL (u)"


def test_open_source_for_duckdb_inputs_keeps_guarded_sql_behaviour(tmp_path):
    con = hospital.create()
    source = open_source(con)
    assert isinstance(source, DuckDBSource) and source.dialect is Dialect.DUCKDB
    assert source.schema_summary() == GuardedSQL(con).schema_summary()
    assert [str(k) for k in source.foreign_keys()][:1] == [
        "admissions(patient_id) -> patients(patient_id)"]
    with pytest.raises(UnsafeSQLError):
        source.run("DELETE FROM patients")
    path = tmp_path / "h.duckdb"
    hospital.create(path).close()
    with open_source(path) as from_path:
        assert from_path.info.url == str(path)
        assert from_path.run("SELECT count(*) AS n FROM patients").frame["n"].tolist() == [5000]
    assert open_source(source) is source
    with pytest.raises(TypeError, match="SQLAlchemy URL or Engine"):
        open_source(42)
    with pytest.raises(QueryFailedError, match="check the URL"):
        open_source("nosuchdb+driver://u@h/d")
    duckdb.connect().close()


@pytest.mark.parametrize("dialect", ["postgres", "spark"])
def test_transpile_unqualifies_duckdbs_own_functions(dialect: str) -> None:
    sql = ("SELECT system.main.count(x), system.main.count(DISTINCT x), "
           "system.main.count_star() FROM t WHERE system.main.lower(x) = 'system.main.f('")
    assert transpile(sql, dialect) == ("SELECT COUNT(x), COUNT(DISTINCT x), COUNT(*) FROM t "
                                       "WHERE LOWER(x) = 'system.main.f('")
    assert transpile(sql, "duckdb") == sql  # DuckDB keeps the guard-proof spelling
