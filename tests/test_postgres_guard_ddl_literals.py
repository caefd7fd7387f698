"""The PostgreSQL guard: literals written in DDL, read through allowed system relations.

The guard refuses the functions that show definitions (``pg_get_expr``,
``pg_get_constraintdef`` ...) and the relation ``pg_attrdef``, because a literal written
in DDL can be a credential (``ALTER TABLE t ALTER COLUMN token SET DEFAULT 'sk-live-…'``).
The same literals were readable through columns of relations on the reviewed list —
``information_schema.columns.column_default``, ``pg_views.definition``,
``pg_type.typdefault``, the expression trees in ``pg_constraint.conbin``,
``pg_index.indpred`` ... — and ``pg_get_viewdef`` was allowed.

Each leak is first shown on the server itself (without d2), then refused through the
guard, as the read-only role and as a superuser, however the column is reached: by name,
``*``, ``t.*``, a whole-row reference, attribute notation, a subquery, CTE, view or SQL
function, a NATURAL or USING join, a column list after the alias, under any spelling of
the relation's name. The other columns of those relations stay readable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import guard_refusals
import psycopg
import pytest

from d2_notebook.data import open_source
from d2_notebook.data.postgres_catalog import SYSTEM_RELATIONS
from d2_notebook.data.postgres_columns import REFUSED_COLUMNS
from d2_notebook.data.sources.sqlalchemy_source import SQLAlchemySource

SECRET = "DDLSECRET7731"
DATABASE = "d2_ddl_literals"
PATH_DATABASE = "d2_ddl_search_path"  # search_path = information_schema, public

OBJECTS = f"""
CREATE TABLE accounts (id int, token text DEFAULT 'sk-live-{SECRET}-default'
    CHECK (token <> '{SECRET}-check'),
  doubled text GENERATED ALWAYS AS (token || '{SECRET}-generated') STORED);
INSERT INTO accounts (id) VALUES (1);
ALTER TABLE accounts ADD COLUMN api_key text DEFAULT '{SECRET}-missing';
CREATE DOMAIN apikey AS text DEFAULT '{SECRET}-domain' CHECK (VALUE <> '{SECRET}-dcheck');
CREATE VIEW active AS SELECT id FROM accounts WHERE token = '{SECRET}-view';
CREATE MATERIALIZED VIEW active_m AS SELECT id FROM accounts WHERE token = '{SECRET}-mv';
CREATE INDEX accounts_partial ON accounts (id) WHERE token <> '{SECRET}-indpred';
CREATE INDEX accounts_expression ON accounts ((token || '{SECRET}-indexprs'));
CREATE TABLE parts (k text) PARTITION BY LIST ((k || '{SECRET}-partexprs'));
CREATE TABLE parts_a PARTITION OF parts FOR VALUES IN ('{SECRET}-bound');
CREATE AGGREGATE concat_all(text) (SFUNC = textcat, STYPE = text,
  INITCOND = '{SECRET}-init', MSFUNC = textcat, MINVFUNC = textcat, MSTYPE = text,
  MINITCOND = '{SECRET}-minit');
CREATE EXTENSION postgres_fdw;
CREATE SERVER warehouse FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host 'warehouse');
CREATE FOREIGN TABLE remote_t (c text OPTIONS (column_name '{SECRET}-fdw')) SERVER warehouse;

