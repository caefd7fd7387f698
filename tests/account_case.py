"""A three-account DuckDB case for the tests of evidence that shows its rows."""

from __future__ import annotations

import duckdb

from d2_notebook.board import Board
from d2_notebook.data import open_source
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.llm.offline import FunctionModel


def account_context(board: Board, model: FunctionModel) -> TeamContext:
    """A team context over three accounts (id, name, tier, region) asking which one
    placed an order."""
    con = duckdb.connect()
    con.execute("CREATE TABLE account AS SELECT * FROM (VALUES (1, 'Ann Lee', 'gold', 'north'),"
                " (2, 'Bo Chan', 'gold', 'south'), (3, 'Cy Diaz', 'basic', 'north')) "
                "t(id, name, tier, region)")
    investigation = board.start_investigation("Which account placed the flagged order?")
    return TeamContext(board=board, sql=open_source(con), model=model,
                       investigation_id=investigation.id, question=investigation.question,
                       schema_summary="account (table, 3 rows)",
                       settings=InvestigationSettings())
