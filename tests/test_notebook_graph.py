"""The board → graph conversion, the diff and the layout: pure functions on real boards."""

from __future__ import annotations

import time

import pandas as pd

from d2_notebook.board import Board
from d2_notebook.notebook import board_elements, board_markdown, board_svg, diff, style
from d2_notebook.notebook.layout import RULES

FRAME = pd.DataFrame({"age_group": ["65+", "<65"], "deaths": [12, 3]})


def small_board(board: Board) -> None:
    """H1 supported by E1, contradicted by E2; H2 abandoned; H3 refines H1."""
    inv = board.start_investigation("Which drug works?", {}, actor="user")
    h1 = board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id)
    board.add_hypothesis("Hydrazol lowers deaths", investigation_id=inv.id)
    e1 = board.add_evidence("SELECT 1", FRAME, description="deaths by drug")
    e2 = board.add_evidence("SELECT 2", FRAME, description="deaths by severity")
    board.link(e1.id, h1.id, "supports", "fewer deaths", actor="collector-1")
    board.link(e2.id, h1.id, "contradicts", "confounded", actor="collector-1")
    board.set_status(h1.id, "supported", actor="judge", confidence=0.8)
    board.abandon("H2", "off topic", actor="orchestrator")
    board.add_hypothesis("Pulmorex lowers deaths in severe cases", parent_id=h1.id)


def test_statuses_become_classes_and_ids_are_stable(board: Board) -> None:
    small_board(board)
    model = board_elements(board)
    assert list(model.nodes) == ["H1", "H2", "H3", "E1", "E2"]
    assert model.nodes["H1"].classes == "hypothesis supported"
    assert model.nodes["H2"].classes == "hypothesis abandoned"
    assert model.nodes["H3"].classes == "hypothesis proposed"
    assert model.nodes["E1"].classes == "evidence"
    assert model.nodes["H1"].label == "H1 · supported 80%\nPulmorex lowers deaths"
    assert model.nodes["E1"].label == "E1 · 2 rows\ndeaths by drug"
    # Colours from look.json travel in the data: status fill, stance of the first link.
    assert model.nodes["H1"].data["color"] == style.STATUS_COLORS["supported"]
    assert model.nodes["E1"].data["color"] == style.EVIDENCE_COLORS["supports"]
    assert model.nodes["E2"].data["border"] == style.EVIDENCE_BORDERS["contradicts"]
    assert model.edges["E2->H1"].data["color"] == style.EDGE_COLORS["contradicts"]
    assert set(model.edges) == {"H1->H3", "E1->H1", "E2->H1"}
    assert model.edges["E1->H1"].kind == "supports"
    assert model.edges["E2->H1"].classes == "contradicts"
    assert (model.edges["H1->H3"].source, model.edges["H1->H3"].target) == ("H1", "H3")


def test_redundant_evidence_is_dimmed_or_left_out(board: Board) -> None:
    small_board(board)
    board.mark_redundant("E2", "same as E1", actor="reporter")
    shown = board_elements(board, include_redundant=True)
    hidden = board_elements(board, include_redundant=False)
    assert "redundant" in shown.nodes["E2"].classes
    assert "E2" not in hidden.nodes and "E2->H1" not in hidden.edges
    changes = diff(shown, hidden)
    assert changes.removed_nodes == ["E2"] and changes.removed_edges == ["E2->H1"]
    assert hidden.nodes["E1"].position == shown.nodes["E1"].position


def test_diff_reports_additions_and_in_place_updates(board: Board) -> None:
    small_board(board)
    before = board_elements(board)
    board.set_status("H3", "investigating", actor="orchestrator")
    e3 = board.add_evidence("SELECT 3", FRAME, description="severe cases")
    board.link(e3.id, "H3", "supports", "holds", actor="collector-2")
    after = board_elements(board)
    changes = diff(before, after)
    assert [n.id for n in changes.added_nodes] == ["E3"]
    assert [n.id for n in changes.updated_nodes] == ["H3"]
    assert changes.updated_nodes[0].classes == "hypothesis investigating"
    assert [e.id for e in changes.added_edges] == ["E3->H3"]
    assert not changes.removed_nodes and not changes.removed_edges
    assert diff(after, board_elements(board)).empty


