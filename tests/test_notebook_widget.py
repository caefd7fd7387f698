"""The live widget (a real ipycytoscape widget, in process) and the displayable views."""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import Counter
from typing import Any, ClassVar

import pandas as pd
import pytest
from comm.base_comm import BaseComm

from d2_notebook.board import Board
from d2_notebook.notebook import BoardView, InvestigationView, human, show, style
from d2_notebook.notebook.details import frame_html
from d2_notebook.notebook.style import MIME_TYPE
from d2_notebook.notebook.views import WIDGET_MIME
from d2_notebook.notebook.widget import ASSUMED_WIDTH_PX, BoardWidget

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


def shown_ids(widget: BoardWidget) -> set[str]:
    """The nodes drawn: not hidden under a fold, not a fold whose evidence is shown."""
    return {n.data["id"] for n in widget.graph.graph.nodes
            if not {"folded", "unfolded"} & set(n.classes.split())}


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


def test_clicking_chartable_evidence_shows_its_chart_drawn_from_the_stored_rows(
        filled: Board) -> None:
    widget = BoardWidget(filled)
    widget.on_node_click({"data": {"id": "E1"}})
    panel = widget.details.value
    assert "<div class='d2-chart'" in panel and "<svg" in panel
    assert "Pulmorex" in panel.split("<div class='d2-chart'")[1].split("</svg>")[0]


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


def test_board_view_bundles_snapshot_widget_and_static_fallback(filled: Board) -> None:
    bundle = show(filled)._repr_mimebundle_()
    assert WIDGET_MIME not in bundle  # a saved notebook keeps no dead widget
    snapshot = bundle[MIME_TYPE]
    assert json.loads(json.dumps(snapshot)) == snapshot  # plain JSON
    assert [n["id"] for n in snapshot["graph"]["nodes"]] == ["H1", "E1"]
    assert snapshot["evidence"]["E1"]["rows"] == [["Pulmorex", 0.08], ["Hydrazol", 0.17]]
    assert "<svg" in bundle["text/html"] and "Which drug works?" in bundle["text/html"]
    assert "| H1 | proposed |" in bundle["text/markdown"]
    live = show(filled, live=True)._repr_mimebundle_()
    assert WIDGET_MIME in live and MIME_TYPE in live
    static = BoardView(filled, interactive=False)._repr_mimebundle_()
    assert WIDGET_MIME not in static and MIME_TYPE not in static
    assert "<svg" in static["text/html"]


def test_show_refuses_a_path_that_is_not_a_board(tmp_path) -> None:
    from d2_notebook.errors import BoardError

    with pytest.raises(BoardError, match="no board file"):
        show(tmp_path / "missing.d2board")


def test_investigation_view_renders_report_and_escapes_html(filled: Board) -> None:
    class Result:  # the fields InvestigationView reads, as investigate() returns them
        investigation_id, state, stop_reason, board = "I1", "finished", None, filled
        report = "# Findings\n\nPulmorex works. <script>alert(1)</script>"

    bundle = InvestigationView(Result())._repr_mimebundle_()
    assert bundle[MIME_TYPE]["graph"]["nodes"][0]["id"] == "H1"
    assert MIME_TYPE not in InvestigationView(Result(), show_graph=False)._repr_mimebundle_()
    assert "<h1>Findings</h1>" in bundle["text/html"]
    assert "<script>" not in bundle["text/html"]
    assert "<svg" in bundle["text/html"] and bundle["text/markdown"].startswith("# Findings")


