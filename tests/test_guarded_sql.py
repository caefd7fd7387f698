"""GuardedSQL on real DuckDB: refusals leave the database unchanged, analytical queries
run, user objects are visible, concurrency, read-only files, timeouts and truncation."""

from __future__ import annotations

import asyncio
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from d2_notebook.data import GuardedSQL, QueryResult, TableInfo
from d2_notebook.errors import QueryFailedError, QueryTimeoutError, UnsafeSQLError

CORPUS = Path(__file__).parent / "sql_corpus"


def load_corpus(name: str) -> list[str]:
    """Statements of a corpus file: one per line, ``-- `` lines are comments."""
    lines = (CORPUS / name).read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("-- ")]


HOSTILE = load_corpus("hostile.sql")
LEGIT = load_corpus("legit.sql")

SCHEMA = """
CREATE TABLE patients (id INTEGER PRIMARY KEY, name VARCHAR, age INTEGER, city VARCHAR,
                       admitted DATE);
INSERT INTO patients VALUES (1, 'Ann', 72, 'Oslo', '2023-02-01'),
    (2, 'Bob', 35, 'Rome', '2023-05-10'), (3, 'Cora', 64, 'Oslo', '2022-11-30'),
    (4, 'Dan', 50, 'Lima', '2024-01-15');
CREATE TABLE treatments (patient_id INTEGER, drug VARCHAR, outcome VARCHAR, dose DOUBLE);
INSERT INTO treatments VALUES (1, 'A', 'recovered', 1.5), (2, 'B', 'died', 2.0),
    (3, 'A', 'recovered', 1.0), (3, 'B', 'recovered', 0.5);
CREATE VIEW old_patients AS SELECT * FROM patients WHERE age > 60;
CREATE SEQUENCE seq;
"""
SLOW = "SELECT count(*) FROM range(10000000) a, range(10000000) b"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "data.csv").write_text("id,a\n1,2\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def con(workdir: Path) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute(SCHEMA)
    return connection


@pytest.fixture
def db_file(workdir: Path) -> Path:
    path = workdir / "cases.duckdb"
    connection = duckdb.connect(str(path))
    connection.execute(SCHEMA)
    connection.close()
    return path


def snapshot(con: duckdb.DuckDBPyConnection, workdir: Path) -> tuple:
    """Everything a refused statement could have changed."""
    queries = [
        "SELECT database_name, schema_name, table_name, sql FROM duckdb_tables() ORDER BY ALL",
        "SELECT database_name, view_name FROM duckdb_views() WHERE NOT internal ORDER BY ALL",
        "SELECT count(*) FROM duckdb_functions()",
        "SELECT database_name, path FROM duckdb_databases() ORDER BY ALL",
        "SELECT name, value FROM duckdb_settings() ORDER BY name",
        "SELECT sequence_name, last_value FROM duckdb_sequences()",
        "SELECT * FROM patients ORDER BY id",
        "SELECT * FROM treatments ORDER BY ALL",
    ]
    return (tuple(con.execute(q).fetchall() for q in queries), sorted(os.listdir(workdir)))


@pytest.mark.parametrize("sql", HOSTILE)
def test_hostile_refused_and_database_unchanged(
    sql: str, con: duckdb.DuckDBPyConnection, workdir: Path
) -> None:
    before = snapshot(con, workdir)
    with pytest.raises(UnsafeSQLError):
        GuardedSQL(con).run(sql.replace("{csv}", str(workdir / "data.csv")))
    assert snapshot(con, workdir) == before


@pytest.mark.parametrize("sql", LEGIT)
def test_legit_query_runs(sql: str, con: duckdb.DuckDBPyConnection) -> None:
    result = GuardedSQL(con).run(sql)
    assert isinstance(result, QueryResult)
    assert result.row_count == len(result.frame) > 0
    assert not result.truncated


def test_results_are_correct(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)
    frame = guard.run("SELECT name FROM patients WHERE city = 'Oslo' ORDER BY name").frame
    assert frame["name"].tolist() == ["Ann", "Cora"]
    assert guard.run("SELECT 'x; DROP TABLE patients' AS s").frame.iat[0, 0].startswith("x;")


def test_registered_dataframe_and_temp_table_visible(con: duckdb.DuckDBPyConnection) -> None:
    con.register("visits", pd.DataFrame({"pid": [1, 1, 3], "ward": ["A", "B", "A"]}))
    con.execute("CREATE TEMP TABLE flags AS SELECT 3 AS pid, true AS flagged")
    guard = GuardedSQL(con)
    result = guard.run(
        "SELECT v.pid, count(*) AS n, any_value(f.flagged) AS flagged FROM visits v "
        "LEFT JOIN flags f USING (pid) GROUP BY v.pid ORDER BY v.pid"
    )
    assert result.frame["n"].tolist() == [2, 1]
    names = {t.name for t in guard.list_tables()}
    assert {"visits", "flags", "patients", "treatments", "old_patients"} <= names


def test_concurrent_runs_on_user_connection(con: duckdb.DuckDBPyConnection) -> None:
    con.register("nums", pd.DataFrame({"k": range(100)}))
    guard = GuardedSQL(con)

    def work(k: int) -> tuple[int, int]:
        out = []
        for _ in range(5):
            frame = guard.run(f"SELECT {k} AS k, count(*) AS n FROM nums WHERE k < {k * 10}").frame
            out.append((int(frame.iat[0, 0]), int(frame.iat[0, 1])))
        assert len(set(out)) == 1
        return out[0]

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(1, 9)))
    assert results == [(k, min(k * 10, 100)) for k in range(1, 9)]


