"""Re-check: a board's evidence re-run on real DuckDB files changed between runs.

Unchanged data leaves every evidence *same* and every verdict confirmed; a change that
reverses one finding makes exactly the verdicts resting on it stale; a dropped column
makes the evidence that reads it *fail* with the reason; analysis evidence is re-run
from its stored call; a re-check killed with SIGKILL is continued by the next one.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from click.testing import CliRunner

from d2_notebook.board import Board, RecheckOutcome, ToolCall, VerdictCheck
from d2_notebook.cli import main
from d2_notebook.data import open_source
from d2_notebook.data.analysis import segment_scan
from d2_notebook.detective.investigate import SOURCE_KEY
from d2_notebook.detective.recheck import recheck_sync
from d2_notebook.detective.recheck.compare import compare_results
from d2_notebook.errors import InvalidRecordError

NORTH = "SELECT region, sum(amount) AS total, count(*) AS n FROM sales WHERE region = 'north' " \
        "GROUP BY region"
SOUTH = "SELECT region, sum(amount) AS total, count(*) AS n FROM sales WHERE region = 'south' " \
        "GROUP BY region"
CHANNELS = "SELECT channel, count(*) AS n FROM sales GROUP BY channel ORDER BY channel"


def _database(path: Path) -> Path:
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE TABLE sales AS SELECT CASE WHEN i % 2 = 0 THEN 'north' "
                "ELSE 'south' END AS region, CASE WHEN i % 3 = 0 THEN 'web' ELSE 'shop' END "
                "AS channel, (i % 7) * 1.5 AS amount FROM range(600) t(i)")
    con.close()
    return path


def _run_sql(board: Board, path: Path, sql: str, description: str, inv: str) -> str:
    with open_source(path) as source:
        result = source.run(sql)
    return board.add_evidence(sql, result.frame, description=description,
                              row_count=result.row_count, investigation_id=inv).id


@pytest.fixture
def investigated(tmp_path: Path) -> tuple[Path, Path]:
    """A DuckDB file and a board whose investigation ran on it: H1 rests on the north's
    total (E1), H2 on the south's (E2), H3 on the channels (E3) and a segment scan (E4)."""
    database = _database(tmp_path / "sales.duckdb")
    board_path = tmp_path / "sales.d2board"
    with Board.open(board_path) as board, open_source(database) as source:
        inv = board.start_investigation("Where do sales come from?", {
            SOURCE_KEY: source.info.to_dict()}).id
        e1 = _run_sql(board, database, NORTH, "north total", inv)
        e2 = _run_sql(board, database, SOUTH, "south total", inv)
        e3 = _run_sql(board, database, CHANNELS, "sales per channel", inv)
        args = {"source": "sales", "metric": "avg(amount)", "dimensions": ["channel"]}
        scan = segment_scan(source, **args)
        e4 = board.add_evidence(scan.sql, scan.frame, description=scan.summary,
                                row_count=scan.row_count, investigation_id=inv).id
        board.record_tool_call(e4, ToolCall("segment_scan", args), actor="collector-1")
        for statement, cited in [("The north sells most", [e1]),
                                 ("The south sells least", [e2]),
                                 ("The shop channel leads", [e3, e4])]:
            hyp = board.add_hypothesis(statement, investigation_id=inv)
            for evidence in cited:
                board.link(evidence, hyp.id, "supports", actor="collector-1")
            board.add_verdict(hyp.id, "supported", 0.8, "as measured", cited, author="judge")
        board.set_investigation_state(inv, "finished", report="done [E1]", actor="reporter")
    return database, board_path


def test_unchanged_data_leaves_every_evidence_same_and_every_verdict_confirmed(
        investigated) -> None:
    database, board_path = investigated
    from d2_notebook import recheck_sync as by_path  # the public API takes a board path

    result = by_path(str(database), board_path)
    assert [r.outcome for r in result.rechecks] == [RecheckOutcome.SAME] * 4
    assert result.stale == () and result.confirmed == ("H1", "H2", "H3")
    with Board.open(board_path, read_only=True) as board:
        assert board.latest_verdict_checks("I1")["H1"].check is VerdictCheck.CONFIRMED


