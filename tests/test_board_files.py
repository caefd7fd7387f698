"""Board files are left as found: looking at a file never writes to it or beside it, a
file that is not a board is refused untouched, and a run leaves one self-contained
``.d2board`` that opens anywhere on its own."""

from __future__ import annotations

import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pandas as pd
import pytest
from board_readers import READERS, fingerprint, read_as_user, read_with
from cli_helpers import register_test_policy
from click.testing import CliRunner

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.board.migrations import MIGRATIONS, migrate
from d2_notebook.cli import main
from d2_notebook.datasets import hospital
from d2_notebook.detective.investigate import investigate_sync
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import BoardFormatError
from d2_notebook.notebook.running import start_run


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A hospital database and a board of one finished, scripted investigation over it."""
    folder = tmp_path_factory.mktemp("recorded")
    database = folder / "hospital.duckdb"
    hospital.create(database, patients=400).close()
    board = folder / "run.d2board"
    investigate_sync(database, hospital.QUESTION, board=board,
                     model=HospitalWalkthrough().model())
    return database, board


def _small_board(path: Path) -> Path:
    with Board.open(path) as board:
        investigation = board.start_investigation("Which drug works?", {}, actor="user")
        board.add_hypothesis("Pulmorex lowers deaths", investigation_id=investigation.id)
        item = board.add_evidence("SELECT 1 AS n", pd.DataFrame({"n": [1]}),
                                  description="one", investigation_id=investigation.id)
        board.link(item.id, "H1", "supports", "it does", actor="me")
    return path


def _not_a_board(kind: str, folder: Path) -> Path:
    path = folder / "file.d2board"
    if kind == "empty":
        path.touch()
    elif kind == "text":
        path.write_text("hypotheses: none yet\n" * 200)
    else:
        conn = sqlite3.connect(path)
        if kind == "foreign-wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('mine')")
        conn.commit()
        conn.close()
    return path


STAMP = "2025-01-02T03:04:05.000006+00:00"


def _older_board(path: Path, version: int = 2) -> Path:
    """A board as an older d2 wrote it: schema ``version``, in WAL mode, closed."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn, MIGRATIONS[:version])
    conn.execute("INSERT INTO investigations (num, id, question, state, settings, created_at, "
                 "updated_at) VALUES (1, 'I1', 'Which drug?', 'finished', '{}', ?, ?)",
                 (STAMP, STAMP))
    conn.execute("INSERT INTO hypotheses (num, id, statement, status, rationale, author_role, "
                 "author, round, investigation_id, created_at, updated_at) VALUES (1, 'H1', "
                 "'Pulmorex lowers deaths', 'supported', '', 'human', 'me', 1, 'I1', ?, ?)",
                 (STAMP, STAMP))
    conn.close()
    return path


# --- files that are not boards ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["empty", "text", "foreign", "foreign-wal"])
@pytest.mark.parametrize("reader", READERS)
def test_a_file_that_is_not_a_board_is_refused_untouched(tmp_path: Path, kind: str,
                                                         reader: str) -> None:
    path = _not_a_board(kind, tmp_path)
    before = fingerprint(tmp_path)
    outcome = read_with(reader, path)
    assert not outcome.ok
    assert "is not a d2 board" in outcome.text and "Traceback" not in outcome.text
    assert len(outcome.text.strip().splitlines()) == 1, outcome.text
    assert fingerprint(tmp_path) == before


@pytest.mark.parametrize("kind", ["empty", "text", "foreign", "foreign-wal"])
def test_a_replay_of_a_file_that_is_not_a_board_leaves_it_untouched(
        recorded: tuple[Path, Path], tmp_path: Path, kind: str) -> None:
    path = _not_a_board(kind, tmp_path)
    before = fingerprint(tmp_path)
    with pytest.raises(BoardFormatError, match="is not a d2 board"):
        investigate_sync(recorded[0], None, replay=path)
    assert fingerprint(tmp_path) == before


@pytest.mark.parametrize("kind", ["text", "foreign", "foreign-wal"])
def test_opening_a_non_board_to_write_refuses_it_untouched(tmp_path: Path, kind: str) -> None:
    path = _not_a_board(kind, tmp_path)
    before = fingerprint(tmp_path)
    with pytest.raises(BoardFormatError, match="is not a d2 board"):
        Board.open(path)
    assert fingerprint(tmp_path) == before


# --- reading never writes ----------------------------------------------------------------


@pytest.mark.parametrize("reader", READERS)
def test_an_older_board_is_shown_without_being_migrated(tmp_path: Path, reader: str) -> None:
    path = _older_board(tmp_path / "old.d2board")
    before = fingerprint(tmp_path)
    outcome = read_with(reader, path)
    assert outcome.ok, outcome.text
    assert "Pulmorex lowers deaths" in outcome.text or reader == "show"
    assert fingerprint(tmp_path) == before
    with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2


