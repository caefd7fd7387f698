"""Round 3 of the DuckDB guard: what DuckDB will execute, on three kinds of database.

The corpus (``sql_corpus/hostile_round3_duckdb.sql``) runs against the user's own
connection with planted secret settings and a variable, a path-opened file (whose folder
name is planted: DuckDB's default temp directory contains it), and a database file whose
macros shadow allowed names (``upper``, ``abs``, ``range``, ``json_each``,
``generate_series``, ``s2.md5``, ``lower``, ``min``, ``first``, ``count_star``) with views
over them. No planted value may reach a result or an error, and a local extension
repository must receive no request. Runtime limits run in a child process under an
address-space cap, so a failure cannot take the test runner down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from extension_repository import ExtensionRepository

from d2_notebook.data import GuardedSQL
from d2_notebook.data.execution import extensions_off
from d2_notebook.data.sql_guard import check_sql
from d2_notebook.data.statement_bounds import LIMITS
from d2_notebook.errors import QueryFailedError, QueryTimeoutError, SQLError, UnsafeSQLError

CORPUS = Path(__file__).parent / "sql_corpus" / "hostile_round3_duckdb.sql"
SECRET_SETTING = "PLANTED-proxy-pw-31d9"
SECRET_VARIABLE = "PLANTED-token-8a0e"
SECRET_TEMP = "PLANTED-tempdir-c77f"
SECRET_DIRECTORY = "PLANTED-secretdir-02bb"
SECRET_FOLDER = "PLANTED-folder-e41b"
SECRET_FILE_TEXT = "PLANTED-file-line-9d14"
SECRET_NAME = "PLANTED-name-5f60"
SECRET_AGENT = "PLANTED-agent-6b21"
PLANTED = (SECRET_SETTING, SECRET_VARIABLE, SECRET_TEMP, SECRET_DIRECTORY, SECRET_FOLDER,
           SECRET_FILE_TEXT, SECRET_NAME, SECRET_AGENT)

SCHEMA = f"""
CREATE TABLE patients (id INTEGER, name VARCHAR, age INTEGER);
INSERT INTO patients VALUES (1, 'Ann', 72), (2, 'Bob', 35), (3, '{SECRET_NAME}', 50);
"""
SHADOWING = """
CREATE SCHEMA s2;
CREATE MACRO upper(x) AS current_setting('temp_directory');
CREATE MACRO abs(x) AS upper(x);
CREATE MACRO s2.md5(x) AS current_setting('temp_directory');
CREATE MACRO lower(x) AS getvariable('api_token');
CREATE MACRO min(x) AS current_setting('temp_directory');
CREATE MACRO first(x) AS current_setting('temp_directory');
CREATE MACRO count_star() AS current_setting('temp_directory');
CREATE MACRO range(n) AS TABLE SELECT current_setting('temp_directory') AS v;
CREATE MACRO generate_series(n) AS TABLE SELECT current_setting('http_proxy_password') AS v;
CREATE MACRO json_each(j) AS TABLE SELECT * FROM read_text('{planted}');
CREATE MACRO chained(x) AS abs(x);
CREATE MACRO file_macro() AS TABLE SELECT * FROM read_text('{planted}');
CREATE VIEW v_upper AS SELECT upper('a') AS u;
CREATE VIEW s2.v_range AS FROM range(1);
CREATE VIEW v_chain AS SELECT * FROM v_upper;
CREATE MACRO plus_one(x) AS x + 1;
CREATE MACRO good_rows() AS TABLE SELECT 1 AS one;
"""


def _sections() -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    current = ""
    for line in CORPUS.read_text().splitlines():
        if line.startswith("-- @"):
            current = line[4:].strip()
            sections[current] = []
        elif line.strip() and not line.startswith("--"):
            sections[current].append(line)
    return sections


SECTIONS = _sections()


@pytest.fixture(scope="module")
def repository() -> Iterator[ExtensionRepository]:
    server = ExtensionRepository()
    yield server
    server.close()


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder (its name planted) with a plain and a shadowing database and a file."""
    folder = tmp_path_factory.mktemp("round3") / SECRET_FOLDER
    for sub in ("plain", "shadow", "shadow_user", "extensions"):
        (folder / sub).mkdir(parents=True)
    planted = folder / "planted_secret.txt"
    planted.write_text(f"{SECRET_FILE_TEXT}\n")
    con = duckdb.connect(str(folder / "plain" / "cases.duckdb"))
    con.execute(SCHEMA)
    con.close()
    for sub in ("shadow", "shadow_user"):  # one opened by path, one as a user's connection
        con = duckdb.connect(str(folder / sub / "cases.duckdb"))
        con.execute(SCHEMA + SHADOWING.replace("{planted}", str(planted)))
        con.close()
    return folder


