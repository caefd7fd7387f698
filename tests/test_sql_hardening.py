"""The hardening corpus: hostile statements refused on a user connection and on a
path-opened database, with a planted secret setting, variable and file never shown, and
no extension download attempted (a local extension repository sees no request)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from extension_repository import ExtensionRepository

from d2_notebook.data import GuardedSQL
from d2_notebook.errors import QueryFailedError, UnsafeSQLError

CORPUS = Path(__file__).parent / "sql_corpus"
SECRET_SETTING = "PLANTED-proxy-pw-7f3a"
SECRET_VARIABLE = "PLANTED-token-19c2"
SECRET_FILE_TEXT = "PLANTED-file-line-5be0"
PLANTED = (SECRET_SETTING, SECRET_VARIABLE, SECRET_FILE_TEXT)

SCHEMA = """
CREATE TABLE patients (id INTEGER, name VARCHAR, age INTEGER);
INSERT INTO patients VALUES (1, 'Ann', 72), (2, 'Bob', 35);
CREATE TABLE treatments (patient_id INTEGER, drug VARCHAR, dose DOUBLE);
INSERT INTO treatments VALUES (1, 'A', 1.5), (2, 'B', 2.0);
CREATE SEQUENCE seq;
"""
# Views and macros that wrap refused things: the user's own objects are checked
# through their definitions.
TRAPS = """
CREATE VIEW leaky_setting AS SELECT current_setting('http_proxy_password') AS p;
CREATE VIEW leaky_file AS SELECT * FROM read_text('{planted}');
CREATE VIEW outer_leak AS SELECT * FROM leaky_setting;
CREATE MACRO leak_macro() AS current_setting('http_proxy_password');
CREATE MACRO leak_table_macro() AS TABLE SELECT current_setting('http_proxy_password') AS p;
"""

_SHAPES = {
    "sum": lambda n: " + ".join(["1"] * n),
    "nest": lambda n: "(SELECT " * n + "1" + ")" * n,
    "paren": lambda n: "(" * n + "1" + ")" * n,
    "call": lambda n: "abs(" * n + "1" + ")" * n,
    "list": lambda n: "[" * n + "1" + "]" * n,
    "case": lambda n: "CASE WHEN true THEN " * n + "1" + " END" * n,
    "and": lambda n: " AND ".join(["age > 0"] * n),
    "json": lambda n: "[" * n + '"INTEGER"' + "]" * n,
}


def load(name: str) -> list[str]:
    lines = (CORPUS / name).read_text().splitlines()
    return [line for line in lines if line.strip() and not line.startswith("-- ")]


def expand(sql: str, planted: Path, csv: Path, port: int) -> str:
    sql = re.sub(r"\{(\w+):(\d+)\}", lambda m: _SHAPES[m.group(1)](int(m.group(2))), sql)
    return (sql.replace("{planted}", str(planted)).replace("{csv}", str(csv))
            .replace("{port}", str(port)))


HARDENING = load("hostile_hardening.sql")
EVERY_HOSTILE = load("hostile.sql") + HARDENING


@pytest.fixture(scope="module")
def repository() -> Iterator[ExtensionRepository]:
    server = ExtensionRepository()
    yield server
    server.close()


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with the database file, a planted file next to it, and a CSV."""
    folder = tmp_path_factory.mktemp("hardening")
    (folder / "planted_secret.csv").write_text(f"{SECRET_FILE_TEXT}\n{SECRET_FILE_TEXT}-2\n")
    (folder / "data.csv").write_text("id,a\n1,2\n")
    (folder / "extensions").mkdir()
    con = duckdb.connect(str(folder / "cases.duckdb"))
    con.execute(SCHEMA + TRAPS.replace("{planted}", str(folder / "planted_secret.csv")))
    con.close()
    return folder


def _user_connection(place: Path, repository: ExtensionRepository) -> duckdb.DuckDBPyConnection:
    """The user's own connection: extension auto-install on, pointed at the local
    repository, with a secret setting and a secret variable planted."""
    con = duckdb.connect(config={
        "autoinstall_known_extensions": True, "autoload_known_extensions": True,
        "extension_directory": str(place / "extensions"),
    })
    con.execute(f"SET custom_extension_repository = '{repository.url}'")
    con.execute(f"SET http_proxy_password = '{SECRET_SETTING}'")
    con.execute(f"SET VARIABLE api_token = '{SECRET_VARIABLE}'")
    con.execute(SCHEMA + TRAPS.replace("{planted}", str(place / "planted_secret.csv")))
    return con


