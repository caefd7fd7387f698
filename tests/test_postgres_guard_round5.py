"""The PostgreSQL guard, round 5: bypasses confirmed on a real server, now closed.

- attribute notation: ``p.full_name`` and ``(p).full_name`` call ``full_name(p)``, a
  function the statement never writes as a call (also inside a SQL function's body);
- operators the statement never writes: ``IN``, ``BETWEEN``, ``CASE x WHEN``, ``NULLIF``,
  ``IS DISTINCT FROM`` and ``LIKE`` resolve ``=``, ``<=``, ``~~`` themselves, and
  ``ORDER BY``, ``DISTINCT``, ``GROUP BY``, ``UNION`` run the default operator class's
  support function;
- a domain's CHECK runs where the statement writes no type (``age(years)`` for a domain
  ``age``, ``array_append`` on a ``domain[]`` column, ``jsonb_populate_record``);
- a foreign table read through its partitioned or inheritance parent;
- definitions with literals: ``pg_get_function_arguments`` shows argument defaults,
  ``pg_get_triggerdef`` trigger arguments, ``pg_get_expr`` over ``pg_attrdef`` column
  defaults;
- run-time errors of SQLSTATE class 42 (``body::regproc``) kept their text, and a value
  holding a double quote slipped past the hiding of quoted values.

Each attack is first shown to work on the server itself (without d2), then refused
through the guard, as the read-only role and as a superuser.
"""

from __future__ import annotations

from collections.abc import Iterator

import guard_refusals
import psycopg
import pytest

from d2_notebook.data import open_source
from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource
from d2_notebook.errors import QueryFailedError

SECRET = "R5-SECRET-7719"
PASSWORD = "R5-PW-4410"
LONG = "long_" + "n" * 58  # 63 bytes: PostgreSQL clips longer names to this


def _leak(signature: str, returns: str) -> str:
    """A plpgsql function that fails with the database's secret in its message."""
    name = signature.split("(")[0]
    return (f"CREATE FUNCTION {signature} RETURNS {returns} LANGUAGE plpgsql AS "
            f"$f$ BEGIN RAISE EXCEPTION '{name} %', current_setting('d2.secret'); END $f$;\n")


