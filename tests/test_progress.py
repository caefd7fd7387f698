"""The progress view: real board events in, concise lines and a status line out."""

from __future__ import annotations

import asyncio

import pandas as pd

from d2_notebook.board import Board
from d2_notebook.cli.progress import (
    ProgressState,
    ProgressView,
    format_cost,
    format_elapsed,
    format_tokens,
)


def _investigate_by_hand(board: Board) -> None:
    """A short investigation written through the Board API, as the team would write it."""
    inv = board.start_investigation("Which treatment is most effective for older patients?")
    board.add_hypothesis("Drug A lowers mortality for patients aged 65+", author="hypothesizer",
                         author_role="hypothesizer", investigation_id=inv.id)
    board.add_hypothesis("Drug B lowers mortality for patients aged 65+", author="hypothesizer",
                         author_role="hypothesizer", investigation_id=inv.id)
    board.add_evidence("SELECT drug, avg(died) FROM t GROUP BY drug",
                       pd.DataFrame({"drug": ["A", "B"], "rate": [0.2, 0.3]}),
                       description="Death rate by drug", author_role="hypothesizer",
                       author="hypothesizer", investigation_id=inv.id)
    board.link("E1", "H1", "supports", "motivated this hypothesis", actor="hypothesizer")
    board.log_event("round.started", {"round": 1}, actor="detective", investigation_id=inv.id)
    board.record_model_call(role="orchestrator", agent="orchestrator", model="m", request={},
                            response={}, input_tokens=1200, output_tokens=300, cost_usd=0.012,
                            investigation_id=inv.id)
    board.abandon("H2", "Drug B is not given to older patients", actor="orchestrator")
    board.set_status("H1", "investigating", actor="orchestrator", reason="dispatched")
    board.add_evidence("SELECT severity, ...", pd.DataFrame({"difference": [-0.1, -0.2]}),
                       description="Death rate vs standard care, per severity",
                       author_role="collector", author="collector-H1", investigation_id=inv.id)
    board.link("E2", "H1", "supports", "lower in 2 of 2 strata", actor="collector-H1")
    board.add_verdict("H1", "supported", 0.85, "E2 supports it within strata", ["E2"],
                      author="judge-H1", round=1)
    board.record_model_call(role="judge", agent="judge-H1", model="m", request={},
                            response=None, error="ModelAPIError: overloaded",
                            investigation_id=inv.id)
    board.log_event("collection.stopped", {"reason": "the call budget (2) is spent"},
                    actor="detective", investigation_id=inv.id)
    board.mark_redundant("E1", "exploration only", actor="reporter")


def test_each_meaningful_event_gets_one_concise_line(board: Board) -> None:
    _investigate_by_hand(board)
    lines = ProgressState().apply(board.events())
    assert lines == [
        "+ H1 Drug A lowers mortality for patients aged 65+",
        "+ H2 Drug B lowers mortality for patients aged 65+",
        "  E1 explored: Death rate by drug (2 rows)",
        "── round 1 ──",
        "– H2 abandoned: Drug B is not given to older patients",
        "→ H1 dispatched to a collector",
        "  E2 supports H1: Death rate vs standard care, per severity — lower in 2 of 2 strata",
        "✔ H1 supported (0.85): E2 supports it within strata",
        "! judge-H1: model call failed: ModelAPIError: overloaded",
        "! collection stopped: the call budget (2) is spent",
        "  E1 marked redundant: exploration only",
    ]


def test_the_status_line_counts_hypotheses_evidence_and_model_use(board: Board) -> None:
    _investigate_by_hand(board)
    state = ProgressState()
    assert state.render_line(0) == ("hypotheses: none yet | 0 evidence | 0 calls, 0 tokens, "
                                    "$0.00 | 0:00")
    state.apply(board.events())
    assert state.render_line(75.4) == ("hypotheses: 1 supported, 1 abandoned | 2 evidence | "
                                       "2 calls, 1.5k tokens, $0.01 | 1:15")


def test_a_refinement_names_its_parent_and_long_lines_are_cut(board: Board) -> None:
    board.add_hypothesis("Drug A helps", author="judge")
    board.add_hypothesis("Drug A helps older patients with asthma " * 5, parent_id="H1",
                         author="judge-H1")
    lines = ProgressState(width=60).apply(board.events())
    assert lines[1].startswith("+ H2 (refines H1) Drug A helps older patients with asthma")
    assert len(lines[1]) == 60 and lines[1].endswith("…")


def test_numbers_read_well() -> None:
    assert [format_tokens(n) for n in (950, 72_509, 1_250_000)] == ["950", "72.5k", "1.25M"]
    assert [format_cost(x) for x in (0.0, 0.0042, 1.5)] == ["$0.00", "$0.0042", "$1.50"]
    assert format_elapsed(3725) == "62:05"


def test_the_view_prints_lines_and_keeps_a_status_line_on_a_terminal(board: Board) -> None:
    _investigate_by_hand(board)
    written: list[str] = []

    def echo(text: str = "", nl: bool = True) -> None:
        written.append(text + ("\n" if nl else ""))

    view = ProgressView(ProgressState(), live_status=True, echo=echo)
    view.refresh()
    view.show(board.events(since=0, limit=1))  # investigation.started: no line
    view.show(board.events(since=1, limit=1))
    view.refresh()
    view.clear()
    assert written[0].startswith("\r\x1b[Khypotheses: none yet")
    # The status line is wiped before a line is printed, then drawn again below it.
    assert written[1:3] == ["\r\x1b[K", "+ H1 Drug A lowers mortality for patients aged 65+\n"]
    assert written[3].startswith("\r\x1b[Khypotheses: 1 proposed | 0 evidence")
    assert written[4:] == ["\r\x1b[K"]


async def test_watch_follows_the_board_until_stopped(board: Board) -> None:
    written: list[str] = []
    view = ProgressView(ProgressState(), live_status=False,
                        echo=lambda text="", nl=True: written.append(text))
    stop = asyncio.Event()
    watcher = asyncio.create_task(view.watch(board, stop, since=board.last_seq(), interval=0.01))
    board.add_hypothesis("Drug A helps", author="hypothesizer")
    await asyncio.sleep(0.05)
    board.add_hypothesis("Drug B helps", author="hypothesizer")
    stop.set()
    await asyncio.wait_for(watcher, 2)
    assert written == ["+ H1 Drug A helps", "+ H2 Drug B helps"]
