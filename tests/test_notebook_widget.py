"""The live widget (a real ipycytoscape widget, in process) and the displayable views."""

from __future__ import annotations

import asyncio
import time

import pandas as pd
import pytest

from d2_notebook.board import Board
from d2_notebook.notebook import BoardView, InvestigationView, human, show
from d2_notebook.notebook.details import frame_html
from d2_notebook.notebook.views import WIDGET_MIME
from d2_notebook.notebook.widget import BoardWidget

FRAME = pd.DataFrame({"drug": ["Pulmorex", "Hydrazol"], "death_rate": [0.08, 0.17]})


@pytest.fixture
def filled(board: Board) -> Board:
    inv = board.start_investigation("Which drug works?", {}, actor="user")
    board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id,
                         rationale="lower death rate")
    evidence = board.add_evidence("SELECT drug, avg(died) AS death_rate FROM t GROUP BY 1",
                                  FRAME, description="death rate by drug")
    board.link(evidence.id, "H1", "supports", "lowest death rate", actor="collector-1")
    return board


def graph_ids(widget: BoardWidget) -> tuple[list[str], list[str]]:
    graph = widget.graph.graph
    return [n.data["id"] for n in graph.nodes], [e.data["id"] for e in graph.edges]


def test_widget_shows_the_board_and_applies_diffs_in_place(filled: Board) -> None:
    widget = BoardWidget(filled)
    assert graph_ids(widget) == (["H1", "E1"], ["E1->H1"])
    h1 = widget.graph.graph.nodes[0]
    assert widget.graph.cytoscape_layout["name"] == "preset"
    assert h1.classes == "hypothesis proposed"
    position = dict(h1.position)
    assert "Which drug works?" in widget.header.value

    filled.set_status("H1", "supported", actor="judge", confidence=0.9)
    filled.add_hypothesis("Pulmorex helps only severe cases", parent_id="H1")
    changes = widget.refresh()
    assert [n.id for n in changes.updated_nodes] == ["H1"]
    assert widget.graph.graph.nodes[0] is h1  # updated in place, not rebuilt
    assert h1.classes == "hypothesis supported" and h1.data["status"] == "supported"
    assert dict(h1.position) == position
    assert graph_ids(widget) == (["H1", "E1", "H2"], ["E1->H1", "H1->H2"])
    assert "1 supported" in widget.header.value


def test_redundant_toggle_hides_and_restores_evidence(filled: Board) -> None:
    filled.mark_redundant("E1", "duplicate", actor="reporter")
    widget = BoardWidget(filled)
    assert "redundant" in widget.graph.graph.nodes[1].classes
    widget.toggle.value = False
    assert graph_ids(widget) == (["H1"], [])
    widget.toggle.value = True
    assert graph_ids(widget) == (["H1", "E1"], ["E1->H1"])


def test_clicking_evidence_shows_sql_stance_and_the_stored_frame(filled: Board) -> None:
    widget = BoardWidget(filled)
    widget.on_node_click({"group": "nodes", "data": {"id": "E1", "label": "E1"},
                          "position": {"x": 0, "y": 0}, "classes": "evidence"})
    panel = widget.details.value
    assert frame_html(filled.evidence_frame("E1")) in panel
    assert "death rate by drug" in panel and "lowest death rate" in panel
    assert "GROUP" in panel and "supports" in panel


def test_clicking_a_hypothesis_shows_verdict_and_linked_evidence(filled: Board) -> None:
    filled.add_verdict("H1", "supported", 0.85, "clearly lower", ["E1"], author="judge-1",
                       round=1)
    widget = BoardWidget(filled)
    widget.on_node_click({"data": {"id": "H1"}})
    panel = widget.details.value
    assert "Pulmorex lowers deaths" in panel and "supported" in panel and "85%" in panel
    assert "clearly lower" in panel and "E1" in panel and "death rate by drug" in panel


def test_follow_picks_up_changes_until_stopped(filled: Board) -> None:
    widget = BoardWidget(filled)

    async def scenario() -> None:
        stop = asyncio.Event()
        follower = asyncio.create_task(widget.follow(stop, interval=0.01))
        await asyncio.sleep(0.05)
        human.add_hypothesis(filled, "Older patients benefit less")
        await asyncio.sleep(0.1)
        assert "H2" in graph_ids(widget)[0]
        stop.set()
        await follower

    asyncio.run(scenario())
    assert widget.seen_seq == filled.last_seq()


def test_board_view_bundles_widget_and_static_fallback(filled: Board) -> None:
    bundle = show(filled)._repr_mimebundle_()
    assert WIDGET_MIME in bundle
    assert "<svg" in bundle["text/html"] and "Which drug works?" in bundle["text/html"]
    assert "| H1 | proposed |" in bundle["text/markdown"]
    static = BoardView(filled, interactive=False)._repr_mimebundle_()
    assert WIDGET_MIME not in static and "<svg" in static["text/html"]


def test_show_refuses_a_path_that_is_not_a_board(tmp_path) -> None:
    from d2_notebook.errors import BoardError

    with pytest.raises(BoardError, match="no board file"):
        show(tmp_path / "missing.d2board")


def test_investigation_view_renders_report_and_escapes_html(filled: Board) -> None:
    class Result:  # the fields InvestigationView reads, as investigate() returns them
        investigation_id, state, stop_reason, board = "I1", "finished", None, filled
        report = "# Findings\n\nPulmorex works. <script>alert(1)</script>"

    bundle = InvestigationView(Result())._repr_mimebundle_()
    assert "<h1>Findings</h1>" in bundle["text/html"]
    assert "<script>" not in bundle["text/html"]
    assert "<svg" in bundle["text/html"] and bundle["text/markdown"].startswith("# Findings")


def test_applying_three_hundred_nodes_to_the_widget(board: Board) -> None:
    inv = board.start_investigation("Big board", {}, actor="user")
    for i in range(60):
        hyp = board.add_hypothesis(f"hypothesis {i}", investigation_id=inv.id)
        for j in range(4):
            item = board.add_evidence(f"SELECT {j}", FRAME, description=f"evidence {j}")
            board.link(item.id, hyp.id, "supports", "", actor="collector")
    started = time.perf_counter()
    widget = BoardWidget(board)
    first = time.perf_counter() - started
    board.set_status("H5", "investigating", actor="orchestrator")
    board.add_hypothesis("one more", investigation_id=inv.id)
    started = time.perf_counter()
    changes = widget.refresh()
    again = time.perf_counter() - started
    assert len(widget.graph.graph.nodes) == 301 and len(changes.added_nodes) == 1
    print(f"300 nodes: first apply {first * 1000:.0f} ms, incremental refresh "
          f"{again * 1000:.1f} ms")
