"""%%investigate and %%evidence through a real IPython InteractiveShell."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import d2_notebook.notebook as nb
from d2_notebook.board import Board
from d2_notebook.datasets import hospital
from d2_notebook.llm.offline import FunctionModel, text, tool_call
from d2_notebook.notebook import InvestigationRun, InvestigationView


def respond(request):
    """A team that proposes H1 (examined at once by a collector and a judge that decide
    nothing, so the loop settles it inconclusive), finishes and reports: a whole run
    offline."""
    first = len(request.messages) == 1
    if request.role == "hypothesizer":
        if first:
            return tool_call("add_hypothesis", {"statement": "Pulmorex lowers deaths",
                                                "rationale": "lowest death rate"})
        return tool_call("done", {"summary": "one candidate"})
    if request.role == "orchestrator":
        return tool_call("finish", {"reason": "nothing open"})
    if request.role == "reporter":
        return tool_call("write_report", {"markdown": "# Report\n\nNothing conclusive."})
    return text("no tools for this role in the test")


@pytest.fixture(scope="module")
def con():
    return hospital.create(patients=300)


@pytest.fixture
def shell(con, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("D2_MODEL", raising=False)
    sh = InteractiveShell.instance()
    sh.run_line_magic("load_ext", "d2_notebook.notebook")
    nb.load_ipython_extension(sh)  # a fresh magics instance: no state from other tests
    sh.user_ns.update(con=con, team=FunctionModel(respond), answer=42)
    yield sh
    for name in ("con", "team", "answer", "res", "res2"):
        sh.user_ns.pop(name, None)


def run(shell: InteractiveShell, cell: str):
    result = shell.run_cell(cell)
    if result.error_before_exec is not None:
        raise result.error_before_exec
    if result.error_in_exec is not None:
        raise result.error_in_exec
    return result.result


def test_investigate_runs_to_the_end_and_binds_the_result(shell, tmp_path: Path) -> None:
    view = run(shell, "%%investigate con --board covid.d2board --model team --out res "
                      "--collectors 2\nWhich treatment is most effective?")
    result = shell.user_ns["res"]
    assert isinstance(view, InvestigationView) and view.result is result
    assert result.state == "finished" and result.settings.collectors == 2
    assert (tmp_path / "covid.d2board").is_file()
    with Board.open(tmp_path / "covid.d2board") as board:
        assert [h.status.value for h in board.list_hypotheses()] == ["inconclusive"]
        assert board.list_investigations()[-1].state.value == "finished"


def test_defaults_come_from_config(shell, tmp_path: Path) -> None:
    (tmp_path / "boards").mkdir()
    run(shell, '%config Investigate.board_dir = "boards"')
    run(shell, "%config Investigate.max_depth = 2")
    run(shell, "%%investigate con --model team --out res\nWhich treatment?")
    assert shell.user_ns["res"].settings.max_depth == 2
    assert len(list((tmp_path / "boards").glob("which-treatment-*.d2board"))) == 1


def test_role_models_come_from_config(shell, tmp_path: Path) -> None:
    from d2_notebook.llm import register_provider

    register_provider("magicrole", lambda model_id, **kw: FunctionModel(
        respond, name=f"magicrole:{model_id}"), replace=True)
    run(shell, '%config Investigate.role_models = {"collector": "magicrole:quick"}')
    try:
        run(shell, "%%investigate con --board roles.d2board --model team --out res\n"
                   "Which treatment?")
        result = shell.user_ns["res"]
        calls = result.board.list_model_calls()
        assert {c.model for c in calls if c.role == "collector"} == {"magicrole:quick"}
        assert "magicrole:quick" not in {c.model for c in calls if c.role != "collector"}
        assert result.settings.role_models == {"collector": "magicrole:quick"}
        run(shell, '%config Investigate.role_models = {"boss": "magicrole:quick"}')
        with pytest.raises(UsageError, match=r"unknown role.*'boss'"):
            run(shell, "%%investigate con --board bad.d2board --model team\nWhich?")
    finally:
        run(shell, "%config Investigate.role_models = {}")


def test_unknown_connection_suggests_the_right_name(shell) -> None:
    with pytest.raises(UsageError, match="did you mean 'con'"):
        run(shell, "%%investigate cno --model team\nWhich treatment?")
    with pytest.raises(UsageError, match="not a DuckDB connection"):
        run(shell, "%%investigate answer --model team\nWhich treatment?")


def test_no_model_configured_names_the_fix(shell) -> None:
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        run(shell, "%%investigate con --board a.d2board\nWhich treatment?")


def test_bad_options_and_unsafe_board_paths_are_usage_errors(shell, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unrecognized arguments: --bogus"):
        run(shell, "%%investigate con --bogus\nWhich treatment?")
    with pytest.raises(UsageError, match="question in the cell body"):
        run(shell, "%investigate con --model team")
    with pytest.raises(UsageError, match="must be positive"):
        run(shell, "%%investigate con --model team --collectors 0\nWhich?")
    (tmp_path / "notes.csv").write_text("a,b\n")
    with pytest.raises(UsageError, match="not a board"):
        run(shell, "%%investigate con --model team --board notes.csv\nWhich?")
    with pytest.raises(UsageError, match="is a folder"):
        run(shell, f"%%investigate con --model team --board {tmp_path}\nWhich?")
    assert (tmp_path / "notes.csv").read_text() == "a,b\n"


def test_evidence_adds_a_human_query_linked_to_the_hypothesis(shell, capsys) -> None:
    run(shell, "%%investigate con --board covid.d2board --model team --out res\nWhich?")
    frame = run(shell, '%%evidence con --for H1 --contradicts "older patients on it died as '
                       'often"\nSELECT count(*) AS n FROM patients')
    assert frame["n"].tolist() == [300]
    board = shell.user_ns["res"].board
    evidence = board.get_evidence("E1")
    assert (evidence.author_role, evidence.author) == ("human", "user")
    assert evidence.description == "older patients on it died as often"
    [link] = board.list_links(evidence_id="E1")
    assert (link.hypothesis_id, link.stance.value) == ("H1", "contradicts")
    assert board.evidence_frame("E1").equals(frame)
    assert "E1 contradicts H1" in capsys.readouterr().out


def test_evidence_can_be_weak_or_neutral_but_takes_one_stance(shell, capsys) -> None:
    run(shell, "%%investigate con --board covid.d2board --model team --out res\nWhich?")
    run(shell, '%%evidence con --for H1 --neutral "no record for these patients"\n'
               "SELECT * FROM patients WHERE patient_id < 0")
    run(shell, '%%evidence con --for H1 --weak "a handful of rows"\nSELECT 1 AS one')
    board = shell.user_ns["res"].board
    assert [lk.stance.value for lk in board.list_links(hypothesis_id="H1")][-2:] == [
        "neutral", "weak"]
    assert "E2 weak H1" in capsys.readouterr().out
    with pytest.raises(UsageError, match=r"--weak .*one of them"):
        run(shell, '%%evidence con --for H1 --supports "x" --neutral "y"\nSELECT 1')


def test_evidence_refuses_unsafe_sql_and_unknown_hypotheses(shell) -> None:
    run(shell, "%%investigate con --board covid.d2board --model team\nWhich?")
    with pytest.raises(UsageError, match="SQL refused: it drops"):
        run(shell, '%%evidence con --for H1 --supports "x"\nDROP TABLE patients')
    with pytest.raises(UsageError, match=r"no hypothesis 'H9'.*H1"):
        run(shell, '%%evidence con --for H9 --supports "x"\nSELECT 1')
    with pytest.raises(UsageError, match="--supports"):
        run(shell, "%%evidence con --for H1\nSELECT 1")
    assert shell.user_ns["con"].execute("SELECT count(*) FROM patients").fetchone() == (300,)


def test_evidence_without_an_investigation_needs_a_board(shell) -> None:
    with pytest.raises(UsageError, match="pass --board PATH"):
        run(shell, '%%evidence con --for H1 --supports "x"\nSELECT 1')


def test_background_returns_a_handle_and_wait_gives_the_result(shell, tmp_path: Path) -> None:
    shown = run(shell, "%%investigate con --board bg.d2board --model team --out res2 "
                       "--background\nWhich treatment?")
    assert shown is None, "the cell shows a placeholder the report replaces, no stale result"
    handle = shell.user_ns["res2"]
    assert isinstance(handle, InvestigationRun), "--out binds the handle at once"
    result = handle.wait()
    assert handle.done and handle.result is result and handle.error is None
    assert result.state == "finished"


def test_line_magic_resumes_an_interrupted_board(shell, tmp_path: Path) -> None:
    with Board.open(tmp_path / "old.d2board") as board:
        inv = board.start_investigation("Which treatment?", {"collectors": 3}, actor="user")
        board.set_investigation_state(inv.id, "interrupted", actor="detective")
        nb.human.add_hypothesis(board, "Pulmorex lowers deaths")
    run(shell, "%investigate con --resume --board old.d2board --model team --out res")
    result = shell.user_ns["res"]
    assert (result.investigation_id, result.state) == ("I1", "finished")
    assert result.board.get_hypothesis("H1").author_role == "human"


def test_resume_magic_is_refused_while_another_run_holds_the_lease(shell,
                                                                   tmp_path: Path) -> None:
    with Board.open(tmp_path / "live.d2board") as board:
        inv = board.start_investigation("Which treatment?", {}, actor="user")
        board.acquire_lease(inv.id)  # a live holder: this very (alive) process
    with pytest.raises(UsageError, match=r"being run by another process .*--force"):
        run(shell, "%investigate con --resume --board live.d2board --model team")
    run(shell, "%investigate con --resume --force --board live.d2board --model team --out res")
    assert shell.user_ns["res"].state == "finished"


def test_human_api_adds_and_abandons(board: Board) -> None:
    board.start_investigation("Which?", {}, actor="user")
    hyp = nb.human.add_hypothesis(board, "Age explains the difference")
    assert (hyp.author_role, hyp.investigation_id) == ("human", "I1")
    assert nb.human.abandon(board, hyp.id, "not a treatment").status.value == "abandoned"


def test_evidence_goes_to_the_investigation_of_its_hypothesis(shell) -> None:
    run(shell, "%%investigate con --board two.d2board --model team --out res\nWhich?")
    run(shell, "%%investigate con --board two.d2board --model team --out res2 --append\n"
               "Which now?")
    board = shell.user_ns["res2"].board
    assert [i.id for i in board.list_investigations()] == ["I1", "I2"]
    run(shell, '%%evidence con --for H1 --supports "as the first run said"\nSELECT 1 AS one')
    [evidence] = [e for e in board.list_evidence() if e.author_role == "human"]
    assert evidence.investigation_id == "I1", "H1 is the first investigation's"
    assert board.get_investigation("I2").state.value == "finished"


def test_running_a_cell_again_uses_a_fresh_board_unless_asked_to_append(
        shell, tmp_path: Path, capsys) -> None:
    cell = "%%investigate con --model team --board again.d2board\nWhich drug works?"
    run(shell, cell)
    run(shell, cell)
    assert "already holds an investigation; this one goes to" in capsys.readouterr().err
    with Board.open(tmp_path / "again.d2board", read_only=True) as first, Board.open(
            tmp_path / "again-2.d2board", read_only=True) as second:
        assert len(first.list_investigations()) == len(second.list_investigations()) == 1
    run(shell, "%%investigate con --model team --board again.d2board --append\n"
               "And for older patients?")
    with Board.open(tmp_path / "again.d2board", read_only=True) as first:
        assert [i.question for i in first.list_investigations()] == [
            "Which drug works?", "And for older patients?"]


def test_recheck_magic_reruns_the_boards_evidence(shell, tmp_path: Path) -> None:
    run(shell, "%%investigate con --model team --board rc.d2board\nWhich drug works?")
    result = run(shell, "%investigate con --board rc.d2board --recheck")
    assert result.stale == () and "re-check R1 of I1" in repr(result)
    view = shell.magics_manager.registry["Investigate"].last_view
    assert view.widget.seen_seq == view.board.last_seq(), "the graph shows the re-check"
    with pytest.raises(UsageError, match="needs --board"):
        nb_magics = shell.magics_manager.registry["Investigate"]
        nb_magics.last_board = None
        run(shell, "%investigate con --recheck")


def test_background_placeholder_names_a_cancellation_and_the_way_to_resume() -> None:
    import asyncio

    from d2_notebook.notebook.views import BackgroundRunView

    status = BackgroundRunView("b.d2board")
    assert status.running and "pass --out NAME" in repr(status)
    status.failed(asyncio.CancelledError())
    assert not status.running
    bundle = status._repr_mimebundle_()
    assert bundle["text/plain"] == ("investigation cancelled: the board is left resumable "
                                    "(--resume --board b.d2board)")
    assert "--resume --board b.d2board" in bundle["text/html"]