DATABASES = {
    "d2_round5": f"""
CREATE TABLE people (id int, first text);
INSERT INTO people VALUES (1, 'Ada');
CREATE FUNCTION full_name(p people) RETURNS text LANGUAGE plpgsql AS
  $f$ BEGIN RETURN p.first || ' / ' || current_setting('d2.secret'); END $f$;
CREATE FUNCTION audit_info(p people) RETURNS text LANGUAGE sql SECURITY DEFINER AS
  $f$ SELECT string_agg(rolname || ':' || coalesce(rolpassword, '-'), ', ')
      FROM pg_authid WHERE rolname = 'd2_victim_r5' $f$;
CREATE FUNCTION display(p people) RETURNS text LANGUAGE sql AS $$ SELECT p.full_name $$;
CREATE FUNCTION {LONG}(p people) RETURNS text LANGUAGE plpgsql AS
  $f$ BEGIN RETURN current_setting('d2.secret'); END $f$;
CREATE FUNCTION initial(p people) RETURNS text LANGUAGE sql AS $$ SELECT left(p.first, 1) $$;

CREATE EXTENSION file_fdw;
CREATE SERVER files FOREIGN DATA WRAPPER file_fdw;
CREATE TABLE logs (line text) PARTITION BY LIST (line);
CREATE TABLE logs_local PARTITION OF logs FOR VALUES IN ('local');
CREATE TABLE logs_mid (line text) PARTITION BY LIST (line);
ALTER TABLE logs ATTACH PARTITION logs_mid DEFAULT;
CREATE FOREIGN TABLE logs_archive PARTITION OF logs_mid DEFAULT SERVER files
  OPTIONS (filename '/etc/passwd', format 'text');
CREATE TABLE events (line text);
CREATE FOREIGN TABLE events_remote () INHERITS (events) SERVER files
  OPTIONS (filename '/etc/hostname', format 'text');
CREATE TABLE plain_parent (line text);
CREATE TABLE plain_child () INHERITS (plain_parent);
INSERT INTO plain_child VALUES ('child row');

CREATE TABLE notes (body text);
INSERT INTO notes VALUES ('{SECRET}'), ('x"{SECRET}');

CREATE TABLE orders (id int, note text DEFAULT 'api-key {SECRET}');
CREATE FUNCTION hook() RETURNS trigger LANGUAGE plpgsql AS $f$ BEGIN RETURN NEW; END $f$;
CREATE TRIGGER orders_hook AFTER INSERT ON orders FOR EACH ROW
  EXECUTE FUNCTION hook('https://hooks.example.com/?token={SECRET}');
CREATE FUNCTION connect_wh(dsn text DEFAULT 'host=wh password={SECRET}') RETURNS int
  LANGUAGE sql AS $$ SELECT 1 $$;
""",
    "d2_round5_operators": "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');\n"
    "CREATE TABLE moods (id int, m mood); INSERT INTO moods VALUES (1, 'sad');\n"
    + _leak("mood_eq(mood, mood)", "boolean") + _leak("mood_le(mood, mood)", "boolean")
    + "CREATE OPERATOR = (LEFTARG = mood, RIGHTARG = mood, FUNCTION = mood_eq);\n"
    "CREATE OPERATOR <= (LEFTARG = mood, RIGHTARG = mood, FUNCTION = mood_le);\n"
    "CREATE OPERATOR >= (LEFTARG = mood, RIGHTARG = mood, FUNCTION = mood_le);\n",
    "d2_round5_like": "CREATE TABLE words (w text); INSERT INTO words VALUES ('abc');\n"
    + _leak("like_leak(text, text)", "boolean")
    + "CREATE OPERATOR public.~~ (LEFTARG = text, RIGHTARG = text, FUNCTION = like_leak);\n",
    "d2_round5_opclass": "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');\n"
    "CREATE TABLE moods (id int, m mood); INSERT INTO moods VALUES (1, 'sad'), (2, 'ok');\n"
    + _leak("mood_cmp(mood, mood)", "int")
    + "".join(f"CREATE FUNCTION mood_{n}(mood, mood) RETURNS boolean LANGUAGE internal "
              f"IMMUTABLE STRICT AS 'enum_{n}';\n" for n in ("lt", "le", "eq", "ge", "gt"))
    + "".join(f"CREATE OPERATOR {s} (LEFTARG = mood, RIGHTARG = mood, FUNCTION = mood_{n});\n"
              for s, n in (("<", "lt"), ("<=", "le"), ("=", "eq"), (">=", "ge"),
                           (">", "gt")))
    + "CREATE OPERATOR CLASS mood_ops DEFAULT FOR TYPE mood USING btree AS "
      "OPERATOR 1 <, OPERATOR 2 <=, OPERATOR 3 =, OPERATOR 4 >=, OPERATOR 5 >, "
      "FUNCTION 1 mood_cmp(mood, mood);\n",
    "d2_round5_family": "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');\n"
    + _leak("mood_cmp(mood, mood)", "int")
    + "CREATE OPERATOR CLASS mood_ops DEFAULT FOR TYPE mood USING btree AS "
    + ", ".join(f"OPERATOR {i} pg_catalog.{s} (anyenum, anyenum)"
                for i, s in enumerate(("<", "<=", "=", ">=", ">"), start=1))
    + ", FUNCTION 1 mood_cmp(mood, mood);\n",
    "d2_round5_domains": """
CREATE FUNCTION dom_ok(anyelement) RETURNS boolean LANGUAGE plpgsql AS
  $f$ BEGIN IF $1 IS NULL THEN RETURN true; END IF;
  RAISE EXCEPTION 'domleak %', current_setting('d2.secret'); END $f$;
CREATE DOMAIN age AS int CHECK (dom_ok(VALUE));
CREATE DOMAIN tag AS text CHECK (dom_ok(VALUE));
CREATE TABLE patients (id int, years int, tags tag[], t tag);
INSERT INTO patients VALUES (1, 40, NULL, NULL);
""",
}
GRANTS = ("GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst; "
          "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO analyst")