def test_a_reversed_finding_makes_exactly_the_verdicts_resting_on_it_stale(
        investigated) -> None:
    database, board_path = investigated
    con = duckdb.connect(str(database))
    con.execute("UPDATE sales SET amount = amount / 10 WHERE region = 'north'")
    con.close()
    with Board.open(board_path) as board:
        result = recheck_sync(database, board)
        outcomes = {r.evidence_id: r for r in result.rechecks}
        assert outcomes["E1"].outcome is RecheckOutcome.CHANGED
        assert "total[north]" in outcomes["E1"].detail and "->" in outcomes["E1"].detail
        assert outcomes["E2"].outcome is outcomes["E3"].outcome is RecheckOutcome.SAME
        # the channel scan averages every region's amounts, so it moved too
        assert outcomes["E4"].outcome is RecheckOutcome.CHANGED
        assert result.stale == ("H1", "H3") and result.confirmed == ("H2",)
        # Nothing is overwritten: the evidence keeps its rows, the run keeps the new ones.
        old = board.evidence_frame("E1")["total"].iloc[0]
        new = board.recheck_frame(result.run.id, "E1")["total"].iloc[0]
        assert float(new) < float(old) / 5  # amounts cut to a tenth (rounded to DECIMAL)
        events = [e.kind for e in board.events() if e.kind.startswith("recheck.")]
        assert events[0] == "recheck.started" and events[-1] == "recheck.finished"


def test_analysis_evidence_is_rerun_from_its_call(investigated) -> None:
    database, board_path = investigated
    con = duckdb.connect(str(database))
    con.execute("UPDATE sales SET amount = amount + 100 WHERE channel = 'web'")
    con.close()
    with Board.open(board_path) as board:
        result = recheck_sync(database, board)
        scan = next(r for r in result.rechecks if r.evidence_id == "E4")
        assert scan.outcome is RecheckOutcome.CHANGED
        assert "metric[sales.channel, web]" in scan.detail
        assert "H3" in result.stale


def test_a_dropped_column_fails_with_the_reason(investigated) -> None:
    database, board_path = investigated
    con = duckdb.connect(str(database))
    con.execute("ALTER TABLE sales DROP COLUMN channel")
    con.close()
    with Board.open(board_path) as board:
        result = recheck_sync(database, board)
        failed = {r.evidence_id: r for r in result.rechecks
                  if r.outcome is RecheckOutcome.FAILS}
        assert set(failed) == {"E3", "E4"} and "channel" in failed["E3"].detail
        assert result.stale == ("H3",) and result.confirmed == ("H1", "H2")


def test_another_source_is_refused_unless_forced(investigated, tmp_path: Path) -> None:
    _, board_path = investigated
    other = _database(tmp_path / "other.duckdb")
    with Board.open(board_path) as board:
        with pytest.raises(InvalidRecordError, match="pass --force"):
            recheck_sync(other, board)
        assert recheck_sync(other, board, force=True).stale == ()


def test_the_cli_rechecks_and_prints_what_went_stale(investigated) -> None:
    database, board_path = investigated
    con = duckdb.connect(str(database))
    con.execute("DELETE FROM sales WHERE region = 'south' AND amount > 5")
    con.close()
    done = CliRunner().invoke(main, ["board", "recheck", str(database), str(board_path)])
    assert done.exit_code == 0, done.output
    assert "2 stale (H2, H3)" in done.output and "E2 changed: " in done.output
    missing = CliRunner().invoke(main, ["board", "recheck", str(database),
                                        str(board_path.with_name("none.d2board"))])
    assert missing.exit_code == 2 and "no board at" in missing.output


