"""A board holding several investigations is shown one at a time: the hospital
walk-through (I1) and its follow-up question (I2, reusing two pieces of I1's evidence)
on a real DuckDB file and a real board, through every view (graph, header, snapshot,
static HTML and Markdown, the widget's dropdown, ``d2 board show``, the magic)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from IPython.core.interactiveshell import InteractiveShell

import d2_notebook.notebook as nb
from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.board.scopes import investigation_scope
from d2_notebook.cli import main
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import NotFoundError
from d2_notebook.notebook import show
from d2_notebook.notebook.graph import board_elements
from d2_notebook.notebook.snapshot import board_snapshot
from d2_notebook.notebook.static import summarize, summary_line
from d2_notebook.notebook.style import MIME_TYPE
from d2_notebook.notebook.widget import STARTING, BoardWidget


async def _ask(database: Path, board: Path, question: str, **kwargs: Any) -> None:
    result = await investigate(str(database), question, board=board,
                               model=HospitalWalkthrough().model(), **kwargs)
    assert result.state == "finished"
    result.board.close()


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A hospital DuckDB file and a board holding I1 (the walk-through) and I2 (its
    follow-up question)."""
    folder = tmp_path_factory.mktemp("two")
    database, board = folder / "hospital.duckdb", folder / "two.d2board"
    hospital.create(database, patients=2000).close()
    asyncio.run(_ask(database, board, hospital.QUESTION))
    asyncio.run(_ask(database, board, hospital.FOLLOW_UP_QUESTION, follow_up=True))
    return database, board


@pytest.fixture
def board(two: tuple[Path, Path]):
    with Board.open(two[1], read_only=True) as opened:
        yield opened


def _hypotheses(board: Board, investigation_id: str) -> set[str]:
    return {h.id for h in board.list_hypotheses(investigation_id=investigation_id)}


def _expected_nodes(board: Board, investigation_id: str) -> set[str]:
    """What a view of the investigation holds, from the board's own records: its
    hypotheses, the evidence linked to them, the evidence it reused and its own."""
    own = _hypotheses(board, investigation_id)
    linked = {lk.evidence_id for lk in board.list_links() if lk.hypothesis_id in own}
    reused = {r.evidence_id for r in board.list_reuses(investigation_id)}
    mine = {e.id for e in board.list_evidence(investigation_id=investigation_id)}
    return own | linked | reused | mine


def test_each_investigation_graph_holds_its_own_records_and_marks_reused_evidence(board):
    assert [inv.id for inv in board.list_investigations()] == ["I1", "I2"]
    reused = {r.evidence_id for r in board.list_reuses("I2")}
    assert reused and all(board.get_evidence(e).investigation_id == "I1" for e in reused)
    first = board_elements(board, investigation_id="I1")
    follow = board_elements(board, investigation_id="I2")
    assert set(first.nodes) == _expected_nodes(board, "I1")
    assert set(follow.nodes) == _expected_nodes(board, "I2")
    assert not _hypotheses(board, "I2") & set(first.nodes), "I2's hypotheses leak into I1"
    assert not _hypotheses(board, "I1") & set(follow.nodes), "I1's hypotheses leak into I2"
    assert reused <= set(follow.nodes)
    marked = {n for n, node in follow.nodes.items() if "reused" in node.classes.split()}
    assert marked == reused
    assert not any("reused" in node.classes.split() for node in first.nodes.values()), \
        "I1's own view says nothing of a later follow-up"
    assert all(edge.target in _hypotheses(board, "I2") for edge in follow.edges.values()
               if edge.kind != "refines")
    assert set(board_elements(board).nodes) == set(follow.nodes), "default: the newest"


def test_header_and_summary_count_one_investigation(board):
    for inv_id, other in (("I1", "I2"), ("I2", "I1")):
        summary = summarize(board, inv_id)
        scope = investigation_scope(board, inv_id)
        assert summary.question == board.get_investigation(inv_id).question
        assert summary.investigation_id == inv_id
        assert sum(summary.statuses.values()) == len(_hypotheses(board, inv_id))
        assert summary.evidence == len(scope.evidence)
        spent = sum(s.calls for s in board.model_spend(inv_id))
        assert summary.model_calls == spent > 0
        assert [o.id for o in summary.others] == [other]
        line = summary_line(summary)
        assert f"{spent} model calls" in line
    both = summarize(board, "I1").model_calls + summarize(board, "I2").model_calls
    assert both == board.counts()["model_calls"], "each call counted once, in its own"
    assert summarize(board).investigation_id == "I2"