def test_positions_are_deterministic_and_nodes_never_move_sideways(board: Board,
                                                                    tmp_path) -> None:
    small_board(board)
    first = {n.id: n.position for n in board_elements(board).nodes.values()}
    with Board.open(tmp_path / "twin.d2board") as twin:
        small_board(twin)
        assert {n.id: n.position for n in board_elements(twin).nodes.values()} == first
    board.add_hypothesis("Solvanir works at 800 mg")
    e3 = board.add_evidence("SELECT 3", FRAME, description="dose")
    board.link(e3.id, "H1", "supports", "more", actor="collector-3")
    board.link("E1", "H4", "contradicts", "no", actor="collector-3")
    later = {n.id: n.position for n in board_elements(board).nodes.values()}
    assert {k: later[k][0] for k in first} == {k: x for k, (x, _) in first.items()}
    assert later["H1"] == first["H1"] and later["E1"] == first["E1"]
    # Rows keep their order; the refinement H3 sits right below its parent H1.
    order = sorted((y, k) for k, (_, y) in later.items() if k.startswith("H"))
    assert [k for _, k in order] == ["H1", "H3", "H2", "H4"]
    assert later["H3"][0] - later["H1"][0] == RULES["indent"]
    # Evidence fills a grid right of its first hypothesis, in board order, column by
    # column (two rows high), so a third evidence moves nothing.
    assert later["E2"][0] == later["E1"][0] and later["E2"][1] > later["E1"][1]
    assert later["E3"][1] == later["E1"][1] and later["E3"][0] > later["E1"][0]
    assert later["H2"] == first["H2"] and later["E2"] == first["E2"]
    assert min(later["E1"][0], later["E3"][0]) > later["H1"][0] + style.HYPOTHESIS_WIDTH / 2


def test_exploration_sits_beside_what_it_suggested_and_loose_evidence_below(
        board: Board) -> None:
    inv = board.start_investigation("Which drug works?", {}, actor="user")
    explored = board.add_evidence("SELECT 0", FRAME, description="death rates overall")
    stray = board.add_evidence("SELECT 9", FRAME, description="a look at nothing")
    board.add_hypothesis("Pulmorex lowers deaths", investigation_id=inv.id,
                         motivated_by=[explored.id])
    model = board_elements(board)
    h1, e1, e2 = (model.nodes[k].position for k in ("H1", "E1", "E2"))
    assert e1[0] > h1[0] and abs(e1[1] - h1[1]) < style.HYPOTHESIS_HEIGHT
    assert model.nodes["E1"].data["stance"] == "context"
    assert model.edges["E1~>H1"].kind == "motivates"
    assert e2[1] > h1[1] + style.HYPOTHESIS_HEIGHT / 2  # nothing to sit beside: below
    assert stray.id == "E2"


def test_labels_are_readable_at_the_views_smallest_zoom() -> None:
    fonts = [float(rule["style"]["font-size"].removesuffix("px"))
             for rule in style.cytoscape_style() if "font-size" in rule["style"]]
    assert min(fonts) == style.LOOK["view"]["smallest_font_px"]
    assert min(fonts) * style.readable_zoom() >= style.LOOK["view"]["min_label_px"] >= 11


def test_static_svg_and_markdown_draw_the_same_graph(board: Board) -> None:
    small_board(board)
    svg = board_svg(board, include_redundant=True)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    for node_id in ("H1", "H2", "H3", "E1", "E2"):
        assert f">{node_id}" in svg
    assert 'stroke-dasharray="4,3"' in svg  # the abandoned hypothesis
    markdown = board_markdown(board)
    assert "| H1 | supported | 80% | Pulmorex lowers deaths | E1 supports, E2 contradicts |" in (
        markdown)


