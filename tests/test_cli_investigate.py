"""`d2 investigate` and `d2 demo`, offline, on real DuckDB files and real board files.

The team is driven by the demo's scripted policy, registered as a provider so the real
``--model`` path is exercised, or by ``--replay`` of a recorded board.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import hospital_database, register_test_policy, slow_team_script
from click.testing import CliRunner

from d2_notebook.board import Board
from d2_notebook.cli import SCRIPTED_NOTICE, main
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.errors import ModelAPIError
from d2_notebook.llm import register_provider
from d2_notebook.llm.messages import TokenUsage

QUESTION = hospital.QUESTION


class _FailsAfter:
    """The scripted team's model, failing for good after ``calls`` answers."""

    def __init__(self, calls: int) -> None:
        self.inner = HospitalWalkthrough().model()
        self.name = self.inner.name
        self.left = calls

    async def request(self, request):
        if self.left == 0:
            raise ModelAPIError("the provider is overloaded (HTTP 529) after 4 retries")
        self.left -= 1
        return await self.inner.request(request)


class _Priced:
    """The scripted team's answers, as if a priced model sent them: each call reads
    3,000 prompt tokens from the cache and sends 1,000 more."""

    def __init__(self, model_id: str) -> None:
        self.inner = HospitalWalkthrough().model()
        self.name = model_id

    async def request(self, request):
        response = await self.inner.request(request)
        return dataclasses.replace(
            response, model=self.name,
            usage=TokenUsage(input_tokens=1_000, output_tokens=100, cache_read_tokens=3_000))


@pytest.fixture(autouse=True)
def _test_providers() -> None:
    register_test_policy()
    register_provider("failing", lambda model_id, **kw: _FailsAfter(int(model_id)),
                      replace=True)
    register_provider("priced", lambda model_id, **kw: _Priced(model_id), replace=True)


@pytest.fixture
def database(tmp_path: Path) -> Path:
    return hospital_database(tmp_path)


def _invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


def _board_contents(path: Path) -> tuple[list, list, list]:
    with Board.open(path) as board:
        return ([(h.statement, h.status.value) for h in board.list_hypotheses()],
                [e.sql for e in board.list_evidence()],
                [(v.hypothesis_id, v.status.value, v.evidence_ids) for v in board.list_verdicts()])


def test_demo_runs_offline_and_says_it_is_scripted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = _invoke("demo")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.count(SCRIPTED_NOTICE) == 2  # at the start and at the end
    assert out.rstrip().endswith(f"*** {SCRIPTED_NOTICE} ***")
    assert "board: demo.d2board" in out
    assert "+ H1 Virexa lowers mortality for older COVID-19 patients" in out
    assert "→ H1 dispatched to a collector" in out
    assert "## Answer" in out  # the report
    assert "Investigation I1 [finished]" in out  # the tree of the board
    assert "see the board: d2 board show demo.d2board" in out
    with Board.open(tmp_path / "demo.d2board") as board:
        assert board.list_investigations()[-1].state.value == "finished"
        statuses = {h.status.value for h in board.list_hypotheses()}
        assert {"supported", "contradicted", "abandoned"} <= statuses
        assert len(board.list_verdicts()) >= 4
    # A second demo replaces its own board instead of piling up investigations.
    assert _invoke("demo").exit_code == 0
    with Board.open(tmp_path / "demo.d2board") as board:
        assert len(board.list_investigations()) == 1


def test_demo_as_a_real_process_keeps_the_database_when_asked(tmp_path):
    db, board = tmp_path / "h.duckdb", tmp_path / "d.d2board"
    done = subprocess.run(
        [sys.executable, "-m", "d2_notebook", "demo", "--db", str(db), "--board", str(board),
         "--collectors", "2"], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert f"database: {db}" in done.stdout and SCRIPTED_NOTICE in done.stdout
    assert db.is_file() and board.is_file()
    again = _invoke("demo", "--db", db, "--board", board)
    assert again.exit_code == 1
    assert "already exists; pass a new --board path" in again.output


def test_demo_with_a_named_model_that_is_not_configured_fails_in_one_line(tmp_path):
    result = _invoke("demo", "--model", "anthropic:claude-sonnet-4-6", "--board",
                     tmp_path / "d.d2board")
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        result.output.strip()] and "set ANTHROPIC_API_KEY" in result.output