def test_a_recheck_killed_midway_is_continued_by_the_next(tmp_path: Path) -> None:
    database = _database(tmp_path / "sales.duckdb")
    board_path = tmp_path / "many.d2board"
    with Board.open(board_path) as board:
        inv = board.start_investigation("Many queries").id
        for i in range(150):
            sql = (f"SELECT region, sum(amount) + {i} AS total FROM sales, range(300) r(k) "
                   "GROUP BY region ORDER BY region")
            _run_sql(board, database, sql, f"query {i}", inv)
    script = ("import sys\nfrom d2_notebook.board import Board\n"
              "from d2_notebook.detective.recheck import recheck_sync\n"
              "with Board.open(sys.argv[2]) as b:\n    recheck_sync(sys.argv[1], b)\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(database), str(board_path)],
                             cwd=Path(__file__).resolve().parent.parent)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            with Board.open(board_path, read_only=True) as reader:
                runs = reader.list_recheck_runs()
                if runs and len(reader.list_rechecks(runs[0].id)) >= 3:
                    break
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    with Board.open(board_path) as board:
        (run,) = board.list_recheck_runs()
        before = len(board.list_rechecks(run.id))
        assert run.finished_at is None and 3 <= before < 150
        result = recheck_sync(database, board)
        assert result.run.id == run.id and result.run.finished_at is not None
        assert [r.evidence_id for r in result.rechecks] == [f"E{i}" for i in range(1, 151)]
        assert all(r.outcome is RecheckOutcome.SAME for r in result.rechecks)


def test_comparison_ignores_order_and_float_noise_and_names_what_changed() -> None:
    old = pd.DataFrame({"k": ["a", "b"], "v": [0.1 + 0.2, 2.0]})
    assert compare_results(old, 2, pd.DataFrame({"k": ["b", "a"], "v": [2, 0.3]}), 2).same
    changed = compare_results(old, 2, pd.DataFrame({"k": ["a", "b", "c"],
                                                    "v": [0.3, 5.0, 1.0]}), 3)
    assert not changed.same
    assert changed.detail == ("rows 2 -> 3; 2 row(s) added, 1 removed; v[b] 2 -> 5")
    renamed = compare_results(old, 2, old.rename(columns={"v": "w"}), 2)
    assert renamed.detail == "columns k, v -> k, w"
    missing = pd.DataFrame({"k": ["a"], "v": [None]})
    assert compare_results(missing, 1, pd.DataFrame({"k": ["a"], "v": [float("nan")]}),
                           1).same


def test_a_team_run_stores_its_tool_calls_and_rechecks_clean_on_the_same_data(
        tmp_path: Path) -> None:
    from d2_notebook import investigate_sync
    from d2_notebook.datasets import hospital
    from d2_notebook.detective.analysis_tools import analysis_tool_of
    from d2_notebook.detective.policies.naive import NaivePolicy

    database = tmp_path / "hospital.duckdb"
    hospital.create(database, patients=1500).close()
    board_path = tmp_path / "team.d2board"
    investigate_sync(str(database), hospital.QUESTION, board=board_path,
                     model=NaivePolicy().model())
    with Board.open(board_path) as board:
        analysis = [e for e in board.list_evidence() if analysis_tool_of(e) is not None]
        assert analysis and all(board.tool_call_of(e.id) is not None for e in analysis)
        result = recheck_sync(str(database), board)
        assert {r.outcome for r in result.rechecks} == {RecheckOutcome.SAME}
        assert result.stale == () and result.confirmed and not result.not_rechecked


def test_board_show_and_the_exported_report_say_which_verdicts_are_stale(
        investigated, tmp_path: Path) -> None:
    database, board_path = investigated
    con = duckdb.connect(str(database))
    con.execute("UPDATE sales SET amount = amount * 3 WHERE region = 'south'")
    con.close()
    recheck_sync(str(database), board_path)
    shown = CliRunner().invoke(main, ["board", "show", str(board_path)])
    assert shown.exit_code == 0, shown.output
    assert "re-checked on" in shown.output and "stale verdict(s) (H2, H3)" in shown.output
    assert "STALE since" in shown.output and "confirmed on" in shown.output
    report = tmp_path / "r.html"
    done = CliRunner().invoke(main, ["board", "export", str(board_path), "--html",
                                     str(report)])
    assert done.exit_code == 0, done.output
    assert "Stale since" in report.read_text() and "H2, H3" in report.read_text()