def test_three_hundred_nodes_build_quickly(board: Board) -> None:
    inv = board.start_investigation("Big board", {}, actor="user")
    for i in range(60):
        parent = f"H{i - 19}" if i >= 20 else None
        hyp = board.add_hypothesis(f"hypothesis {i}", parent_id=parent, investigation_id=inv.id)
        for j in range(4):
            item = board.add_evidence(f"SELECT {j}", FRAME, description=f"evidence {j}")
            board.link(item.id, hyp.id, "supports" if j % 2 else "contradicts", "",
                       actor="collector")
    started = time.perf_counter()
    model = board_elements(board)
    svg = board_svg(board)
    elapsed = time.perf_counter() - started
    assert len(model.nodes) == 300 and len(model.edges) == 280
    assert svg.count("<rect") == 300
    print(f"300 nodes: elements + svg in {elapsed * 1000:.1f} ms")


def test_siblings_differing_only_in_a_where_value_get_different_labels(board: Board) -> None:
    inv = board.start_investigation("Does Virexa help?", {}, actor="user")
    hyp = board.add_hypothesis("Virexa helps within comorbidities", investigation_id=inv.id)
    query = ("SELECT avg(died) FILTER (WHERE drug = 'Virexa') - avg(died) FILTER "
             "(WHERE drug = 'Standard care') AS difference, count(*) AS n FROM t "
             "WHERE age >= 65 AND comorbidity = '{}'")
    for comorbidity, difference in (("asthma", -0.205), ("diabetes", 0.091)):
        item = board.add_evidence(query.format(comorbidity),
                                  pd.DataFrame({"difference": [difference], "n": [376]}),
                                  description="Virexa vs standard care within one comorbidity")
        board.link(item.id, hyp.id, "supports", "", actor="collector-1")
    many = board.add_evidence("SELECT * FROM t WHERE comorbidity = 'asthma'", FRAME,
                              description="all asthma rows")
    board.link(many.id, hyp.id, "supports", "", actor="collector-1")
    model = board_elements(board)
    assert model.nodes["E1"].label.startswith("E1 · asthma · −0.205\n")
    assert model.nodes["E2"].label.startswith("E2 · diabetes · 0.091\n")
    assert model.nodes["E1"].data["distinct"] == ["asthma"]
    # No sibling with its description: compared with the evidence beside the same
    # hypothesis (not all of them filter on asthma); two rows have no key number, so
    # the row count stays.
    assert model.nodes["E3"].label.startswith("E3 · asthma · 2 rows\n")


def test_key_numbers_and_filters_from_text() -> None:
    from d2_notebook.notebook.evidence_labels import format_number, key_number, sql_filters

    assert sql_filters("SELECT 1 FROM t WHERE a = 'x' AND b >= 5 AND c IN ('p', 'q')") == (
        "x", "b ≥ 5", "c in (p, q)")
    assert sql_filters("this is not SQL ((") == ()
    assert sql_filters("SELECT 1 FROM t WHERE year = 2020 AND 'x' = kind") == (
        "year = 2020", "x")
    assert key_number(pd.DataFrame({"n": [10], "rate_drug": [0.2], "x": ["a"]})) == 0.2
    assert key_number(pd.DataFrame({"n": [10, 11]})) is None
    assert key_number(pd.DataFrame({"label": ["a"]})) is None
    assert [format_number(v) for v in (-0.205, 0.5, 1234.0, 12.345)] == [
        "−0.205", "0.5", "1,234", "12.35"]


def test_a_scripted_run_says_so_in_every_header(board: Board) -> None:
    from d2_notebook.notebook.static import SCRIPTED_LABEL, board_is_scripted, header_text

    small_board(board)
    assert not board_is_scripted(board)  # no call at all: nothing to label
    board.record_model_call(role="judge", agent="judge", model="offline-policy",
                            request={}, response={})
    assert board_is_scripted(board)
    assert SCRIPTED_LABEL in header_text(board)
    assert SCRIPTED_LABEL in board_markdown(board)
    board.record_model_call(role="judge", agent="judge", model="anthropic:claude-sonnet-4-6",
                            request={}, response={})
    assert not board_is_scripted(board) and SCRIPTED_LABEL not in header_text(board)