def test_investigate_without_a_model_names_the_fix_in_one_line(database, tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "d2_notebook", "investigate", str(database), QUESTION],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k not in {"ANTHROPIC_API_KEY", "D2_MODEL"}})
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "set ANTHROPIC_API_KEY or pass --model" in done.stderr
    assert not list(tmp_path.glob("*.d2board"))  # nothing was started


def test_investigate_with_a_model_shows_progress_report_and_summary(database, tmp_path):
    board = tmp_path / "covid.d2board"
    result = _invoke("investigate", database, QUESTION, "--model", "testpolicy:x",
                     "--board", board, "--collectors", "2", "--max-depth", "1")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith(f"board: {board}\n")
    # Evidence ids follow the order parallel collectors answer in (replay fixes it).
    assert re.search(r"E\d+ contradicts H1: Death rate vs standard care, age 65\+", out)
    assert "✔ H4 supported (0.85)" in out
    # Depth 1: no refinement is offered, so every hypothesis is examined to a verdict;
    # what is not examined is only the candidate dimensions the orchestrator dismissed.
    assert "## Answer" in out and "Left without a verdict" not in out
    assert re.search(r"^\| .+ \| patients \| [^|]*\bsex\b[^|]* \|$", out, re.M), out
    # The walkthrough is an offline script: no cost, and the line says so.
    assert re.search(r"^investigation I1 finished: 33 model calls · scripted — no language "
                     r"model · [\d.]+k tokens; board: ", out, re.M), out
    assert "by role: hypothesizer 4 calls" in out and "collector 16 calls" in out
    assert out.rstrip().endswith(f"see the board: d2 board show {board}")
    with Board.open(board) as opened:
        settings = opened.list_investigations()[0].settings
    assert (settings["collectors"], settings["max_depth"]) == (2, 1)


def test_a_role_model_answers_that_roles_calls_and_is_stored(database, tmp_path):
    register_provider("rolepolicy", lambda model_id, **kw: HospitalWalkthrough().model(
        name=f"rolepolicy:{model_id}"), replace=True)
    board = tmp_path / "roles.d2board"
    result = _invoke("investigate", database, QUESTION, "--model", "testpolicy:x",
                     "--role-model", "collector=rolepolicy:fast",
                     "--role-model", "judge=rolepolicy:careful", "--board", board)
    assert result.exit_code == 0, result.output
    with Board.open(board) as opened:
        models = {(c.role, c.model) for c in opened.list_model_calls()}
        settings = opened.list_investigations()[0].settings
    assert {m for r, m in models if r == "collector"} == {"rolepolicy:fast"}
    assert {m for r, m in models if r == "judge"} == {"rolepolicy:careful"}
    assert {m for r, m in models if r == "orchestrator"} == {"offline-policy"}
    assert settings["role_models"] == {"collector": "rolepolicy:fast",
                                       "judge": "rolepolicy:careful"}


@pytest.mark.parametrize(("pair", "message"), [
    ("collector", "write ROLE=MODEL"),
    ("boss=anthropic:x", "unknown role 'boss'; roles are: hypothesizer, orchestrator"),
])
def test_a_bad_role_model_names_the_fix(database, tmp_path, pair, message):
    result = _invoke("investigate", database, QUESTION, "--model", "testpolicy:x",
                     "--role-model", pair, "--board", tmp_path / "bad.d2board")
    assert result.exit_code == 2 and message in result.output
    assert not (tmp_path / "bad.d2board").exists()


def test_quiet_prints_only_the_report(database, tmp_path):
    result = _invoke("investigate", database, QUESTION, "--model", "testpolicy:x",
                     "--board", tmp_path / "q.d2board", "--quiet")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("## Answer")
    assert "board:" not in result.output and "→" not in result.output


def test_replay_of_the_demo_board_reproduces_it(database, tmp_path):
    recorded, replayed = tmp_path / "demo.d2board", tmp_path / "replayed.d2board"
    assert _invoke("demo", "--db", database, "--board", recorded).exit_code == 0
    database.unlink()
    hospital.create(database).close()  # the same data, generated again
    result = _invoke("investigate", database, "--replay", recorded, "--board", replayed)
    assert result.exit_code == 0, result.output
    assert "+ H1 Virexa lowers mortality" in result.output
    assert _board_contents(replayed) == _board_contents(recorded)


