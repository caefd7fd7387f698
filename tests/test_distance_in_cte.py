"""A quadratic string distance over a CTE or FROM subquery that only passes columns
through runs; one over a string the query built (``string_agg``, ``repeat``, a list
flattened to text, a recursive CTE ...) is refused before running, naming what is built.

The contract is in :mod:`d2_notebook.data.distance_inputs`.
"""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from d2_notebook.data import GuardedSQL
from d2_notebook.data.builder_limits import check_statement
from d2_notebook.data.parse_tree import serialize
from d2_notebook.errors import UnsafeSQLError

SUSPECTS = ("WITH suspects AS (SELECT p.id, p.name FROM person p JOIN drivers_license d "
            "ON p.license_id = d.id WHERE d.plate_number LIKE '%H42W%') "
            "SELECT s.name, jaro_winkler_similarity(lower(s.name), lower(i.name)) AS sim "
            "FROM suspects s CROSS JOIN interview i ORDER BY sim DESC LIMIT 5")
FIX = "CTEs and FROM subqueries that only pass columns through"


@pytest.fixture
def guard() -> Iterator[GuardedSQL]:
    con = duckdb.connect()
    con.execute("CREATE TABLE person (id INTEGER, name VARCHAR, license_id INTEGER)")
    con.execute("CREATE TABLE drivers_license (id INTEGER, plate_number VARCHAR)")
    con.execute("CREATE TABLE interview (person_id INTEGER, name VARCHAR, transcript VARCHAR)")
    con.execute("INSERT INTO person VALUES (1, 'Jeremy Bowers', 10), "
                "(2, 'Miranda Priestly', 20), (3, 'Annabel Miller', 30)")
    con.execute("INSERT INTO drivers_license VALUES (10, '0H42W2'), (20, 'XYZ'), "
                "(30, 'H42W77')")
    con.execute("INSERT INTO interview VALUES (1, 'Jeremy Bowers', 'I was hired'), "
                "(3, 'Annabel Miler', 'I saw him')")
    yield GuardedSQL(con, timeout_s=5)
    con.close()


def _refused(guard: GuardedSQL, sql: str) -> str:
    with pytest.raises(UnsafeSQLError) as info:
        guard.run(sql)
    return str(info.value)


def test_a_distance_over_a_plain_cte_runs(guard: GuardedSQL) -> None:
    frame = guard.run(SUSPECTS).frame
    assert frame["name"].tolist()[:2] == ["Jeremy Bowers", "Annabel Miller"]
    assert frame["sim"].tolist()[0] == 1.0
    assert len(frame) == 4  # two suspects x two interviews


def test_a_distance_over_a_plain_from_subquery_runs(guard: GuardedSQL) -> None:
    frame = guard.run(
        "SELECT s.name, levenshtein(lower(s.name), lower(i.name)) AS d FROM (SELECT p.id, "
        "p.name FROM person p JOIN drivers_license d ON p.license_id = d.id "
        "WHERE d.plate_number LIKE '%H42W%') s CROSS JOIN interview i ORDER BY d, s.name"
    ).frame
    assert frame["d"].tolist()[:2] == [0, 1]
    assert frame["name"].tolist()[:2] == ["Jeremy Bowers", "Annabel Miller"]


@pytest.mark.parametrize("sql, rows", [
    # SELECT * of a table, a UNION ALL of plain branches, casts and case/trim functions
    ("WITH c AS (SELECT * FROM person) SELECT levenshtein(name, 'x') AS v FROM c", 3),
    ("WITH u AS (SELECT name FROM person UNION ALL SELECT name FROM interview) "
     "SELECT levenshtein(name, 'x') AS v FROM u", 5),
    ("WITH c AS (SELECT lower(trim(name))::VARCHAR AS n FROM person) "
     "SELECT levenshtein(n, 'x') AS v FROM c", 3),
    ("WITH c AS (SELECT * REPLACE (lower(name) AS name) FROM person) "
     "SELECT levenshtein(name, 'x') AS v FROM c", 3),
    # a short constant, a GROUP BY of a column, DISTINCT / ORDER BY / LIMIT
    ("WITH c AS (SELECT 'annabel' AS name) SELECT levenshtein(name, 'x') AS v FROM c", 1),
    ("WITH c AS (SELECT name FROM person GROUP BY name) "
     "SELECT levenshtein(name, 'x') AS v FROM c", 3),
    ("WITH c AS (SELECT DISTINCT name FROM person ORDER BY name LIMIT 2) "
     "SELECT levenshtein(name, 'x') AS v FROM c", 2),
    # nested plain CTEs, a CTE named like the table it filters, a plain lateral subquery
    ("WITH a AS (SELECT name FROM person), b AS (SELECT name FROM a) "
     "SELECT levenshtein(a.name, b.name) AS v FROM a, b", 9),
    ("WITH person AS (SELECT * FROM person WHERE id > 1) "
     "SELECT levenshtein(name, 'x') AS v FROM person", 2),
    ("SELECT levenshtein(y, 'a') AS v FROM person, LATERAL (SELECT person.name AS y) s", 3),
    # a WHERE subquery of a plain CTE produces no column: it may aggregate
    ("WITH c AS (SELECT name FROM person WHERE id IN (SELECT count(*) FROM interview)) "
     "SELECT levenshtein(name, 'x') AS v FROM c", 1),
    # the distance inside the CTE, the outer query filtering its result
    ("WITH scored AS (SELECT p.name, jaro_winkler_similarity(p.name, i.name) AS sim "
     "FROM person p, interview i) SELECT sim AS v FROM scored WHERE sim > 0.9", 2),
    ("SELECT d AS v FROM (SELECT levenshtein(p.name, i.name) AS d FROM person p, "
     "interview i) WHERE d < 3", 2),
    # inside a CTE, its own name is the table it shadows
    ("WITH person AS (SELECT levenshtein(name, 'x') AS v FROM person) SELECT v FROM person",
     3),
])
def test_distances_over_pass_through_sources_run(guard: GuardedSQL, sql: str,
                                                 rows: int) -> None:
    assert guard.run(sql).row_count == rows


