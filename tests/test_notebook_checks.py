"""Stale and confirmed verdicts after a re-check, and the run's economy, in every
notebook view: graph node, details pane, header (widget, snapshot, static HTML)."""

from __future__ import annotations

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.board.records import RecheckOutcome, VerdictCheck
from d2_notebook.notebook.economy import Economy, board_economy
from d2_notebook.notebook.graph import board_elements
from d2_notebook.notebook.static import board_html, header_text
from d2_notebook.notebook.widget import BoardWidget

FRAME = pd.DataFrame({"drug": ["Pulmorex", "Hydrazol"], "death_rate": [0.08, 0.17]})


@pytest.fixture
def rechecked(board: Board) -> Board:
    """H1 and H2 judged; a re-check found E1 (cited by H1) changed, E2 the same."""
    inv = board.start_investigation("Which drug works?", {}, actor="user")
    for statement in ("Pulmorex lowers deaths", "Hydrazol raises deaths"):
        board.add_hypothesis(statement, investigation_id=inv.id)
    e1 = board.add_evidence("SELECT 1", FRAME, description="death rate by drug")
    e2 = board.add_evidence("SELECT 2", FRAME, description="death rate, severe cases")
    board.link(e1.id, "H1", "supports", "lowest", actor="collector-1")
    board.link(e2.id, "H2", "supports", "highest", actor="collector-2")
    board.add_verdict("H1", "supported", 0.8, "E1 shows it", [e1.id], author="judge")
    board.add_verdict("H2", "supported", 0.7, "E2 shows it", [e2.id], author="judge")
    run = board.start_recheck(inv.id, "duckdb:covid.duckdb", actor="user")
    board.record_recheck(run.id, e1.id, RecheckOutcome.CHANGED, "0.08 → 0.21", actor="user")
    board.record_recheck(run.id, e2.id, RecheckOutcome.SAME, "", actor="user")
    board.finish_recheck(run.id, {"H1": (VerdictCheck.STALE, [e1.id]),
                                  "H2": (VerdictCheck.CONFIRMED, [e2.id])}, actor="user")
    return board


def test_a_stale_verdict_is_marked_on_its_node_and_a_confirmed_one_dated(
        rechecked: Board) -> None:
    nodes = board_elements(rechecked).nodes
    day = rechecked.list_recheck_runs()[0].created_at[:10]
    assert "stale" in nodes["H1"].classes.split()
    assert nodes["H1"].label.splitlines()[0] == "H1 · supported 80% · ⚠ stale"
    assert nodes["H1"].data["border"] == "#e65100"
    assert "stale" not in nodes["H2"].classes.split()
    assert nodes["H2"].label.splitlines()[0] == "H2 · supported 70% · ✓ confirmed"
    assert f"✓ confirmed on {day}" in nodes["H2"].data["hover"]


def test_widget_shows_stale_marks_in_node_pane_and_header(rechecked: Board) -> None:
    widget = BoardWidget(rechecked)
    day = rechecked.list_recheck_runs()[0].created_at[:10]
    assert f"re-checked {day}: 1 stale (H1), 1 confirmed" in widget.header.value
    nodes = {n.data["id"]: n for n in widget.graph.graph.nodes}
    assert "stale" in nodes["H1"].classes
    pane = nodes["H1"].data["details"]  # shown on a click, kernel busy or not
    assert f"Stale since {day} (R1): evidence it cites (E1) changed" in pane
    assert f"Confirmed on {day} (R1)" in nodes["H2"].data["details"]
    assert any(rule["selector"] == "node.stale" for rule in widget.graph.cytoscape_style)


def test_static_html_and_text_headers_count_the_stale_verdicts(rechecked: Board) -> None:
    assert "1 stale (H1), 1 confirmed" in header_text(rechecked)
    assert "⚠ stale" in board_html(rechecked)


def test_a_board_never_rechecked_has_no_marks(board: Board) -> None:
    inv = board.start_investigation("q", {}, actor="user")
    board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id)
    board.add_verdict("H1", "supported", 0.8, "because", [], author="judge")
    assert "re-checked" not in header_text(board)
    assert board_elements(board).nodes["H1"].data["check"] is None