def _user_connection(place: Path, repository: ExtensionRepository,
                     database: str = ":memory:") -> duckdb.DuckDBPyConnection:
    """The user's own connection: auto-install on, pointed at the local repository, with
    secret settings and a secret variable planted."""
    con = duckdb.connect(database, config={
        "autoinstall_known_extensions": True, "autoload_known_extensions": True,
        "extension_directory": str(place / "extensions"),
        "custom_user_agent": SECRET_AGENT,
    })
    con.execute(f"SET custom_extension_repository = '{repository.url}'")
    con.execute(f"SET http_proxy_password = '{SECRET_SETTING}'")
    con.execute(f"SET VARIABLE api_token = '{SECRET_VARIABLE}'")
    con.execute(f"SET temp_directory = '/tmp/{SECRET_TEMP}'")
    con.execute(f"SET secret_directory = '/tmp/{SECRET_DIRECTORY}'")
    if database == ":memory:":
        con.execute(SCHEMA)
    return con


@pytest.fixture(scope="module")
def user_guard(place: Path, repository: ExtensionRepository) -> Iterator[GuardedSQL]:
    con = _user_connection(place, repository)
    yield GuardedSQL(con, timeout_s=10)
    con.close()


@pytest.fixture(scope="module")
def path_guard(place: Path) -> Iterator[GuardedSQL]:
    with GuardedSQL(place / "plain" / "cases.duckdb", timeout_s=10) as guard:
        yield guard


@pytest.fixture(scope="module")
def shadow_path_guard(place: Path) -> Iterator[GuardedSQL]:
    with GuardedSQL(place / "shadow" / "cases.duckdb", timeout_s=10) as guard:
        yield guard


@pytest.fixture(scope="module")
def shadow_user_guard(place: Path, repository: ExtensionRepository) -> Iterator[GuardedSQL]:
    con = _user_connection(place, repository, str(place / "shadow_user" / "cases.duckdb"))
    yield GuardedSQL(con, timeout_s=10)
    con.close()


@pytest.fixture(params=["user", "path", "shadow_path", "shadow_user"])
def any_guard(request: pytest.FixtureRequest) -> GuardedSQL:
    return request.getfixturevalue(f"{request.param}_guard")


@pytest.fixture(params=["shadow_path", "shadow_user"])
def shadow_guard(request: pytest.FixtureRequest) -> GuardedSQL:
    return request.getfixturevalue(f"{request.param}_guard")


def _assert_no_plant(text: str, *, data_readable: bool = False) -> None:
    """No planted value in ``text`` (the planted patient name may appear where the
    statement reads the table itself)."""
    for secret in PLANTED:
        if not (data_readable and secret == SECRET_NAME):
            assert secret not in text


def _refused(guard: GuardedSQL, sql: str) -> str:
    with pytest.raises(UnsafeSQLError) as info:
        guard.run(sql)
    message = str(info.value)
    assert message.startswith("SQL refused: ")
    _assert_no_plant(message)
    return message


def test_corpus_size() -> None:
    assert sum(len(s) for s in SECTIONS.values()) >= 150
    assert {"refused", "limits", "shadowing", "fails"} <= set(SECTIONS)