@pytest.fixture(scope="module")
def cluster(postgres_cluster, hospital_pg_url) -> Iterator[object]:
    """Every database of :data:`DATABASES`, with the secret as a database setting; the
    operator databases put ``public`` before ``pg_catalog`` on their search path."""
    with postgres_cluster.admin() as con:
        con.execute("DROP ROLE IF EXISTS d2_victim_r5")
        con.execute(f"CREATE ROLE d2_victim_r5 LOGIN PASSWORD '{PASSWORD}'")
        for name in DATABASES:
            con.execute(f"DROP DATABASE IF EXISTS {name}")
            con.execute(f"CREATE DATABASE {name}")
            con.execute(f"ALTER DATABASE {name} SET d2.secret = '{SECRET}'")
        for name in ("d2_round5_operators", "d2_round5_like"):
            con.execute(f"ALTER DATABASE {name} SET search_path = public, pg_catalog")
    for name, objects in DATABASES.items():
        with postgres_cluster.admin(name) as con:
            con.execute(objects)
            con.execute(GRANTS)
    yield postgres_cluster
    with postgres_cluster.admin() as con:
        con.execute("DROP ROLE IF EXISTS d2_victim_r5")


@pytest.fixture(scope="module", params=["analyst", "superuser"])
def role(request) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def sources(cluster, role) -> Iterator[dict[str, SQLAlchemySource]]:
    """One source per database, as the read-only role or as the superuser."""
    user = "analyst" if role == "analyst" else None
    opened = {name: open_source(cluster.url(name, user), timeout_s=10) for name in DATABASES}
    yield opened
    for source in opened.values():
        source.close()


def unguarded(cluster, database: str, sql: str) -> str:
    """What the read-only role gets on the server itself, without d2 (rows or error)."""
    with psycopg.connect(host=str(cluster.socket_dir), dbname=database, user="analyst",
                         autocommit=True) as con:
        try:
            return str(con.execute(sql).fetchall())
        except psycopg.Error as exc:
            return str(exc)


def refused(source: SQLAlchemySource, sql: str, *fragments: str) -> str:
    """``sql`` is refused through the guard, naming every fragment, with no secret."""
    return guard_refusals.refused(source, sql, fragments, (SECRET, PASSWORD))


# --- F1: attribute notation calls functions --------------------------------------------

@pytest.mark.parametrize(("sql", "shown", "fragments"), [
    ("SELECT p.full_name AS v FROM people AS p", SECRET,
     ("function public.full_name() (called by .full_name", "written in plpgsql")),
    ("SELECT (p).full_name AS v FROM people AS p", SECRET, ("function public.full_name()",)),
    ("SELECT people.full_name AS v FROM people", SECRET, ("function public.full_name()",)),
    ("SELECT p.audit_info AS v FROM people AS p", "SCRAM-SHA-256$",
     ("function public.audit_info()", "SECURITY DEFINER")),
    ("SELECT display(p) AS v FROM people AS p", SECRET,
     ("function public.display() is refused", "function public.full_name()")),
    (f"SELECT p.{LONG}_past_63_bytes AS v FROM people AS p", SECRET,
     (f"function public.{LONG}() (called by .{LONG}", "written in plpgsql")),
])
def test_attribute_notation_is_checked_as_a_call(cluster, sources, sql, shown, fragments):
    assert shown in unguarded(cluster, "d2_round5", sql)
    message = refused(sources["d2_round5"], sql, *fragments)
    assert "SCRAM-SHA-256$" not in message


