"""The PostgreSQL guard on a real server, against a database that fights back.

The database ``d2_hostile`` holds a setting secret (database and role level), a file in
the data directory, a login role with a password, another session running a marked query,
and views and functions that reach them. Every statement of the hostile corpus is refused
with its reason, as the read-only role and as a superuser, and no marker ever appears in
an error; every function name of the server's ``pg_proc`` is classified.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import sqlglot
from sqlglot import exp

from d2_notebook.data import open_source
from d2_notebook.data.postgres_functions import PgRefusal, classify
from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource
from d2_notebook.errors import QueryFailedError, UnsafeSQLError

CORPUS = Path(__file__).parent / "sql_corpus" / "postgres_hostile_catalog.sql"
HOSTILE = [tuple(part.strip() for part in line.split("|||", 1))
           for line in CORPUS.read_text().splitlines()
           if line.strip() and not line.startswith("-- ")]
DATABASE = "d2_hostile"
SETTING_SECRET = "SETTING-LEAK-7731"
ROLE_SECRET = "ROLE-LEAK-5512"
FILE_SECRET = "FILE-LEAK-4242"
PASSWORD = "PW-LEAK-9917"
SESSION_SECRET = "SESSION-LEAK-3141"
HOSTILE_OBJECTS = """
CREATE TABLE patients (patient_id int PRIMARY KEY, age int, sex text);
INSERT INTO patients SELECT i, 20 + i % 60, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END
  FROM generate_series(1, 200) AS i;
CREATE SEQUENCE d2_seq;
CREATE VIEW settings_view AS SELECT name, setting FROM pg_settings;
CREATE VIEW inner_secrets AS SELECT rolname, rolpassword FROM pg_authid;
CREATE VIEW secrets_view AS SELECT * FROM inner_secrets;
CREATE VIEW xml_view AS SELECT query_to_xml('SELECT * FROM pg_authid', true, false, '') AS x;
CREATE VIEW role_view AS SELECT rolname, rolconfig FROM pg_roles;
CREATE FUNCTION leak_setting() RETURNS text LANGUAGE sql AS
  $$ SELECT current_setting('d2.secret') $$;
CREATE FUNCTION upper(integer) RETURNS text LANGUAGE sql AS
  $$ SELECT current_setting('d2.secret') $$;
CREATE FUNCTION plpg_leak() RETURNS text LANGUAGE plpgsql AS
  $$ BEGIN RETURN current_setting('d2.secret'); END $$;
CREATE FUNCTION definer_leak() RETURNS text LANGUAGE sql SECURITY DEFINER AS
  $$ SELECT rolpassword FROM pg_authid LIMIT 1 $$;
CREATE FUNCTION atomic_leak() RETURNS text LANGUAGE sql
  BEGIN ATOMIC SELECT pg_read_file('d2_secret.txt'); END;
CREATE FUNCTION stat_wrapper() RETURNS bigint LANGUAGE sql AS
  $$ SELECT count(*) FROM ts_stat('SELECT to_tsvector(setting) FROM pg_settings') $$;
CREATE FUNCTION nested_leak() RETURNS text LANGUAGE sql AS $$ SELECT leak_setting() $$;
CREATE VIEW func_view AS SELECT leak_setting() AS s;
CREATE FUNCTION evil_step(int, int) RETURNS int LANGUAGE sql AS $$ SELECT $1 + $2 $$;
CREATE AGGREGATE evil_agg(int) (SFUNC = evil_step, STYPE = int);
CREATE OPERATOR public.# (LEFTARG = text, RIGHTARG = boolean,
  FUNCTION = pg_catalog.current_setting);