def test_the_traps_are_live(place: Path, repository: ExtensionRepository) -> None:
    """Without the guard the plants leak and SHOW of an extension's setting calls the
    repository, so the refusals below are meaningful."""
    con = _user_connection(place, repository, str(place / "shadow_user" / "cases.duckdb"))
    try:
        assert con.execute("SHOW http_proxy_password").fetchall() == [(SECRET_SETTING,)]
        assert SECRET_TEMP in str(con.execute("SELECT upper('a')").fetchall())
        assert SECRET_TEMP in str(con.execute("SHOW ALL TABLES").fetchall())
        assert SECRET_FILE_TEXT in str(con.execute("SELECT * FROM json_each('{}')").fetchall())
        assert SECRET_VARIABLE in str(con.execute("SHOW VARIABLES").fetchall())
        before = len(repository.requests)
        with pytest.raises(duckdb.Error):
            con.execute("SHOW s3_access_key_id")  # auto-install asks the local repository
        assert len(repository.requests) > before
        del repository.requests[before:]
    finally:
        con.close()


@pytest.mark.parametrize("sql", SECTIONS["refused"])
def test_refused_everywhere(sql: str, any_guard: GuardedSQL,
                            repository: ExtensionRepository) -> None:
    _refused(any_guard, sql)
    assert repository.requests == []


@pytest.mark.parametrize("sql", SECTIONS["limits"])
def test_builders_refused_before_running(sql: str, user_guard: GuardedSQL) -> None:
    start = time.perf_counter()
    message = _refused(user_guard, sql)
    assert time.perf_counter() - start < 5
    assert "limit" in message or "constant" in message or "columns and" in message


@pytest.mark.parametrize("sql", SECTIONS["shadowing"])
def test_shadowing_macros_refused_with_their_name(sql: str, shadow_guard: GuardedSQL,
                                                  repository: ExtensionRepository) -> None:
    message = _refused(shadow_guard, sql)
    assert "macro" in message or "view" in message
    assert repository.requests == []


@pytest.mark.parametrize("sql", [s for s in SECTIONS["shadowing"]
                                 if "v_" not in s and "chained" not in s and "file_macro" not in s])
def test_the_same_calls_run_on_a_database_without_macros(sql: str, path_guard: GuardedSQL) -> None:
    """The refusals above come from the macros: the plain database runs these."""
    try:
        result = path_guard.run(sql)
    except QueryFailedError as exc:  # e.g. no schema s2 here
        _assert_no_plant(str(exc))
        return
    _assert_no_plant(result.frame.to_csv(), data_readable=True)


@pytest.mark.parametrize("sql", SECTIONS["fails"])
def test_runtime_errors_carry_no_value(sql: str, any_guard: GuardedSQL) -> None:
    try:
        result = any_guard.run(sql)
    except SQLError as exc:
        _assert_no_plant(str(exc))
        return
    _assert_no_plant(result.frame.to_csv())


def test_cast_error_hides_the_value_but_binder_errors_keep_names(user_guard: GuardedSQL) -> None:
    with pytest.raises(QueryFailedError) as info:
        user_guard.run("SELECT CAST(name AS INTEGER) FROM patients ORDER BY id DESC")
    assert "'…'" in str(info.value) and "Conversion" in str(info.value)
    with pytest.raises(QueryFailedError, match='"patients"'):
        user_guard.run("SELECT * FROM patient")


def test_binder_errors_hide_macro_defaults(place: Path, repository: ExtensionRepository) -> None:
    """DuckDB folds a macro's parameter defaults to constants at creation and lists them
    when a call does not match; the error keeps the signature, not the value."""
    con = _user_connection(place, repository)
    con.execute("CREATE MACRO keep(x, y := current_setting('http_proxy_password')) AS x")
    with pytest.raises(QueryFailedError) as info:
        GuardedSQL(con).run("SELECT keep(1, 2, 3, 4)")
    assert "keep(x, y := …)" in str(info.value)
    _assert_no_plant(str(info.value))
    con.close()