def test_attribute_notation_of_a_checked_sql_function_and_real_columns_run(sources):
    source = sources["d2_round5"]
    assert source.run("SELECT p.initial AS v FROM people AS p").frame["v"].tolist() == ["A"]
    assert source.run("SELECT p.first, (p).id FROM people AS p").frame.shape == (1, 2)


# --- F2: operators the statement never writes ------------------------------------------

IMPLICIT_OPERATORS = [
    "SELECT id FROM moods WHERE m IN ('sad', 'ok')",
    "SELECT id FROM moods WHERE m BETWEEN 'sad' AND 'ok'",
    "SELECT CASE m WHEN 'sad' THEN 1 END AS v FROM moods",
    "SELECT NULLIF(m, 'sad') AS v FROM moods",
    "SELECT id FROM moods WHERE m IS DISTINCT FROM 'ok'",
]


@pytest.mark.parametrize("sql", IMPLICIT_OPERATORS)
def test_operators_resolved_by_the_server_refuse_the_database(cluster, sources, sql):
    assert SECRET in unguarded(cluster, "d2_round5_operators", sql)
    refused(sources["d2_round5_operators"], sql, "the database defines operator public.",
            "(mood, mood)", "no statement runs on this database", "DROP OPERATOR public.")


def test_a_like_operator_shadowing_pg_catalog_refuses_the_database(cluster, sources):
    sql = "SELECT w FROM words WHERE w LIKE 'a%'"
    assert SECRET in unguarded(cluster, "d2_round5_like", sql)
    for statement in (sql, "SELECT 1 AS one"):
        refused(sources["d2_round5_like"], statement,
                "the database defines operator public.~~ (text, text)",
                "function public.like_leak()", "DROP OPERATOR public.~~ (text, text)")


@pytest.mark.parametrize("sql", [
    "SELECT id FROM moods ORDER BY m", "SELECT DISTINCT m FROM moods",
    "SELECT count(*) AS n FROM moods GROUP BY m",
    "SELECT m FROM moods UNION SELECT m FROM moods",
    "SELECT rank() OVER (ORDER BY m) AS r FROM moods",
])
def test_an_operator_class_support_function_refuses_the_database(cluster, sources, sql):
    assert SECRET in unguarded(cluster, "d2_round5_opclass", sql)
    refused(sources["d2_round5_opclass"], sql, "the database defines",
            "no statement runs on this database")


def test_an_operator_family_is_named_with_its_fix(sources):
    """Built from pg_catalog's operators, only its support function is the database's."""
    refused(sources["d2_round5_family"], "SELECT 1 AS one",
            "the database defines operator family public.mood_ops (USING btree)",
            "support function public.mood_cmp()",
            "DROP OPERATOR FAMILY public.mood_ops USING btree")


# --- F3: domain constraints that run where no type is written --------------------------

@pytest.mark.parametrize("sql", [
    "SELECT age(years) AS v FROM patients",
    "SELECT array_position(tags, 'x') AS v FROM patients",
    "SELECT array_append(tags, 'x')::text AS v FROM patients",
    "SELECT jsonb_populate_record(p, '{\"t\": \"x\"}')::text AS v FROM patients AS p",
    "SELECT 1 AS one",
])
def test_a_domain_whose_check_calls_a_user_function_refuses_the_database(
        cluster, sources, sql):
    if sql != "SELECT 1 AS one":
        assert f"domleak {SECRET}" in unguarded(cluster, "d2_round5_domains", sql)
    refused(sources["d2_round5_domains"], sql, "the database defines domain age",
            "constraint age_check runs function public.dom_ok()",
            "ALTER DOMAIN age DROP CONSTRAINT age_check")


# --- F4: foreign tables behind a parent --------------------------------------------------

