"""The board snapshot: what every board display carries for the JupyterLab renderer.

``fixture_board`` is also the source of ``extension/test/fixture.json``, the input of
the TypeScript unit test: the test here fails when the committed fixture no longer
equals what Python writes (regenerate with ``D2_UPDATE_FIXTURE=1``), so the two sides
cannot drift apart silently.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.board.records import RecheckOutcome, VerdictCheck
from d2_notebook.notebook.snapshot import SnapshotCaps, board_snapshot, frame_rows

FIXTURE = Path(__file__).resolve().parent.parent / "extension" / "test" / "fixture.json"
FRAME = pd.DataFrame({"drug": ["Pulmorex", "Hydrazol", "Solvanir"], "deaths": [3, 9, 5]})


def fixture_board(board: Board) -> Board:
    """H1 supported (E1 supports, E2 contradicts and is redundant), H2 abandoned and
    suggested by the exploration E4, H3 refines H1 and E3 supports it; a re-check found
    E1 changed, so H1's verdict is stale."""
    inv = board.start_investigation("Which drug works?", {}, actor="user")
    board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id,
                         rationale="lowest death rate")
    e1 = board.add_evidence("SELECT drug, count(*) AS deaths FROM t GROUP BY 1", FRAME,
                            description="deaths by drug")
    e2 = board.add_evidence("SELECT 2", FRAME.head(1), description="deaths, again")
    board.link(e1.id, "H1", "supports", "fewest deaths", actor="collector-1")
    board.link(e2.id, "H1", "contradicts", "same query", actor="collector-1")
    board.mark_redundant(e2.id, "same as E1", actor="reporter")
    board.add_verdict("H1", "supported", 0.8, "E1 shows it", [e1.id], author="judge")
    e3 = board.add_evidence("SELECT 3", FRAME, description="severe cases")
    e4 = board.add_evidence("SELECT 4", FRAME, description="a first look at the drugs")
    board.add_hypothesis("Hydrazol lowers deaths", investigation_id=inv.id,
                         motivated_by=[e4.id])
    board.abandon("H2", "off topic", actor="orchestrator")
    board.add_hypothesis("Pulmorex lowers deaths in severe cases", parent_id="H1",
                         investigation_id=inv.id)
    board.link(e3.id, "H3", "supports", "holds", actor="collector-2")
    run = board.start_recheck(inv.id, "duckdb:covid.duckdb", actor="user")
    board.record_recheck(run.id, e1.id, RecheckOutcome.CHANGED, "deaths 3 → 4", actor="user")
    board.finish_recheck(run.id, {"H1": (VerdictCheck.STALE, [e1.id])}, actor="user")
    return board


def stable(snapshot: dict) -> dict:
    """The snapshot without the summary line (it carries the elapsed time), days (a
    re-check's date) written as ``YYYY-MM-DD``."""
    text = json.dumps({k: v for k, v in snapshot.items() if k != "summary"},
                      ensure_ascii=False)
    return json.loads(re.sub(r"\b\d{4}-\d{2}-\d{2}\b", "YYYY-MM-DD", text))


def test_snapshot_carries_graph_records_and_rows(board: Board) -> None:
    snapshot = board_snapshot(fixture_board(board))
    assert json.loads(json.dumps(snapshot)) == snapshot
    assert snapshot["question"] == "Which drug works?"
    assert [n["id"] for n in snapshot["graph"]["nodes"]] == ["H1", "H2", "H3", "E1", "E2",
                                                             "E3", "E4"]
    assert {e["id"] for e in snapshot["graph"]["edges"]} == {
        "E1->H1", "E2->H1", "E3->H3", "E4~>H2", "H1->H3"}
    h1 = snapshot["hypotheses"]["H1"]
    assert h1["verdict"]["rationale"] == "E1 shows it" and h1["verdict"]["evidence_ids"] == ["E1"]
    assert [lk["evidence_id"] for lk in h1["links"]] == ["E1", "E2"]
    e1 = snapshot["evidence"]["E1"]
    assert e1["columns"] == ["drug", "deaths"] and e1["rows"][0] == ["Pulmorex", 3]
    assert e1["sql"].startswith("SELECT drug") and e1["links"][0]["stance"] == "supports"
    assert snapshot["evidence"]["E2"]["redundant"] is True


def test_typescript_fixture_is_what_python_writes(board: Board) -> None:
    snapshot = stable(board_snapshot(fixture_board(board)))
    if os.environ.get("D2_UPDATE_FIXTURE") == "1":
        FIXTURE.write_text(json.dumps(snapshot, indent=1, ensure_ascii=False) + "\n")
    assert json.loads(FIXTURE.read_text()) == snapshot, (
        "extension/test/fixture.json is stale: D2_UPDATE_FIXTURE=1 pytest "
        "tests/test_snapshot.py")


