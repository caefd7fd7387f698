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

import guard_refusals
import psycopg
import pytest

from d2_notebook.data import open_source
from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource
from d2_notebook.errors import QueryFailedError

DATABASE = "d2_round4"
SETTING_SECRET = "SETTING-LEAK-R4-2281"
ROLE_SECRET = "ROLE-LEAK-R4-6673"
SOURCE_SECRET = "FUNC-SRC-LEAK-R4-9120"
PASSWORD = "PW-LEAK-R4-3390"
ROW_SECRET = "ROW-VALUE-R4-5547"
JSON_SECRET = "JSONVALUE5547"
OBJECTS = f"""
CREATE TABLE patients (patient_id int PRIMARY KEY, age int, sex text);
INSERT INTO patients SELECT i, 20 + i % 60, CASE WHEN i % 2 = 0 THEN 'F' ELSE 'M' END
  FROM generate_series(1, 50) AS i;
CREATE TABLE notes (body text);
INSERT INTO notes VALUES ('{ROW_SECRET}'), ('{JSON_SECRET}');
CREATE FUNCTION conn() RETURNS text LANGUAGE sql AS
  $$ SELECT 'host=db password={SOURCE_SECRET}' $$;

CREATE TYPE box2 AS (v text);
CREATE FUNCTION cast_leak(text) RETURNS box2 LANGUAGE plpgsql AS
  $f$ BEGIN RETURN ROW(current_setting('d2.secret'))::box2; END $f$;
CREATE CAST (text AS box2) WITH FUNCTION cast_leak(text);
CREATE DOMAIN lowercase AS text CHECK (VALUE ~ '^[a-z]+$');
CREATE TYPE plain_pair AS (a int, b text);
CREATE VIEW cast_view AS SELECT ('x'::text::box2).v AS v;

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
GRANT USAGE ON TYPE box2 TO analyst;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO analyst;
"""
DOMAINS_DATABASE = "d2_round4_domains"
DOMAIN_OBJECTS = """
CREATE FUNCTION chk_leak(text) RETURNS boolean LANGUAGE plpgsql AS
  $f$ BEGIN RAISE EXCEPTION 'leak %', current_setting('d2.secret'); END $f$;
CREATE DOMAIN chk AS text CHECK (chk_leak(VALUE));
CREATE TYPE holder AS (c chk);
CREATE FUNCTION takes_chk(x chk) RETURNS int LANGUAGE sql AS $$ SELECT length(x) $$;
GRANT USAGE ON TYPE chk TO analyst;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO analyst;
"""


@pytest.fixture(scope="module")
def cluster(postgres_cluster, hospital_pg_url) -> Iterator[object]:
    """``d2_round4``: settings at database and role level, a password, a function whose
    source holds a secret, the catalogs holding them ANALYZEd; the hostile cast and
    row-level security policy. ``d2_round4_domains``: the hostile domain (a database with
    one refuses every statement, see ``test_postgres_guard_round5.py``)."""
    with postgres_cluster.admin() as con:
        con.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        con.execute(f"CREATE DATABASE {DATABASE}")
        con.execute(f"ALTER DATABASE {DATABASE} SET d2.secret = '{SETTING_SECRET}'")
        con.execute(f"ALTER ROLE analyst IN DATABASE {DATABASE} SET d2.role = '{ROLE_SECRET}'")
        con.execute("DROP ROLE IF EXISTS d2_victim_r4")
        con.execute(f"CREATE ROLE d2_victim_r4 LOGIN PASSWORD '{PASSWORD}'")
        con.execute(f"DROP DATABASE IF EXISTS {DOMAINS_DATABASE}")
        con.execute(f"CREATE DATABASE {DOMAINS_DATABASE}")
        con.execute(f"ALTER DATABASE {DOMAINS_DATABASE} SET d2.secret = '{SETTING_SECRET}'")
    with postgres_cluster.admin(DATABASE) as con:
        con.execute(OBJECTS)
        con.execute("ANALYZE pg_catalog.pg_db_role_setting; ANALYZE pg_catalog.pg_authid; "
                    "ANALYZE pg_catalog.pg_proc")
    with postgres_cluster.admin(DOMAINS_DATABASE) as con:
        con.execute(DOMAIN_OBJECTS)
    yield postgres_cluster
    with postgres_cluster.admin() as con:
        con.execute("DROP ROLE IF EXISTS d2_victim_r4")


@pytest.fixture(scope="module", params=["analyst", "superuser"])
def source(request, cluster) -> Iterator[SQLAlchemySource]:
    user = "analyst" if request.param == "analyst" else None
    opened = open_source(cluster.url(DATABASE, user), timeout_s=10)
    yield opened
    opened.close()


@pytest.fixture(scope="module", params=["analyst", "superuser"])
def domains(request, cluster) -> Iterator[SQLAlchemySource]:
    user = "analyst" if request.param == "analyst" else None
    opened = open_source(cluster.url(DOMAINS_DATABASE, user), timeout_s=10)
    yield opened
    opened.close()