@pytest.fixture(scope="module")
def user_guard(place: Path, repository: ExtensionRepository) -> Iterator[GuardedSQL]:
    con = _user_connection(place, repository)
    yield GuardedSQL(con, timeout_s=10)
    con.close()


@pytest.fixture(scope="module")
def path_guard(place: Path) -> Iterator[GuardedSQL]:
    with GuardedSQL(place / "cases.duckdb", timeout_s=10) as guard:
        yield guard


def test_corpus_size() -> None:
    assert len(HARDENING) >= 150
    assert len(EVERY_HOSTILE) >= 250


def test_the_traps_are_live(place: Path, repository: ExtensionRepository) -> None:
    """Without the guard the plants leak and auto-install calls the repository, so the
    refusals below are meaningful."""
    con = _user_connection(place, repository)
    assert con.execute("SELECT current_setting('http_proxy_password')").fetchall() == [
        (SECRET_SETTING,)]
    assert SECRET_FILE_TEXT in str(con.execute("SELECT * FROM leaky_file").fetchall())
    before = len(repository.requests)
    with pytest.raises(duckdb.Error):
        con.execute("SELECT '1.2.3.4'::INET")  # auto-install tries the local repository
    assert len(repository.requests) > before
    del repository.requests[before:]
    con.close()


def _assert_refused_without_leak(guard: GuardedSQL, sql: str) -> None:
    with pytest.raises(UnsafeSQLError) as info:
        guard.run(sql)
    message = str(info.value)
    assert message.startswith("SQL refused: ")
    assert len(message) < 2000 or "nests too deeply" not in message
    for secret in PLANTED:
        assert secret not in message


@pytest.mark.parametrize("sql", EVERY_HOSTILE)
def test_refused_on_user_connection(sql: str, user_guard: GuardedSQL, place: Path,
                                    repository: ExtensionRepository) -> None:
    statement = expand(sql, place / "planted_secret.csv", place / "data.csv", repository.port)
    _assert_refused_without_leak(user_guard, statement)
    assert repository.requests == []


@pytest.mark.parametrize("sql", EVERY_HOSTILE)
def test_refused_on_path_opened_database(sql: str, path_guard: GuardedSQL, place: Path,
                                         repository: ExtensionRepository) -> None:
    statement = expand(sql, place / "planted_secret.csv", place / "data.csv", repository.port)
    _assert_refused_without_leak(path_guard, statement)
    assert repository.requests == []


EXTENSION_TYPES = [
    "SELECT '1.2.3.4'::INET", "SELECT CAST(NULL AS GEOMETRY)",
    "SELECT CAST(NULL AS STRUCT(a INET))", "SELECT from_json('{}', '{\"a\": \"INET\"}')",
]


@pytest.mark.parametrize("sql", EXTENSION_TYPES)
def test_extension_types_refused_without_a_download(sql: str, user_guard: GuardedSQL,
                                                    repository: ExtensionRepository) -> None:
    try:
        user_guard.run(sql)
    except QueryFailedError as exc:
        assert "never installs or loads extensions" in str(exc)
    assert repository.requests == []
    assert not any((Path(user_guard._con.execute(
        "SELECT current_setting('extension_directory')").fetchall()[0][0])).rglob("*.duckdb_*"))


def test_legit_work_still_runs_with_the_plants(user_guard: GuardedSQL) -> None:
    result = user_guard.run("SELECT name FROM patients JOIN treatments ON id = patient_id "
                            "ORDER BY name")
    assert result.frame["name"].tolist() == ["Ann", "Bob"]
    tables = user_guard.run("SELECT table_name FROM information_schema.tables ORDER BY 1")
    assert "patients" in tables.frame["table_name"].tolist()
    assert user_guard.run("SELECT count(*) AS n FROM pg_catalog.pg_class").row_count == 1
    for secret in PLANTED:
        assert secret not in user_guard.schema_summary()