@pytest.mark.parametrize("sql, words", [
    # a CTE projecting string_agg(...) that the distance compares
    ("WITH c AS (SELECT string_agg(name, '') AS s FROM person) "
     "SELECT levenshtein(s, 'x') FROM c", "a CTE c whose column s is string_agg()"),
    # repeat() in a CTE (within the builder cap, so the distance rule refuses it)
    ("WITH c AS (SELECT repeat(name, 50) AS n FROM person) "
     "SELECT levenshtein(n, 'x') FROM c", "a CTE c whose column n is repeat()"),
    # a list flattened to a string
    ("WITH c AS (SELECT list_aggregate(list(name), 'string_agg', '') AS n FROM person) "
     "SELECT levenshtein(n, 'x') FROM c", "whose column n is list_aggregate()"),
    ("WITH c AS (SELECT array_to_string(list(name), '') AS n FROM person) "
     "SELECT jaro_similarity(n, 'x') FROM c", "whose column n is array_to_string()"),
    # a UNION one of whose branches builds the string
    ("WITH u AS (SELECT name FROM person UNION ALL SELECT string_agg(name, '') "
     "FROM interview) SELECT levenshtein(name, 'x') FROM u",
     "a CTE u whose UNION branch 2 is a query whose column #1 is string_agg()"),
    # a recursive CTE, even one whose outputs look plain
    ("WITH RECURSIVE r(n) AS (SELECT name FROM person UNION ALL SELECT n || n FROM r "
     "WHERE length(n) < 100) SELECT levenshtein(n, 'x') FROM r", "a CTE r that is recursive"),
    ("WITH RECURSIVE r(n) AS (SELECT name FROM person UNION ALL SELECT n || 'x' FROM r "
     "WHERE levenshtein(n, 'x') > 0 AND length(n) < 20) SELECT count(*) FROM r",
     "a CTE r that is recursive"),
    # an outer CTE passing through the built column of an inner one
    ("WITH inner_c AS (SELECT string_agg(name, '') AS s FROM person), "
     "outer_c AS (SELECT s FROM inner_c) SELECT levenshtein(s, 'x') FROM outer_c",
     "a CTE outer_c that reads a CTE inner_c whose column s is string_agg()"),
    # SELECT * of a subquery that builds the string
    ("WITH c AS (SELECT * FROM (SELECT string_agg(name, '') AS s FROM person)) "
     "SELECT levenshtein(s, 'x') FROM c",
     "a CTE c that reads a subquery in FROM whose column s is string_agg()"),
    # alias tricks: the built column named like a table column, a lateral alias chain,
    # an alias over a scalar subquery next to a plain CTE
    ("WITH c AS (SELECT string_agg(name, '') AS name FROM person) "
     "SELECT levenshtein(name, 'x') FROM c", "a CTE c whose column name is string_agg()"),
    ("SELECT string_agg(name, '') AS s, s AS nm, levenshtein(nm, 'a') FROM person",
     "the alias s names string_agg()"),
    ("WITH c AS (SELECT name FROM person) SELECT (SELECT string_agg(name, '') FROM c) AS x, "
     "levenshtein(x, 'a') FROM c", "the alias x names a subquery expression"),
    # a built CTE named like the table another CTE reads
    ("WITH person AS (SELECT string_agg(name, '') AS name FROM person), "
     "c AS (SELECT name FROM person) SELECT levenshtein(name, 'x') FROM c",
     "a CTE c that reads a CTE person whose column name is string_agg()"),
    # aggregates, windows, operators, VALUES, table functions, COLUMNS(lambda)
    ("WITH c AS (SELECT name, count(*) AS n FROM person GROUP BY name) "
     "SELECT levenshtein(name, 'x') FROM c", "whose column n is count_star()"),
    ("WITH c AS (SELECT name, row_number() OVER () AS rn FROM person) "
     "SELECT levenshtein(name, 'x') FROM c", "the window function row_number()"),
    ("WITH c AS (SELECT name || name AS name FROM person) SELECT levenshtein(name, 'x') "
     "FROM c", "whose column name is the operator ||"),
    ("WITH c AS (SELECT * REPLACE (string_agg(name, '') AS name) FROM person) "
     "SELECT levenshtein(name, 'x') FROM c", "whose column #1 is string_agg()"),
    ("WITH c AS (SELECT COLUMNS(x -> x = 'name') FROM person) "
     "SELECT levenshtein(name, 'x') FROM c", "COLUMNS(...) with an expression"),
    ("SELECT levenshtein(v.name, 'x') FROM (VALUES ('a')) v(name)", "VALUES in FROM"),
    ("SELECT levenshtein(name, 'x') FROM unnest(['a']) t(name)",
     "the table function unnest() in FROM"),
    # a built source the distance sees through LATERAL, correlation or a UNION's ORDER BY
    ("SELECT levenshtein(s.name, 'x') FROM (SELECT string_agg(name, '') AS s FROM person) a, "
     "LATERAL (SELECT a.s AS name) s", "a subquery in FROM whose column s is string_agg()"),
    ("SELECT p.name FROM person p WHERE EXISTS (SELECT 1 FROM (SELECT string_agg(name, '') "
     "AS s FROM interview) x WHERE levenshtein(x.s, p.name) < 3)",
     "a subquery in FROM whose column s is string_agg()"),
    ("SELECT string_agg(name, '') FROM person UNION ALL SELECT name FROM person "
     "ORDER BY levenshtein(\"string_agg(\"\"name\"\", '')\", 'a')",
     "the result of a set operation whose UNION branch 1"),
])
def test_distances_over_built_strings_are_refused(guard: GuardedSQL, sql: str,
                                                  words: str) -> None:
    message = _refused(guard, sql)
    assert words in message
    assert "a string the query built" in message and FIX in message


