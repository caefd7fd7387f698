"""Data fingerprints: any inserted, deleted or edited row changes a table's fingerprint,
equal contents give equal fingerprints, on DuckDB and on the real PostgreSQL fixture;
``tables_read`` names exactly the tables a statement reads."""

from __future__ import annotations

import duckdb
import pytest

from d2_notebook.data import Dialect, open_source
from d2_notebook.data.fingerprint import fingerprint_tables, table_fingerprint, tables_read


def test_tables_read_skips_ctes_and_keeps_qualified_names() -> None:
    sql = ("WITH older AS (SELECT * FROM patients WHERE age >= 65) "
           "SELECT * FROM older o JOIN main.Outcomes u USING (patient_id) "
           "WHERE o.patient_id IN (SELECT patient_id FROM comorbidities)")
    assert tables_read(sql, Dialect.DUCKDB) == {"patients", "main.outcomes", "comorbidities"}
    assert tables_read("SELECT 1", Dialect.DUCKDB) is None, "reads no table"
    assert tables_read("SELECT * FROM range(3)", Dialect.DUCKDB) is None, "a table function"
    assert tables_read("SELECT FROM WHERE (", Dialect.DUCKDB) is None


def test_every_kind_of_change_changes_the_duckdb_fingerprint() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT range AS id, range % 3 AS g FROM range(100)")
    source = open_source(con)
    seen = {table_fingerprint(source, "t")}
    for change in ("INSERT INTO t VALUES (100, 1)", "UPDATE t SET g = 0 WHERE id = 5",
                   "DELETE FROM t WHERE id = 7", "UPDATE t SET g = 1 WHERE id = 9"):
        con.execute(change)
        now = table_fingerprint(source, "t")
        assert now not in seen, change
        seen.add(now)
    con.execute("CREATE TABLE same AS SELECT * FROM t ORDER BY id DESC")
    assert table_fingerprint(source, "same") == table_fingerprint(source, "t"), (
        "row order does not matter")
    assert table_fingerprint(source, "missing") is None
    assert fingerprint_tables(source, ["t", "missing"]).keys() == {"t"}


@pytest.fixture
def probe(postgres_cluster, hospital_pg_url):
    """A table of the PostgreSQL fixture's hospital database the test may change."""
    with postgres_cluster.admin("hospital") as con:
        con.execute("CREATE TABLE fp_probe AS SELECT g AS id, g % 3 AS k FROM "
                    "generate_series(1, 50) AS g")
        con.execute("GRANT SELECT ON fp_probe TO analyst")
    yield postgres_cluster
    with postgres_cluster.admin("hospital") as con:
        con.execute("DROP TABLE fp_probe")


def test_a_postgres_fingerprint_changes_with_the_data(probe, hospital_pg_url) -> None:
    source = open_source(hospital_pg_url, timeout_s=60)
    try:
        before = table_fingerprint(source, "fp_probe")
        assert before is not None and before.startswith("50:")
        assert table_fingerprint(source, "fp_probe") == before
        with probe.admin("hospital") as con:
            con.execute("UPDATE fp_probe SET k = 9 WHERE id = 3")
        after = table_fingerprint(source, "fp_probe")
        assert after is not None and after != before and after.startswith("50:")
    finally:
        source.close()