CREATE VIEW innocent_view AS SELECT patient_id, age FROM patients WHERE age >= 65;
CREATE FUNCTION safe_double(x integer) RETURNS integer LANGUAGE sql AS $$ SELECT x * 2 $$;
CREATE FUNCTION atomic_triple(x integer) RETURNS integer LANGUAGE sql RETURN x * 3;
CREATE VIEW double_view AS SELECT safe_double(age) AS twice FROM patients;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst;
GRANT USAGE ON SEQUENCE d2_seq TO analyst;
"""


@pytest.fixture(scope="module")
def hostile_cluster(postgres_cluster, hospital_pg_url) -> Iterator[object]:
    """``d2_hostile`` with the secrets and the hostile objects; a session running a
    marked query while the module's tests run."""
    with postgres_cluster.admin() as con:
        con.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        con.execute(f"CREATE DATABASE {DATABASE}")
        con.execute(f"ALTER DATABASE {DATABASE} SET d2.secret = '{SETTING_SECRET}'")
        con.execute(f"ALTER DATABASE {DATABASE} SET standard_conforming_strings = off")
        con.execute(f"ALTER ROLE analyst IN DATABASE {DATABASE} SET d2.role = '{ROLE_SECRET}'")
        con.execute("DROP ROLE IF EXISTS d2_victim")
        con.execute(f"CREATE ROLE d2_victim LOGIN PASSWORD '{PASSWORD}'")
        con.execute(f"COPY (SELECT '{FILE_SECRET}') TO "
                    f"'{postgres_cluster.data_dir}/d2_secret.txt'")
    with postgres_cluster.admin(DATABASE) as con:
        con.execute(HOSTILE_OBJECTS)
    busy = postgres_cluster.admin(DATABASE)

    def other_session() -> None:
        with contextlib.suppress(psycopg.Error):
            busy.execute(f"SELECT pg_sleep(600) /* {SESSION_SECRET} */")

    worker = threading.Thread(target=other_session, daemon=True)
    worker.start()
    yield postgres_cluster
    busy.cancel()
    worker.join(10)
    busy.close()


@pytest.fixture(scope="module", params=["analyst", "superuser"])
def source(request, hostile_cluster) -> Iterator[SQLAlchemySource]:
    user = "analyst" if request.param == "analyst" else None
    opened = open_source(hostile_cluster.url(DATABASE, user), timeout_s=10)
    yield opened
    opened.close()


def leaked(text: str, cluster) -> list[str]:
    markers = [SETTING_SECRET, ROLE_SECRET, FILE_SECRET, PASSWORD, SESSION_SECRET,
               "SCRAM-SHA-256$", str(cluster.data_dir)]
    return [m for m in markers if m in text]


def test_the_corpus_is_big_enough():
    assert len(HOSTILE) >= 60


@pytest.mark.parametrize(("fragment", "sql"), HOSTILE, ids=[s for _, s in HOSTILE])
def test_hostile_statement_is_refused_with_its_reason(source, hostile_cluster, fragment, sql):
    with pytest.raises(UnsafeSQLError) as caught:
        source.run(sql)
    message = str(caught.value)
    assert message.startswith("SQL refused: ") and fragment in message, message
    assert leaked(message, hostile_cluster) == []


def test_the_markers_are_real(hostile_cluster):
    """As the superuser, unguarded, the secrets are there: the refusals above hide them."""
    with psycopg.connect(host=str(hostile_cluster.socket_dir), dbname=DATABASE,
                         user=hostile_cluster.superuser) as con:
        assert con.execute("SELECT current_setting('d2.secret')").fetchone()[0] == \
            SETTING_SECRET
        assert FILE_SECRET in con.execute("SELECT pg_read_file('d2_secret.txt')").fetchone()[0]
        activity = con.execute("SELECT string_agg(query, ' ') FROM pg_stat_activity")
        assert SESSION_SECRET in activity.fetchone()[0]
        hashes = con.execute("SELECT rolpassword FROM pg_authid WHERE rolname = 'd2_victim'")
        assert hashes.fetchone()[0].startswith("SCRAM-SHA-256$")


def test_views_and_functions_whose_definitions_pass_run(source):
    assert source.run("SELECT count(*) AS n FROM innocent_view").frame["n"].tolist() == [45]
    assert source.run("SELECT safe_double(21) AS v").frame["v"].tolist() == [42]
    assert source.run("SELECT atomic_triple(5) AS v").frame["v"].tolist() == [15]
    assert source.run("SELECT max(twice) AS m FROM double_view").frame["m"].tolist() == [158]
    assert source.run("SELECT lower('A') AS u").frame["u"].tolist() == ["a"]
    # the database's upper(integer) shadows the name: every upper() call is held to it
    with pytest.raises(UnsafeSQLError, match=r"function public.upper\(\) is refused"):
        source.run("SELECT upper('a') AS u")
    tables = source.run("SELECT table_name FROM information_schema.tables "
                        "WHERE table_schema = 'public' ORDER BY 1").frame["table_name"]
    assert "patients" in tables.tolist()
    assert source.run("SELECT count(*) AS n FROM pg_class").frame["n"].iat[0] > 0


BREAKOUTS = [
    r"SELECT 'a\' AS p, length($$d2_secret.txt$$) AS leak --'",
    r"SELECT E'a\\' AS p, 'b' AS leak --'",
    r"SELECT 'x\' AS p, 'y' AS leak",
    r"SELECT E'\x41\'' AS p, 'z' AS leak",
    r"SELECT $$it's\$$ AS p, $t$a$$b$t$ AS leak",
    r"SELECT U&'d\0061t\+000061' AS p, 'it''s' AS leak",
    r"SELECT 'tab\tnew\n' AS p, e'\u0041' AS leak",
]