def test_show_of_a_table_points_to_describe(user_guard: GuardedSQL) -> None:
    assert "write DESCRIBE patients" in _refused(user_guard, "SHOW patients")
    assert list(user_guard.run("DESCRIBE patients").frame["column_name"]) == [
        "id", "name", "age"]
    assert "patients" in set(user_guard.run("SHOW TABLES").frame["name"])
    assert len(user_guard.run("SHOW ALL TABLES").frame) >= 1
    assert len(user_guard.run("SUMMARIZE patients").frame) == 3
    assert len(user_guard.run("SHOW DATABASES").frame) >= 1
    assert "patients" in set(user_guard.run("SHOW TABLES FROM main").frame["name"])


def test_macros_whose_definitions_pass_are_allowed(shadow_guard: GuardedSQL) -> None:
    assert shadow_guard.run("SELECT plus_one(41) AS v").frame["v"].tolist() == [42]
    assert shadow_guard.run("SELECT * FROM good_rows()").frame["one"].tolist() == [1]
    assert shadow_guard.run("SELECT system.main.upper('a') AS v").frame["v"].tolist() == ["A"]
    assert shadow_guard.run(
        "SELECT system.main.count_star() AS n FROM patients").frame["n"].tolist() == [3]


def test_catalog_helpers_ignore_the_macros(shadow_guard: GuardedSQL) -> None:
    """The guard's own catalog queries call no shadowable name, and the schema summary
    evaluates no leaking macro."""
    tables = {t.name: t for t in shadow_guard.list_tables()}
    assert tables["patients"].row_count == 3
    assert tables["v_upper"].unreadable and tables["v_chain"].unreadable
    summary = shadow_guard.schema_summary()
    assert "patients (table, 3 rows)" in summary
    assert SECRET_TEMP not in summary and SECRET_FILE_TEXT not in summary
    assert SECRET_SETTING not in summary and SECRET_VARIABLE not in summary
    described = shadow_guard.describe("v_upper")
    assert all(not c.samples for c in described.columns)


def test_extension_settings_restored_on_the_user_connection(
        place: Path, repository: ExtensionRepository) -> None:
    con = _user_connection(place, repository)
    guard = GuardedSQL(con, timeout_s=10)
    guard.run("SELECT 1")
    with pytest.raises(QueryFailedError):
        guard.run("SELECT CAST('x' AS INTEGER)")
    with pytest.raises(QueryTimeoutError):
        guard.run("SELECT count(*) FROM range(10000000) a, range(10000000) b", timeout_s=0.5)
    settings = con.execute("SELECT current_setting('autoinstall_known_extensions'), "
                           "current_setting('autoload_known_extensions')").fetchall()
    assert settings == [(True, True)]
    con.close()


def test_extension_loading_is_off_while_a_guarded_query_runs(
        place: Path, repository: ExtensionRepository) -> None:
    """What the guard runs on the user's connection cannot auto-load: inside the block
    the settings are off, and an extension type fails without asking the repository."""
    con = _user_connection(place, repository)
    read = ("SELECT current_setting('autoinstall_known_extensions'), "
            "current_setting('autoload_known_extensions')")
    with extensions_off(con, user_connection=True):
        assert con.execute(read).fetchall() == [(False, False)]
        with pytest.raises(duckdb.Error):
            con.execute("SELECT '1.2.3.4'::INET")
    assert con.execute(read).fetchall() == [(True, True)]
    assert repository.requests == []
    con.close()


def test_extension_types_refused_without_a_download(user_guard: GuardedSQL,
                                                    repository: ExtensionRepository) -> None:
    for sql in ("SELECT '1.2.3.4'::INET", "SELECT CAST(NULL AS STRUCT(a INET))",
                "SHOW s3_region", "SELECT * FROM (SHOW azure_account_name)"):
        with pytest.raises(SQLError):
            user_guard.run(sql)
    assert repository.requests == []


# --- the check itself is bounded -------------------------------------------------------