@pytest.fixture
def analyst(cluster) -> Iterator[psycopg.Connection]:
    """The read-only role on the server itself, without d2: shows an attack is real."""
    with psycopg.connect(host=str(cluster.socket_dir), dbname=DATABASE, user="analyst",
                         autocommit=True) as con:
        yield con


@pytest.fixture
def analyst_domains(cluster) -> Iterator[psycopg.Connection]:
    """The read-only role on the database with the hostile domain, without d2."""
    with psycopg.connect(host=str(cluster.socket_dir), dbname=DOMAINS_DATABASE,
                         user="analyst", autocommit=True) as con:
        yield con


SECRETS = (SETTING_SECRET, ROLE_SECRET, SOURCE_SECRET, PASSWORD, "SCRAM-SHA-256$")


def refused(source: SQLAlchemySource, sql: str, *fragments: str) -> str:
    """``sql`` is refused through the guard, naming every fragment, with no secret."""
    return guard_refusals.refused(source, sql, fragments, SECRETS)


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


# --- 2. functions that run without being called: casts, domains, row-level security ----

ATTACKS = {
    "SELECT ('x'::text::box2).v AS v": SETTING_SECRET,
    "SELECT * FROM rls_t": f"pol {SETTING_SECRET}",
}
DOMAIN_ATTACKS = {
    "SELECT 'x'::chk AS v": f"leak {SETTING_SECRET}",
    "SELECT jsonb_populate_record(NULL::holder, '{\"c\": \"x\"}')::text AS v":
        f"leak {SETTING_SECRET}",
    "SELECT takes_chk('x') AS v": f"leak {SETTING_SECRET}",
}


def _shown(con: psycopg.Connection, sql: str) -> str:
    try:
        return str(con.execute(sql).fetchall())
    except psycopg.Error as exc:
        return str(exc)


@pytest.mark.parametrize(("sql", "secret"), ATTACKS.items(), ids=list(ATTACKS))
def test_the_database_runs_its_functions_unasked(analyst, sql, secret):
    """Without d2, the read-only role's statement runs the database's plpgsql function."""
    assert secret in _shown(analyst, sql)


@pytest.mark.parametrize(("sql", "secret"), DOMAIN_ATTACKS.items(), ids=list(DOMAIN_ATTACKS))
def test_the_database_runs_its_domain_check_unasked(analyst_domains, sql, secret):
    assert secret in _shown(analyst_domains, sql)


@pytest.mark.parametrize(("sql", "fragments"), [
    ("SELECT ('x'::text::box2).v AS v",
     ("casts to or declares type box2", "function public.cast_leak()",
      "the cast from text to public.box2", "remove the cast to box2")),
    ("SELECT (CAST(sex AS box2)).v AS v FROM patients LIMIT 1",
     ("type box2", "public.cast_leak()")),
    ("SELECT ARRAY['x']::box2[] AS v", ("type box2[]", "public.cast_leak()")),
    ("SELECT * FROM cast_view",
     ("view public.cast_view is refused", "public.cast_leak()")),
    ("SELECT * FROM rls_t",
     ("table public.rls_t has row-level security", "policy p calls function "
      "public.pol_leak()", "query other tables")),
    ("SELECT count(*) AS n FROM rls_view",
     ("view public.rls_view is refused", "table public.rls_t has row-level security")),
    ("SELECT n.a FROM patients JOIN rls_t AS n ON n.a = patients.patient_id",
     ("table public.rls_t has row-level security",)),
])
def test_functions_run_by_casts_domains_and_policies_are_refused(source, sql, fragments):
    refused(source, sql, *fragments)


@pytest.mark.parametrize(("sql", "fragments"), [
    ("SELECT 'x'::chk AS v",
     ("casts to or declares type chk", "function public.chk_leak()",
      "the constraint chk_check of domain public.chk", "remove the cast to chk")),
    ("SELECT CAST('x' AS public.chk) AS v", ("type public.chk", "public.chk_leak()")),
    ("SELECT ARRAY['x']::chk[] AS v", ("type chk[]", "domain public.chk")),
    ("SELECT jsonb_populate_record(NULL::holder, '{\"c\": \"x\"}')::text AS v",
     ("type holder", "domain public.chk", "public.chk_leak()")),
    ("SELECT * FROM jsonb_to_recordset('[{\"a\": \"x\"}]') AS r(a chk)",
     ("declares type chk", "public.chk_leak()")),
    ("SELECT takes_chk('x') AS v",
     ("function public.takes_chk() takes or returns type chk", "public.chk_leak()")),
])
def test_a_domain_written_in_the_statement_is_refused_by_name(domains, sql, fragments):
    """The statement's own checks name the type it writes before the database-wide one."""
    refused(domains, sql, *fragments)


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT 'abc'::lowercase AS v", "abc"),
    ("SELECT (ROW(1, 'x')::plain_pair).b AS v", "x"),
    ("SELECT age::text AS v FROM patients ORDER BY patient_id LIMIT 1", "21"),
    ("SELECT CAST(age AS numeric(5, 1))::text AS v FROM patients ORDER BY patient_id "
     "LIMIT 1", "21.0"),
    ("SELECT ARRAY[1, 2]::bigint[]::text AS v", "{1,2}"),
    ("SELECT x::text AS v FROM jsonb_to_recordset('[{\"x\": \"ok\"}]') AS r(x text)",
     "ok"),
])
def test_casts_to_built_in_types_and_harmless_domains_run(source, sql, expected):
    assert source.run(sql).frame["v"].tolist() == [expected]