def test_show_one_investigation_names_the_other(board):
    view = show(board, investigation="I1")
    bundle = view._repr_mimebundle_()
    question = board.get_investigation("I1").question
    plain = bundle["text/plain"]
    assert f"I1 · {question}" in plain
    assert "also on this board: I2 · And for older patients" in plain
    assert "show(board, investigation='I2')" in plain
    snapshot = bundle[MIME_TYPE]
    assert snapshot["investigation"] == "I1"
    assert [o["id"] for o in snapshot["other_investigations"]] == ["I2"]
    assert snapshot["question"] == f"I1 · {question}"
    assert "also on this board: I2" in snapshot["summary"]
    assert set(snapshot["hypotheses"]) == _hypotheses(board, "I1")
    assert {n["id"] for n in snapshot["graph"]["nodes"]} == _expected_nodes(board, "I1")
    assert snapshot["report"] == board.get_investigation("I1").report
    markdown = bundle["text/markdown"]
    assert "| H1 |" in markdown and "| H9 |" not in markdown
    assert "show(board, investigation=&#x27;I2&#x27;)" in bundle["text/html"]
    newest = board_snapshot(board)
    assert newest["investigation"] == "I2"
    assert set(newest["hypotheses"]) == _hypotheses(board, "I2")


def test_a_board_with_one_investigation_shows_as_before(two, tmp_path):
    database, _board = two
    single = tmp_path / "one.d2board"
    asyncio.run(_ask(database, single, hospital.QUESTION))
    with Board.open(single, read_only=True) as opened:
        snapshot = board_snapshot(opened)
        assert snapshot["question"] == hospital.QUESTION
        assert snapshot["other_investigations"] == []
        assert "also on this board" not in snapshot["summary"]
        widget = BoardWidget(opened, fold=False)
        assert widget.selector.layout.display == "none"
        assert _shown_ids(widget) == ({h.id for h in opened.list_hypotheses()}
                                      | {e.id for e in opened.list_evidence()})


def _shown_ids(widget: BoardWidget) -> set[str]:
    """The hypotheses and evidence the widget draws (unfolded)."""
    return {node_id for node_id, node in widget.model.nodes.items()
            if node.kind in ("hypothesis", "evidence")}


def test_the_widget_dropdown_switches_graph_header_and_details(board):
    widget = BoardWidget(board, fold=False)
    assert widget.selector.layout.display is None, "two investigations: the dropdown shows"
    labels = [label for label, _id in widget.selector.options]
    assert labels[0].startswith("I1 · Which treatment") and labels[0].endswith("· finished")
    assert labels[1].startswith("I2 · And for older patients")
    assert widget.selector.value == "I2" and widget.investigation_id == "I2"
    assert _shown_ids(widget) == _expected_nodes(board, "I2")
    assert "I2 · And for older patients" in widget.header.value
    widget.on_node_click({"data": {"id": "H9"}})
    assert "H9" in widget.details.value
    widget.selector.value = "I1"
    assert widget.investigation_id == "I1"
    assert _shown_ids(widget) == _expected_nodes(board, "I1")
    assert set(widget._nodes) == set(widget.model.nodes), "the cytoscape graph follows"
    assert "I1 · Which treatment" in widget.header.value
    assert "also on this board: I2" in widget.header.value
    assert widget.selected is None and "Click a hypothesis" in widget.details.value
    snapshot = show(board)._repr_mimebundle_()[MIME_TYPE]
    assert snapshot["investigation"] == "I2", "a new view starts at the newest"
    widget.selector.value = "I2"
    assert _shown_ids(widget) == _expected_nodes(board, "I2")


