"""Errors that name the fault: a damaged board, a full disk, a lock held too long and a
read-only file each reach the user as one line naming the board and the fix, from every
entry point, and a failed write keeps nothing half-written."""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from board_readers import READERS, SOURCE_ROOT, fingerprint, read_with
from cli_helpers import hospital_database, register_test_policy
from click.testing import CliRunner
from IPython.core.interactiveshell import InteractiveShell

from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.cli import main
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import (
    BoardDamagedError,
    BoardFullError,
    BoardLockedError,
    BoardReadOnlyError,
)


def _board(path: Path) -> Path:
    with Board.open(path) as board:
        run = board.start_investigation("Which drug works?", {}, actor="user")
        for n in range(30):
            board.add_hypothesis(f"Pulmorex lowers deaths in group {n}",
                                 rationale="x" * 400, investigation_id=run.id)
        item = board.add_evidence("SELECT 1 AS n", pd.DataFrame({"n": range(50)}),
                                  description="fifty", investigation_id=run.id)
        board.link(item.id, "H1", "supports", "it does", actor="me")
    return path


def _damage(kind: str, path: Path) -> None:
    if kind == "garbled pages":
        data = bytearray(path.read_bytes())
        noise = random.Random(7)
        for at in range(4096, len(data)):  # every page but the first
            data[at] = noise.randrange(256)
        path.write_bytes(bytes(data))
        return
    conn = sqlite3.connect(path, isolation_level=None)
    if kind == "garbage result":
        conn.execute("UPDATE evidence SET result = X'00ff00ff12345678deadbeef'")
    else:  # an unknown status value
        conn.execute("UPDATE hypotheses SET status = 'probably' WHERE id = 'H2'")
    conn.close()


# Which readers meet each damage (export copies stored rows without decoding them, so a
# bad status or result still exports: that is how a user saves what is left).
MEETS = {
    "garbled pages": set(READERS),
    "garbage result": {"viewer", "show"},
    "unknown status": {"board-show", "viewer", "show"},
}


def _one_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


@pytest.mark.parametrize("damage", list(MEETS))
@pytest.mark.parametrize("reader", READERS)
def test_a_damaged_board_is_one_line_naming_it_and_the_fix(tmp_path: Path, damage: str,
                                                           reader: str) -> None:
    path = _board(tmp_path / "notes.d2board")
    _damage(damage, path)
    before = fingerprint(tmp_path)
    outcome = read_with(reader, path)
    assert fingerprint(tmp_path) == before
    if reader not in MEETS[damage]:
        assert outcome.ok, outcome.text
        return
    assert not outcome.ok
    line = _one_line(outcome.text)
    assert "notes.d2board" in line and "is damaged" in line
    assert "restore it from a copy" in line


def test_a_damaged_result_names_its_evidence(tmp_path: Path) -> None:
    path = _board(tmp_path / "notes.d2board")
    _damage("garbage result", path)
    with Board.open(path, read_only=True) as board, pytest.raises(
            BoardDamagedError, match=r"stored result of evidence E1 cannot be read"):
        board.evidence_frame("E1")


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    sh = InteractiveShell.instance()
    sh.run_cell("from d2_notebook.notebook import show")
    return sh


@pytest.mark.parametrize("case", ["not a board", "damaged"])
def test_show_in_a_notebook_is_one_line_not_a_traceback(shell: InteractiveShell,
                                                        tmp_path: Path, case: str,
                                                        capsys: pytest.CaptureFixture) -> None:
    path = tmp_path / "notes.d2board"
    if case == "not a board":
        path.touch()
    else:
        _damage("unknown status", _board(path))
    capsys.readouterr()
    shell.run_cell(f"show({str(path)!r})")
    line = _one_line(capsys.readouterr().out)
    assert "notes.d2board" in line
    assert ("is not a d2 board" if case == "not a board" else "is damaged") in line
    assert path.stat().st_size == 0 or case == "damaged"


# --- a full disk ---------------------------------------------------------------------------


def _fill_up(board: Board, spare_pages: int = 0) -> None:
    """Let the board file grow by ``spare_pages`` pages at most (SQLite's own limit)."""
    pages = board._conn.execute("PRAGMA page_count").fetchone()[0]
    board._conn.execute(f"PRAGMA max_page_count = {pages + spare_pages}")