def test_an_older_board_reads_as_a_current_one_in_memory(tmp_path: Path) -> None:
    path = _older_board(tmp_path / "old.d2board")
    with Board.open(path, read_only=True) as board:
        assert [h.statement for h in board.list_hypotheses()] == ["Pulmorex lowers deaths"]
        assert board.list_dimension_dismissals() == []
        assert '"hypotheses"' in board.to_json()


@pytest.mark.parametrize("reader", READERS)
def test_a_finished_board_is_read_without_leaving_any_file(recorded: tuple[Path, Path],
                                                          tmp_path: Path, reader: str) -> None:
    path = tmp_path / "run.d2board"
    shutil.copy(recorded[1], path)
    before = fingerprint(tmp_path)
    outcome = read_with(reader, path)
    assert outcome.ok, outcome.text
    assert fingerprint(tmp_path) == before


def test_a_replay_reads_its_recording_without_leaving_any_file(recorded: tuple[Path, Path],
                                                              tmp_path: Path) -> None:
    recording = tmp_path / "recording"
    recording.mkdir()
    shutil.copy(recorded[1], recording / "run.d2board")
    before = fingerprint(recording)
    result = investigate_sync(recorded[0], None, replay=recording / "run.d2board",
                              board=tmp_path / "replayed.d2board")
    assert result.state == "finished"
    assert fingerprint(recording) == before


def test_a_board_mid_run_is_readable_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "live.d2board"
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from d2_notebook.board import Board
        board = Board.open({str(path)!r})
        run = board.start_investigation("q", {{}}, actor="user")
        for n in range(5):
            board.add_hypothesis(f"claim {{n}}", investigation_id=run.id)
        print("ready", flush=True)
        sys.stdin.readline()
        board.close()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline().strip() == "ready"
        assert (tmp_path / "live.d2board-wal").stat().st_size > 0  # the run's data is there
        names = set(fingerprint(tmp_path))
        for reader in READERS:
            outcome = read_with(reader, path)
            assert outcome.ok, outcome.text
            assert reader == "show" or "claim 4" in outcome.text
        assert set(fingerprint(tmp_path)) == names
    finally:
        writer.communicate("\n", timeout=30)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live.d2board"]


# --- read-only folders, files and media ------------------------------------------------


def _nobody_can_run() -> bool:
    try:
        pwd.getpwnam("nobody")
    except KeyError:
        return False
    return os.geteuid() == 0


@pytest.fixture
def shared_folder() -> Path:
    """A folder other users may enter (pytest's tmp_path is private to its owner)."""
    folder = Path(tempfile.mkdtemp(prefix="d2-shared-"))
    folder.chmod(0o755)
    yield folder
    for path in (folder, *folder.rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(folder)


@pytest.mark.skipif(not _nobody_can_run(), reason="needs root to run a reader as nobody")
@pytest.mark.parametrize("state", ["finished", "killed mid-run"])
@pytest.mark.parametrize("reader", READERS)
def test_a_board_in_a_read_only_folder_is_read_by_another_user(
        shared_folder: Path, reader: str, state: str) -> None:
    folder = shared_folder / "boards"
    folder.mkdir()
    if state == "finished":
        _small_board(folder / "b.d2board")
    else:  # the three files as a kill -9 leaves them
        live = Board.open(shared_folder / "b.d2board")
        run = live.start_investigation("Which drug works?", {}, actor="user")
        live.add_hypothesis("Pulmorex lowers deaths", investigation_id=run.id)
        for suffix in ("", "-wal", "-shm"):
            shutil.copy(f"{shared_folder}/b.d2board{suffix}", f"{folder}/b.d2board{suffix}")
        live.close()
    for file in folder.iterdir():
        file.chmod(0o444)
    folder.chmod(0o555)
    before = fingerprint(folder)
    warm_up = _small_board(shared_folder / "warm-up.d2board")
    outcome = read_as_user(reader, folder / "b.d2board", "nobody", warm_up)
    assert outcome.ok, outcome.text
    assert reader == "show" or "Pulmorex lowers deaths" in outcome.text
    assert fingerprint(folder) == before


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                    reason="needs root to bind-mount a folder read-only")
def test_a_board_on_read_only_media_is_shown_and_exported(tmp_path: Path) -> None:
    source, media = tmp_path / "source", tmp_path / "media"
    source.mkdir()
    media.mkdir()
    _small_board(source / "b.d2board")
    if not _mount("--bind", str(source), str(media)):
        pytest.skip("bind mounts are not allowed here")
    try:
        if not _mount("-o", "remount,bind,ro", str(media)):
            pytest.skip("read-only remounts are not allowed here")
        with pytest.raises(OSError):
            (media / "probe").touch()
        for reader in READERS:
            outcome = read_with(reader, media / "b.d2board")
            assert outcome.ok, (reader, outcome.text)
        assert sorted(p.name for p in source.iterdir()) == ["b.d2board"]
    finally:
        subprocess.run(["umount", "--lazy", str(media)], check=True)


