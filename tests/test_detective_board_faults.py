"""Board faults during a run: a branch that cannot start, a tool whose second write
fails. The run stops as a fault the user sees (never a tool error for the model), no
record is half-written, every hypothesis is examined or said not to be, and the run
resumes. Faults are injected with SQLite's own mechanisms (triggers that refuse a write,
a second connection holding the lock)."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import duckdb
import pytest

from d2_notebook import investigate
from d2_notebook.board import Board, HypothesisStatus
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.scheduler import BranchScheduler, BranchStartError
from d2_notebook.detective.tools import Toolset, tool
from d2_notebook.errors import BoardError, NotFoundError
from d2_notebook.llm import ToolCallPart

QUESTION = hospital.QUESTION


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


def _inject(board_path: Path, sql: str) -> None:
    """Install (or remove) a fault on the board file with a second connection."""
    with sqlite3.connect(board_path) as conn:
        conn.execute(sql)


def _fresh_board(board_path: Path) -> None:
    """A board with its schema, so a trigger can be installed before the run."""
    Board.open(board_path).close()


# --- the queue itself ----------------------------------------------------------------


async def test_a_branch_that_cannot_start_stays_queued_and_idle_returns_with_the_fault():
    examined: list[str] = []

    async def branch(hypothesis_id: str) -> None:
        await asyncio.sleep(0.01)
        examined.append(hypothesis_id)

    def begin(hypothesis_id: str) -> bool:
        if hypothesis_id == "H2":
            raise BoardError("cannot write to board: database is locked")
        return True

    scheduler = BranchScheduler(1, branch, begin)
    scheduler.offer("H1", 1)
    scheduler.offer("H2", 1)  # waits for the slot; its start fails when H1 ends
    scheduler.offer("H3", 1)
    with pytest.raises(BranchStartError, match=r"H2.*locked.*--resume"):
        await asyncio.wait_for(scheduler.idle(), 5)  # returns: never hangs
    assert examined == ["H1"]
    assert scheduler.waiting == ["H2", "H3"], "nothing left the queue unexamined"
    with pytest.raises(BranchStartError):  # asked again: the same fault, at once
        await asyncio.wait_for(scheduler.idle(), 1)


async def test_a_start_failing_inside_offer_raises_the_fault_to_the_writer():
    def begin(hypothesis_id: str) -> bool:
        raise BoardError("database or disk is full")

    async def branch(hypothesis_id: str) -> None:
        raise AssertionError("never started")

    scheduler = BranchScheduler(2, branch, begin)
    with pytest.raises(BranchStartError, match=r"H1.*full"):
        scheduler.offer("H1", 1)
    assert scheduler.waiting == ["H1"] and scheduler.stopped
    with pytest.raises(BranchStartError):
        await asyncio.wait_for(scheduler.idle(), 1)


async def test_idle_has_a_bound_when_asked():
    async def branch(hypothesis_id: str) -> None:
        await asyncio.sleep(10)

    scheduler = BranchScheduler(1, branch, lambda _h: True)
    scheduler.offer("H1", 1)
    with pytest.raises(TimeoutError):
        await scheduler.idle(timeout=0.05)
    await scheduler.cancel()


# --- the tool layer -------------------------------------------------------------------


async def test_only_the_models_mistakes_come_back_as_tool_errors():
    async def unknown_id(args):
        raise NotFoundError("hypothesis 'H9' is not on this board")

    async def locked(args):
        raise BoardError("cannot write to board 'b.d2board': database is locked")

    async def broken(args):
        raise sqlite3.OperationalError("disk I/O error")

    toolset = Toolset([tool("mistake", "", {}, unknown_id), tool("locked", "", {}, locked),
                       tool("broken", "", {}, broken)])
    result = await toolset.call(ToolCallPart("c1", "mistake", {}))
    assert result.is_error and "H9" in result.content
    with pytest.raises(BoardError, match="locked"):
        await toolset.call(ToolCallPart("c2", "locked", {}))
    with pytest.raises(sqlite3.OperationalError):
        await toolset.call(ToolCallPart("c3", "broken", {}))


# --- whole runs ------------------------------------------------------------------------


async def test_a_branch_that_cannot_start_fails_the_run_and_resume_examines_it(con, board_path):
    _fresh_board(board_path)
    _inject(board_path, "CREATE TRIGGER refuse_start BEFORE UPDATE OF status ON hypotheses "
            "WHEN NEW.id = 'H2' AND NEW.status = 'investigating' "
            "BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END")
    with pytest.raises(BranchStartError, match=r"H2.*injected"):
        await asyncio.wait_for(investigate(con, QUESTION, board=board_path,
                                           model=HospitalWalkthrough().model()), 60)
    with Board.open(board_path) as board:
        investigation = board.get_investigation("I1")
        assert investigation.state.value == "failed" and "H2" in investigation.error
        assert board.get_hypothesis("H2").status is HypothesisStatus.PROPOSED
        stopped = board.events(kinds=["collection.stopped"])
        assert stopped and "H2" in stopped[-1].payload["not_examined"]
        assert "injected" in stopped[-1].payload["reason"]
        tool_errors = [m for c in board.list_model_calls(agent="hypothesizer")
                       for m in c.request["messages"]
                       if m.get("role") == "tool" and m.get("is_error")]
        assert not tool_errors, "the fault never reached the model as its mistake"
    _inject(board_path, "DROP TRIGGER refuse_start")
    result = await investigate(con, None, board=board_path, resume=True,
                               model=HospitalWalkthrough().model())
    assert result.state == "finished"
    assert result.board.get_hypothesis("H2").status.is_settled
    assert all(h.status.is_settled for h in result.board.list_hypotheses())


async def test_evidence_is_never_left_without_its_link(con, board_path):
    _fresh_board(board_path)
    _inject(board_path, "CREATE TRIGGER refuse_link BEFORE INSERT ON links "
            "WHEN (SELECT count(*) FROM links) >= 2 "
            "BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END")
    with pytest.raises(sqlite3.Error, match="injected"):
        await asyncio.wait_for(investigate(con, QUESTION, board=board_path,
                                           model=HospitalWalkthrough().model()), 60)
    with Board.open(board_path) as board:
        assert board.get_investigation("I1").state.value == "failed"
        linked = {link.evidence_id for link in board.list_links()}
        motivating = {e for h in board.list_hypotheses() for e in h.motivated_by}
        collected = {e.id for e in board.list_evidence() if e.author_role == "collector"}
        assert collected and collected <= linked | motivating, "no half-written tool call"
    _inject(board_path, "DROP TRIGGER refuse_link")
    result = await investigate(con, None, board=board_path, resume=True,
                               model=HospitalWalkthrough().model())
    assert result.state == "finished"


class ThinkingHypothesizer:
    """The hypothesizer adds H1, then thinks forever; H1's collector meets a board that
    refuses its evidence."""

    def __init__(self) -> None:
        self.thinking = asyncio.Event()

    async def __call__(self, request):
        from d2_notebook.llm.offline import tool_call

        first = len(request.messages) == 1
        if request.role == "hypothesizer":
            if first:
                return tool_call("add_hypothesis", {"statement": "Pulmorex lowers deaths",
                                                    "rationale": "lowest death rate"})
            self.thinking.set()
            await asyncio.Event().wait()
        if request.role == "collector":
            if first:
                await self.thinking.wait()
                return tool_call("run_sql", {"sql": "SELECT count(*) AS n FROM patients"})
            return tool_call("record_evidence", {"query_id": "Q1", "description": "count",
                                                 "stance": "supports", "reading": "many"})
        raise AssertionError(f"unexpected call for {request.role}")


async def test_a_branch_fault_stops_the_run_at_once_while_another_role_thinks(con, board_path):
    from d2_notebook.llm.offline import FunctionModel

    _fresh_board(board_path)
    _inject(board_path, "CREATE TRIGGER refuse_evidence BEFORE INSERT ON evidence "
            "BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END")
    model = FunctionModel(ThinkingHypothesizer())
    with pytest.raises(sqlite3.Error, match="injected"):
        await asyncio.wait_for(investigate(con, QUESTION, board=board_path, model=model), 20)
    with Board.open(board_path) as board:
        assert board.get_investigation("I1").state.value == "failed"
        assert board.list_evidence() == []


class FaultAtFirstJudge(HospitalWalkthrough):
    """The walkthrough; the board starts refusing writes when the first judge is asked
    (``fault`` runs on the board's connection), and the run goes on until it notices."""

    def __init__(self, board: Board, fault) -> None:
        super().__init__()
        self.board = board
        self.fault = fault
        self.struck = False

    def __call__(self, request):  # type: ignore[override]
        if request.role == "judge" and not self.struck:
            self.struck = True
            self.fault(self.board._conn)
        return super().__call__(request)


def _fill_disk(conn: sqlite3.Connection) -> None:
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def _free_disk(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA max_page_count = 1073741823")


def _make_read_only(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA query_only = ON")


def _make_writable(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA query_only = OFF")


@pytest.mark.parametrize(("fault", "cure", "named"), [(_fill_disk, _free_disk, "full"),
                                                     (_make_read_only, _make_writable,
                                                      "read-only")])
async def test_a_board_that_stops_taking_writes_stops_the_run_cleanly_and_it_resumes(
        con, board_path, fault, cure, named):
    board = Board.open(board_path)
    try:
        with pytest.raises(BoardError, match=named):
            await asyncio.wait_for(investigate(con, QUESTION, board=board,
                                               model=FaultAtFirstJudge(board, fault).model()),
                                   60)
        cure(board._conn)
        linked = {link.evidence_id for link in board.list_links()}
        motivating = {e for h in board.list_hypotheses() for e in h.motivated_by}
        assert {e.id for e in board.list_evidence()} <= linked | motivating
        verdicts = {v.hypothesis_id for v in board.list_verdicts()}
        assert all(h.status.is_settled == (h.id in verdicts) or
                   h.status is HypothesisStatus.ABANDONED for h in board.list_hypotheses())
        result = await investigate(con, None, board=board, resume=True,
                                   model=HospitalWalkthrough().model())
        assert result.state == "finished"
        assert all(h.status.is_settled for h in board.list_hypotheses())
    finally:
        board.close()