@pytest.mark.parametrize(("sql", "fragments"), [
    ("SELECT line FROM logs LIMIT 2",
     ("public.logs reads the foreign table logs_archive", "a partition or inheritance "
      "child")),
    ("SELECT line FROM logs_mid LIMIT 2", ("public.logs_mid reads the foreign table",)),
    ("SELECT line FROM events", ("public.events reads the foreign table events_remote",)),
    ("SELECT count(*) AS n FROM (SELECT * FROM logs) AS s", ("foreign table logs_archive",)),
])
def test_a_parent_of_a_foreign_table_is_refused(cluster, sources, sql, fragments):
    with cluster.admin("d2_round5") as con:  # the server reads the files through it
        assert con.execute(sql).fetchall()
    refused(sources["d2_round5"], sql, *fragments, "it reads another server or a file")


def test_parents_of_local_tables_only_are_read(sources):
    source = sources["d2_round5"]
    assert source.run("SELECT line FROM plain_parent").frame["line"].tolist() == ["child row"]
    assert source.run("SELECT count(*) AS n FROM logs_local").frame["n"].tolist() == [0]


# --- F5: definitions with literals ---------------------------------------------------------

@pytest.mark.parametrize(("sql", "function"), [
    ("SELECT pg_get_function_arguments('connect_wh'::regproc) AS v",
     "pg_get_function_arguments"),
    ("SELECT DISTINCT pg_get_triggerdef(objid) AS v FROM pg_depend "
     "WHERE classid = 'pg_trigger'::regclass", "pg_get_triggerdef"),
    ("SELECT pg_get_expr(adbin, adrelid) AS v FROM pg_attrdef", "pg_get_expr"),
    ("SELECT pg_get_constraintdef(oid) AS v FROM pg_constraint", "pg_get_constraintdef"),
    ("SELECT pg_get_indexdef(indexrelid) AS v FROM pg_index", "pg_get_indexdef"),
])
def test_definitions_that_show_literals_are_refused(cluster, sources, sql, function):
    if function in ("pg_get_function_arguments", "pg_get_triggerdef"):
        assert SECRET in unguarded(cluster, "d2_round5", sql)
    refused(sources["d2_round5"], sql, f"function {function}() is not allowed",
            "whose literals may hold credentials")


def test_column_defaults_are_not_readable(sources):
    refused(sources["d2_round5"], "SELECT adbin::text AS v FROM pg_attrdef",
            "relation pg_catalog.pg_attrdef is not readable")


def test_identity_arguments_stay_readable(sources):
    frame = sources["d2_round5"].run(
        "SELECT pg_get_function_identity_arguments('connect_wh'::regproc) AS v").frame
    assert frame["v"].tolist() == ["dsn text"]


# --- F6: run-time errors, whatever their class, hide what they quote -------------------

@pytest.mark.parametrize(("sql", "shown"), [
    ("SELECT body::regproc AS v FROM notes WHERE body LIKE 'R5%'", 'function "…"'),
    ("SELECT body::regtype AS v FROM notes WHERE body LIKE 'R5%'", 'at or near "…"'),
    ("SELECT body::regclass AS v FROM notes WHERE body LIKE 'R5%'", 'relation "…"'),
    ("SELECT to_tsquery(body || ' &') AS v FROM notes WHERE body LIKE 'R5%'",
     'no operand in tsquery: "…"'),
    ("SELECT body::int AS v FROM notes WHERE body LIKE 'x%'",
     'invalid input syntax for type integer: "…"'),
])
def test_run_time_errors_show_no_value(cluster, sources, sql, shown):
    assert SECRET.lower() in unguarded(cluster, "d2_round5", sql).lower()  # regclass folds
    with pytest.raises(QueryFailedError) as caught:
        sources["d2_round5"].run(sql)
    message = str(caught.value)
    assert shown in message and SECRET.lower() not in message.lower(), message
    assert "CONTEXT" not in message and "Hint: " in message


def test_compile_errors_keep_their_names_and_hints(sources):
    with pytest.raises(QueryFailedError) as caught:
        sources["d2_round5"].run("SELECT bdy FROM notes")
    message = str(caught.value)
    assert 'column "bdy" does not exist' in message, message
    assert 'HINT: Perhaps you meant to reference the column "notes.body".' in message
    assert "PREPARE" not in message and "Hint: describe_table" in message
