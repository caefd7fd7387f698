"""Follow-up questions on one board: the follow-up sees the earlier conclusions, reuses
earlier evidence whose data is unchanged (its query does not run), runs again what rests
on changed data, and every view marks what was reused. Real DuckDB files, real boards,
the scripted hospital walk-through as the team."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest
from cli_helpers import TEST_POLICY, register_test_policy
from click.testing import CliRunner
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import d2_notebook.notebook as nb
from d2_notebook import investigate
from d2_notebook.board import Board
from d2_notebook.board.render import render_tree
from d2_notebook.cli import main
from d2_notebook.data import GuardedSQL
from d2_notebook.datasets import hospital
from d2_notebook.detective.follow_up import FOLLOW_UP_HEADER
from d2_notebook.detective.policies.hospital import HospitalWalkthrough, comparison_sql
from d2_notebook.errors import InvalidRecordError
from d2_notebook.notebook.details import evidence_html
from d2_notebook.notebook.snapshot import board_snapshot
from d2_notebook.notebook.static import board_svg
from d2_notebook.notebook.style import REUSED_BORDER

REUSED_SQL = comparison_sql("Virexa", "asthma")
NEW_SQL = comparison_sql("Pulmorex", "asthma")


class CountingGuard(GuardedSQL):
    """The real guard over a DuckDB file, remembering every statement it ran."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.ran: list[str] = []

    def run(self, sql: str, **kwargs: Any) -> Any:
        self.ran.append(sql)
        return super().run(sql, **kwargs)


def _ran(guard: CountingGuard, sql: str) -> int:
    flat = " ".join(sql.split())
    return sum(" ".join(s.split()) == flat for s in guard.ran)