def test_file_connection_is_read_only_and_concurrent(db_file: Path) -> None:
    with GuardedSQL(db_file) as guard:
        assert guard.owns_connection
        with ThreadPoolExecutor(8) as pool:
            counts = list(pool.map(lambda _: guard.run("SELECT count(*) FROM patients"), range(16)))
        assert {int(r.frame.iat[0, 0]) for r in counts} == {4}
        setting = guard._con.cursor().execute("SELECT current_setting('enable_external_access')")
        assert not bool(setting.fetchall()[0][0])
        with pytest.raises(duckdb.Error):  # the database itself refuses writes
            guard._con.cursor().execute("DELETE FROM patients")
        with pytest.raises(duckdb.Error):  # ... and file access
            guard._con.cursor().execute("SELECT * FROM read_csv('data.csv')")
    check = duckdb.connect(str(db_file), read_only=True)
    assert check.execute("SELECT count(*) FROM patients").fetchall() == [(4,)]


def test_bad_path_is_clear_error(workdir: Path) -> None:
    with pytest.raises(QueryFailedError, match="cannot open"):
        GuardedSQL(workdir / "missing" / "nope.duckdb")


@pytest.mark.parametrize("use_file", [False, True])
def test_timeout_stops_query_and_connection_stays_usable(
    use_file: bool, con: duckdb.DuckDBPyConnection, db_file: Path
) -> None:
    guard = GuardedSQL(db_file) if use_file else GuardedSQL(con, timeout_s=30)
    start = time.monotonic()
    with pytest.raises(QueryTimeoutError, match=r"longer than 0\.5 s"):
        guard.run(SLOW, timeout_s=0.5)
    assert time.monotonic() - start < 10
    assert guard.run("SELECT count(*) AS n FROM patients").frame.iat[0, 0] == 4
    default = GuardedSQL(con, timeout_s=0.5)
    with pytest.raises(QueryTimeoutError):
        default.run(SLOW)


def test_truncation_keeps_true_row_count(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con, max_rows=100)
    result = guard.run("SELECT range AS i FROM range(25000) ORDER BY i")
    assert result.truncated
    assert result.row_count == 25000
    assert len(result.frame) == 100
    assert result.frame["i"].tolist() == list(range(100))
    exact = guard.run("SELECT * FROM range(100)")
    assert not exact.truncated and exact.row_count == 100
    small = guard.run("SELECT * FROM patients -- note", max_rows=2)
    assert small.truncated and small.row_count == 4 and len(small.frame) == 2
    assert "4 rows" in small.preview()
    empty = guard.run("SELECT * FROM patients WHERE false")
    assert empty.row_count == 0 and empty.columns == ["id", "name", "age", "city", "admitted"]


def test_preview_is_compact(con: duckdb.DuckDBPyConnection) -> None:
    result = GuardedSQL(con).run("SELECT range AS i, repeat('x', 20) AS s FROM range(50)")
    text = result.preview(max_rows=5, max_chars=600)
    assert len(text) <= 600
    assert "50 rows" in text and "45 more rows not shown (to read them, narrow the query or " \
        "page through it with ORDER BY and LIMIT/OFFSET)" in text
    assert "cut" not in text
    assert result.dtypes["i"] == "int64"


