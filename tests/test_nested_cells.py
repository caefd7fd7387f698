"""Results holding whole values (a DuckDB LIST, STRUCT, MAP or BLOB) or naming two columns
alike (``SELECT a.id, b.id`` read back from PostgreSQL or Spark) are summarised, shown,
checked and graded like any other.

Before, a collector's ``SELECT region, list(id) ...`` recorded as evidence crashed the
digest that showed it (an array cannot be counted as distinct values), the reporter's
brief, the number check and a teaching grade; a repeated column name crashed them too.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from account_case import account_context

from d2_notebook.board import Board
from d2_notebook.data.plain_cells import plain_frame
from d2_notebook.data.results import cell_text
from d2_notebook.detective import roles
from d2_notebook.detective.claim_check import check_claims, check_report
from d2_notebook.detective.date_spans import days_in_frame
from d2_notebook.detective.evidence_view import evidence_details
from d2_notebook.detective.read_evidence import read_evidence_tool
from d2_notebook.detective.recheck.compare import compare_results
from d2_notebook.detective.reporter_brief import column_ends, reporter_brief
from d2_notebook.detective.result_summary import column_statistics
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.messages import ToolResult
from d2_notebook.llm.offline import FunctionModel, tool_call
from d2_notebook.nested_values import nested_text
from d2_notebook.notebook.evidence_labels import key_number
from d2_notebook.notebook.snapshot import frame_rows as snapshot_rows
from d2_notebook.teaching.board_answer import frame_rows

NESTED_SQL = ("SELECT region, count(*) AS n, list(id ORDER BY id) AS ids, "
              "{'first': min(name), 'tiers': count(DISTINCT tier)} AS summary, "
              "map([min(tier)], [count(*)]) AS by_tier, 'raw'::BLOB AS raw, "
              "min(DATE '2024-03-01' + id) AS first_day "
              "FROM account GROUP BY region ORDER BY region")


def _nested_frame() -> pd.DataFrame:
    con = duckdb.connect()
    con.execute("CREATE TABLE account AS SELECT * FROM (VALUES (1, 'Ann Lee', 'gold', "
                "'north'), (2, 'Bo Chan', 'gold', 'south'), (3, 'Cy Diaz', 'basic', 'north')) "
                "t(id, name, tier, region)")
    return con.sql(NESTED_SQL).df()


DUPLICATE_NAMES = pd.DataFrame([["north", 12, 0.4], ["south", 30, 0.25]],
                               columns=["region", "n", "n"])


def test_plain_frame_writes_nested_cells_as_text_and_names_each_column_once() -> None:
    frame = _nested_frame()
    assert isinstance(frame["ids"].iloc[0], np.ndarray)  # what DuckDB returns
    plain = plain_frame(frame)
    assert plain["ids"].tolist() == ["[1, 3]", "[2]"]
    assert plain["summary"].iloc[0] == "{'first': 'Ann Lee', 'tiers': 2}"
    assert plain["by_tier"].iloc[1] == "{'gold': 1}"
    assert plain["raw"].iloc[0] == "raw"
    assert plain["n"].tolist() == frame["n"].tolist() and plain["n"].dtype == frame["n"].dtype
    assert isinstance(frame["ids"].iloc[0], np.ndarray), "the stored frame is not changed"
    assert list(plain_frame(DUPLICATE_NAMES).columns) == ["region", "n", "n_1"]
    assert list(plain_frame(pd.DataFrame([[1, 2, 3]], columns=["n", "n", "n_1"])).columns) \
        == ["n", "n_2", "n_1"], "a repeat never takes another column's name"
    simple = pd.DataFrame({"a": [1], "b": ["x"]})
    assert plain_frame(simple) is simple


def test_a_nested_cell_reads_as_the_values_it_holds() -> None:
    assert nested_text(np.array([1, 2])) == "[1, 2]"  # not NumPy's "[1 2]"
    assert nested_text({"a": np.array(["x", "y"]), "b": bytearray(b"x\x00")}) \
        == "{'a': ['x', 'y'], 'b': x\\x00}"
    assert cell_text(np.array([1.5, 2.0])) == "[1.5, 2.0]"
    assert cell_text([]) == "[]"


def test_summaries_of_nested_and_repeated_columns() -> None:
    lines = column_statistics(_nested_frame())
    assert "  ids (text): 2 distinct; most common: [1, 3] (1), [2] (1)" in lines
    assert any(line.startswith("  n_1 (number): min 0.25") for line in
               column_statistics(DUPLICATE_NAMES))
    assert len(days_in_frame(_nested_frame())) == 2
    assert key_number(DUPLICATE_NAMES.head(1)) == 0.4
    assert frame_rows(_nested_frame())[0][2:5] == ([1, 3], {"first": "Ann Lee", "tiers": 2},
                                                   {"basic": 2})
    assert snapshot_rows(_nested_frame(), 1, 100)[0][2:6] == [
        "[1, 3]", '{"first": "Ann Lee", "tiers": 2}', '{"basic": 2}', "raw"]  # not bytearray(...)


async def test_a_collector_records_a_list_result_and_the_board_reads_it(
        board: Board) -> None:
    """A real collector turn over DuckDB: the list result becomes evidence; the judge's
    view, the reporter's brief and the number check read it and a repeated-name frame."""
    seen: list[list[str]] = []

    def collector(request: ModelRequest) -> ModelResponse:
        answers = [m.content for m in request.messages if isinstance(m, ToolResult)]
        seen.append(answers)
        if not answers:
            return tool_call("run_sql", {"sql": NESTED_SQL})
        if len(answers) == 1:
            return tool_call("record_evidence", {
                "query_id": "Q1", "description": "account ids by region",
                "stance": "supports", "reading": "north holds accounts 1 and 3"})
        return tool_call("submit_for_judgement", {"summary": "[Q1] lists them"})

    ctx = account_context(board, FunctionModel(collector))
    hyp = board.add_hypothesis("The north has two accounts",
                               investigation_id=ctx.investigation_id)
    await roles.collect(ctx, hyp.id)
    assert "[1, 3]" in seen[1][0], "the query's preview shows the list as a list"
    listed = board.list_evidence(investigation_id=ctx.investigation_id)[0]
    assert list(board.evidence_frame(listed.id)["ids"].iloc[0]) == [1, 3], \
        "the board keeps the list's values"
    pair = board.add_evidence("SELECT region, n, n FROM t", DUPLICATE_NAMES,
                              description="accounts and share by region",
                              investigation_id=ctx.investigation_id)
    board.link(pair.id, hyp.id, "supports", "north 12 accounts, 0.4 of them", actor="collector")
    board.add_verdict(hyp.id, "supported", 0.8, "north lists 1 and 3", [listed.id, pair.id],
                      author="judge")

    for budget in (None, 200):  # whole, then summarised with the rows carrying the claim
        shown = evidence_details(board, [listed.id, pair.id], budget_tokens=budget,
                                 focus=hyp.id)
        assert "[1, 3]" in shown and "n_1" in shown
    brief = reporter_brief(board, ctx.investigation_id)
    assert "[1, 3]" in brief and "0.4" in brief
    check = check_report(board, ctx.investigation_id,
                         f"The north holds accounts 1 and 3 [{listed.id}]; its 12 accounts "
                         f"are 0.4 of the total [{pair.id}], out of 57 in all.")
    assert [c.number for c in check.unverified] == ["57"]


