"""Re-check on PostgreSQL (the real throwaway cluster): unchanged data stays the same, a
changed row makes its evidence changed and the verdict on it stale, a dropped column
makes the evidence that reads it fail with the reason. Analysis evidence is re-run from
its stored call through the same source."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from d2_notebook.board import Board, RecheckOutcome, ToolCall
from d2_notebook.data import open_source
from d2_notebook.data.analysis import segment_scan
from d2_notebook.detective.investigate import SOURCE_KEY
from d2_notebook.detective.recheck import RecheckResult, recheck_sync

DATABASE = "d2_recheck"
NORTH = ("SELECT region, sum(amount) AS total, count(*) AS n FROM sales WHERE region = "
         "'north' GROUP BY region")
CHANNELS = "SELECT channel, count(*) AS n FROM sales GROUP BY channel ORDER BY channel"


@pytest.fixture
def sales_url(postgres_cluster) -> Iterator[str]:
    """A fresh ``sales`` database the read-only analyst can query (the superuser changes
    it between runs)."""
    with postgres_cluster.admin() as con:
        con.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        con.execute(f"CREATE DATABASE {DATABASE}")
        if not con.execute("SELECT 1 FROM pg_roles WHERE rolname = 'analyst'").fetchone():
            con.execute("CREATE ROLE analyst LOGIN")
    with postgres_cluster.admin(DATABASE) as con:
        con.execute("CREATE TABLE sales AS SELECT CASE WHEN i % 2 = 0 THEN 'north' ELSE "
                    "'south' END AS region, CASE WHEN i % 3 = 0 THEN 'web' ELSE 'shop' END "
                    "AS channel, (i % 7) * 1.5 AS amount FROM generate_series(0, 599) i")
        con.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO analyst")
    yield postgres_cluster.url(DATABASE, "analyst")
    with postgres_cluster.admin() as con:
        con.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


@pytest.fixture
def board_path(sales_url: str, tmp_path: Path) -> Path:
    """H1 rests on the north's total (E1), H2 on the channels (E2) and a segment scan
    by channel (E3), all recorded from PostgreSQL."""
    path = tmp_path / "pg.d2board"
    with Board.open(path) as board, open_source(sales_url) as source:
        inv = board.start_investigation("Where do sales come from?",
                                        {SOURCE_KEY: source.info.to_dict()}).id
        ids = []
        for sql, what in [(NORTH, "north total"), (CHANNELS, "sales per channel")]:
            result = source.run(sql)
            ids.append(board.add_evidence(sql, result.frame, description=what,
                                          row_count=result.row_count,
                                          investigation_id=inv).id)
        args = {"source": "sales", "metric": "avg(amount)", "dimensions": ["channel"]}
        scan = segment_scan(source, **args)
        ids.append(board.add_evidence(scan.sql, scan.frame, description=scan.summary,
                                      row_count=scan.row_count, investigation_id=inv).id)
        board.record_tool_call(ids[2], ToolCall("segment_scan", args), actor="collector-1")
        for statement, cited in [("The north sells most", [ids[0]]),
                                 ("The shop channel leads", ids[1:])]:
            hyp = board.add_hypothesis(statement, investigation_id=inv)
            for evidence in cited:
                board.link(evidence, hyp.id, "supports", actor="collector-1")
            board.add_verdict(hyp.id, "supported", 0.8, "as measured", cited, author="judge")
        board.set_investigation_state(inv, "finished", report="done [E1]", actor="reporter")
    return path


def _outcomes(result: RecheckResult) -> dict[str, RecheckOutcome]:
    return {r.evidence_id: r.outcome for r in result.rechecks}


def test_unchanged_postgres_data_rechecks_the_same(sales_url: str, board_path: Path) -> None:
    result = recheck_sync(sales_url, board_path)
    assert _outcomes(result) == {e: RecheckOutcome.SAME for e in ("E1", "E2", "E3")}
    assert result.stale == () and result.confirmed == ("H1", "H2")
    assert "postgresql" in result.run.source.lower()


def test_a_changed_postgres_row_makes_its_evidence_changed_and_the_verdict_stale(
        postgres_cluster, sales_url: str, board_path: Path) -> None:
    with postgres_cluster.admin(DATABASE) as con:
        con.execute("UPDATE sales SET amount = amount * 10 WHERE region = 'north' AND "
                    "channel = 'shop'")
    result = recheck_sync(sales_url, board_path)
    outcomes = {r.evidence_id: r for r in result.rechecks}
    assert outcomes["E1"].outcome is RecheckOutcome.CHANGED
    assert "total[north]" in outcomes["E1"].detail
    assert outcomes["E2"].outcome is RecheckOutcome.SAME  # the counts did not move
    assert outcomes["E3"].outcome is RecheckOutcome.CHANGED  # the scan averages amounts
    assert result.stale == ("H1", "H2") and result.confirmed == ()
    with Board.open(board_path, read_only=True) as board:
        assert float(board.recheck_frame(result.run.id, "E1")["total"].iloc[0]) > \
            float(board.evidence_frame("E1")["total"].iloc[0])


def test_a_dropped_postgres_column_makes_the_evidence_fail_with_the_reason(
        postgres_cluster, sales_url: str, board_path: Path) -> None:
    with postgres_cluster.admin(DATABASE) as con:
        con.execute("ALTER TABLE sales DROP COLUMN channel")
    result = recheck_sync(sales_url, board_path)
    failed = {r.evidence_id: r for r in result.rechecks if r.outcome is RecheckOutcome.FAILS}
    assert set(failed) == {"E2", "E3"} and "channel" in failed["E2"].detail
    assert result.stale == ("H2",) and result.confirmed == ("H1",)