def test_a_result_a_little_longer_than_the_preview_is_shown_whole(
    con: duckdb.DuckDBPyConnection,
) -> None:
    """Hiding the last 4 rows of 24 cost a real-model agent a query to fetch them, and
    hiding 12 or 35 rows of a narrow result cost others a turn: a result whose whole
    table is small (PREVIEW_WHOLE_CHARS) is shown whole however many rows it has."""
    guard = GuardedSQL(con)
    wide = "repeat('w', 120) AS pad"  # 31 or 55 rows of it take more than 3,000 characters
    for rows, columns, shown in ((20, "", 20), (24, "", 24), (30, "", 30), (31, "", 31),
                                 (55, "", 55), (31, f", {wide}", 20), (55, f", {wide}", 20),
                                 (30, f", {wide}", 30)):
        text = guard.run(f"SELECT range AS i{columns} FROM range({rows})").preview(max_rows=20)
        numbers = [int(line.split()[0]) for line in text.splitlines()[2:]
                   if line.split() and line.split()[0].isdigit()]
        assert numbers == list(range(shown)), (rows, columns)
        assert ("more rows not shown" in text) is (shown < rows)
    assert len(guard.run("SELECT range AS i FROM range(55)").preview().splitlines()) <= 57
    kept = guard.run("SELECT range AS i FROM range(24)", max_rows=22)  # truncated: rows missing
    assert kept.truncated and "... 2 more rows not shown" in kept.preview(max_rows=20)


def test_preview_shows_long_text_and_says_when_cells_are_cut(
    con: duckdb.DuckDBPyConnection,
) -> None:
    guard = GuardedSQL(con)
    transcript = "the patient said " + "y" * 283  # 300 characters: shown whole by default
    shown = guard.run(f"SELECT 1 AS id, '{transcript}' AS interview").preview()
    assert transcript in shown and "were cut" not in shown
    long = guard.run("SELECT 1 AS id, repeat('z', 450) || 'END' AS interview").preview()
    assert "z" * 390 in long and "END" not in long
    assert long.splitlines()[-1] == (
        "(cells longer than 400 characters were cut; select that column alone, or use "
        "substr(col, 401, 400), to read the rest)"
    )
    narrow = guard.run("SELECT repeat('q', 60) AS s").preview(max_colwidth=50)
    assert "longer than 50 characters" in narrow and "substr(col, 51, 50)" in narrow


def test_preview_says_when_max_chars_cut_rows(con: duckdb.DuckDBPyConnection) -> None:
    result = GuardedSQL(con).run("SELECT range AS i, repeat('x', 200) AS s FROM range(50)")
    text = result.preview(max_rows=5, max_chars=900)
    assert len(text) <= 900
    lines = text.splitlines()
    assert lines[0] == "50 rows x 2 columns"
    kept = int(re.match(r"\.\.\. preview cut at 900 characters: (\d) of 50 rows shown "
                        r"in full", lines[-1]).group(1))
    assert 1 <= kept < 5
    assert len(lines) == 1 + 1 + kept + 1  # header, column names, whole rows, the note
    default = result.preview()
    assert len(default) <= 8000 and "preview cut" not in default
    tiny = result.preview(max_rows=5, max_chars=300)
    assert len(tiny) <= 300 and "0 of 50 rows shown in full" in tiny


def test_query_failed_keeps_connection_usable(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)
    with pytest.raises(QueryFailedError, match="DESCRIBE"):
        guard.run("SELECT nonexistent FROM patients")
    with pytest.raises(QueryFailedError, match="SHOW TABLES"):
        guard.run("SELECT * FROM nonexistent")
    with pytest.raises(UnsafeSQLError, match="not in d2's reviewed function table"):
        guard.run("SELECT st_point(1, 2)")
    assert guard.run("SELECT 1 AS one").frame.iat[0, 0] == 1


def test_schema_helpers(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)
    tables = {t.name: t for t in guard.list_tables()}
    assert tables["patients"].row_count == 4 and tables["patients"].kind == "table"
    assert tables["old_patients"].kind == "view" and tables["old_patients"].row_count == 2
    info = guard.describe("patients")
    assert isinstance(info, TableInfo)
    assert [c.name for c in info.columns] == ["id", "name", "age", "city", "admitted"]
    assert info.columns[1].type == "VARCHAR"
    assert info.columns[1].samples == ("Ann", "Bob", "Cora")
    assert guard.sample("treatments", 2).frame.shape == (2, 4)
    with pytest.raises(QueryFailedError, match="available"):
        guard.describe("nope")
    summary = guard.schema_summary()
    assert summary == guard.schema_summary()
    assert "patients (table, 4 rows)" in summary
    assert "name VARCHAR e.g. Ann | Bob | Cora" in summary