FOUR_REGIONS = pd.DataFrame([["a", 1, 0.4], ["b", 2, 0.35], ["c", 3, 0.25], ["d", 4, 0.1]],
                            columns=["region", "n", "n"])


@pytest.mark.parametrize(("frame", "stated"), [
    (_nested_frame(), "2024-03-03"),   # a date among the cells
    (FOUR_REGIONS, "0.35"),   # a middle value of the second "n": no statistic states it
])
def test_the_number_check_reads_every_column(frame: pd.DataFrame, stated: str) -> None:
    check = check_claims(f"The north: {stated} [E1].", {"E1": frame}, [])
    assert check.numbers_checked >= 1 and not check.unverified
    assert check_claims("The north: 77.7 [E1].", {"E1": FOUR_REGIONS}, []).unverified


def test_the_ends_of_a_repeated_column_are_found() -> None:
    assert column_ends(FOUR_REGIONS) == [0, 3]  # the first n's ends, then the second's


async def test_read_evidence_finds_a_value_inside_a_list(board: Board) -> None:
    ctx = account_context(board, FunctionModel(lambda request: tool_call("done")))
    listed = board.add_evidence(NESTED_SQL, _nested_frame(), description="ids by region",
                                investigation_id=ctx.investigation_id)
    hyp = board.add_hypothesis("The north has two accounts",
                               investigation_id=ctx.investigation_id)
    shown = await read_evidence_tool(ctx, hyp.id).handler(
        {"evidence_ids": [listed.id], "rows_matching": "[1, 3]"})
    assert "1 of 2" in shown and "north" in shown and "south" not in shown