def test_a_table_whose_policy_uses_built_in_functions_is_readable(source):
    """The analyst sees the rows the policy lets through; the superuser bypasses it."""
    count = source.run("SELECT count(*) AS n FROM rls_plain").frame["n"].iat[0]
    assert count in (3, 6)


CASTS_DATABASE = "d2_round4_casts"


@pytest.fixture(scope="module")
def implicit_cast(cluster) -> Iterator[SQLAlchemySource]:
    """A database that defines an implicit cast run by a plpgsql function: ``length(c)``
    on a column of the type runs it, though the statement writes no cast."""
    with cluster.admin() as con:
        con.execute(f"DROP DATABASE IF EXISTS {CASTS_DATABASE}")
        con.execute(f"CREATE DATABASE {CASTS_DATABASE}")
        con.execute(f"ALTER DATABASE {CASTS_DATABASE} SET d2.secret = '{SETTING_SECRET}'")
    with cluster.admin(CASTS_DATABASE) as con:
        con.execute("""
CREATE TYPE box3 AS (v text);
CREATE FUNCTION implicit_leak(box3) RETURNS text LANGUAGE plpgsql AS
  $f$ BEGIN RETURN current_setting('d2.secret'); END $f$;
CREATE CAST (box3 AS text) WITH FUNCTION implicit_leak(box3) AS IMPLICIT;
CREATE TABLE boxes AS SELECT ROW('a')::box3 AS c;
GRANT SELECT ON boxes TO analyst;
""")
    opened = open_source(cluster.url(CASTS_DATABASE, "analyst"), timeout_s=10)
    yield opened
    opened.close()


def test_an_implicit_cast_runs_its_function_unasked(implicit_cast, cluster):
    with psycopg.connect(host=str(cluster.socket_dir), dbname=CASTS_DATABASE,
                         user="analyst") as con:
        row = con.execute("SELECT length(c) AS n, upper(c) AS s FROM boxes").fetchone()
    assert row == (len(SETTING_SECRET), SETTING_SECRET)


@pytest.mark.parametrize("sql", ["SELECT length(c) AS n FROM boxes", "SELECT 1 AS one"])
def test_a_database_with_an_implicit_user_cast_is_refused(implicit_cast, sql):
    refused(implicit_cast, sql, "the database defines an implicit cast from box3 to text",
            "function public.implicit_leak()", "DROP CAST (box3 AS text)")


# --- 3. run-time errors ------------------------------------------------------------------

@pytest.mark.parametrize(("sql", "value", "shown"), [
    (f"SELECT body::int AS v FROM notes WHERE body = '{ROW_SECRET}'", ROW_SECRET,
     'invalid input syntax for type integer: "…"'),
    ("SELECT (body || '!')::numeric AS v FROM notes WHERE body LIKE 'ROW%'",
     ROW_SECRET, 'invalid input syntax for type numeric: "…"'),
    ("SELECT body::json AS v FROM notes WHERE body LIKE 'JSON%'", JSON_SECRET,
     "invalid input syntax for type json"),
    ("SELECT to_date(body, 'YYYY-MM-DD') AS v FROM notes WHERE body LIKE 'JSON%'",
     '"JSON"', 'invalid value "…"'),
])
def test_run_time_errors_hide_the_values_they_quote(source, analyst, sql, value, shown):
    try:  # the server's own message shows the value
        analyst.execute(sql).fetchall()
    except psycopg.Error as exc:
        assert value in str(exc)
    with pytest.raises(QueryFailedError) as caught:
        source.run(sql)
    message = str(caught.value)
    assert shown in message and value not in message, message
    assert "Hint: " in message


def test_compile_errors_keep_the_names_they_quote(source):
    with pytest.raises(QueryFailedError, match=r'column "nope" does not exist(.|\n)*'
                                               r"Hint: describe_table"):
        source.run("SELECT nope FROM notes")
    with pytest.raises(QueryFailedError, match=r'relation "nowhere" does not exist'):
        source.run("SELECT * FROM nowhere")
    with pytest.raises(QueryFailedError, match="division by zero"):
        source.run("SELECT 1 / (count(*) - count(*)) AS v FROM notes")