def test_arun_from_asyncio(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)

    async def main() -> list[QueryResult]:
        return await asyncio.gather(*(guard.arun(f"SELECT {k} AS k") for k in range(6)))

    results = asyncio.run(main())
    assert [int(r.frame.iat[0, 0]) for r in results] == list(range(6))


def test_user_settings_untouched(con: duckdb.DuckDBPyConnection) -> None:
    before = con.execute("SELECT name, value FROM duckdb_settings() ORDER BY name").fetchall()
    guard = GuardedSQL(con, timeout_s=0.5)
    guard.run("SELECT * FROM patients")
    with pytest.raises(QueryTimeoutError):
        guard.run(SLOW)
    after = con.execute("SELECT name, value FROM duckdb_settings() ORDER BY name").fetchall()
    assert after == before


# --- types that only an extension provides are refused, never auto-installed -------

EXTENSION_TYPE_QUERIES = [
    "SELECT '1.2.3.4'::INET AS x",
    "SELECT CAST('1.2.3.4' AS INET) AS x",
    "SELECT TRY_CAST(name AS INET) FROM patients",
    "SELECT INET '1.2.3.4'",
    "SELECT CAST(NULL AS STRUCT(a INET, b INTEGER))",
    "SELECT CAST(NULL AS MAP(VARCHAR, INET))",
    "SELECT CAST(NULL AS INET[])",
    "SELECT list_transform(['1.2.3.4'], s -> s::INET)",
    "EXPLAIN SELECT '1.2.3.4'::INET",
    "SELECT * FROM (SELECT '1.2.3.4'::\"inet\" AS x)",
    "SELECT from_json('{\"a\": \"1.2.3.4\"}', '{\"a\": \"INET\"}')",
    "SELECT json_transform_strict('[\"1.2.3.4\"]', '[\"STRUCT(x INET)\"]')",
]


def _extension_flags(con: duckdb.DuckDBPyConnection) -> list[tuple]:
    return con.execute(
        "SELECT extension_name, loaded, installed FROM duckdb_extensions() ORDER BY 1"
    ).fetchall()


@pytest.mark.parametrize("sql", EXTENSION_TYPE_QUERIES)
def test_unknown_type_refused_without_installing_an_extension(
    sql: str, con: duckdb.DuckDBPyConnection
) -> None:
    before = _extension_flags(con)
    with pytest.raises(QueryFailedError) as info:
        GuardedSQL(con).run(sql)
    message = str(info.value)
    assert "unknown type(s): INET" in message
    assert "never installs or loads extensions" in message
    assert _extension_flags(con) == before


def test_unknown_type_refused_on_fresh_connection_and_nothing_installed() -> None:
    fresh = duckdb.connect()
    before = _extension_flags(fresh)
    with pytest.raises(QueryFailedError, match=r"unknown type\(s\): INET"):
        GuardedSQL(fresh).run("SELECT '1.2.3.4'::INET")
    after = _extension_flags(fresh)
    assert after == before
    assert ("inet", False, False) in {(n, loaded, inst) for n, loaded, inst in after}
    assert GuardedSQL(fresh).run("SELECT '1'::INTEGER AS x").frame["x"].tolist() == [1]


def test_user_defined_types_are_known(con: duckdb.DuckDBPyConnection) -> None:
    guard = GuardedSQL(con)
    assert guard.run("SELECT 1::INTEGER AS x").row_count == 1  # fills the type cache
    con.execute("CREATE TYPE band AS ENUM ('young', 'old')")  # created after the cache
    result = guard.run("SELECT CASE WHEN age > 60 THEN 'old' ELSE 'young' END::band AS b "
                       "FROM patients ORDER BY id")
    assert result.frame["b"].astype(str).tolist() == ["old", "young", "old", "young"]


def test_the_shared_deadline_thread_runs_due_callbacks_once_and_forgets_cancelled_ones():
    import threading
    import time

    from d2_notebook.data import execution

    deadlines = execution._Deadlines()
    fired: list[int] = []
    done = threading.Event()
    for i in range(200):  # queries that finish in time: scheduled, then cancelled
        deadlines.cancel(deadlines.schedule(30, lambda i=i: fired.append(i)))
    deadlines.schedule(0.05, lambda: (fired.append(-1), done.set()))
    assert done.wait(5)
    time.sleep(0.05)
    assert fired == [-1]
    assert deadlines._pending == set()