# --- a run leaves one self-contained file ----------------------------------------------


def _all_records(board: Board) -> dict[str, int]:
    counts = board.counts()
    return {k: counts[k] for k in ("hypotheses", "evidence", "links", "verdicts",
                                   "model_calls", "events")}


def test_a_finished_run_leaves_only_the_board_file_and_it_travels_alone(
        recorded: tuple[Path, Path], tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    result = investigate_sync(recorded[0], hospital.QUESTION, board=folder / "b.d2board",
                              model=HospitalWalkthrough().model())
    expected = _all_records(result.board)
    assert expected["evidence"] > 0 and expected["model_calls"] > 0
    result.board.close()
    assert sorted(p.name for p in folder.iterdir()) == ["b.d2board"]
    elsewhere = tmp_path / "mail"
    elsewhere.mkdir()
    shutil.copy(folder / "b.d2board", elsewhere / "b.d2board")
    with Board.open(elsewhere / "b.d2board", read_only=True) as copy:
        assert _all_records(copy) == expected
        assert copy.list_investigations()[-1].state.value == "finished"
    assert sorted(p.name for p in elsewhere.iterdir()) == ["b.d2board"]


async def test_a_run_on_an_open_board_checkpoints_it_when_it_ends(
        recorded: tuple[Path, Path], tmp_path: Path) -> None:
    path = tmp_path / "b.d2board"
    with Board.open(path) as board:  # as the CLI and the magic pass it
        result = await investigate(recorded[0], hospital.QUESTION, board=board,
                                   model=HospitalWalkthrough().model())
        expected = _all_records(result.board)
        assert (tmp_path / "b.d2board-wal").stat().st_size == 0  # all in the file already
        shutil.copy(path, tmp_path / "copy.d2board")  # while the board is still open
    with Board.open(tmp_path / "copy.d2board", read_only=True) as copy:
        assert _all_records(copy) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.d2board", "copy.d2board"]


async def test_a_failed_run_closes_the_board_it_opened(recorded: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    class Broken:
        name = "broken"

        async def request(self, request):
            raise RuntimeError("the model process died")

    with pytest.raises(RuntimeError, match="died"):
        await investigate(recorded[0], hospital.QUESTION, board=tmp_path / "b.d2board",
                          model=Broken())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.d2board"]
    with Board.open(tmp_path / "b.d2board", read_only=True) as board:
        assert board.list_investigations()[-1].state.value == "failed"


def test_a_cli_run_leaves_only_the_board_file(recorded: tuple[Path, Path],
                                              tmp_path: Path) -> None:
    register_test_policy()
    done = CliRunner().invoke(main, ["investigate", str(recorded[0]), hospital.QUESTION,
                                     "--board", str(tmp_path / "b.d2board"), "--model",
                                     "testpolicy:x", "--quiet"])
    assert done.exit_code == 0, done.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.d2board"]


def test_a_notebook_run_leaves_only_the_board_file_when_the_kernel_exits(
        tmp_path: Path) -> None:
    """The magic keeps its last board open (for ``%%evidence``); the run checkpoints it,
    and the kernel's exit closes it: one self-contained file, as after nbclient."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parents[1])!r})
        from IPython.core.interactiveshell import InteractiveShell
        from d2_notebook.datasets import hospital
        from d2_notebook.detective.policies.hospital import HospitalWalkthrough
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "d2_notebook.notebook")
        shell.user_ns.update(con=hospital.create(patients=300),
                             team=HospitalWalkthrough().model())
        ran = shell.run_cell("%%investigate con --board covid.d2board --model team\\n"
                             + hospital.QUESTION)
        assert ran.success, ran.error_in_exec or ran.error_before_exec
        print(shell.user_ns["_"].result.board.counts()["events"])
        """)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    events = int(done.stdout.strip().splitlines()[-1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["covid.d2board"]
    shutil.copy(tmp_path / "covid.d2board", tmp_path / "mailed.d2board")
    with Board.open(tmp_path / "mailed.d2board", read_only=True) as board:
        assert board.counts()["events"] == events > 0
        assert board.list_investigations()[-1].state.value == "finished"


def test_a_background_run_leaves_no_thread_behind(recorded: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    before = set(threading.enumerate())
    run = start_run(investigate(recorded[0], hospital.QUESTION, board=tmp_path / "b.d2board",
                                model=HospitalWalkthrough().model()), background=True)
    result = run.wait()
    assert result.state == "finished"
    result.board.close()
    for thread in set(threading.enumerate()) - before:
        thread.join(timeout=10)
    assert set(threading.enumerate()) - before == set()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.d2board"]