def test_caps_keep_the_snapshot_small(board: Board) -> None:
    inv = board.start_investigation("Big results", {}, actor="user")
    board.add_hypothesis("many rows", investigation_id=inv.id)
    wide = pd.DataFrame({"n": range(500), "text": ["x" * 1000] * 500})
    for _ in range(5):
        item = board.add_evidence("SELECT *", wide, description="wide")
        board.link(item.id, "H1", "supports", "", actor="collector")
    caps = SnapshotCaps(rows_per_evidence=20, cell_chars=50, total_cells=100)
    snapshot = board_snapshot(board, caps)
    shown = [snapshot["evidence"][f"E{i}"]["rows_shown"] for i in range(1, 6)]
    assert shown == [20, 20, 10, 0, 0]  # 100 cells, two columns
    assert len(snapshot["evidence"]["E1"]["rows"][0][1]) == 50
    assert snapshot["evidence"]["E5"]["sql"] == "SELECT *"  # counts and SQL stay
    assert len(json.dumps(board_snapshot(board))) < 400_000  # the default caps


def test_cells_become_json_values() -> None:
    frame = pd.DataFrame({"when": pd.to_datetime(["2024-01-02"]), "n": pd.array([None],
                          dtype="Int64"), "ok": [True], "x": [1.5], "items": [[1, 2]]})
    assert frame_rows(frame, 5, 100) == [["2024-01-02T00:00:00.000", None, True, 1.5,
                                          "[1, 2]"]]


def test_bad_caps_are_refused() -> None:
    with pytest.raises(ValueError, match="must be >= 0"):
        SnapshotCaps(rows_per_evidence=-1)


def test_chartable_evidence_carries_its_chart_within_the_caps(board: Board) -> None:
    inv = board.start_investigation("Which drug works?", {}, actor="user")
    frame = pd.DataFrame({"drug": ["Pulmorex", "Hydrazol", "Virexa"], "deaths": [3, 9, 5]})
    item = board.add_evidence("SELECT drug, deaths FROM t", frame,
                              description="deaths by drug", investigation_id=inv.id)
    lookup = board.add_evidence("SELECT name FROM p WHERE id = 1",
                                pd.DataFrame({"name": ["Ann"]}), description="who")
    chart = board_snapshot(board)["evidence"][item.id]["chart"]
    assert "vega-lite" in chart["$schema"]
    drawn = [row for rows in chart["datasets"].values() for row in rows]
    assert [row["drug"] for row in drawn] == ["Pulmorex", "Hydrazol", "Virexa"]
    assert board_snapshot(board)["evidence"][lookup.id]["chart"] is None
    assert board_snapshot(board, SnapshotCaps(chart_rows=2))["evidence"][item.id][
        "chart"] is None
    assert board_snapshot(board, SnapshotCaps(total_cells=7))["evidence"][item.id][
        "chart"] is None  # 6 cells of rows leave too little for the chart's data


def test_a_scripted_run_is_labelled_in_the_snapshot_and_by_d2_board_show(board: Board) -> None:
    from click.testing import CliRunner

    from d2_notebook.cli import main

    inv = board.start_investigation("Which drug works?", {}, actor="user")
    board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id)
    assert board_snapshot(board)["scripted"] is False
    board.record_model_call(role="hypothesizer", agent="hypothesizer", model="offline-policy",
                            request={}, response={}, investigation_id=inv.id)
    snapshot = board_snapshot(board)
    assert snapshot["scripted"] is True
    assert snapshot["summary"].startswith("scripted — no language model · ")
    shown = CliRunner().invoke(main, ["board", "show", str(board.path)])
    assert shown.exit_code == 0, shown.output
    assert "*** scripted — no language model ***" in shown.output
    board.record_model_call(role="judge", agent="judge", model="anthropic:claude-sonnet-4-6",
                            request={}, response={}, investigation_id=inv.id)
    assert "scripted" not in CliRunner().invoke(
        main, ["board", "show", str(board.path)]).output


def test_the_snapshot_carries_formatted_sql(board: Board) -> None:
    board.add_evidence("select a, count(*) from t where b = 'x' group by a",
                       pd.DataFrame({"a": [1]}), description="counts")
    assert board_snapshot(board)["evidence"]["E1"]["sql_pretty"] == (
        "SELECT\n  a,\n  COUNT(*)\nFROM t\nWHERE\n  b = 'x'\nGROUP BY\n  a")


def test_snapshot_carries_the_stale_mark_of_a_rechecked_verdict(board: Board) -> None:
    snapshot = board_snapshot(fixture_board(board))
    check = snapshot["hypotheses"]["H1"]["check"]
    assert (check["state"], check["run_id"], check["evidence_ids"]) == ("stale", "R1", ["E1"])
    assert check["text"].startswith(f"Stale since {check['on']} (R1)")
    assert snapshot["hypotheses"]["H3"]["check"] is None
    h1 = next(n for n in snapshot["graph"]["nodes"] if n["id"] == "H1")
    assert "stale" in h1["classes"].split() and "⚠ stale" in h1["label"]
    assert h1["data"]["border"] == "#e65100" and h1["data"]["check"] == "stale"
    assert f"re-checked {check['on']}: 1 stale (H1), 0 confirmed" in snapshot["summary"]