def test_repeat_beyond_its_cap_in_a_cte_stays_refused(guard: GuardedSQL) -> None:
    message = _refused(guard, "WITH c AS (SELECT repeat(name, 1000) AS name FROM person) "
                              "SELECT levenshtein(name, 'x') FROM c")
    assert "repeat() would make about 100,000 characters" in message


def test_an_unknown_source_fails_closed() -> None:
    tree = serialize("SELECT levenshtein(name, 'x') FROM person")
    tree["statements"][0]["node"]["from_table"]["type"] = "SOMETHING_NEW"
    problem = check_statement(tree)
    assert problem is not None and "a something new in FROM" in problem[0]


def test_sources_too_deep_to_check_fail_closed() -> None:
    ctes = ["c0 AS (SELECT name FROM person)"] + [
        f"c{i} AS (SELECT name FROM c{i - 1})" for i in range(1, 800)]
    tree = serialize("WITH " + ", ".join(ctes) + " SELECT levenshtein(name, 'x') FROM c799")
    problem = check_statement(tree)
    assert problem is not None and "nested too deeply to check" in problem[0]


def test_a_database_macro_that_hands_its_arguments_to_a_distance_is_refused() -> None:
    """A macro's body sees its parameters as columns, so a call through ``sim(x, y)``
    could hand a built string to the distance unseen; a macro comparing constants only,
    and the distance called directly, still run."""
    con = duckdb.connect()
    con.execute("CREATE TABLE person AS SELECT i AS id, 'name' || i AS name FROM range(5) t(i)")
    con.execute("CREATE MACRO sim(a, b) AS jaro_winkler_similarity(a, b)")
    con.execute("CREATE MACRO fixed() AS levenshtein('kitten', 'sitting')")
    guard = GuardedSQL(con, timeout_s=5)
    with pytest.raises(UnsafeSQLError, match=r"macro main\.sim passes its arguments to "
                                             r"jaro_winkler_similarity\(\).*directly"):
        guard.run("SELECT sim(x, 'a') FROM (SELECT string_agg(name, '') AS x FROM person)")
    with pytest.raises(UnsafeSQLError, match=r"macro main\.sim"):
        guard.run("SELECT sim(name, 'name1') FROM person")
    assert guard.run("SELECT fixed() AS d").frame["d"].tolist() == [3]
    assert len(guard.run("SELECT jaro_winkler_similarity(name, 'name1') FROM person").frame) == 5
    con.close()
