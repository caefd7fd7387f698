"""A run leaves nothing open behind it: no board file handle when ``investigate()``
raises, no thread when a background run ends (counted in /proc/self/fd and
``threading``)."""

from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from cli_helpers import hospital_database

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import ModelAPIError
from d2_notebook.llm import ModelRequest, ModelResponse
from d2_notebook.notebook.running import start_run

QUESTION = hospital.QUESTION


def _open_files() -> int:
    gc.collect()  # what earlier tests dropped is closed now, not in the middle of a count
    return len(os.listdir("/proc/self/fd"))


# Threads the project starts: its own ("d2-investigation", "d2-run-lease", ...) and the
# workers of asyncio's default executor (``asyncio.to_thread``). Other libraries loaded by
# earlier tests in the same process (py4j for Spark, psycopg pools) start and end threads
# of their own at times no test controls; counting those made this check flaky in CI.
_OURS = ("d2-", "asyncio")


def _ours() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith(_OURS)}


def _left_over(before: set[threading.Thread]) -> list[str]:
    """Our threads started since ``before`` still alive after a moment to finish."""
    deadline = time.monotonic() + 5
    while _ours() - before and time.monotonic() < deadline:
        time.sleep(0.02)
    return sorted(t.name for t in _ours() - before)


class FailingCollector(HospitalWalkthrough):
    """The provider fails for good on the first collector call."""

    def __call__(self, request: ModelRequest) -> ModelResponse:  # type: ignore[override]
        if request.role == "collector":
            raise ModelAPIError("the provider is overloaded (529) after 4 retries")
        return super().__call__(request)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return hospital_database(tmp_path)


def _failing_run(database: Path, board: Path, **kwargs) -> None:
    with pytest.raises(ModelAPIError):
        asyncio.run(investigate(str(database), QUESTION, board=str(board),
                                model=FailingCollector().model(), **kwargs))


def check_failing_runs_leave_nothing(database: Path, tmp_path: Path) -> None:
    """Three failing runs after a warm-up leave no file handle and no thread of ours."""
    _failing_run(database, tmp_path / "warm-up.d2board")  # imports, caches
    files, threads = _open_files(), _ours()
    for n in range(3):
        _failing_run(database, tmp_path / f"failed-{n}.d2board")
    assert _open_files() <= files, "no board, lease or database handle left open"
    assert _left_over(threads) == [], "no heartbeat or worker thread left"
    with Board.open(tmp_path / "failed-0.d2board") as board:
        assert board.list_investigations()[-1].state.value == "failed"


def test_investigate_closes_what_it_opened_when_it_raises(database: Path,
                                                          tmp_path: Path) -> None:
    """Counted in a process of its own: in a whole suite, a background run another test
    left running starts executor threads of its loop at any time (CI once counted one
    of them, ``asyncio_3``, as this run's)."""
    code = ("import sys; from pathlib import Path; import test_run_cleanup as t; "
            "t.check_failing_runs_leave_nothing(Path(sys.argv[1]), Path(sys.argv[2]))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).parent), str(Path(__file__).parents[1]),
         os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code, str(database), str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def test_a_replay_closes_its_recording(database: Path, tmp_path: Path) -> None:
    recorded = asyncio.run(investigate(str(database), QUESTION,
                                       board=str(tmp_path / "rec.d2board"),
                                       model=HospitalWalkthrough().model()))
    recorded.board.close()
    files = _open_files()
    replayed = asyncio.run(investigate(str(database), None, replay=tmp_path / "rec.d2board"))
    assert replayed.state == "finished"
    assert _open_files() <= files, "only the replay's own in-memory board is left"
    replayed.board.close()


def test_a_board_passed_in_stays_open_when_investigate_raises(database: Path,
                                                              tmp_path: Path) -> None:
    with Board.open(tmp_path / "mine.d2board") as board:
        with pytest.raises(ModelAPIError):
            asyncio.run(investigate(str(database), QUESTION, board=board,
                                    model=FailingCollector().model()))
        assert board.list_investigations()[-1].state.value == "failed"


def test_background_runs_close_their_loops_and_threads(database: Path, tmp_path: Path) -> None:
    def background(n: int):
        return start_run(investigate(str(database), QUESTION,
                                     board=str(tmp_path / f"bg-{n}.d2board"),
                                     model=HospitalWalkthrough().model()), background=True)

    first = background(0)
    first.wait().board.close()
    files, threads = _open_files(), _ours()
    runs = [background(n) for n in range(1, 6)]
    for run in runs:
        result = run.wait()
        assert result.state == "finished"
        result.board.close()
    assert _left_over(threads) == [], "five runs leave no loop or worker thread alive"
    assert _open_files() <= files
    assert all(run._loop.is_closed() for run in runs)


def test_a_foreground_run_without_a_loop_closes_its_private_loop(database: Path,
                                                                 tmp_path: Path) -> None:
    threads = _ours()
    run = start_run(investigate(str(database), QUESTION, board=str(tmp_path / "fg.d2board"),
                                model=HospitalWalkthrough().model()), background=False)
    run.wait().board.close()
    assert run._loop.is_closed()
    assert _left_over(threads) == []