def test_header_shows_cost_cache_read_share_and_calls(board: Board) -> None:
    inv = board.start_investigation("q", {}, actor="user")
    board.record_model_call(role="judge", agent="judge", model="anthropic:claude-sonnet-4-6",
                            request={}, response={}, input_tokens=1_000,
                            cache_read_tokens=7_000, cache_write_tokens=2_000,
                            output_tokens=500, cost_usd=0.5, investigation_id=inv.id)
    board.record_model_call(role="collector", agent="collector-1",
                            model="anthropic:claude-sonnet-4-6", request={}, response={},
                            input_tokens=0, cache_read_tokens=0, cache_write_tokens=0,
                            cost_usd=0.41, investigation_id=inv.id)
    economy = board_economy(board, scripted=False)
    assert (economy.calls, economy.prompt_tokens, economy.cache_read_tokens) == (
        2, 10_000, 7_000)
    assert "2 model calls · $0.91 · 70% of input tokens from cache" in header_text(board)


def test_a_scripted_run_shows_calls_and_no_cost() -> None:
    scripted = Economy(calls=39, prompt_tokens=100, cache_read_tokens=0, output_tokens=5,
                       cost_usd=0.0, scripted=True)
    assert scripted.phrase() == "39 model calls · scripted — no language model"
    paid = Economy(calls=1, prompt_tokens=0, cache_read_tokens=0, output_tokens=0,
                   cost_usd=0.004, unpriced_calls=1)
    assert paid.phrase() == "1 model call · $0.0040 (1 unpriced) · 0% of input tokens from cache"
    none = Economy(calls=0, prompt_tokens=0, cache_read_tokens=0, output_tokens=0,
                   cost_usd=0.0)
    assert none.phrase() == "0 model calls"


def test_a_real_recheck_after_the_data_changed_marks_exactly_the_verdict_resting_on_it(
        tmp_path) -> None:
    """A DuckDB file changed between the run and the re-check (the north's sales
    doubled): H1 (north) shows stale in the widget, the snapshot and the text header;
    H2 (south) confirmed."""
    import duckdb

    from d2_notebook.data import open_source
    from d2_notebook.detective.investigate import SOURCE_KEY
    from d2_notebook.detective.recheck import recheck_sync
    from d2_notebook.notebook import show
    from d2_notebook.notebook.snapshot import board_snapshot

    database = tmp_path / "sales.duckdb"
    con = duckdb.connect(str(database))
    con.execute("CREATE TABLE sales AS SELECT CASE WHEN i % 2 = 0 THEN 'north' ELSE 'south' "
                "END AS region, (i % 7) * 1.5 AS amount FROM range(600) t(i)")
    con.close()
    board_path = tmp_path / "sales.d2board"
    with Board.open(board_path) as board, open_source(database) as source:
        inv = board.start_investigation("Where do sales come from?",
                                        {SOURCE_KEY: source.info.to_dict()}).id
        for region in ("north", "south"):
            sql = f"SELECT sum(amount) AS total FROM sales WHERE region = '{region}'"
            result = source.run(sql)
            item = board.add_evidence(sql, result.frame, description=f"{region} total",
                                      row_count=result.row_count, investigation_id=inv)
            hyp = board.add_hypothesis(f"The {region} sells", investigation_id=inv)
            board.link(item.id, hyp.id, "supports", actor="collector-1")
            board.add_verdict(hyp.id, "supported", 0.8, "as measured", [item.id],
                              author="judge")
        board.set_investigation_state(inv, "finished", report="done [E1]", actor="reporter")
    con = duckdb.connect(str(database))
    con.execute("UPDATE sales SET amount = amount * 2 WHERE region = 'north'")
    con.close()
    with Board.open(board_path) as board:
        recheck_sync(database, board)
    view = show(board_path)
    snapshot = board_snapshot(view.board)
    assert snapshot["hypotheses"]["H1"]["check"]["state"] == "stale"
    assert snapshot["hypotheses"]["H2"]["check"]["state"] == "confirmed"
    assert "1 stale (H1), 1 confirmed" in header_text(view.board)
    widget = BoardWidget(view.board)
    nodes = {n.data["id"]: n for n in widget.graph.graph.nodes}
    assert "⚠ stale" in nodes["H1"].data["label"] and "✓ confirmed" in nodes["H2"].data["label"]
