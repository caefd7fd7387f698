"""Join keys: declared constraints first, else inferred; the graph in the schema summary."""

from __future__ import annotations

import duckdb
import pytest
from analysis_data import planted

from d2_notebook.data import GuardedSQL
from d2_notebook.data.analysis import compare_within, segment_scan
from d2_notebook.data.dimensions import read_catalog
from d2_notebook.data.key_names import reference_stem
from d2_notebook.data.keys import KeyOrigin
from d2_notebook.datasets import hospital


def _edges(sql: GuardedSQL) -> dict[tuple[str, str], tuple[KeyOrigin, bool]]:
    graph = read_catalog(sql).graph
    return {(e.child, e.parent): (e.origin, e.one_to_one) for e in graph.edges}


def test_declared_foreign_keys_are_used_as_declared() -> None:
    sql = GuardedSQL(hospital.create(patients=300))
    edges = _edges(sql)
    assert edges == {
        ("admissions", "patients"): (KeyOrigin.DECLARED, False),
        ("comorbidities", "patients"): (KeyOrigin.DECLARED, False),
        ("outcomes", "admissions"): (KeyOrigin.DECLARED, True),
        ("treatments", "admissions"): (KeyOrigin.DECLARED, False),
    }  # nothing inferred between tables that declare their keys
    summary = sql.schema_summary()
    assert "Join keys (child -> parent" in summary
    assert "comorbidities.patient_id -> patients.patient_id (N:1, declared)" in summary
    assert "outcomes.admission_id -> admissions.admission_id (1:1, declared)" in summary


def test_keys_are_inferred_from_shared_names_and_contained_values() -> None:
    edges = _edges(GuardedSQL(planted(declared=False)))
    assert edges == {("orders", "customers"): (KeyOrigin.INFERRED, False),
                     ("tags", "customers"): (KeyOrigin.INFERRED, False)}


def test_no_edge_when_values_are_not_contained_or_not_unique() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE a AS SELECT i AS k, i % 4 AS status FROM range(10) t(i)")
    con.execute("CREATE TABLE b AS SELECT i + 5 AS k, i % 4 AS status FROM range(10) t(i)")
    con.execute("CREATE TABLE c AS SELECT i % 3 AS k FROM range(10) t(i)")
    sql = GuardedSQL(con)
    # a.k and b.k are unique but neither holds the other's values; c.k repeats, so it is
    # never a parent; status repeats in both; only c -> a holds
    assert _edges(sql) == {("c", "a"): (KeyOrigin.INFERRED, False)}
    assert "Join keys" in sql.schema_summary()


def test_schema_summary_without_keys_is_unchanged() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE lone AS SELECT 1 AS x")
    summary = GuardedSQL(con).schema_summary()
    assert "Join keys" not in summary and summary.endswith("x INTEGER e.g. 1\n</data>")


@pytest.mark.parametrize("declared", [True, False])
def test_one_to_one_satellites_are_joined_as_attributes(declared: bool) -> None:
    con = duckdb.connect()
    key = " PRIMARY KEY" if declared else ""
    ref = " REFERENCES players (player_id)" if declared else ""
    con.execute(f"CREATE TABLE players (player_id INTEGER{key}, team VARCHAR)")
    con.execute(f"CREATE TABLE scores (player_id INTEGER{key}{ref}, score DOUBLE)")
    con.execute("INSERT INTO players SELECT i, CASE WHEN i % 2 = 0 THEN 'red' ELSE 'blue' END "
                "FROM range(200) t(i)")
    con.execute("INSERT INTO scores SELECT i, CASE WHEN i % 2 = 0 THEN 10 ELSE 0 END + i % 7 "
                "FROM range(200) t(i)")
    sql = GuardedSQL(con)
    edges = _edges(sql)
    assert list(edges.values()) == [(KeyOrigin.DECLARED if declared else KeyOrigin.INFERRED,
                                     True)]
    child = next(iter(edges))[0]
    source, other = ("scores s", "players") if child == "scores" else ("players s", "scores")
    metric = "avg(s.score)" if child == "scores" else "avg(s.player_id % 2)"
    result = segment_scan(sql, source=source, metric=metric)
    assert any(d.startswith(f"{other}.") for d in result.frame["dimension"])


