"""Evidence shows the rows its claim rests on: a collector that records one row of totals
(a count of the matches, their names packed into one cell) as deciding is told, in the
tool's answer, to record the entities' own rows too (the prompts: test_prompts_ask_for_rows).

On a recorded SQL City board the team's deciding links cited such totals ("1 person
meets all four criteria: <name>") or lists of the others, while the rows that showed
each suspect's values were linked ``weak``: a reader (and the benchmark's audit graph)
could check none of its claims against a row.
"""

from __future__ import annotations

import pandas as pd
import pytest
from account_case import account_context as _context

from d2_notebook.board import Board
from d2_notebook.board.records import ToolCall
from d2_notebook.detective import roles
from d2_notebook.detective.context import QueryLog
from d2_notebook.detective.evidence_rows import aggregate_row_note, aggregates_only
from d2_notebook.detective.team_tools import evidence_tools
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.llm.messages import ToolResult
from d2_notebook.llm.offline import FunctionModel, tool_call

TOTALS = ("SELECT count(*) AS n, string_agg(name, ', ') AS names FROM account "
          "WHERE tier = 'gold' AND region = 'north'")
ROWS = "SELECT id, name, tier, region FROM account WHERE tier = 'gold' ORDER BY id"


@pytest.mark.parametrize(("sql", "functions"), [
    (TOTALS, ["count", "string_agg"]),
    ("SELECT (SELECT count(*) FROM a WHERE x = 1) AS n1, (SELECT max(y) FROM b) AS top",
     ["count", "max"]),
    ("WITH x AS (SELECT id FROM a) SELECT count(*), sum(id) FILTER (WHERE id > 2), 'all' "
     "FROM x", ["count", "sum"]),
    ("SELECT round(avg(x), 2) AS mean FROM a", ["avg"]),
])
def test_a_select_of_aggregates_only_is_recognised(sql: str, functions: list[str]) -> None:
    assert aggregates_only(sql) == functions


@pytest.mark.parametrize("sql", [
    ROWS,
    "SELECT tier, count(*) FROM account GROUP BY tier",
    "SELECT name, count(*) OVER () AS n FROM account",
    "SELECT count(*) FROM a UNION ALL SELECT count(*) FROM b",
    "SELECT (SELECT name FROM account LIMIT 1) AS first_name",
    "SELEC broken",
])
def test_rows_groups_windows_set_operations_and_bad_sql_are_not_totals(sql: str) -> None:
    assert aggregates_only(sql) == []


def test_the_note_is_for_one_deciding_row_of_totals_only() -> None:
    note = aggregate_row_note("E7", TOTALS, 1, "supports")
    assert note is not None and note.startswith("note: E7 is one row of totals (count, "
                                                "string_agg)")
    assert "own row" in note
    assert aggregate_row_note("E7", TOTALS, 1, "Contradicts") is not None
    assert aggregate_row_note("E7", TOTALS, 1, "neutral") is None, "claims nothing"
    assert aggregate_row_note("E7", TOTALS, 1, "weak") is None
    assert aggregate_row_note("E7", ROWS, 1, "supports") is None, "an entity's own row"
    assert aggregate_row_note("E7", TOTALS, 0, "supports") is None
    counted = "SELECT count(*) AS n, count(DISTINCT region) AS regions FROM account"
    assert aggregate_row_note("E7", counted, 1, "supports") is not None, "how many, not which"
    what_if = ("SELECT avg(x) AS rate, avg(x) FILTER (WHERE tier <> 'gold') AS without, "
               "count(*) AS n FROM account")
    assert aggregate_row_note("E7", what_if, 1, "supports") is None, "figures, not entities"


def _tool_answers(request: ModelRequest) -> list[str]:
    return [m.content for m in request.messages if isinstance(m, ToolResult)]


async def test_a_collector_recording_a_total_is_asked_for_the_rows_and_records_them(
        board: Board) -> None:
    """A real collector turn over DuckDB: the count-and-names total recorded as supports
    gets the note; the rows recorded next get none; both are on the board."""
    seen: list[list[str]] = []

    def collector(request: ModelRequest) -> ModelResponse:
        answers = _tool_answers(request)
        seen.append(answers)
        step = len(answers)
        if step == 0:
            return tool_call("run_sql", {"sql": TOTALS})
        if step == 1:
            return tool_call("record_evidence", {
                "query_id": "Q1", "description": "gold accounts in the north",
                "stance": "supports", "reading": "1 account matches: Ann Lee"})
        if step == 2:
            return tool_call("run_sql", {"sql": ROWS})
        if step == 3:
            return tool_call("record_evidence", {
                "query_id": "Q2", "description": "each gold account with its region",
                "stance": "supports", "reading": "Ann Lee (1) is gold in the north"})
        return tool_call("submit_for_judgement", {"summary": "[Q2] shows her row"})

    ctx = _context(board, FunctionModel(collector))
    hyp = board.add_hypothesis("Ann Lee placed the flagged order",
                               investigation_id=ctx.investigation_id)
    await roles.collect(ctx, hyp.id)
    recorded_total, recorded_rows = seen[2][1], seen[4][3]
    assert recorded_total.startswith(f"recorded E1 (supports {hyp.id})\nnote: E1 is one row "
                                     "of totals (count, string_agg)")
    assert recorded_rows == f"recorded E2 (supports {hyp.id})"
    frames = [board.evidence_frame(e.id) for e in board.list_evidence(
        investigation_id=ctx.investigation_id)]
    assert [len(f) for f in frames] == [1, 2]
    assert frames[1].iloc[0].tolist() == [1, "Ann Lee", "gold", "north"]


async def test_linking_a_total_as_deciding_gets_the_note_and_as_neutral_none(
        board: Board) -> None:
    ctx = _context(board, FunctionModel(lambda request: tool_call("done")))
    hyp = board.add_hypothesis("Ann Lee placed the flagged order",
                               investigation_id=ctx.investigation_id)
    other = board.add_hypothesis("Bo Chan placed the flagged order",
                                 investigation_id=ctx.investigation_id)
    total = board.add_evidence(TOTALS, pd.DataFrame({"n": [1], "names": ["Ann Lee"]}),
                               description="gold accounts in the north",
                               investigation_id=ctx.investigation_id)
    link = {t.name: t for t in evidence_tools(ctx, QueryLog(), "collector-H", "collector",
                                              None)}["link_evidence"]
    deciding = await link.handler({"hypothesis_id": hyp.id, "evidence_id": total.id,
                                   "stance": "supports", "reading": "1 match: Ann Lee"})
    assert f"\nnote: {total.id} is one row of totals" in deciding
    neutral = await link.handler({"hypothesis_id": other.id, "evidence_id": total.id,
                                  "stance": "neutral", "reading": "says nothing of Bo"})
    assert "note:" not in neutral
    summary = board.add_evidence("SELECT avg(amount) AS mean FROM orders",
                                 pd.DataFrame({"mean": [3.5]}), description="trend: mean",
                                 investigation_id=ctx.investigation_id)
    board.record_tool_call(summary.id, ToolCall("trend", {"metric": "amount"}),
                           actor="collector-H")
    analysed = await link.handler({"hypothesis_id": other.id, "evidence_id": summary.id,
                                   "stance": "contradicts", "reading": "flat"})
    assert "note:" not in analysed, "an analysis tool's result is its own summary"
