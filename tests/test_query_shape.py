"""A result cut by its query's LIMIT says so wherever a model reads it: a real-model
hypothesis drawn from "15 rows, all shown" of a LIMIT 15 query was false past row 15."""

from __future__ import annotations

import asyncio

import duckdb
import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.data import GuardedSQL
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.digest import board_digest
from d2_notebook.detective.evidence_view import evidence_details
from d2_notebook.detective.query_shape import (
    limit_clause,
    limit_note,
    outer_limit,
    result_order,
)
from d2_notebook.detective.reporter_brief import reporter_brief
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.detective.sql_tools import sql_tools
from d2_notebook.llm.offline import ScriptedModel

CUT = "it reaches its query's LIMIT 15: more rows may match"


@pytest.mark.parametrize(("sql", "limit"), [
    ("SELECT a FROM t ORDER BY 1 DESC LIMIT 15", 15),
    ("SELECT a FROM t LIMIT 5 OFFSET 10", 5),
    ("SELECT a FROM t FETCH FIRST 7 ROWS ONLY", 7),
    ("SELECT a FROM t UNION ALL SELECT b FROM u LIMIT 4", 4),
    ("SELECT * FROM (SELECT a FROM t LIMIT 3) x", None),  # an inner LIMIT cuts no result
    ("SELECT a FROM t LIMIT 10 PERCENT", None),  # a share, not a row count
    ("(SELECT a FROM t LIMIT 5)", 5),
    ("SELECT a FROM t FETCH FIRST ROW ONLY", 1),
    ("SELECT count(*) FROM t LIMIT 1", None),  # one row whatever the LIMIT
    ("SELECT max(a) + 1 AS m FROM t LIMIT 1", None),
    ("SELECT count(*) OVER () AS n FROM t LIMIT 1", 1),  # a window: one row per row
    ("SELECT g, count(*) FROM t GROUP BY g LIMIT 3", 3),
    ("SELECT a FROM t", None),
    ("not sql ((", None),
])
def test_the_outer_limit_is_read_from_the_query(sql: str, limit: int | None) -> None:
    assert outer_limit(sql) == limit


def test_only_a_result_as_long_as_its_limit_is_said_to_be_cut() -> None:
    assert limit_note("SELECT a FROM t LIMIT 15", 15) == CUT
    assert limit_note("SELECT a FROM t LIMIT 15", 9) is None  # shorter: everything matched
    assert limit_note("SELECT a FROM t", 15) is None
    assert limit_note("SELECT a FROM t LIMIT 15", None) is None  # a count that failed
    assert limit_clause("SELECT a FROM t LIMIT 15", 15) == f", {CUT}"
    assert limit_clause("SELECT a FROM t LIMIT 15", 9) == ""


def test_the_result_order_names_a_column_number_by_its_column() -> None:
    frame = pd.DataFrame({"name": ["a"], "n": [1]})
    assert result_order("SELECT name, n FROM t ORDER BY 2 DESC, name", frame) == "n DESC, name"
    assert result_order("SELECT name FROM t", frame) is None


@pytest.fixture
def cities() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE users AS SELECT i AS id, 'city' || (i % 40) AS city "
                "FROM range(200) t(i)")
    return con


def test_run_sql_the_digest_the_judge_and_the_reporter_are_told_of_the_cut(cities) -> None:
    guard = GuardedSQL(cities)
    board = Board.open(":memory:")
    investigation = board.start_investigation("Where do users live?")
    ctx = TeamContext(board=board, sql=guard, model=ScriptedModel([]),
                      investigation_id=investigation.id, question="q",
                      schema_summary=guard.schema_summary(), settings=InvestigationSettings())
    run_sql = {t.name: t for t in sql_tools(ctx, QueryLog())}["run_sql"]
    cut_sql = "SELECT city, count(*) AS n FROM users GROUP BY city ORDER BY n DESC LIMIT 15"
    whole_sql = "SELECT city, count(*) AS n FROM users GROUP BY city LIMIT 100"
    answer = asyncio.run(run_sql.handler({"sql": cut_sql}))
    assert answer.startswith(f"Q1: ({CUT}.) <data source=\"query result Q1\">")
    whole = asyncio.run(run_sql.handler({"sql": whole_sql}))
    assert "LIMIT" not in whole.split("<data", 1)[0]  # 40 rows under a LIMIT of 100: whole
    frame = cities.execute(cut_sql).df()
    evidence = board.add_evidence(cut_sql, frame, description="users per city",
                                  investigation_id=investigation.id)
    hypothesis = board.add_hypothesis("Users spread evenly", investigation_id=investigation.id)
    board.link(evidence.id, hypothesis.id, "supports", "five users in each city",
               actor="collector")
    board.add_verdict(hypothesis.id, "supported", 0.7, "five users per city", [evidence.id],
                      author="judge")
    assert f"Result (15 rows x 2 columns, {CUT}, all shown):" in evidence_details(
        board, [evidence.id])
    assert f"{evidence.id} (15 rows, {CUT}) users per city" in board_digest(
        board, investigation_id=investigation.id)
    assert f"(15 rows, {CUT}; " in reporter_brief(board, investigation.id)