CREATE TABLE guesses (column_default text);
INSERT INTO guesses VALUES ('''sk-live-{SECRET}-default''::text');
CREATE TABLE notes (id int, definition text);
INSERT INTO notes VALUES (1, 'a note');
CREATE VIEW column_defaults AS
  SELECT table_name, column_default FROM information_schema.columns;
CREATE VIEW type_rows AS SELECT t::text AS r FROM pg_type AS t;
CREATE VIEW type_names AS SELECT typname FROM pg_catalog.pg_type;
CREATE FUNCTION type_default(name) RETURNS text LANGUAGE sql
  AS $$ SELECT typdefault FROM pg_type WHERE typname = $1 $$;
CREATE TABLE watched (x text);
INSERT INTO watched VALUES ('x');
ALTER TABLE watched ENABLE ROW LEVEL SECURITY;
CREATE POLICY by_default ON watched FOR SELECT USING (EXISTS (SELECT 1
  FROM information_schema.columns c WHERE c.column_default = x));
"""
PATH_OBJECTS = f"""
CREATE TABLE public.accounts (id int, token text DEFAULT 'sk-live-{SECRET}-default');
"""
SHADOW_OBJECTS = """
CREATE TABLE public.columns (column_default text, table_name text);
INSERT INTO public.columns VALUES ('mine', 'accounts');
"""
GRANTS = ("GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst; "
          "GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public TO analyst")


@pytest.fixture(scope="module")
def cluster(postgres_cluster, hospital_pg_url) -> Iterator[object]:
    """The planted database, and one whose search path puts ``information_schema``
    first (a table of its own named ``columns`` sits in ``public``)."""
    with postgres_cluster.admin() as con:
        for name in (DATABASE, PATH_DATABASE):
            con.execute(f"DROP DATABASE IF EXISTS {name}")
            con.execute(f"CREATE DATABASE {name}")
        con.execute(f"ALTER DATABASE {PATH_DATABASE} SET search_path = "
                    "information_schema, public")
    for name, objects in ((DATABASE, OBJECTS + SHADOW_OBJECTS),
                          (PATH_DATABASE, PATH_OBJECTS + SHADOW_OBJECTS)):
        with postgres_cluster.admin(name) as con:
            con.execute(objects)
            con.execute(GRANTS)
    return postgres_cluster


@pytest.fixture(scope="module", params=["analyst", "superuser"])
def role(request) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def sources(cluster, role) -> Iterator[dict[str, SQLAlchemySource]]:
    user = "analyst" if role == "analyst" else None
    opened = {name: open_source(cluster.url(name, user), timeout_s=10)
              for name in (DATABASE, PATH_DATABASE)}
    yield opened
    for source in opened.values():
        source.close()


_CONSTANT = re.compile(r":constvalue \d+ \[ ([-\d ]+) \]")


def shown(text: str) -> str:
    """``text`` with every constant of an expression tree (``pg_node_tree``: a literal's
    bytes as numbers) decoded, so a literal in a tree is as visible as one in SQL."""
    decoded = [bytes(int(b) & 0xFF for b in m.group(1).split()).decode("latin-1")
               for m in _CONSTANT.finditer(text)]
    return " ".join([text, *decoded])


def on_server(cluster, sql: str, *, owner: bool = False, database: str = DATABASE) -> str:
    """What the read-only role (or the objects' owner, a superuser) gets on the server
    itself, without d2: rows, expression trees decoded, or the error."""
    connect = cluster.admin(database) if owner else psycopg.connect(
        host=str(cluster.socket_dir), dbname=database, user="analyst", autocommit=True)
    with connect as con:
        try:
            return shown(str(con.execute(sql).fetchall()))
        except psycopg.Error as exc:
            return str(exc)


def refused(source: SQLAlchemySource, sql: str, *fragments: str) -> str:
    """``sql`` is refused through the guard, naming every fragment, with no secret."""
    return guard_refusals.refused(source, sql, fragments, (SECRET,))


# --- each literal-bearing column, by name ------------------------------------------------

# (relation, column, a query reading it, whether only the objects' owner sees it)
NAMED = [
    ("information_schema.columns", "column_default",
     "SELECT column_default FROM information_schema.columns WHERE table_name = 'accounts'",
     False),
    ("information_schema.columns", "generation_expression",
     "SELECT generation_expression FROM information_schema.columns", False),
    ("information_schema.domains", "domain_default",
     "SELECT domain_default FROM information_schema.domains", False),
    ("information_schema.check_constraints", "check_clause",
     "SELECT check_clause FROM information_schema.check_constraints", True),
    ("information_schema.views", "view_definition",
     "SELECT view_definition FROM information_schema.views", True),
    ("pg_catalog.pg_views", "definition", "SELECT definition FROM pg_views", False),
    ("pg_catalog.pg_matviews", "definition", "SELECT definition FROM pg_matviews", False),
    ("pg_catalog.pg_indexes", "indexdef", "SELECT indexdef FROM pg_indexes", False),
    ("pg_catalog.pg_type", "typdefault", "SELECT typdefault FROM pg_type", False),
    ("pg_catalog.pg_type", "typdefaultbin", "SELECT typdefaultbin FROM pg_type", False),
    ("pg_catalog.pg_attribute", "attmissingval",
     "SELECT attmissingval::text FROM pg_attribute WHERE atthasmissing", False),
    ("pg_catalog.pg_attribute", "attfdwoptions",
     "SELECT attfdwoptions FROM pg_attribute WHERE attfdwoptions IS NOT NULL", False),
    ("pg_catalog.pg_class", "relpartbound",
     "SELECT relpartbound FROM pg_class WHERE relispartition", False),
    ("pg_catalog.pg_constraint", "conbin", "SELECT conbin FROM pg_constraint", False),
    ("pg_catalog.pg_index", "indexprs", "SELECT indexprs FROM pg_index", False),
    ("pg_catalog.pg_index", "indpred", "SELECT indpred FROM pg_index", False),
    ("pg_catalog.pg_partitioned_table", "partexprs",
     "SELECT partexprs FROM pg_partitioned_table", False),
    ("pg_catalog.pg_aggregate", "agginitval", "SELECT agginitval FROM pg_aggregate", False),
    ("pg_catalog.pg_aggregate", "aggminitval", "SELECT aggminitval FROM pg_aggregate",
     False),
]


@pytest.mark.parametrize(("relation", "column", "sql", "owner"), NAMED,
                         ids=[f"{r}.{c}" for r, c, _, _ in NAMED])
def test_a_literal_bearing_column_is_refused_by_name(cluster, sources, relation, column,
                                                     sql, owner):
    assert SECRET in on_server(cluster, sql, owner=owner)
    refused(sources[DATABASE], sql, f"column {relation}.{column} is not readable",
            "read the other columns")


def test_every_refused_column_is_planted_here():
    planted = {(r, c) for r, c, _, _ in NAMED}
    listed = {(r, c) for r, columns in REFUSED_COLUMNS.items() for c in columns}
    # information_schema.element_types.domain_default is NULL on PostgreSQL 15: nothing
    # to plant, refused like domains.domain_default
    assert listed - planted == {("information_schema.element_types", "domain_default")}
    assert planted <= listed


def test_view_definitions_are_refused(cluster, sources):
    sql = "SELECT pg_get_viewdef('active'::regclass) AS v"
    assert SECRET in on_server(cluster, sql)
    refused(sources[DATABASE], sql, "function pg_get_viewdef() is not allowed",
            "whose literals may hold credentials")


# --- every way of reaching one --------------------------------------------------------

_C = "information_schema.columns"
_ACCOUNTS = "table_name = 'accounts'"
REACHED = [
    (f"SELECT * FROM {_C} WHERE {_ACCOUNTS}", ("`*` reads every column",)),
    (f"SELECT c.* FROM {_C} AS c WHERE c.{_ACCOUNTS}", ("c.* reads every column",)),
    (f"SELECT to_jsonb(c) AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}",
     ("c is the whole row of",)),
    (f"SELECT row_to_json(c) AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}",
     ("c is the whole row of",)),
    (f"SELECT c::text AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}", ("c is the whole row of",)),
    (f"SELECT c AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}", ("c is the whole row of",)),
    (f"SELECT columns AS v FROM {_C} WHERE {_ACCOUNTS}", ("columns is the whole row of",)),
    (f"SELECT jsonb_agg(c.*) AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}",
     ("c.* reads every column",)),
    (f"SELECT c.to_jsonb AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}",
     ("has no column to_jsonb", "to_jsonb(c)")),
    (f"SELECT (c).column_default AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}",
     ("column_default",)),
    (f"SELECT column_default(c) AS v FROM {_C} AS c WHERE c.{_ACCOUNTS}",
     ("c is the whole row of",)),  # field selection in functional notation
    (f"SELECT e.value AS v FROM {_C} AS c, LATERAL jsonb_each_text(to_jsonb(c)) AS e "
     f"WHERE c.{_ACCOUNTS}", ("c is the whole row of",)),
    (f"SELECT v FROM (SELECT column_default AS v FROM {_C} WHERE {_ACCOUNTS}) AS s",
     ("column_default",)),
    (f"WITH d AS (SELECT * FROM {_C} WHERE {_ACCOUNTS}) SELECT d::text AS v FROM d",
     ("`*` reads every column",)),
    (f"SELECT (SELECT c FROM {_C} AS c WHERE c.{_ACCOUNTS} "
     "AND c.column_name = 'token')::text AS v",
     ("c is the whole row of",)),
    (f"SELECT f AS v FROM {_C} AS c(a, b, d, e, g, f) WHERE d = 'accounts'",
     ("the column list after alias c", "by position")),
    (f"SELECT j AS v FROM ({_C} AS c CROSS JOIN (SELECT 1 AS one) AS o) AS j "
     f"WHERE j.{_ACCOUNTS}", ("j is the whole row of",)),
    # the 6th column, column_default, renamed to a readable column's name (and the rest
    # renamed, the real udt_name too)
    (f"SELECT j.udt_name AS v FROM ((SELECT 1 AS one) AS o CROSS JOIN {_C} AS c) AS "
     "j(one, table_catalog, table_schema, table_name, column_name, ordinal_position, "
     f"udt_name, {', '.join(f'x{i}' for i in range(38))}) WHERE j.{_ACCOUNTS}",
     ("the column list after alias j", "by position")),
    # PostgreSQL keeps 63 bytes of a name: these two aliases are one
    (f"SELECT to_jsonb({'a' * 63}y) AS v FROM {_C} AS {'a' * 63}x "
     f"WHERE {'a' * 63}z.{_ACCOUNTS}", ("is the whole row of",)),
    (f"SELECT {'a' * 63}y.to_jsonb AS v FROM pg_type AS {'a' * 63}x "
     "WHERE typname = 'apikey'", ("has no column to_jsonb",)),
    (f"SELECT table_name FROM {_C} WHERE column_default LIKE '%{SECRET}%'",
     ("column_default",)),
    (f"SELECT table_name FROM {_C} ORDER BY column_default", ("column_default",)),
    (f"SELECT table_name FROM {_C} JOIN guesses USING (column_default)",
     ("column_default",)),
    ('SELECT column_default FROM "information_schema"."columns"', ("column_default",)),
    ("SELECT COLUMN_DEFAULT FROM INFORMATION_SCHEMA.COLUMNS", ("column_default",)),
    (f'SELECT "column_default" FROM {_C}', ("column_default",)),
    (f"SELECT {_C}.column_default FROM {_C}", ("column_default",)),
    ("SELECT pg_catalog.pg_type.typdefault FROM pg_catalog.pg_type", ("typdefault",)),
    ("TABLE pg_catalog.pg_type", ("`*` reads every column",)),
    ("SELECT pg_type::text AS v FROM pg_type WHERE typname = 'apikey'",
     ("pg_type is the whole row of pg_catalog.pg_type",)),
    ("SELECT t.row_to_json AS v FROM pg_type AS t WHERE t.typname = 'apikey'",
     ("has no column row_to_json",)),
    ("SELECT * FROM column_defaults", ("view public.column_defaults is refused",
                                       "column_default")),
    ("SELECT r FROM type_rows", ("view public.type_rows is refused",)),
    ("SELECT type_default('apikey') AS v", ("function public.type_default() is refused",
                                           "typdefault")),
]


@pytest.mark.parametrize(("sql", "fragments"), REACHED)
def test_every_way_of_reaching_a_refused_column_is_refused(cluster, sources, sql,
                                                           fragments):
    if "guesses USING" in sql or "LIKE" in sql:  # an oracle: the row shows it matched
        assert "accounts" in on_server(cluster, sql, owner=True)
    elif "ORDER BY" not in sql:
        assert SECRET in on_server(cluster, sql, owner=True)
    refused(sources[DATABASE], sql, *fragments)


def test_a_natural_join_is_refused(cluster, sources):
    """``guesses`` has a column named ``column_default``: the join compares it, unnamed."""
    sql = f"SELECT table_name FROM {_C} NATURAL JOIN guesses"
    assert "accounts" in on_server(cluster, sql, owner=True)
    refused(sources[DATABASE], sql, "a NATURAL join compares every column",
            "information_schema.columns.column_default")


def test_search_path_reaches_the_same_relation(cluster, sources):
    """With ``information_schema`` first on the search path, ``columns`` is its view."""
    source = sources[PATH_DATABASE]
    for sql in ("SELECT column_default FROM columns", "SELECT * FROM columns",
                "SELECT c FROM columns AS c"):
        assert SECRET in on_server(cluster, sql, owner=True, database=PATH_DATABASE)
        refused(source, sql, "information_schema.columns")
    frame = source.run("SELECT column_name FROM columns WHERE table_name = 'accounts' "
                       "ORDER BY ordinal_position").frame
    assert frame["column_name"].tolist() == ["id", "token"]
    own = source.run("SELECT column_default FROM public.columns").frame
    assert own["column_default"].tolist() == ["mine"]


def test_a_policy_reading_a_partly_refused_relation_is_refused(sources):
    refused(sources[DATABASE], "SELECT x FROM watched",
            "table public.watched has row-level security, and its policy by_default "
            "reads information_schema.columns")


# --- what stays readable --------------------------------------------------------------

READABLE = [
    (f"SELECT column_name, data_type FROM {_C} WHERE table_name = 'accounts' "
     "ORDER BY ordinal_position", [("id", "integer"), ("token", "text"),
                                   ("doubled", "text"), ("api_key", "text")]),
    (f"SELECT c.column_name, c.is_nullable FROM {_C} AS c WHERE c.{_ACCOUNTS} "
     "AND c.ordinal_position = 1", [("id", "YES")]),
    (f"SELECT {_C}.column_name FROM {_C} WHERE {_C}.{_ACCOUNTS} "
     "AND ordinal_position = 1", [("id",)]),
    (f'SELECT "columns".column_name FROM information_schema."columns" '
     f"WHERE {_ACCOUNTS} AND ordinal_position = 2", [("token",)]),
    (f"SELECT count(*) AS n FROM {_C} WHERE {_ACCOUNTS}", [(4,)]),
    (f"SELECT count(*) AS columns FROM {_C} WHERE {_ACCOUNTS}", [(4,)]),
    (f"SELECT j.column_name FROM ((SELECT 1 AS one) AS o CROSS JOIN {_C} AS c) AS j "
     f"WHERE j.{_ACCOUNTS} AND j.ordinal_position = 1", [("id",)]),
    (f"SELECT {'a' * 63}y.typname AS v FROM pg_type AS {'a' * 63}x "
     "WHERE typname = 'apikey'", [("apikey",)]),
    ("SELECT t.typname, t.xmin IS NOT NULL AS x FROM pg_type AS t "
     "WHERE t.typname = 'apikey'", [("apikey", True)]),
    (f"SELECT * FROM (SELECT table_name, column_name FROM {_C}) AS s "
     "WHERE table_name = 'accounts' AND column_name = 'id'", [("accounts", "id")]),
    ("SELECT * FROM information_schema.tables WHERE table_name = 'accounts'", None),
    ("SELECT t.typname FROM pg_catalog.pg_type AS t WHERE t.typname = 'apikey'",
     [("apikey",)]),
    ("SELECT pg_catalog.pg_type.typname FROM pg_catalog.pg_type "
     "WHERE typname = 'apikey'", [("apikey",)]),
    ("SELECT a.attname FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid "
     "WHERE c.relname = 'accounts' AND a.attnum = 1", [("id",)]),
    ("SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
     [("active",), ("column_defaults",), ("type_names",), ("type_rows",)]),
    ("SELECT indexname FROM pg_indexes WHERE tablename = 'accounts' ORDER BY 1",
     [("accounts_expression",), ("accounts_partial",)]),
    ("SELECT conname FROM pg_constraint WHERE conname = 'accounts_token_check'",
     [("accounts_token_check",)]),
    ("SELECT typname FROM type_names WHERE typname = 'apikey'", [("apikey",)]),
    ("SELECT column_default FROM public.columns", [("mine",)]),
    ("SELECT n.definition FROM notes AS n", [("a note",)]),
]


@pytest.mark.parametrize(("sql", "rows"), READABLE)
def test_the_other_columns_stay_readable(sources, sql, rows):
    frame = sources[DATABASE].run(sql).frame
    assert SECRET not in shown(frame.to_string())
    if rows is not None:
        assert [tuple(r) for r in frame.itertuples(index=False)] == rows


def _pattern() -> str:
    """The secret as text or as the bytes an expression tree prints for it."""
    return f"{SECRET}|{' '.join(str(b) for b in SECRET.encode())}"


def _columns(cluster, relation: str) -> list[str]:
    rows = on_server(cluster, "SELECT attname FROM pg_attribute WHERE attrelid = "
                     f"'{relation}'::regclass AND attnum > 0 AND NOT attisdropped",
                     owner=True)
    return re.findall(r"\('(\w+)',\)", rows)


def test_no_readable_column_of_any_system_relation_shows_a_literal(cluster, sources):
    """Every allowed system relation, all its readable columns: no planted literal,
    read through the guard; the refused ones hold them (seen by the owner)."""
    source, pattern = sources[DATABASE], _pattern()
    holding = set()
    for relation in sorted(SYSTEM_RELATIONS):
        refused_here = REFUSED_COLUMNS.get(relation, {})
        columns = _columns(cluster, relation)
        readable = [c for c in columns if c not in refused_here]
        text = ", ".join(f"{c}::text" for c in readable)
        sql = f"SELECT count(*) AS n FROM {relation} WHERE concat_ws(' ', {text}) ~ '{pattern}'"
        assert source.run(sql).frame["n"].tolist() == [0], relation
        for column in refused_here:
            found = on_server(cluster, f"SELECT count(*) FROM {relation} "
                                       f"WHERE {column}::text ~ '{pattern}'", owner=True)
            if found != "[(0,)]":
                holding.add((relation, column))
    assert holding == {(r, c) for r, c, _, _ in NAMED}