def test_a_full_disk_is_a_typed_error_and_keeps_nothing_half_written(tmp_path: Path) -> None:
    with Board.open(_board(tmp_path / "b.d2board")) as board:
        before = board.counts()
        _fill_up(board)
        with pytest.raises(BoardFullError) as caught:
            board.add_evidence("SELECT 2", pd.DataFrame({"n": range(20_000)}),
                               description="too big for the space left")
        message = str(caught.value)
        assert "b.d2board" in message and "disk full" in message and "--resume" in message
        assert "database or disk is full" in str(caught.value.__cause__)
        assert board.counts() == before
        board._conn.execute("PRAGMA max_page_count = 1000000")  # space freed
        board.add_evidence("SELECT 2", pd.DataFrame({"n": range(20_000)}), description="ok")
        assert board.counts()["evidence"] == before["evidence"] + 1


async def test_a_run_that_fills_the_disk_stops_with_the_typed_error_and_resumes(
        tmp_path: Path) -> None:
    con = hospital.create(patients=300)
    with Board.open(tmp_path / "b.d2board") as board:
        board.start_investigation("warm-up", {}, actor="user")  # the schema's pages
        _fill_up(board, spare_pages=8)
        with pytest.raises(BoardFullError, match="disk full"):
            await investigate(con, hospital.QUESTION, board=board,
                              model=HospitalWalkthrough().model())
        board._conn.execute("PRAGMA max_page_count = 1000000")
        result = await investigate(con, None, board=board, resume=True,
                                   model=HospitalWalkthrough().model())
        assert result.state == "finished"


def _mount_tmpfs(folder: Path, size: str) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode == 0


def test_a_cli_run_on_a_full_disk_is_one_line(tmp_path: Path) -> None:
    register_test_policy()
    database = hospital_database(tmp_path)
    disk = tmp_path / "disk"
    disk.mkdir()
    if not _mount_tmpfs(disk, "512k"):
        pytest.skip("needs root to mount a small tmpfs (a real full disk)")
    try:
        done = CliRunner().invoke(main, ["investigate", str(database), hospital.QUESTION,
                                         "--board", str(disk / "b.d2board"), "--model",
                                         "testpolicy:x", "--quiet"])
        assert done.exit_code == 1, done.output
        errors = [line for line in done.output.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and "Traceback" not in done.output, done.output
        assert "b.d2board" in errors[0] and "disk full" in errors[0], done.output
    finally:
        subprocess.run(["umount", "--lazy", str(disk)], check=True)


# --- a lock held too long, a read-only file --------------------------------------------


def test_a_lock_held_past_the_timeout_is_a_typed_error(tmp_path: Path) -> None:
    path = _board(tmp_path / "b.d2board")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys
        conn = sqlite3.connect({str(path)!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        print("locked", flush=True)
        sys.stdin.readline()
        conn.execute("ROLLBACK")
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with Board.open(path) as board:
            board._conn.execute("PRAGMA busy_timeout = 200")
            before = board.counts()
            with pytest.raises(BoardLockedError) as caught:
                board.add_hypothesis("blocked")
            assert "b.d2board" in str(caught.value) and "locked" in str(caught.value)
            holder.communicate("\n", timeout=30)
            assert board.counts() == before
            board.add_hypothesis("after the lock is gone")
    finally:
        if holder.poll() is None:
            holder.kill()


def test_writing_to_a_board_opened_for_reading_is_a_typed_error(tmp_path: Path) -> None:
    path = _board(tmp_path / "b.d2board")
    with Board.open(path, read_only=True) as board, pytest.raises(
            BoardReadOnlyError, match="open read-only"):
        board.add_hypothesis("not here")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as user nobody")
def test_a_read_only_board_file_is_a_typed_error_for_a_writer(tmp_path: Path) -> None:
    folder = Path(shutil.os.path.join("/tmp", f"d2-ro-{os.getpid()}"))
    folder.mkdir(mode=0o755)
    try:
        _board(folder / "b.d2board").chmod(0o444)
        folder.chmod(0o555)
        done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            import os, pwd, sys
            sys.path.insert(0, {SOURCE_ROOT!r})
            from d2_notebook.board import Board
            from d2_notebook.errors import BoardReadOnlyError
            nobody = pwd.getpwnam("nobody")
            os.setgroups([]); os.setgid(nobody.pw_gid); os.setuid(nobody.pw_uid)
            try:
                Board.open({str(folder / "b.d2board")!r}).close()
            except BoardReadOnlyError as exc:
                print(exc)
            """)], capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        line = _one_line(done.stdout)
        assert "b.d2board" in line and "read-only" in line and "writable folder" in line
        assert sorted(p.name for p in folder.iterdir()) == ["b.d2board"]
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)
