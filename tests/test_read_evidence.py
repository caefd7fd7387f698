"""``read_evidence`` shows a collector or judge the stored rows of evidence its digest
lists by title only, so it links that evidence instead of running its query again (a
real-model collector re-ran a near-duplicate of another hypothesis's dose table)."""

from __future__ import annotations

import pandas as pd
import pytest
from account_case import account_context

from d2_notebook.board import Board
from d2_notebook.detective import roles
from d2_notebook.detective.read_evidence import (
    MOST_READ,
    READ_EVIDENCE_TOKENS,
    read_evidence_tool,
)
from d2_notebook.detective.tools import ToolError
from d2_notebook.detective.variant import FULL, NO_JUDGE, Role
from d2_notebook.llm import ModelRequest, ModelResponse, estimate_tokens
from d2_notebook.llm.messages import ToolResult
from d2_notebook.llm.offline import FunctionModel, tool_call

DOSES = pd.DataFrame({"dose_band": ["low", "mid", "high"], "n": [101, 98, 106],
                      "death_rate": [0.359, 0.248, 0.149]})


def _board_with_other_evidence(board: Board, investigation_id: str) -> tuple[str, str, str]:
    other = board.add_hypothesis("Dose matters for Solvanir", investigation_id=investigation_id)
    doses = board.add_evidence("SELECT dose_band, count(*) AS n, avg(died) AS death_rate "
                               "FROM t GROUP BY ALL", DOSES, description="death rate by dose",
                               investigation_id=investigation_id)
    board.link(doses.id, other.id, "supports", "falls from 0.359 to 0.149", actor="collector")
    mine = board.add_hypothesis("Solvanir works only at high doses",  # after: listed for it
                                investigation_id=investigation_id)
    return other.id, mine.id, doses.id


async def test_a_collector_reads_listed_evidence_and_links_it_without_a_query(
        board: Board) -> None:
    answers: list[str] = []

    def collector(request: ModelRequest) -> ModelResponse:
        answers[:] = [m.content for m in request.messages if isinstance(m, ToolResult)]
        if not answers:
            assert f"{doses} (3 rows) death rate by dose" in request.messages[0].text
            return tool_call("read_evidence", {"evidence_ids": [doses]})
        if len(answers) == 1:
            return tool_call("link_evidence", {"evidence_id": doses, "stance": "supports",
                                               "reading": "0.149 at high doses, 0.359 low"})
        return tool_call("submit_for_judgement", {"summary": f"[{doses}]"})

    ctx = account_context(board, FunctionModel(collector))
    _, mine, doses = _board_with_other_evidence(board, ctx.investigation_id)
    await roles.collect(ctx, mine)
    read = answers[0]
    assert "high" in read and "0.149" in read and "0.359" in read  # the stored rows
    assert "no query was run" in read
    assert "falls from 0.359" not in read, "what another hypothesis said of it is not shown"
    assert answers[1].startswith(f"linked {doses} (supports {mine})")
    assert board.list_links(hypothesis_id=mine)[0].evidence_id == doses
    assert len(board.list_evidence(investigation_id=ctx.investigation_id)) == 1


async def test_bad_ids_are_refused_with_the_fix(board: Board) -> None:
    ctx = account_context(board, FunctionModel(lambda request: tool_call("done")))
    _, mine, doses = _board_with_other_evidence(board, ctx.investigation_id)
    read = read_evidence_tool(ctx, mine)
    with pytest.raises(ToolError, match="no evidence E99 on the board: use an id the digest"):
        await read.handler({"evidence_ids": [doses, "E99"]})
    with pytest.raises(ToolError, match="evidence_ids is empty"):
        await read.handler({"evidence_ids": []})
    with pytest.raises(ToolError, match=f"at most {MOST_READ} evidence per call"):
        await read.handler({"evidence_ids": [f"E{i}" for i in range(MOST_READ + 1)]})
    earlier = board.start_investigation("An earlier question")
    old = board.add_evidence("SELECT 1 AS x", pd.DataFrame({"x": [1]}), description="old",
                             investigation_id=earlier.id)
    with pytest.raises(ToolError, match="does not follow up; run the query again"):
        await read.handler({"evidence_ids": [old.id]})