def _analysis_board(tmp_path: Path, *, tool_call: ToolCall | None) -> tuple[Path, Path]:
    """A finished investigation whose H1 rests on a segment scan (E1) and H2 on a query
    (E2); the scan's call is stored only when ``tool_call`` is given."""
    database = _database(tmp_path / "sales.duckdb")
    board_path = tmp_path / "scan.d2board"
    with Board.open(board_path) as board, open_source(database) as source:
        inv = board.start_investigation("Which channel sells?", {
            SOURCE_KEY: source.info.to_dict()}).id
        scan = segment_scan(source, source="sales", metric="avg(amount)",
                            dimensions=["channel"])
        e1 = board.add_evidence(scan.sql, scan.frame, description=scan.summary,
                                row_count=scan.row_count, investigation_id=inv).id
        if tool_call is not None:
            board.record_tool_call(e1, tool_call, actor="collector-1")
        e2 = _run_sql(board, database, CHANNELS, "sales per channel", inv)
        for statement, cited in [("The web sells more", e1), ("Shops sell most", e2)]:
            hyp = board.add_hypothesis(statement, investigation_id=inv)
            board.link(cited, hyp.id, "supports", actor="collector-1")
            board.add_verdict(hyp.id, "supported", 0.8, "as measured", [cited],
                              author="judge")
        board.set_investigation_state(inv, "finished", report="done [E1]", actor="reporter")
    return database, board_path


@pytest.mark.parametrize("change", [
    None, "UPDATE sales SET amount = amount + 100 WHERE channel = 'web'",
    "ALTER TABLE sales DROP COLUMN amount"], ids=["unchanged", "changed", "dropped"])
def test_analysis_evidence_recorded_before_tool_calls_is_unchecked_never_same_or_failing(
        tmp_path: Path, change: str | None) -> None:
    database, board_path = _analysis_board(tmp_path, tool_call=None)
    if change is not None:
        con = duckdb.connect(str(database))
        con.execute(change)
        con.close()
    with Board.open(board_path) as board:
        result = recheck_sync(database, board, rejudge=True, model=_NoModel())
        scan = result.rechecks[0]
        assert scan.evidence_id == "E1" and scan.outcome is RecheckOutcome.UNCHECKED
        assert "recorded before tool calls were stored" in scan.detail
        assert "investigate again" in scan.detail and scan.row_count is None
        assert board.recheck_frame(result.run.id, "E1") is None
        # its verdict is neither stale nor confirmed: listed as not re-checked
        assert result.not_rechecked == ("H1",)
        assert "H1" not in result.stale + result.confirmed
        assert "1 not re-checked" in result.summary()
        assert result.rejudge.rejudges == ()  # and it is not sent to a judge


def test_a_stored_call_this_version_cannot_replay_is_unchecked(tmp_path: Path) -> None:
    database, board_path = _analysis_board(tmp_path, tool_call=ToolCall(
        "segment_scan", {"source": "sales", "metric": "avg(amount)",
                         "dimensions": ["channel"], "retired_option": 3}))
    with Board.open(board_path) as board:
        board.record_tool_call("E2", ToolCall("gone_tool", {}), actor="test")
        result = recheck_sync(database, board)
        outcomes = {r.evidence_id: r for r in result.rechecks}
        assert outcomes["E1"].outcome is RecheckOutcome.UNCHECKED
        assert "no longer fits the tool" in outcomes["E1"].detail
        assert outcomes["E2"].outcome is RecheckOutcome.UNCHECKED
        assert "'gone_tool' is not in this version" in outcomes["E2"].detail


class _NoModel:
    """A re-judge model that must never be asked."""

    name = "no-model"

    async def request(self, request):
        raise AssertionError(f"{request.agent} asked a model")