def test_a_result_with_a_column_named_row_is_shown_by_its_carrying_rows(
        board: Board) -> None:
    frame = duckdb.connect().sql('SELECT i AS "row", i * 7 AS n FROM range(1, 60) r(i)').df()
    inv = board.start_investigation("Which row?")
    hyp = board.add_hypothesis("Row 3 holds 21", investigation_id=inv.id)
    item = board.add_evidence("SELECT ...", frame, description="rows",
                              investigation_id=inv.id)
    board.link(item.id, hyp.id, "supports", "row 3 has n 21", actor="collector")
    shown = evidence_details(board, [item.id], budget_tokens=150, focus=hyp.id)
    assert "row #  row" in shown and "21" in shown


def test_maps_read_back_as_stored_and_a_recheck_finds_nothing_changed(board: Board) -> None:
    """DuckDB returns a MAP as a dict; rows with other keys must not gain each other's
    keys on the board, and a fresh DuckDB result (arrays, bytearrays) equals its stored
    copy (lists, bytes)."""
    con = duckdb.connect()
    sql = ("SELECT k, map([k], [r]) AS m, [r, r + 1] AS l, 'x'::BLOB AS raw, {'a': r} AS s "
           "FROM (VALUES ('k', 1), ('j', 2)) t(k, r) ORDER BY r")
    item = board.add_evidence(sql, con.sql(sql).df(), description="maps")
    stored = board.evidence_frame(item.id)
    assert stored["m"].tolist() == [{"k": 1}, {"j": 2}]
    assert compare_results(stored, 2, con.sql(sql).df(), 2).same
    changed = con.sql(sql.replace("r + 1", "r + 2")).df()
    assert not compare_results(stored, 2, changed, 2).same


@pytest.mark.parametrize(("select", "stored"), [
    ("{'s': map([k], [r])}", ["{'s': {'k': 1}}", "{'s': {'j': 2}}"]),   # in a struct
    ("[map([k], [r])]", ["[{'k': 1}]", "[{'j': 2}]"]),   # in a list
    ("map([k], [map([k], [r])])", ["{'k': {'k': 1}}", "{'j': {'j': 2}}"]),   # in a map
    ("map([k], [{'a': r}])", [{"k": {"a": 1}}, {"j": {"a": 2}}]),   # structs in a map
    ("{'a': {'x': r}, 'b': {'y': r}}", [{"a": {"x": 1}, "b": {"y": 1}},
                                        {"a": {"x": 2}, "b": {"y": 2}}]),   # structs only
])
def test_a_map_inside_another_value_never_reads_back_with_invented_keys(
        board: Board, select: str, stored: list) -> None:
    """Arrow holds a map only at the top of a column here: a map inside a struct, a list
    or a map is stored as its text (flagged lossy), never as a struct that gives each
    row the others' keys; a struct of structs stays as it is. A re-check finds each
    unchanged."""
    con = duckdb.connect()
    sql = f"SELECT {select} AS v FROM (VALUES ('k', 1), ('j', 2)) t(k, r) ORDER BY r"
    item = board.add_evidence(sql, con.sql(sql).df(), description="nested maps")
    assert board.evidence_frame(item.id)["v"].tolist() == stored
    assert item.columns[0].lossy == isinstance(stored[0], str)
    assert compare_results(board.evidence_frame(item.id), 2, con.sql(sql).df(), 2).same