HUGE = {
    "ctes": "WITH " + ", ".join(f"c{i} AS (SELECT {i})" for i in range(20_000)) + " SELECT 1",
    "in_list": "SELECT 1 WHERE 1 IN (" + ", ".join(["1"] * 1_000_000) + ")",
    "case": "SELECT CASE " + " ".join(f"WHEN {i} THEN {i}" for i in range(100_000)) + " END",
    "literal": "SELECT '" + "x" * 50_000_000 + "'",
    "nesting": "SELECT " + "(" * 2_000 + "1" + ")" * 2_000,
}
LIMIT_WORDS = {"ctes": "characters", "in_list": "characters", "case": "characters",
               "literal": "characters", "nesting": "nests too deeply"}


@pytest.mark.parametrize("shape", list(HUGE))
def test_huge_statements_refused_before_parsing(shape: str) -> None:
    start = time.perf_counter()
    with pytest.raises(UnsafeSQLError, match=LIMIT_WORDS[shape]):
        check_sql(HUGE[shape])
    assert time.perf_counter() - start < 3


@pytest.mark.parametrize(("sql", "words"), [
    ("WITH " + ", ".join(f"c{i} AS (SELECT 1)" for i in range(LIMITS.ctes + 1)) + " SELECT 1",
     "CTEs"),
    ("SELECT 1 WHERE 1 IN (" + ",".join(["1"] * (LIMITS.list_items + 1)) + ")", "items"),
    ("SELECT CASE " + " ".join("WHEN 1 THEN 1" for _ in range(LIMITS.case_branches + 1))
     + " END", "CASE branches"),
    ("SELECT " + "[" * (LIMITS.depth + 1) + "1" + "]" * (LIMITS.depth + 1), "nests"),
])
def test_each_limit_named_under_the_length_limit(sql: str, words: str) -> None:
    assert len(sql) <= LIMITS.chars
    with pytest.raises(UnsafeSQLError, match=words):
        check_sql(sql)


def test_a_check_held_inside_the_parser_does_not_block_other_threads(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Checks run on per-thread parser cursors: no process-wide lock while one parses.

    One thread's check is held inside its parser call (deterministically, not by timing);
    another thread's whole check must still finish. With a lock around parsing it would
    wait for the held one and the join below would time out.
    """
    import d2_notebook.data.sql_guard as sql_guard

    real_cursor = sql_guard.parser_cursor
    inside, release = threading.Event(), threading.Event()
    held_thread: list[threading.Thread] = []

    class HeldCursor:
        def __init__(self, cursor: duckdb.DuckDBPyConnection) -> None:
            self._cursor = cursor

        def __getattr__(self, name: str) -> object:
            attribute = getattr(self._cursor, name)
            if name not in ("execute", "extract_statements"):
                return attribute

            def held(*args: object, **kwargs: object) -> object:
                inside.set()
                assert release.wait(60), "the held check was never released"
                return attribute(*args, **kwargs)
            return held

    def cursor_for_this_thread() -> object:
        cursor = real_cursor()
        return HeldCursor(cursor) if threading.current_thread() in held_thread else cursor

    monkeypatch.setattr(sql_guard, "parser_cursor", cursor_for_this_thread)
    results: dict[str, object] = {}

    def check(name: str, sql: str) -> None:
        try:
            results[name] = check_sql(sql)
        except Exception as exc:
            results[name] = exc

    held = threading.Thread(target=check, args=("held", "SELECT 2 AS held"))
    held_thread.append(held)
    held.start()
    try:
        assert inside.wait(30), "the held check never reached its parser"
        other = threading.Thread(target=check, args=("other", "SELECT 3 AS other_check"))
        other.start()
        other.join(30)
        assert not other.is_alive(), "a check waited for another thread's parser call"
        assert results["other"] == "SELECT 3 AS other_check"
        assert "held" not in results
    finally:
        release.set()
        held.join(60)
    assert results["held"] == "SELECT 2 AS held"
    # Each thread parses on a cursor of its own.
    cursors: list[object] = []
    probe = threading.Thread(target=lambda: cursors.append(real_cursor()))
    probe.start()
    probe.join(30)
    assert cursors and cursors[0] is not real_cursor()


# --- runtime limits, in a child process under an address-space cap -------------------

_CHILD = textwrap.dedent("""
    import json, resource, sys, time
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))
    import duckdb
    from d2_notebook.data import GuardedSQL
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    guard = GuardedSQL(con, timeout_s=10, max_rows=50_000)
    outcomes = []
    for sql in json.loads(sys.argv[1]):
        start = time.perf_counter()
        try:
            guard.run(sql)
            kind, text = "ok", ""
        except Exception as exc:
            kind, text = type(exc).__name__, str(exc)[:300]
        outcomes.append([sql, kind, text, time.perf_counter() - start])
    guard.run("SELECT 1")
    print(json.dumps(outcomes))