def test_collectors_and_judges_have_it() -> None:
    for variant, role in ((FULL, Role.COLLECTOR), (FULL, Role.JUDGE),
                          (NO_JUDGE, Role.COLLECTOR)):
        assert "read_evidence" in variant.tools_of(role)


async def test_evidence_written_after_the_branchs_digest_is_refused(board: Board) -> None:
    """A parallel branch's newer evidence would make the answer depend on timing, and a
    replay would diverge: only what the digest could list is read."""
    ctx = account_context(board, FunctionModel(lambda request: tool_call("done")))
    other, mine, doses = _board_with_other_evidence(board, ctx.investigation_id)
    later = board.add_evidence("SELECT 2 AS x", pd.DataFrame({"x": [2]}), description="later",
                               investigation_id=ctx.investigation_id)
    board.link(later.id, other, "supports", "2", actor="collector-H1")
    read = read_evidence_tool(ctx, mine)
    with pytest.raises(ToolError, match=f"{later.id} was recorded after your digest"):
        await read.handler({"evidence_ids": [later.id]})
    assert "0.149" in await read.handler({"evidence_ids": [doses]})


async def test_rows_matching_shows_the_rows_a_summary_leaves_out(board: Board) -> None:
    """A judge needed the amount rows of a long segment_scan whose summarised view
    showed other rows; ``rows_matching`` shows the stored rows containing a text."""
    ctx = account_context(board, FunctionModel(lambda request: tool_call("done")))
    dimensions = [f"t.dim{i % 7}" for i in range(1495)]
    values = [f"v{i}" for i in range(1495)]
    dimensions[70:70] = ["t.amount"] * 5  # in the middle: neither first nor last rows
    values[70:70] = [f"{k}-{k + 1}k" for k in range(5)]
    frame = pd.DataFrame({"dimension": dimensions, "value": values,
                          "metric": [0.1 + i / 10000 for i in range(1500)]})
    scan = board.add_evidence("SELECT 1", frame, description="segment scan of the rate",
                              investigation_id=ctx.investigation_id)
    _, mine, _ = _board_with_other_evidence(board, ctx.investigation_id)  # listed for it
    read = read_evidence_tool(ctx, mine)
    summarised = await read.handler({"evidence_ids": [scan.id]})
    assert "2-3k" not in summarised
    shown = await read.handler({"evidence_ids": [scan.id], "rows_matching": "AMOUNT"})
    assert "Stored rows with a cell containing 'AMOUNT': 5 of 1,500" in shown
    assert all(f"{k}-{k + 1}k" in shown for k in range(5)) and "t.dim3" not in shown
    assert "no query was run" in shown
    none = await read.handler({"evidence_ids": [scan.id], "rows_matching": "region"})
    assert "0 of 1,500 (columns: dimension, value, metric)" in none
    many = await read.handler({"evidence_ids": [scan.id], "rows_matching": "t."})
    assert "1,500 of 1,500" in many and "more such rows: name a narrower text" in many
    assert estimate_tokens(many) <= READ_EVIDENCE_TOKENS + 100  # the budget, and the note
    shown_as = await read.handler({"evidence_ids": [scan.id], "rows_matching": "0.1071"})
    assert "1 of 1,500" in shown_as  # 0.1071 as shown, 0.10710000000000001 as stored
    long = board.add_evidence("SELECT 2", pd.DataFrame({"text": ["amount " + "x" * 60_000]}),
                              description="one long cell",
                              investigation_id=ctx.investigation_id)
    with pytest.raises(ToolError, match="recorded after your digest"):  # checked as before
        await read.handler({"evidence_ids": [long.id], "rows_matching": "amount"})


async def test_rows_matching_cuts_a_row_past_the_budget(board: Board) -> None:
    ctx = account_context(board, FunctionModel(lambda request: tool_call("done")))
    long = board.add_evidence("SELECT 2", pd.DataFrame({"text": ["amount " + "x " * 30_000]}),
                              description="one long cell",
                              investigation_id=ctx.investigation_id)
    _, mine, _ = _board_with_other_evidence(board, ctx.investigation_id)
    shown = await read_evidence_tool(ctx, mine).handler(
        {"evidence_ids": [long.id], "rows_matching": "AMOUNT"})
    assert "(cut to this tool's budget)" in shown
    assert estimate_tokens(shown) <= READ_EVIDENCE_TOKENS + 100