@pytest.mark.parametrize("sql", BREAKOUTS)
def test_literals_reach_the_server_as_the_guard_read_them(source, sql):
    """With standard_conforming_strings off for the database, the session still runs with
    it on: each literal the server returns is the one sqlglot parsed."""
    tree = sqlglot.parse_one(sql, read="postgres")
    expected = [node.this.this if isinstance(node.this, exp.Literal | exp.RawString)
                else None for node in tree.expressions]
    frame = source.run(sql).frame
    assert frame.columns.tolist() == ["p", "leak"]
    got = frame.iloc[0].tolist()
    for want, value in zip(expected, got, strict=True):
        if want is not None:
            assert value == want


def test_the_session_runs_with_standard_strings(source):
    frame = source.run("SELECT current_setting('standard_conforming_strings') AS s").frame
    assert frame["s"].tolist() == ["on"]


def test_results_past_the_byte_cap_fail_cleanly(hostile_cluster):
    capped = SQLAlchemySource(hostile_cluster.url(DATABASE, "analyst"), max_bytes=2_000_000)
    try:
        with pytest.raises(QueryFailedError, match=r"larger than the 1.90735 MiB cap .*"
                                                    r"max_bytes=2000000"):
            capped.run("SELECT repeat('x', 100000) AS big FROM generate_series(1, 400)")
        small = capped.run("SELECT repeat('x', 1000) AS big FROM generate_series(1, 400)")
        assert len(small.frame) == 400
        with pytest.raises(ValueError, match="max_bytes must be > 0"):
            SQLAlchemySource(hostile_cluster.url(DATABASE, "analyst"), max_bytes=0)
    finally:
        capped.close()


def test_every_function_of_the_server_is_classified(hostile_cluster):
    """A new server version's functions fail here until they are reviewed."""
    with hostile_cluster.admin(DATABASE) as con:
        names = [row[0] for row in con.execute(
            "SELECT DISTINCT p.proname FROM pg_proc p JOIN pg_namespace n "
            "ON n.oid = p.pronamespace WHERE n.nspname IN ('pg_catalog', 'information_schema')")]
    assert len(names) > 2000
    assert [n for n in names if classify(n) is PgRefusal.UNCLASSIFIED] == []


def test_schema_summary_reads_the_database_views_through_the_guard(source, hostile_cluster):
    """Samples and counts come through the guard: a view over settings, passwords or a
    leaking function is listed as unreadable and never run, whoever connects."""
    summary = source.schema_summary()
    assert leaked(summary, hostile_cluster) == []
    for view in ("settings_view", "secrets_view", "func_view", "xml_view", "role_view"):
        assert f"{view} (view, not readable by the SQL tool" in summary
        block = summary.split(f"\n{view} (view", 1)[1].split("\n")[1:]
        columns = list(itertools.takewhile(lambda line: line.startswith("  "), block))
        assert columns and not any(" e.g. " in c or c.endswith(")") for c in columns)
    assert "innocent_view (view, 45 rows)" in summary
    with pytest.raises(UnsafeSQLError, match=r"view public\.settings_view is refused"):
        source.sample("settings_view")


def test_every_statement_runs_under_the_time_limit_in_its_transaction(source):
    frame = source.run("SELECT current_setting('statement_timeout') AS t, "
                       "current_setting('transaction_read_only') AS ro", timeout_s=3).frame
    assert frame.iloc[0].tolist() == ["3s", "on"]


def test_the_operator_check_is_what_stops_the_database_operator(source, monkeypatch):
    """Without the operator check the server would run current_setting() for ``#``.
    (An operator whose function is the database's own refuses the whole database, see
    ``test_postgres_guard_round5.py``; this one runs a built-in function the guard
    refuses by name.)"""
    from d2_notebook.data import postgres_catalog

    monkeypatch.setattr(postgres_catalog, "_check_operators", lambda walk, statement: None)
    frame = source.run("SELECT 'd2.secret' # true AS v").frame
    assert frame["v"].tolist() == [SETTING_SECRET]


def test_xml_entities_are_not_expanded(source, hostile_cluster):
    """PostgreSQL's XML functions are allowed: the server never loads external entities."""
    entity = f"file://{hostile_cluster.data_dir}/d2_secret.txt"
    document = f'<!DOCTYPE a [<!ENTITY x SYSTEM "{entity}">]><a>&x;</a>'
    frame = source.run(f"SELECT xpath('/a', '{document}')::text AS a, "
                       f"xml_is_well_formed('{document}') AS ok").frame
    assert FILE_SECRET not in str(frame.iloc[0].tolist())