def test_a_view_follows_the_dropdown_when_redrawn(board):
    view = show(board, live=True)
    view.widget.selector.value = "I1"
    assert view._repr_mimebundle_()[MIME_TYPE]["investigation"] == "I1"


def test_a_bad_investigation_id_is_one_line_naming_the_ids(board, two):
    message = r"investigation 'I9' is not on this board \(it holds: I1, I2\)"
    with pytest.raises(NotFoundError, match=message + r"; pass one of those as show\("):
        show(board, investigation="I9")
    with pytest.raises(NotFoundError, match=message):
        show(str(two[1]), investigation="I9")
    with pytest.raises(NotFoundError, match=message):
        BoardWidget(board, investigation="I9")
    with pytest.raises(NotFoundError, match=message):
        board_snapshot(board, investigation_id="I9")
    shown = CliRunner().invoke(main, ["board", "show", str(two[1]), "--investigation", "I9"])
    assert shown.exit_code == 1
    assert shown.output.strip().splitlines() == [
        "Error: investigation 'I9' is not on this board (it holds: I1, I2); pass one of "
        "those as --investigation"]


def test_board_show_prints_one_investigation(board, two):
    path = str(two[1])
    newest = CliRunner().invoke(main, ["board", "show", path, "--width", "200"])
    assert newest.exit_code == 0, newest.output
    lines = newest.output.splitlines()
    assert lines[0].startswith("Investigation I2 [finished]: And for older patients")
    assert not any(line.startswith("Investigation I1") for line in lines)
    calls = sum(s.calls for s in board.model_spend("I2"))
    assert f"{len(_hypotheses(board, 'I2'))} hypotheses" in newest.output
    assert f"{calls} model calls" in newest.output
    assert "Also on this board (show one with --investigation ID): I1 [finished]: Which " \
        "treatment" in newest.output
    assert "H1 [" not in newest.output and "H9 [" in newest.output
    first = CliRunner().invoke(main, ["board", "show", path, "--investigation", "I1",
                                      "--width", "200"])
    assert first.exit_code == 0
    assert first.output.startswith("Investigation I1 [finished]: Which treatment")
    assert "H1 [" in first.output and "H9 [" not in first.output
    assert "Also on this board (show one with --investigation ID): I2 [finished]" \
        in first.output


@pytest.fixture
def shell(two, tmp_path, monkeypatch: pytest.MonkeyPatch):
    database, board = two
    copy = tmp_path / "copy.d2board"
    shutil.copy(board, copy)
    monkeypatch.chdir(tmp_path)
    sh = InteractiveShell.instance()
    nb.load_ipython_extension(sh)
    sh.user_ns.update(team=HospitalWalkthrough().model())
    yield sh, database, copy
    sh.user_ns.pop("team", None)


def test_the_magic_live_view_shows_the_investigation_it_runs(shell, monkeypatch):
    sh, database, copy = shell
    seen: list[tuple[str | None, frozenset[str], str]] = []
    real_refresh = BoardWidget.refresh

    def recording_refresh(widget: BoardWidget) -> Any:
        changes = real_refresh(widget)
        seen.append((widget.shown, frozenset(_shown_ids(widget)), widget.header.value))
        return changes

    monkeypatch.setattr(BoardWidget, "refresh", recording_refresh)
    result = sh.run_cell(f"%%investigate --db {database} --board {copy} --follow-up "
                         f"--model team\nAnd for older patients with diabetes?")
    assert result.error_in_exec is None and result.error_before_exec is None
    assert result.result.result.investigation_id == "I3"
    assert seen, "the live widget refreshed"
    assert all(shown in (None, "I3") for shown, _nodes, _header in seen), \
        "the live view never showed an earlier investigation"
    assert seen[0][2] == STARTING
    shown, nodes, header = seen[-1]
    assert shown == "I3" and "I3 · And for older patients with diabetes?" in header
    with Board.open(copy, read_only=True) as opened:
        assert set(nodes) <= _expected_nodes(opened, "I3")
        assert _hypotheses(opened, "I3") <= set(nodes)
    view = sh.magics_manager.registry["Investigate"].last_view
    assert view._repr_mimebundle_()[MIME_TYPE]["investigation"] == "I3"
