"""The PostgreSQL guard, round 4: bypasses confirmed on a real server, now closed.

- ``pg_stats`` (and ``pg_stats_ext``, ``pg_stats_ext_exprs``) showed, after ANALYZE, the
  values of relations the guard refuses (database and role settings, function sources,
  password hashes);
- functions defined in the database ran through a cast, a domain's CHECK constraint and
  a row-level security policy, none of which the statement names as a function call;
- run-time errors carried the values they quote to the agent.

Each attack is first shown to work on the server itself (as the read-only role, without
d2), then refused through the guard with a message naming what and the fix.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from d2_notebook.data import open_source
from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource
from d2_notebook.errors import UnsafeSQLError

DATABASE = "d2_round4"
SETTING_SECRET = "SETTING-LEAK-R4-2281"
ROLE_SECRET = "ROLE-LEAK-R4-6673"
SOURCE_SECRET = "FUNC-SRC-LEAK-R4-9120"
PASSWORD = "PW-LEAK-R4-3390"
ROW_SECRET = "ROW-VALUE-R4-5547"
OBJECTS = f"""
CREATE TABLE patients (patient_id int PRIMARY KEY, age int, sex text);
INSERT INTO patients SELECT i, 20 + i % 60, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END
  FROM generate_series(1, 50) AS i;
CREATE TABLE notes (body text);
INSERT INTO notes VALUES ('{ROW_SECRET}');
CREATE FUNCTION conn() RETURNS text LANGUAGE sql AS
  $$ SELECT 'host=db password={SOURCE_SECRET}' $$;

CREATE TYPE box2 AS (v text);
CREATE FUNCTION cast_leak(text) RETURNS box2 LANGUAGE plpgsql AS
  $f$ BEGIN RETURN ROW(current_setting('d2.secret'))::box2; END $f$;
CREATE CAST (text AS box2) WITH FUNCTION cast_leak(text);
CREATE FUNCTION chk_leak(text) RETURNS boolean LANGUAGE plpgsql AS
  $f$ BEGIN RAISE EXCEPTION 'leak %', current_setting('d2.secret'); END $f$;
CREATE DOMAIN chk AS text CHECK (chk_leak(VALUE));
CREATE TYPE holder AS (c chk);
CREATE FUNCTION takes_chk(x chk) RETURNS int LANGUAGE sql AS $$ SELECT 1 $$;
CREATE DOMAIN lowercase AS text CHECK (VALUE ~ '^[a-z]+$');
CREATE TYPE plain_pair AS (a int, b text);

CREATE TABLE rls_t AS SELECT 1 AS a;
CREATE FUNCTION pol_leak(int) RETURNS boolean LANGUAGE plpgsql AS
  $f$ BEGIN RAISE EXCEPTION 'pol %', current_setting('d2.secret'); END $f$;
ALTER TABLE rls_t ENABLE ROW LEVEL SECURITY;
CREATE POLICY p ON rls_t USING (pol_leak(a));
CREATE VIEW rls_view AS SELECT a FROM rls_t;
CREATE TABLE rls_plain AS SELECT g AS a FROM generate_series(-2, 3) AS g;
ALTER TABLE rls_plain ENABLE ROW LEVEL SECURITY;
CREATE POLICY positive ON rls_plain USING (a > 0 AND current_user IS NOT NULL);

GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst;
GRANT USAGE ON TYPE box2, chk TO analyst;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO analyst;
"""


@pytest.fixture(scope="module")
def cluster(postgres_cluster, hospital_pg_url) -> Iterator[object]:
    """``d2_round4``: settings at database and role level, a password, a function whose
    source holds a secret, the catalogs holding them ANALYZEd; the hostile cast, domain
    and row-level security policy."""
    with postgres_cluster.admin() as con:
        con.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        con.execute(f"CREATE DATABASE {DATABASE}")
        con.execute(f"ALTER DATABASE {DATABASE} SET d2.secret = '{SETTING_SECRET}'")
        con.execute(f"ALTER ROLE analyst IN DATABASE {DATABASE} SET d2.role = '{ROLE_SECRET}'")
        con.execute("DROP ROLE IF EXISTS d2_victim_r4")
        con.execute(f"CREATE ROLE d2_victim_r4 LOGIN PASSWORD '{PASSWORD}'")
    with postgres_cluster.admin(DATABASE) as con:
        con.execute(OBJECTS)
        con.execute("ANALYZE pg_catalog.pg_db_role_setting; ANALYZE pg_catalog.pg_authid; "
                    "ANALYZE pg_catalog.pg_proc")
    yield postgres_cluster
    with postgres_cluster.admin() as con:
        con.execute("DROP ROLE IF EXISTS d2_victim_r4")


@pytest.fixture(scope="module", params=["analyst", "superuser"])
def source(request, cluster) -> Iterator[SQLAlchemySource]:
    user = "analyst" if request.param == "analyst" else None
    opened = open_source(cluster.url(DATABASE, user), timeout_s=10)
    yield opened
    opened.close()


@pytest.fixture
def analyst(cluster) -> Iterator[psycopg.Connection]:
    """The read-only role on the server itself, without d2: shows an attack is real."""
    with psycopg.connect(host=str(cluster.socket_dir), dbname=DATABASE, user="analyst",
                         autocommit=True) as con:
        yield con


SECRETS = (SETTING_SECRET, ROLE_SECRET, SOURCE_SECRET, PASSWORD, "SCRAM-SHA-256$")


def refused(source: SQLAlchemySource, sql: str, *fragments: str) -> str:
    """Run ``sql`` through the guard: it must be refused, naming every fragment, and
    nothing secret may be in the message."""
    with pytest.raises(UnsafeSQLError) as caught:
        source.run(sql)
    message = str(caught.value)
    assert message.startswith("SQL refused: "), message
    for fragment in fragments:
        assert fragment in message, message
    assert [s for s in SECRETS if s in message] == [], message
    return message


# --- 1. statistics views -----------------------------------------------------------------

STATS = "SELECT histogram_bounds::text AS h, most_common_elems::text AS e FROM {view} " \
        "WHERE tablename = 'pg_db_role_setting' AND attname = 'setconfig'"


def test_pg_stats_shows_the_settings_it_summarises(analyst):
    row = analyst.execute(STATS.format(view="pg_stats")).fetchone()
    assert SETTING_SECRET in str(row) and ROLE_SECRET in str(row)


@pytest.mark.parametrize("view", ["pg_stats", "pg_catalog.pg_stats", "pg_stats_ext",
                                  "pg_stats_ext_exprs"])
def test_statistics_views_are_not_readable(source, view):
    qualified = view if "." in view else f"pg_catalog.{view}"
    refused(source, f"SELECT * FROM {view}", f"relation {qualified} is not readable")


@pytest.mark.parametrize("sql", [
    STATS.format(view="pg_stats"),
    "SELECT most_common_vals::text FROM pg_stats WHERE tablename = 'pg_proc' "
    "AND attname = 'prosrc'",
    "SELECT histogram_bounds::text FROM pg_stats WHERE tablename = 'pg_authid'",
    "SELECT (SELECT histogram_bounds::text FROM pg_stats_ext LIMIT 1) AS h",
])
def test_statistics_of_refused_relations_do_not_leak(source, sql):
    refused(source, sql, "is not readable")