def _id_tables(relationships: list[str] | None = None) -> GuardedSQL:
    """Five tables, each with its own ``id`` primary key and no reference between them:
    the smaller tables' ids are all contained in the larger ones'."""
    con = duckdb.connect()
    for name, rows, column in (("accounts", 400, "plan"), ("devices", 300, "os"),
                               ("prices", 50, "currency"), ("regions", 8, "zone"),
                               ("staff", 120, "team")):
        con.execute(f"CREATE TABLE {name} (id INTEGER PRIMARY KEY, {column} VARCHAR, "
                    "value DOUBLE)")
        con.execute(f"INSERT INTO {name} SELECT i, ['a', 'b', 'c'][1 + i % 3], i % 7 "
                    f"FROM range(1, {rows + 1}) t(i)")
    return GuardedSQL(con, relationships=relationships)


def test_tables_that_each_have_an_id_key_are_not_joined_by_it() -> None:
    sql = _id_tables()
    assert _edges(sql) == {}
    assert "Join keys" not in sql.schema_summary()
    graph = read_catalog(sql).graph
    assert graph.is_unique("prices", ("id",)) and graph.is_unique("accounts", ("id",))
    for table, result in (
        ("accounts", segment_scan(sql, source="accounts", metric="avg(value)")),
        ("accounts", compare_within(sql, source="accounts a", metric="avg(a.value)",
                                    exposure="a.plan", value="a")),
        ("staff", segment_scan(sql, source="staff s", metric="avg(s.value)")),
    ):
        named = {d.split(".")[0].removeprefix("has ") for d in result.frame["dimension"]
                 if d != "(overall)"}
        assert named <= {table}, result.summary
        for other in {"accounts", "devices", "prices", "regions", "staff"} - {table}:
            assert f"{other}." not in result.summary


def test_a_column_named_after_the_other_table_is_a_reference_even_when_unique() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE customers AS SELECT i AS customer_id, i % 3 AS band "
                "FROM range(100) t(i)")
    con.execute("CREATE TABLE customer_notes AS SELECT i AS customer_id, 'x' AS note "
                "FROM range(40) t(i)")
    assert _edges(GuardedSQL(con)) == {("customer_notes", "customers"): (KeyOrigin.INFERRED,
                                                                         True)}
    summary = GuardedSQL(con).schema_summary()
    assert "(1:1, inferred)" in summary and "relationships=" in summary


def test_relationships_declare_and_veto_edges() -> None:
    declared = _id_tables(["staff.id -> regions.id"])
    assert _edges(declared) == {("staff", "regions"): (KeyOrigin.USER, True)}
    assert "staff.id -> regions.id (1:1, declared by the user)" in declared.schema_summary()
    vetoed = GuardedSQL(planted(declared=False), relationships=["tags.customer_id -/> "
                                                                "customers.customer_id"])
    assert _edges(vetoed) == {("orders", "customers"): (KeyOrigin.INFERRED, False)}
    with pytest.raises(ValueError, match=r"is not understood: write 'child_table\.column -> "):
        GuardedSQL(duckdb.connect(), relationships=["orders customers"])
    with pytest.raises(ValueError, match="names no table 'nowhere'"):
        read_catalog(_id_tables(["staff.id -> nowhere.id"]))


def test_relationships_reach_the_tools_through_the_source() -> None:
    """A GuardedSQL with relationships, handed to investigate (as a DuckDB source), keeps
    them: the catalog the tools and the coverage map read has the user's edge."""
    from d2_notebook.data.sources import open_source

    source = open_source(_id_tables(["staff.id -> regions.id"]))
    assert _edges(source) == {("staff", "regions"): (KeyOrigin.USER, True)}
    result = segment_scan(source, source="staff s", metric="avg(s.value)")
    assert "regions.zone" in set(result.frame["dimension"])