def test_investigation_view_shows_the_charts_of_the_evidence_its_report_cites(
        filled: Board, tmp_path) -> None:
    import nbformat
    from nbconvert import HTMLExporter

    class Result:
        investigation_id, state, stop_reason, board = "I1", "finished", None, filled
        report = "Pulmorex has the lowest death rate, 0.08 [E1]."

    bundle = InvestigationView(Result(), show_graph=False)._repr_mimebundle_()
    html = bundle["text/html"]
    assert "Charts of the cited evidence" in html
    chart = html.split("Charts of the cited evidence")[1]
    assert "<svg" in chart and "Pulmorex" in chart and "Hydrazol" in chart
    # A saved notebook converted to HTML (nbconvert) keeps the chart: an SVG, no script.
    cell = nbformat.v4.new_code_cell("view", execution_count=1, outputs=[
        nbformat.v4.new_output("display_data", data={"text/html": html})])
    page, _ = HTMLExporter().from_notebook_node(nbformat.v4.new_notebook(cells=[cell]))
    converted = page.split("Charts of the cited evidence")[1]
    assert "<svg" in converted and "Hydrazol" in converted


def test_applying_three_hundred_nodes_to_the_widget(board: Board) -> None:
    inv = board.start_investigation("Big board", {}, actor="user")
    for i in range(60):
        hyp = board.add_hypothesis(f"hypothesis {i}", investigation_id=inv.id)
        for j in range(4):
            item = board.add_evidence(f"SELECT {j}", FRAME, description=f"evidence {j}")
            board.link(item.id, hyp.id, "supports", "", actor="collector")
    started = time.perf_counter()
    widget = BoardWidget(board, fold=False)
    first = time.perf_counter() - started
    board.set_status("H5", "investigating", actor="orchestrator")
    board.add_hypothesis("one more", investigation_id=inv.id)
    started = time.perf_counter()
    changes = widget.refresh()
    again = time.perf_counter() - started
    assert len(shown_ids(widget)) == 301 and len(changes.added_nodes) == 1
    print(f"300 nodes: first apply {first * 1000:.0f} ms, incremental refresh "
          f"{again * 1000:.1f} ms")