def test_replay_takes_the_newest_finished_investigation_and_names_it(database, tmp_path):
    recorded, replayed = tmp_path / "two.d2board", tmp_path / "again.d2board"
    assert _invoke("demo", "--db", database, "--board", recorded).exit_code == 0
    with Board.open(recorded) as board:  # a later attempt that failed on the same board
        later = board.start_investigation("a second question")
        board.set_investigation_state(later.id, "failed", error="boom", actor="test")
    result = _invoke("investigate", database, "--replay", recorded, "--board", replayed)
    assert result.exit_code == 0, result.output
    assert "replaying I1 [finished]: " in result.output
    assert "(the board holds 2 investigations)" in result.output


def test_a_model_failure_leaves_a_board_that_resumes(database, tmp_path):
    board = tmp_path / "f.d2board"
    failed = _invoke("investigate", database, QUESTION, "--model", "failing:12",
                     "--board", board)
    assert failed.exit_code == 1
    assert "overloaded (HTTP 529)" in failed.output
    assert (f"the board is saved: resume with `d2 investigate {database} --board {board} "
            "--resume`") in failed.output
    with Board.open(board) as opened:
        assert opened.list_investigations()[-1].state.value == "failed"
    resumed = _invoke("investigate", database, "--board", board, "--resume",
                      "--model", "testpolicy:x")
    assert resumed.exit_code == 0, resumed.output
    assert "resuming investigation I1" in resumed.output
    assert "investigation I1 finished" in resumed.output


_SLOW_TEAM = slow_team_script(0.3)


def test_ctrl_c_exits_130_and_leaves_a_resumable_board(database, tmp_path):
    board = tmp_path / "i.d2board"
    process = subprocess.Popen(
        [sys.executable, "-c", _SLOW_TEAM, "investigate", str(database), QUESTION,
         "--model", "slow:x", "--board", str(board)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    shown = []  # progress lines, read until the team is at work
    while not any(line.startswith("+ H1") for line in shown):
        line = process.stdout.readline()
        if not line:
            break
        shown.append(line)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    out = "".join(shown) + out
    assert process.returncode == 130, err
    assert "Traceback" not in err
    assert (f"interrupted; the board is saved: resume with `d2 investigate {database} "
            f"--board {board} --resume`") in err
    assert "+ H1 Virexa lowers mortality" in out  # progress was shown up to then
    with Board.open(board) as opened:
        assert opened.list_investigations()[-1].state.value == "interrupted"
    resumed = _invoke("investigate", database, "--board", board, "--resume",
                      "--model", "testpolicy:x", "--quiet")
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.startswith("## Answer")


def test_resume_with_nothing_to_resume_is_one_line(database, tmp_path):
    board = tmp_path / "done.d2board"
    assert _invoke("demo", "--db", database, "--board", board).exit_code == 0
    result = _invoke("investigate", database, "--board", board, "--resume",
                     "--model", "testpolicy:x")
    assert result.exit_code == 1
    assert result.output.splitlines()[-1].startswith("Error: nothing to resume on")
    missing = _invoke("investigate", database, "--resume", "--board", tmp_path / "no.d2board")
    assert missing.exit_code == 2 and "no board at" in missing.output


@pytest.mark.parametrize(("args", "message"), [
    (["--variant", "nope"], "'nope' is not one of 'full', 'no_reporter'"),
    (["--collectors", "-1"], "-1 is not in the range x>=1"),
    (["--budget-usd", "0"], "is not in the range x>0"),
    (["--resume", "--replay", "{db}"], "use --resume or --replay, not both"),
])
def test_bad_options_are_refused_by_name(database, args, message):
    result = _invoke("investigate", database, QUESTION,
                     *[a.format(db=database) for a in args])
    assert result.exit_code == 2
    assert message in result.output


def test_a_question_is_needed_unless_resuming_or_replaying(database, tmp_path):
    result = _invoke("investigate", database)
    assert result.exit_code == 2
    assert "pass the QUESTION to investigate" in result.output
    assert _invoke("investigate", tmp_path / "missing.duckdb", QUESTION).exit_code == 2


def test_final_line_shows_cost_cache_read_share_and_calls(database, tmp_path):
    board = tmp_path / "priced.d2board"
    result = _invoke("investigate", database, QUESTION, "--model", "priced:claude-sonnet-4-6",
                     "--board", board, "--collectors", "2", "--max-depth", "1")
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.startswith("investigation I1 "))
    # Every call: 1,000 uncached + 3,000 cache-read prompt tokens, so 75% from the cache.
    assert re.fullmatch(r"investigation I1 finished: 33 model calls · \$\d+\.\d\d · 75% of "
                        r"input tokens from cache · 135\.3k tokens; board: .*priced\.d2board",
                        line), line
    assert "scripted" not in line
