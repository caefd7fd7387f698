"""One live run per investigation: the running process holds a lease on the board;
resumes are refused while it is fresh and take over once it is stale (kill -9)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import hospital_database, register_test_policy, slow_team_script
from click.testing import CliRunner

from d2_notebook import investigate
from d2_notebook.board import Board, leases
from d2_notebook.board.leases import LeaseKeeper
from d2_notebook.cli import main
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import RunLeaseHeldError, RunLeaseLostError
from d2_notebook.llm.offline import FunctionModel


@pytest.fixture(autouse=True)
def _test_provider() -> None:
    register_test_policy()


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return hospital_database(tmp_path)


def _started(board: Board) -> str:
    return board.start_investigation("q", {}).id


def test_a_fresh_lease_refuses_a_second_holder_naming_owner_and_force(board: Board) -> None:
    investigation = _started(board)
    first = board.acquire_lease(investigation)
    with pytest.raises(RunLeaseHeldError) as info:
        board.acquire_lease(investigation)
    message = str(info.value)
    assert f"pid {os.getpid()}" in message and socket.gethostname() in message
    assert "--force" in message and "stale 30 s after" in message
    taken = board.acquire_lease(investigation, force=True)
    assert taken.token != first.token
    assert board.renew_lease(first) is False  # the old holder learns it lost the lease
    assert board.renew_lease(taken) is True
    board.release_lease(first)  # a no-op: not the holder any more
    assert board.get_lease(investigation).token == taken.token
    board.release_lease(taken)
    assert board.get_lease(investigation) is None


def test_a_lease_without_heartbeat_goes_stale_and_is_taken_over(board: Board,
                                                                board_path: Path) -> None:
    investigation = _started(board)
    board.acquire_lease(investigation)
    with sqlite3.connect(board_path) as conn:  # another host's run, silent for a minute
        conn.execute("UPDATE run_leases SET host = 'elsewhere', heartbeat_at = "
                     "'2020-01-01T00:00:00+00:00'")
    assert board.get_lease(investigation).is_stale()
    assert board.acquire_lease(investigation).host == socket.gethostname()


def test_the_keeper_beats_and_releases(board: Board) -> None:
    investigation = _started(board)
    keeper = LeaseKeeper(board, heartbeat_every_s=0.05)
    lease = keeper.acquire(investigation)
    time.sleep(0.3)
    assert board.get_lease(investigation).heartbeat_at > lease.heartbeat_at
    keeper.release()
    assert board.get_lease(investigation) is None


_SLOW_TEAM = slow_team_script(3)


def _wait_for_lease(board_path: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read()
        if board_path.exists():
            try:
                with sqlite3.connect(board_path) as conn:
                    if conn.execute("SELECT count(*) FROM run_leases").fetchone()[0]:
                        return
            except sqlite3.OperationalError:
                pass  # not migrated yet
        time.sleep(0.1)
    raise AssertionError("the running process never took its lease")


def test_resume_is_refused_while_another_process_runs_and_takes_over_after_kill_9(
        database: Path, tmp_path: Path) -> None:
    board_path = tmp_path / "live.d2board"
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_TEAM, "investigate", str(database), hospital.QUESTION,
         "--model", "slow:x", "--board", str(board_path), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        _wait_for_lease(board_path, process)
        # the CLI refuses in one line, naming the owner and --force
        refused = CliRunner().invoke(main, ["investigate", str(database), "--board",
                                            str(board_path), "--resume", "--model",
                                            "testpolicy:x"])
        assert refused.exit_code == 1
        assert f"pid {process.pid}" in refused.output and "--force" in refused.output
        assert "Traceback" not in refused.output
        # ... and so does the Python API
        with pytest.raises(RunLeaseHeldError, match=f"pid {process.pid}"):
            asyncio.run(investigate(str(database), None, board=str(board_path), resume=True,
                                    model=HospitalWalkthrough().model()))
        with Board.open(board_path) as opened:
            assert opened.list_investigations()[-1].state.value == "running"
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)  # reaped: its pid no longer exists
    resumed = CliRunner().invoke(main, ["investigate", str(database), "--board",
                                        str(board_path), "--resume", "--model",
                                        "testpolicy:x", "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    with Board.open(board_path) as opened:
        investigations = opened.list_investigations()
        assert [i.state.value for i in investigations] == ["finished"]
        assert opened.get_lease(investigations[0].id) is None


def test_force_needs_resume(database: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["investigate", str(database), "q", "--force",
                                       "--board", str(tmp_path / "b.d2board")])
    assert result.exit_code == 2 and "--force only applies with --resume" in result.output


# --- the heartbeat survives transient faults, and stops the run when it cannot ----------


def _hold_write_lock(board_path: Path, seconds: float) -> threading.Thread:
    """Another writer holds the board's write lock for ``seconds`` (in a thread)."""
    locked = threading.Event()

    def hold() -> None:
        conn = sqlite3.connect(board_path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        locked.set()
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    locked.wait(5)
    return thread


def test_a_transient_error_does_not_kill_the_heartbeat(board: Board, board_path: Path) -> None:
    investigation = _started(board)
    keeper = LeaseKeeper(board, heartbeat_every_s=0.1, stale_after_s=3.0)
    keeper.acquire(investigation)
    _hold_write_lock(board_path, 0.8).join()  # several renewals fail with "locked"
    locked_until = time.monotonic()
    time.sleep(0.5)
    assert keeper.failed_renewals >= 1 and keeper.lost is None
    assert board.get_lease(investigation).age_s() < time.monotonic() - locked_until
    keeper.release()
    assert board.get_lease(investigation) is None


def test_the_heartbeat_has_its_own_connection(board: Board) -> None:
    """The board's own connection busy for a long time (an export) does not starve it."""
    investigation = _started(board)
    keeper = LeaseKeeper(board, heartbeat_every_s=0.05, stale_after_s=3.0)
    lease = keeper.acquire(investigation)
    with board._lock:  # what a long export holds
        time.sleep(0.4)
        with sqlite3.connect(board.path) as other:
            beat = other.execute("SELECT heartbeat_at FROM run_leases").fetchone()[0]
    assert beat > lease.heartbeat_at
    keeper.release()


def test_a_lease_that_cannot_be_renewed_is_lost_and_says_why(board: Board,
                                                             board_path: Path) -> None:
    investigation = _started(board)
    keeper = LeaseKeeper(board, heartbeat_every_s=0.1, stale_after_s=0.6)
    keeper.acquire(investigation)
    _hold_write_lock(board_path, 1.5).join()
    assert isinstance(keeper.lost, RunLeaseLostError)
    assert "could not be renewed" in str(keeper.lost) and "--resume" in str(keeper.lost)
    keeper.release()


def test_a_lease_taken_over_with_force_is_lost(board: Board) -> None:
    investigation = _started(board)
    keeper = LeaseKeeper(board, heartbeat_every_s=0.05)
    keeper.acquire(investigation)
    board.acquire_lease(investigation, force=True)
    time.sleep(0.3)
    assert keeper.lost is not None and "took it over" in str(keeper.lost)
    keeper.release()


async def test_a_persistent_heartbeat_failure_stops_the_run(database: Path, tmp_path: Path,
                                                             monkeypatch) -> None:
    monkeypatch.setattr(leases, "HEARTBEAT_EVERY_S", 0.1)
    monkeypatch.setattr(leases, "STALE_AFTER_S", 0.8)
    board_path = tmp_path / "lost.d2board"
    slow = FunctionModel(_slowly(HospitalWalkthrough(), 0.05))
    run = asyncio.create_task(investigate(str(database), hospital.QUESTION,
                                          board=str(board_path), model=slow))
    while not board_path.exists() or not _has_lease(board_path):
        await asyncio.sleep(0.05)
    holder = await asyncio.to_thread(_hold_write_lock, board_path, 2.0)
    with pytest.raises(RunLeaseLostError, match="could not be renewed"):
        await asyncio.wait_for(run, 60)
    holder.join()
    with Board.open(board_path) as opened:
        investigation = opened.list_investigations()[-1]
        assert investigation.state.value == "interrupted"  # resumable
        assert opened.get_lease(investigation.id) is None
    resumed = await investigate(str(database), None, board=str(board_path), resume=True,
                                model=HospitalWalkthrough().model())
    assert resumed.state == "finished"
    resumed.board.close()


def test_resume_is_refused_while_the_first_run_survives_failing_heartbeats(
        database: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(leases, "STALE_AFTER_S", 2.0)
    board_path = tmp_path / "live.d2board"
    script = ("import d2_notebook.board.leases as leases\n"
              "leases.HEARTBEAT_EVERY_S, leases.STALE_AFTER_S = 0.2, 2.0\n" + _SLOW_TEAM)
    here = str(Path(__file__).resolve().parents[1])  # this checkout's d2_notebook
    process = subprocess.Popen(
        [sys.executable, "-c", script, "investigate", str(database), hospital.QUESTION,
         "--model", "slow:x", "--board", str(board_path), "--quiet"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": here})
    try:
        _wait_for_lease(board_path, process)
        _refuse_renewals(board_path, 1.0)  # the first run's renewals fail meanwhile
        time.sleep(2.5)  # longer than a lease lives without a heartbeat
        assert process.poll() is None, process.stderr.read()
        with pytest.raises(RunLeaseHeldError, match=f"pid {process.pid}"):
            asyncio.run(investigate(str(database), None, board=str(board_path), resume=True,
                                    model=HospitalWalkthrough().model()))
    finally:
        process.send_signal(signal.SIGKILL)
        process.communicate(timeout=30)


def _refuse_renewals(board_path: Path, seconds: float) -> None:
    """Every heartbeat fails at once (an I/O error, as SQLite reports it) for ``seconds``."""
    with sqlite3.connect(board_path, timeout=30) as conn:
        conn.execute("CREATE TRIGGER refuse_renewal BEFORE UPDATE ON run_leases "
                     "BEGIN SELECT RAISE(ABORT, 'injected: disk I/O error'); END")
    time.sleep(seconds)
    with sqlite3.connect(board_path, timeout=30) as conn:
        conn.execute("DROP TRIGGER refuse_renewal")


def _has_lease(board_path: Path) -> bool:
    try:
        with sqlite3.connect(board_path) as conn:
            return bool(conn.execute("SELECT count(*) FROM run_leases").fetchone()[0])
    except sqlite3.OperationalError:
        return False


def _slowly(policy: HospitalWalkthrough, delay_s: float):
    async def respond(request):
        await asyncio.sleep(delay_s)
        return policy(request)
    return respond