class CountingComm(BaseComm):
    """A real comm (ipywidgets' own base class) that records every message it would
    send to the frontend instead of sending it."""

    sent: ClassVar[Counter[str]] = Counter()

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                    buffers: Any = None, **keys: Any) -> None:
        kind = msg_type if msg_type != "comm_msg" else f"comm_msg:{(data or {}).get('method')}"
        CountingComm.sent[kind] += 1


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every widget made in the test talks through a :class:`CountingComm`."""
    import comm

    CountingComm.sent = Counter()
    monkeypatch.setattr(comm, "create_comm", lambda **kw: CountingComm(**kw))
    return CountingComm.sent


def big_board(board: Board, hypotheses: int = 50, evidence: int = 300) -> None:
    inv = board.start_investigation("Big board", {}, actor="user")
    for i in range(hypotheses):
        board.add_hypothesis(f"hypothesis {i}", investigation_id=inv.id,
                             parent_id=f"H{i - 9}" if i >= 10 else None)
    for j in range(evidence):
        item = board.add_evidence(f"SELECT {j}", FRAME, description=f"evidence {j}")
        board.link(item.id, f"H{j % hypotheses + 1}", "supports" if j % 3 else "contradicts",
                   "", actor="collector")


def test_an_update_of_a_big_folded_board_costs_a_few_messages(board: Board,
                                                               counted: Counter[str]) -> None:
    """One collector step on a 350-node board: the new evidence joins its hypothesis's
    fold (hidden under it), the fold and the hypothesis change in place; nothing moves."""
    big_board(board)
    widget = BoardWidget(board)
    assert len(shown_ids(widget)) == 100  # 50 hypotheses, 50 folds
    counted.clear()
    item = board.add_evidence("SELECT 1", FRAME, description="one more")
    board.link(item.id, "H7", "supports", "holds", actor="collector")
    board.set_status("H7", "supported", actor="judge", confidence=0.7)
    changes = widget.refresh()
    assert [n.id for n in changes.added_nodes] == ["E301"] and changes.removed_nodes == []
    assert "folded" in changes.added_nodes[0].classes
    assert sorted(n.id for n in changes.updated_nodes) == ["H7", "fold:H7"]
    fold = {n.data["id"]: n for n in widget.graph.graph.nodes}["fold:H7"]
    assert fold.data["label"].startswith("▸ 7 evidence")
    messages = sum(counted.values())
    print(f"messages for one update on a folded 350-node board: {messages} {dict(counted)}")
    assert counted["comm_open"] == 2 and counted["comm_msg:update"] <= 5
    counted.clear()
    assert widget.refresh().empty and sum(counted.values()) <= 1  # the header at most


def test_status_filter_hides_hypotheses_and_their_evidence(filled: Board) -> None:
    filled.add_hypothesis("Hydrazol lowers deaths")
    filled.set_status("H2", "contradicted", actor="judge", confidence=0.8)
    widget = BoardWidget(filled)
    widget.status_filter["proposed"].value = False
    assert graph_ids(widget) == (["H2"], [])  # E1 bore only on the hidden H1
    widget.status_filter["proposed"].value = True
    assert sorted(graph_ids(widget)[0]) == ["E1", "H1", "H2"]


def test_hover_text_goes_under_the_graph_not_over_it(filled: Board) -> None:
    widget = BoardWidget(filled)
    # ipycytoscape opens data[tooltip_source] on a click only, never on hover.
    assert widget.graph.tooltip_source == "details"
    widget.on_hover({"data": {"id": "E1", "hover": "E1 (2 rows) death rate <by> drug"}})
    assert "death rate &lt;by&gt; drug" in widget.hover.value
    assert "supports" in widget.legend.value and "supported" in widget.legend.value


def test_a_tall_board_folds_its_evidence_and_fits_the_width_readably(board: Board) -> None:
    big_board(board)
    widget = BoardWidget(board)
    view = widget.graph.cytoscape_layout
    arranged = widget.arrangement
    assert view["name"] == "preset" and view["fit"] is False
    assert view["zoom"] == arranged.zoom and view["pan"] == {"x": 24, "y": 24}
    assert arranged is not None and len(arranged.folded) == 50
    # fit never zooms past the arranged zoom, which keeps 12 px labels >= 11 px ...
    assert widget.graph.max_zoom == arranged.zoom
    assert arranged.zoom * style.LOOK["view"]["smallest_font_px"] >= 11
    # ... and at that zoom every node is inside the assumed width and the area's height.
    padding = style.LOOK["view"]["padding"]
    right = max(n.position[0] + n.data["width"] / 2 for n in widget.model.nodes.values())
    bottom = max(n.position[1] + n.data["height"] / 2 for n in widget.model.nodes.values())
    assert right * arranged.zoom + 2 * padding <= ASSUMED_WIDTH_PX
    assert bottom * arranged.zoom + 2 * padding <= arranged.height_px + 1
    assert widget.graph.layout.height == f"{arranged.height_px}px"
    fold = {n.data["id"]: n for n in widget.graph.graph.nodes}["fold:H3"]
    assert fold.data["label"] == "▸ 6 evidence\n4 supports · 2 contradicts"
    assert "E3 · " in fold.data["details"]  # a click while the kernel is busy lists them


def test_a_click_on_a_fold_unfolds_it_and_the_switch_unfolds_all(board: Board) -> None:
    big_board(board)
    widget = BoardWidget(board)
    before = graph_ids(widget)[0]
    widget.on_node_click({"data": {"id": "fold:H3"}})
    ids = shown_ids(widget)
    assert "fold:H3" not in ids and {"E3", "E53", "E103"} <= ids and "fold:H4" in ids
    assert "E4" not in ids
    # Nothing left the node list (the browser would re-create every node after it).
    assert graph_ids(widget)[0][:len(before)] == before
    widget.fold.value = False
    ids = shown_ids(widget)
    assert not any(i.startswith("fold:") for i in ids) and len(ids) == 350
    right = max(n.position[0] + n.data["width"] / 2 for n in widget.model.nodes.values())
    assert right * widget.arrangement.zoom + 48 <= ASSUMED_WIDTH_PX  # rows grow downwards


def test_a_small_board_is_not_folded(filled: Board) -> None:
    widget = BoardWidget(filled)
    assert widget.arrangement.folded == () and "E1" in shown_ids(widget)


def test_each_node_holds_its_panel_so_a_click_needs_no_kernel(filled: Board) -> None:
    wide = pd.DataFrame({"n": range(30), "rate": [i / 30 for i in range(30)]})
    long = filled.add_evidence("select n, rate from t where comorbidity = 'asthma'", wide,
                               description="rates")
    filled.link(long.id, "H1", "supports", "", actor="collector-1")
    widget = BoardWidget(filled)
    nodes = {n.data["id"]: n for n in widget.graph.graph.nodes}
    assert widget.graph.tooltip_source == "details"
    e1 = nodes["E1"].data["details"]
    assert "death_rate" in e1 and "Pulmorex" in e1 and "<table" in e1
    assert "overflow-x:auto" in e1  # wide tables scroll sideways
    assert "GROUP" in e1 and "stored rows" not in e1
    e2 = nodes["E2"].data["details"]
    assert "First 20 of 30 stored rows" in e2 and "evidence_frame('E2')" in e2
    assert e2.count("<tr") == 21  # header + the 20 synced rows
    table = e2[e2.index("<table"):]
    assert "\n" not in table  # ipycytoscape turns line breaks into <br>
    assert "Status:" in nodes["H1"].data["details"]


def test_wheel_scrolls_the_notebook_until_zoom_is_asked_for(filled: Board) -> None:
    widget = BoardWidget(filled)
    assert widget.graph.user_zooming_enabled is False and widget.wheel_zoom.value is False
    # Linked in the browser (jslink), so the checkbox works while the kernel is busy.
    assert widget.wheel_link.source == (widget.wheel_zoom, "value")
    assert widget.wheel_link.target == (widget.graph, "user_zooming_enabled")


def test_status_filter_lays_out_again_and_clears_a_stale_selection(filled: Board) -> None:
    filled.add_hypothesis("Hydrazol lowers deaths")
    filled.set_status("H2", "contradicted", actor="judge", confidence=0.8)
    widget = BoardWidget(filled)
    top = {n.data["id"]: dict(n.position) for n in widget.graph.graph.nodes}["H1"]
    widget.on_node_click({"data": {"id": "E1"}})
    assert "death_rate" in widget.details.value
    widget.status_filter["proposed"].value = False
    h2 = {n.data["id"]: dict(n.position) for n in widget.graph.graph.nodes}["H2"]
    assert h2 == top  # moved up into the freed row: no hole
    assert widget.selected is None and "Click a hypothesis" in widget.details.value


def test_exploration_edges_are_hidden_until_asked_for(board: Board) -> None:
    inv = board.start_investigation("q", {}, actor="user")
    look = board.add_evidence("SELECT 1", FRAME, description="a first look")
    board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id,
                         motivated_by=[look.id])
    widget = BoardWidget(board)
    assert graph_ids(widget)[1] == []
    widget.exploration.value = True
    assert graph_ids(widget)[1] == ["E1~>H1"]


def test_the_graph_area_grows_with_the_board_to_show_every_row(board: Board) -> None:
    inv = board.start_investigation("q", {}, actor="user")
    for i in range(12):
        board.add_hypothesis(f"hypothesis {i}", investigation_id=inv.id)
    widget = BoardWidget(board)
    grown = widget.arrangement.height_px
    assert widget.graph.layout.height == f"{grown}px"
    # 12 rows of 74 px, 30 apart, at zoom 1 (the graph is narrow), plus the padding.
    assert widget.arrangement.zoom == 1.0
    assert grown == math.ceil(12 * 74 + 11 * 30 + 48)
    assert widget.graph.cytoscape_layout["zoom"] == 1.0  # all of it, readable
    fixed = BoardWidget(board, height="500px")
    assert fixed.graph.layout.height == "500px"
