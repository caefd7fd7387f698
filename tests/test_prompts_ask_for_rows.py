"""The prompts and the record_evidence tool ask for the rows a claim rests on, and for a
decisive stance on one record of an entity's value (a recorded SQL City team linked the
rows showing each suspect's values ``weak``, "matches three of four criteria", and
decided on counts and lists of others instead)."""

from __future__ import annotations

import pytest
from account_case import account_context as _context

from d2_notebook.board import Board
from d2_notebook.detective import roles
from d2_notebook.detective.context import QueryLog
from d2_notebook.detective.team_tools import evidence_tools
from d2_notebook.llm.offline import FunctionModel, tool_call


@pytest.mark.parametrize("role", ["collector", "single_agent"])
def test_the_prompts_ask_for_the_rows_and_a_decisive_stance_on_one_record(role: str) -> None:
    text = roles.instructions(role)
    assert "own row" in text and "a count of them" in text
    assert "LEFT JOIN" in text or role == "single_agent"
    assert "failing one thing it requires contradicts it" in text
    assert "entity's own value is not thin" in text
    assert "statement, a handful of rows)" not in text, "one record is no small sample"


def test_the_record_evidence_tool_asks_for_the_rows(board: Board) -> None:
    ctx = _context(board, FunctionModel(lambda request: tool_call("done")))
    tools = {t.name: t for t in evidence_tools(ctx, QueryLog(), "c", "collector", None)}
    assert "their own rows" in tools["record_evidence"].spec.description
    stance = tools["record_evidence"].spec.parameters["properties"]["stance"]["description"]
    assert "failing one thing it requires contradicts it" in stance