""")
RUNTIME_CASES = {
    "SELECT count(*) FROM range(10000000) a, range(10000000) b": "QueryTimeoutError",
    "SELECT repeat('x', 10000) AS s FROM range(20000)": "QueryFailedError",
    "SELECT string_agg(repeat('x', 10000), '') FROM range(10000000)": "Query",
    "SELECT list(i) FROM range(10000000) t(i)": "",
    "SELECT list_sort(list(i)) FROM range(10000000) t(i)": "",
    "SELECT max(len(list_distinct(range(10000)))) FROM range(1000000)": "",
    "SELECT list_distinct(range(0, 15000000))": "UnsafeSQLError",
    "SELECT len(range(0, 300000000))": "UnsafeSQLError",
}


def test_runtime_limits_hold_under_an_address_space_cap() -> None:
    cap = 3 * 1024**3
    script = _CHILD.replace("CAP", str(cap))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", script, json.dumps(list(RUNTIME_CASES))],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    outcomes = json.loads(done.stdout.strip().splitlines()[-1])
    for sql, kind, text, seconds in outcomes:
        expected = RUNTIME_CASES[sql]
        assert kind in ("ok", "UnsafeSQLError", "QueryFailedError", "QueryTimeoutError"), (
            sql, kind, text)
        assert kind.startswith(expected) or (not expected), (sql, kind, text)
        assert seconds < 40, (sql, seconds)
        assert "MemoryError" not in text
    by_sql = {sql: text for sql, _, text, _ in outcomes}
    assert "too large" in by_sql["SELECT repeat('x', 10000) AS s FROM range(20000)"]


# --- analysis tools: hostile inputs, no value in the error ----------------------------

HOSTILE_PIECES = [
    "(SELECT * FROM (SHOW http_proxy_password))",
    "(SELECT list(v)[1] FROM (SHOW temp_directory) t(v))",
    "(SELECT value FROM (SHOW VARIABLES) LIMIT 1)",
    "CAST((SELECT * FROM (SHOW http_proxy_password)) AS INTEGER)",
    "error(p.name)",
    "upper(p.name)",
    "p.name.lower()",
]


@pytest.mark.parametrize("piece", HOSTILE_PIECES)
@pytest.mark.parametrize("tool", ["compare_within", "segment_scan", "trend"])
def test_analysis_tools_echo_no_value(piece: str, tool: str, user_guard: GuardedSQL,
                                      shadow_user_guard: GuardedSQL) -> None:
    from d2_notebook.data.analysis import compare_within, segment_scan, trend

    calls = {
        "compare_within": lambda g: compare_within(
            g, source="patients p", metric="avg(p.age)", exposure=piece, value="x"),
        "segment_scan": lambda g: segment_scan(
            g, source="patients p", metric="avg(p.age)", dimensions=[piece]),
        "trend": lambda g: trend(g, source="patients p", metric="avg(p.age)",
                                 time="DATE '2020-01-01'", where=f"{piece} IS NOT NULL"),
    }
    for guard in (user_guard, shadow_user_guard):
        try:
            result = calls[tool](guard)
        except (SQLError, ValueError) as exc:
            _assert_no_plant(str(exc))
            continue
        _assert_no_plant(str(result), data_readable=True)