async def _ask(path: Path, board: Path, question: str, **kwargs: Any) -> tuple[Any, CountingGuard]:
    guard = CountingGuard(path)
    try:
        result = await investigate(guard, question, board=board,
                                   model=HospitalWalkthrough().model(), **kwargs)
        result.board.close()
    finally:
        guard.close()
    return result, guard


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A hospital DuckDB file and a board holding the finished first investigation."""
    folder = tmp_path_factory.mktemp("first")
    database, board = folder / "hospital.duckdb", folder / "first.d2board"
    hospital.create(database, patients=2000).close()
    import asyncio

    result, guard = asyncio.run(_ask(database, board, hospital.QUESTION))
    assert result.state == "finished" and _ran(guard, REUSED_SQL) >= 1
    return database, board


@pytest.fixture
def copies(first: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    database, board = tmp_path / "hospital.duckdb", tmp_path / "board.d2board"
    shutil.copy(first[0], database)
    shutil.copy(first[1], board)
    return database, board


def _evidence_of(board: Board, sql: str, investigation_id: str) -> str:
    flat = " ".join(sql.split())
    return next(e.id for e in board.list_evidence(investigation_id=investigation_id)
                if " ".join(e.sql.split()) == flat)


async def test_a_follow_up_reuses_unchanged_evidence_without_running_its_query(copies):
    database, board_path = copies
    result, guard = await _ask(database, board_path, hospital.FOLLOW_UP_QUESTION,
                               follow_up=True)
    assert result.state == "finished" and result.investigation_id == "I2"
    assert _ran(guard, REUSED_SQL) == 0, "the earlier asthma comparison ran again"
    assert _ran(guard, hospital_overview()) == 0
    assert _ran(guard, NEW_SQL) == 1, "a query new to the follow-up runs as usual"
    with Board.open(board_path, read_only=True) as board:
        assert board.follows("I2") == "I1"
        earlier = _evidence_of(board, REUSED_SQL, "I1")
        reused = [r.evidence_id for r in board.list_reuses("I2")]
        assert earlier in reused and all(r.from_investigation == "I1"
                                         for r in board.list_reuses("I2"))
        own = board.list_evidence(investigation_id="I2")
        assert [" ".join(e.sql.split()) for e in own] == [" ".join(NEW_SQL.split())]
        virexa = next(h for h in board.list_hypotheses(investigation_id="I2")
                      if h.statement.startswith("Virexa"))
        assert board.latest_verdict(virexa.id).evidence_ids == (earlier,)
        assert earlier in [link.evidence_id for link in board.list_links(hypothesis_id=virexa.id)]
        assert earlier in board.get_investigation("I2").report


def hospital_overview() -> str:
    from d2_notebook.detective.policies.hospital import OVERVIEW_SQL

    return OVERVIEW_SQL


async def test_changed_data_runs_the_query_again(copies):
    database, board_path = copies
    with duckdb.connect(str(database)) as con:  # a new asthma diagnosis: comorbidities change
        con.execute("INSERT INTO comorbidities SELECT patient_id, 'asthma' FROM patients "
                    "WHERE age >= 65 AND patient_id NOT IN (SELECT patient_id FROM "
                    "comorbidities WHERE condition = 'asthma') LIMIT 1")
    result, guard = await _ask(database, board_path, hospital.FOLLOW_UP_QUESTION,
                               follow_up="I1")
    assert result.state == "finished"
    assert _ran(guard, REUSED_SQL) == 1, "its data changed: it must run again"
    assert _ran(guard, hospital_overview()) == 0, "the overview reads no changed table"
    with Board.open(board_path, read_only=True) as board:
        reused = {r.evidence_id for r in board.list_reuses("I2")}
        assert _evidence_of(board, REUSED_SQL, "I1") not in reused
        assert _evidence_of(board, hospital_overview(), "I1") in reused
        assert _evidence_of(board, REUSED_SQL, "I2")  # recorded anew, from today's data


async def test_the_digest_carries_the_earlier_conclusions_evidence_and_dismissals(copies):
    database, board_path = copies
    await _ask(database, board_path, hospital.FOLLOW_UP_QUESTION, follow_up=True)
    with Board.open(board_path, read_only=True) as board:
        earlier_supported = [h for h in board.list_hypotheses(investigation_id="I1")
                             if h.status.value == "supported"]
        dismissed = board.list_dimension_dismissals(investigation_id="I1")
        calls = [c for c in board.list_model_calls() if c.investigation_id == "I2"]
        for role in ("hypothesizer", "orchestrator", "collector", "judge", "reporter"):
            call = next(c for c in calls if c.role == role)
            first = call.request["messages"][0]["text"]
            assert f"{FOLLOW_UP_HEADER} I1: {hospital.QUESTION}" in first, role
        first = next(c for c in calls if c.role == "collector").request["messages"][0]["text"]
        for hyp in earlier_supported:
            verdict = board.latest_verdict(hyp.id)
            assert (f"{hyp.id} supported ({verdict.confidence:.2f}; cites "
                    f"{', '.join(verdict.evidence_ids)}): {hyp.statement}") in first
        reused = _evidence_of(board, REUSED_SQL, "I1")
        assert f"  {reused} [1 rows]" in first and "difference=" in first
        assert dismissed and "Dimensions it dismissed: " + dismissed[0].dimension in first


async def test_link_evidence_reuses_earlier_evidence_only_in_a_follow_up(copies):
    from d2_notebook.data import open_source
    from d2_notebook.detective.context import QueryLog, TeamContext
    from d2_notebook.detective.follow_up import prepare_follow_up
    from d2_notebook.detective.settings import InvestigationSettings
    from d2_notebook.detective.team_tools import evidence_tools
    from d2_notebook.detective.tools import Toolset
    from d2_notebook.llm import ToolCallPart
    from d2_notebook.llm.offline import FunctionModel, text

    database, board_path = copies
    source = open_source(str(database))
    with Board.open(board_path) as board:
        earlier = _evidence_of(board, REUSED_SQL, "I1")
        plain = board.start_investigation("another question")
        follow = board.start_investigation("a follow-up")
        board.record_follow_up(follow.id, "I1", actor="user")

        def tools_for(investigation_id: str, follow_up: Any) -> tuple[Toolset, str]:
            hyp = board.add_hypothesis("Virexa helps", investigation_id=investigation_id)
            ctx = TeamContext(board=board, sql=source, model=FunctionModel(lambda r: text("")),
                              investigation_id=investigation_id, question="q",
                              schema_summary="", settings=InvestigationSettings(),
                              follow_up=follow_up)
            return Toolset(evidence_tools(ctx, QueryLog(), "col", "collector", hyp.id)), hyp.id

        tools, _ = tools_for(plain.id, None)
        refused = await tools.call(ToolCallPart("c1", "link_evidence", {
            "evidence_id": earlier, "stance": "supports", "reading": "r"}))
        assert refused.is_error and "does not follow up" in refused.content
        tools, hyp_id = tools_for(follow.id, prepare_follow_up(
            board, source, board.get_investigation("I1"), source.info.to_dict()))
        done = await tools.call(ToolCallPart("c2", "link_evidence", {
            "evidence_id": earlier, "stance": "supports", "reading": "as found before"}))
        assert not done.is_error, done.content
        assert [r.evidence_id for r in board.list_reuses(follow.id)] == [earlier]
        assert earlier in [e.id for e in board.list_evidence(investigation_id=follow.id,
                                                             include_reused=True)]
        assert [link.evidence_id for link in board.list_links(hypothesis_id=hyp_id)] == [earlier]
    source.close()


async def test_every_view_marks_the_reused_evidence(copies):
    database, board_path = copies
    await _ask(database, board_path, hospital.FOLLOW_UP_QUESTION, follow_up=True)
    with Board.open(board_path, read_only=True) as board:
        reused = _evidence_of(board, REUSED_SQL, "I1")
        fresh = _evidence_of(board, NEW_SQL, "I2")
        snapshot = board_snapshot(board)
        nodes = {n["id"]: n for n in snapshot["graph"]["nodes"]}
        assert "reused" in nodes[reused]["classes"].split()
        assert nodes[reused]["data"]["reused"] is True
        assert nodes[reused]["data"]["reused_by"] == ["I2"]
        assert nodes[fresh]["data"]["reused"] is False
        note = "reused from I1 (not re-run) by follow-up I2"
        assert snapshot["evidence"][reused]["reused_note"] == note
        assert snapshot["evidence"][fresh]["reused_note"] is None
        assert "Reused from I1 (not re-run)" in evidence_html(board, reused)
        assert "Reused from" not in evidence_html(board, fresh)
        assert REUSED_BORDER in board_svg(board, include_redundant=True)
        tree = render_tree(board)
        assert "follow-up of I1: reused" in tree and f"[{note}]" in tree


async def test_bad_follow_ups_are_refused_in_one_line_naming_the_fix(copies, tmp_path):
    database, board_path = copies
    missing = tmp_path / "nowhere.d2board"
    with pytest.raises(InvalidRecordError, match=r"no board at .* to follow up; pass the"):
        await _ask(database, missing, "q", follow_up=True)
    assert not missing.exists(), "a refused follow-up creates no board"
    empty = tmp_path / "empty.d2board"
    Board.open(empty).close()
    with pytest.raises(InvalidRecordError, match="no finished investigation; run the first "
                                                 "question without --follow-up"):
        await _ask(database, empty, "q", follow_up=True)
    with pytest.raises(InvalidRecordError, match=r"no investigation 'I9' .* finished "
                                                 "investigations: I1"):
        await _ask(database, board_path, "q", follow_up="I9")
    with pytest.raises(InvalidRecordError, match="leave out resume"):
        await _ask(database, board_path, None, follow_up=True, resume=True)
    with pytest.raises(InvalidRecordError, match="pass board=PATH"):
        await investigate(str(database), "q", model=HospitalWalkthrough().model(),
                          follow_up=True)
    with Board.open(board_path, read_only=True) as board:
        assert [i.id for i in board.list_investigations()] == ["I1"], "nothing was started"


def test_cli_follow_up_and_its_bad_paths(copies, tmp_path):
    register_test_policy()
    database, board_path = copies

    def invoke(*args: object):
        return CliRunner().invoke(main, ["investigate", str(database), *map(str, args),
                                         "--model", f"{TEST_POLICY}:x"])

    no_board = invoke("q", "--follow-up")
    assert no_board.exit_code == 2 and "--follow-up needs --board PATH" in no_board.output
    missing = invoke("q", "--board", tmp_path / "x.d2board", "--follow-up")
    assert missing.exit_code == 2 and "no board at" in missing.output
    assert not (tmp_path / "x.d2board").exists()
    both = invoke("--board", board_path, "--resume", "--follow-up")
    assert both.exit_code == 2 and "leave out --resume" in both.output
    done = invoke(hospital.FOLLOW_UP_QUESTION, "--board", board_path, "--follow-up", "I1")
    assert done.exit_code == 0, done.output
    with Board.open(board_path, read_only=True) as board:
        assert board.follows("I2") == "I1" and board.list_reuses("I2")
    shown = CliRunner().invoke(main, ["board", "show", str(board_path)])
    assert "follow-up of I1: reused" in shown.output and "(not re-run)" in shown.output


@pytest.fixture
def shell(copies, monkeypatch: pytest.MonkeyPatch):
    _database, board_path = copies
    monkeypatch.chdir(board_path.parent)
    sh = InteractiveShell.instance()
    nb.load_ipython_extension(sh)
    sh.user_ns.update(team=HospitalWalkthrough().model())
    yield sh
    sh.user_ns.pop("team", None)


def _cell(shell: InteractiveShell, line: str, body: str) -> Any:
    result = shell.run_cell(f"%%investigate {line}\n{body}")
    error = result.error_before_exec or result.error_in_exec
    if error is not None:
        raise error
    return result.result


def test_magic_follow_up_and_its_bad_paths(shell, copies):
    database, board_path = copies
    with pytest.raises(UsageError, match="leave out --append"):
        _cell(shell, f"--db {database} --board {board_path} --follow-up --append --model team",
              "q")
    with pytest.raises(UsageError, match=r"no board file at .*--follow-up needs the board"):
        _cell(shell, f"--db {database} --board nowhere.d2board --follow-up --model team", "q")
    assert not (board_path.parent / "nowhere.d2board").exists()
    with pytest.raises(UsageError, match="--follow-up needs --board PATH"):
        _cell(shell, f"--db {database} --follow-up --model team", "q")
    view = _cell(shell, f"--db {database} --board {board_path} --follow-up --model team",
                 hospital.FOLLOW_UP_QUESTION)
    assert view.result.investigation_id == "I2" and view.result.state == "finished"
    with Board.open(board_path, read_only=True) as board:
        assert board.follows("I2") == "I1" and board.list_reuses("I2")


SCAN_ARGS = {"source": ("admissions a JOIN patients p USING (patient_id) JOIN treatments t "
                        "USING (admission_id) JOIN outcomes o USING (admission_id)"),
             "metric": "avg(CASE WHEN o.died THEN 1 ELSE 0 END)",
             "where": "p.age >= 65 AND t.drug = 'Virexa'"}


def _team(board: Board, source: Any, investigation_id: str, follow_up: Any = None) -> Any:
    from d2_notebook.detective.context import TeamContext
    from d2_notebook.detective.settings import InvestigationSettings
    from d2_notebook.llm.offline import FunctionModel, text

    return TeamContext(board=board, sql=source, model=FunctionModel(lambda r: text("")),
                       investigation_id=investigation_id, question="q", schema_summary="",
                       settings=InvestigationSettings(), follow_up=follow_up)


async def test_an_identical_analysis_tool_call_is_reused_not_run(copies):
    from d2_notebook.data import open_source
    from d2_notebook.detective.analysis_tools import analysis_tools
    from d2_notebook.detective.context import QueryLog
    from d2_notebook.detective.follow_up import prepare_follow_up, record_fingerprints
    from d2_notebook.detective.sql_tools import record_query
    from d2_notebook.detective.tools import Toolset
    from d2_notebook.llm import ToolCallPart

    database, board_path = copies
    guard = CountingGuard(database)
    source = open_source(guard)
    with Board.open(board_path) as board:
        earlier = board.start_investigation("where does Virexa differ?")
        ctx, log = _team(board, source, earlier.id), QueryLog()
        ran = await Toolset(analysis_tools(ctx, log)).call(
            ToolCallPart("c1", "segment_scan", SCAN_ARGS))
        assert not ran.is_error, ran.content
        scanned = record_query(ctx, log, "Q1", "scan", role="collector", agent="c")
        record_fingerprints(board, source, earlier.id)
        board.set_investigation_state(earlier.id, "finished", actor="test")
        statements = len(guard.ran)

        follow = board.start_investigation("and for asthma?")
        board.record_follow_up(follow.id, earlier.id, actor="user")
        plan = prepare_follow_up(board, source, board.get_investigation(earlier.id),
                                 source.info.to_dict())
        assert len(guard.ran) - statements == len(board.data_fingerprints(earlier.id)), (
            "checking the data costs one fingerprint query per table, nothing else")
        statements = len(guard.ran)
        ctx, log = _team(board, source, follow.id, plan), QueryLog()
        again = await Toolset(analysis_tools(ctx, log)).call(
            ToolCallPart("c2", "segment_scan", SCAN_ARGS))
        assert not again.is_error and f"the stored result of {scanned}" in again.content
        assert "has comorbidities.condition" in again.content  # the summary, as before
        assert len(guard.ran) == statements, "the scan ran again"
        assert record_query(ctx, log, "Q1", "scan", role="collector", agent="c") == scanned
        assert [r.evidence_id for r in board.list_reuses(follow.id)] == [scanned]
        assert board.list_evidence(investigation_id=follow.id) == []
    guard.close()


async def test_a_follow_up_reporter_cannot_mark_earlier_evidence_redundant(copies):
    from d2_notebook.data import open_source
    from d2_notebook.detective.decisions import ReportDecision
    from d2_notebook.detective.team_tools import reporter_tools
    from d2_notebook.detective.tools import Toolset
    from d2_notebook.llm import ToolCallPart

    database, board_path = copies
    source = open_source(str(database))
    with Board.open(board_path) as board:
        earlier = board.list_evidence(investigation_id="I1")[1]
        follow = board.start_investigation("a follow-up")
        tools = Toolset(reporter_tools(_team(board, source, follow.id), "rep", ReportDecision()))
        refused = await tools.call(ToolCallPart("c1", "mark_redundant", {
            "evidence_id": earlier.id, "reason": "r"}))
        assert refused.is_error and "evidence of investigation I1" in refused.content
        assert board.get_evidence(earlier.id).redundant == earlier.redundant
    source.close()


def test_cli_follow_up_before_the_question_is_explained(copies):
    database, board_path = copies
    result = CliRunner().invoke(main, ["investigate", str(database), "--board", str(board_path),
                                       "--follow-up", hospital.FOLLOW_UP_QUESTION])
    assert result.exit_code == 2
    assert "put the QUESTION before --follow-up" in result.output


def test_a_large_earlier_investigation_stays_compact_and_every_id_is_named(board):
    import pandas as pd

    from d2_notebook.detective.follow_up import EARLIER_DIGEST_TOKENS, earlier_digest
    from d2_notebook.llm import estimate_tokens

    earlier = board.start_investigation("a wide question")
    for n in range(300):
        board.add_evidence(f"SELECT {n} AS x", pd.DataFrame({"x": [n]}),
                           description=f"result number {n} " + "with many words " * 10,
                           investigation_id=earlier.id)
    board.set_investigation_state(earlier.id, "finished", actor="test")
    digest = earlier_digest(board, board.get_investigation(earlier.id))
    assert estimate_tokens(digest) < EARLIER_DIGEST_TOKENS * 1.5
    assert "  E1 [1 rows] result number 0" in digest and "x=0" in digest
    assert "(no room for the details of: " in digest and "E300)" in digest