def test_a_column_named_after_a_table_refers_to_its_id() -> None:
    """``orders.customer_id -> customers.id``, the usual naming, is inferred like a shared
    name (it used to need a declaration: a real-model team saw SQL City's person_id
    columns as unreachable), and only where the values are contained and ``id`` unique."""
    con = duckdb.connect()
    con.execute("CREATE TABLE customers AS SELECT i AS id, ['N', 'S'][1 + i % 2] AS region "
                "FROM range(100) t(i)")
    con.execute("CREATE TABLE orders AS SELECT i AS id, i % 100 AS customer_id, "
                "i % 7 AS amount FROM range(1000) t(i)")
    con.execute("CREATE TABLE drivers_license AS SELECT i AS id, 'red' AS hair_color "
                "FROM range(50) t(i)")
    con.execute("CREATE TABLE person AS SELECT i AS id, i AS license_id FROM range(50) t(i)")
    con.execute("CREATE TABLE refunds AS SELECT i AS id, i + 95 AS customer_id "
                "FROM range(10) t(i)")  # ids 95..104: not all among the customers
    con.execute("CREATE TABLE visits AS SELECT i AS id, i % 5 AS person_id, "
                "'x' AS customer_id FROM range(20) t(i)")  # a text customer_id: no match
    sql = GuardedSQL(con)
    assert _edges(sql) == {("orders", "customers"): (KeyOrigin.INFERRED, False),
                           ("person", "drivers_license"): (KeyOrigin.INFERRED, True),
                           ("visits", "person"): (KeyOrigin.INFERRED, False)}
    assert "orders.customer_id -> customers.id (N:1, inferred)" in sql.schema_summary()
    scanned = segment_scan(sql, source="orders o", metric="avg(o.amount)")
    assert "customers.region" in set(scanned.frame["dimension"])


def test_a_column_naming_two_tables_equally_refers_to_neither() -> None:
    con = duckdb.connect()
    for name in ("order_status", "ticket_status"):
        con.execute(f"CREATE TABLE {name} AS SELECT i AS id, 'x' AS label FROM range(5) t(i)")
    con.execute("CREATE TABLE tickets AS SELECT i AS id, i % 5 AS status_id FROM range(50) t(i)")
    assert _edges(GuardedSQL(con)) == {}
    con.execute("CREATE TABLE status AS SELECT i AS id, 'y' AS label FROM range(5) t(i)")
    assert _edges(GuardedSQL(con)) == {("tickets", "status"): (KeyOrigin.INFERRED, False)}


def test_references_by_name_stay_clear_of_declared_keys_link_tables_and_words() -> None:
    """Each case a reviewer showed giving a wrong edge gives none."""
    con = duckdb.connect()
    con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, region VARCHAR)")
    con.execute("INSERT INTO customers SELECT i, 'N' FROM range(100) t(i)")
    con.execute("CREATE TABLE orders (id INTEGER, customer_id INTEGER REFERENCES customers (id),"
                " paid INTEGER, item_id INTEGER)")
    con.execute("INSERT INTO orders SELECT i, i % 100, i % 3, i % 50 FROM range(500) t(i)")
    con.execute("CREATE TABLE vip_customer AS SELECT i AS id FROM range(100) t(i)")
    con.execute("CREATE TABLE pa AS SELECT i AS id FROM range(5) t(i)")  # 'paid' is no pa_id
    con.execute("CREATE TABLE order_items AS SELECT i AS id, i % 500 AS order_id "
                "FROM range(10000) t(i)")  # a link table: 'item_id' does not point at it
    for name in ("order_status", "ticket_status"):  # lookups sharing a status_id key
        con.execute(f"CREATE TABLE {name} AS SELECT i AS status_id FROM range(5) t(i)")
    edges = _edges(GuardedSQL(con))
    assert edges == {("orders", "customers"): (KeyOrigin.DECLARED, False),
                     ("order_items", "orders"): (KeyOrigin.INFERRED, False)}


def test_a_table_holding_the_referring_column_leaves_it_to_the_shared_name_rule() -> None:
    con = duckdb.connect()
    con.execute("CREATE TABLE customers AS SELECT i AS id, i AS customer_id FROM range(50) t(i)")
    con.execute("CREATE TABLE vip_customer AS SELECT i AS id FROM range(50) t(i)")
    con.execute("CREATE TABLE orders AS SELECT i AS id, i % 50 AS customer_id "
                "FROM range(200) t(i)")
    edges = _edges(GuardedSQL(con))
    assert ("orders", "vip_customer") not in edges
    assert ("customers", "vip_customer") not in edges
    assert ("orders", "customers") in edges  # by the shared name customer_id


@pytest.mark.parametrize(("column", "stem"), [
    ("customer_id", "customer"), ("Customer_ID", "customer"), ("customerId", "customer"),
    ("drivers_license_id", "drivers_license"), ("paid", None), ("valid", None),
    ("id", None), ("_id", None), ("Id", None), ("customerid", None)])
def test_reference_stems(column: str, stem: str | None) -> None:
    assert reference_stem(column) == stem
