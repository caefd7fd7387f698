"""Re-judge: real DuckDB files changed between runs, the naive offline policy as the team.

A finding reversed by new data → re-check marks it stale → the judge revises exactly the
stale verdicts (the others keep their verdict), a new report version opens with "What
changed since <date>", and only the stale branches (and the reporter) reach a model.
Unchanged data sends nothing to a model. Bad input fails before anything is written.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import duckdb
import pytest
from click.testing import CliRunner
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

import d2_notebook.notebook as nb
from d2_notebook import investigate_sync, recheck_sync
from d2_notebook.board import Board, RejudgeOutcome, VerdictCheck
from d2_notebook.cli import main
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.naive import NaivePolicy
from d2_notebook.detective.policies.team_policy import Action, Turn
from d2_notebook.errors import InvalidRecordError, ModelAPIError
from d2_notebook.llm import ModelRequest, ModelResponse

PULMOREX_WORSE = """UPDATE outcomes SET died = true WHERE admission_id IN (
    SELECT o.admission_id FROM outcomes o JOIN treatments t USING (admission_id)
    WHERE t.drug = 'Pulmorex' AND NOT o.died ORDER BY o.admission_id LIMIT 20)"""
"""New outcomes that take Pulmorex's death rate (0.14) up to standard care's (0.23)."""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A hospital database, a finished naive investigation of it (H3: Pulmorex changes
    the death rate, and H6: the ward does, supported; H1, H2, H4, H5 not) and a
    pristine copy of the database to restore it from."""
    folder = tmp_path_factory.mktemp("rejudge")
    database, board_path = folder / "hospital.duckdb", folder / "hospital.d2board"
    hospital.create(database, patients=1500).close()
    investigate_sync(str(database), hospital.QUESTION, board=board_path,
                     model=NaivePolicy().model()).board.close()
    pristine = folder / "pristine.duckdb"
    shutil.copy(database, pristine)
    return database, board_path, pristine


@pytest.fixture
def copies(recorded: tuple[Path, Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """The database as investigated (at the path the board names) and a fresh copy of
    the board, for one test."""
    database, board_path, pristine = recorded
    shutil.copy(pristine, database)
    shutil.copy(board_path, tmp_path / board_path.name)
    return database, tmp_path / board_path.name


def _change(database: Path, statement: str = PULMOREX_WORSE) -> None:
    con = duckdb.connect(str(database))
    con.execute(statement)
    con.close()


def _calls_by_role(board: Board, after: int = 0) -> Counter[str]:
    return Counter(c.role for c in board.list_model_calls(investigation_id="I1")
                   if c.id > after)


def _last_call(board: Board) -> int:
    calls = board.list_model_calls(investigation_id="I1")
    return calls[-1].id if calls else 0


class _Refusing:
    """A model that must not be asked anything."""

    name = "must-not-be-called"

    async def request(self, request: ModelRequest) -> ModelResponse:
        raise AssertionError(f"a model was asked by {request.agent}")


def test_a_reversed_finding_is_revised_and_the_rest_left_alone(copies) -> None:
    database, board_path = copies
    _change(database)
    with Board.open(board_path) as board:
        before = {h.id: board.latest_verdict(h.id) for h in board.list_hypotheses()}
        first_report = board.get_investigation("I1").report
        last = _last_call(board)
        result = recheck_sync(str(database), board, rejudge=True, model=NaivePolicy().model())

        assert result.stale == ("H3", "H6")
        judged = {r.hypothesis_id: r for r in result.rejudge.rejudges}
        assert set(judged) == set(result.stale)  # exactly the stale ones
        assert judged["H3"].outcome is RejudgeOutcome.REVISED
        assert judged["H6"].outcome is RejudgeOutcome.CONFIRMED
        # revised: a new verdict, the old one kept
        revised = board.latest_verdict("H3")
        assert (before["H3"].status.value, revised.status.value) == ("supported",
                                                                      "contradicted")
        assert [v.id for v in board.list_verdicts(hypothesis_id="H3")][:-1][-1] == \
            before["H3"].id
        assert judged["H3"].previous_verdict_id == before["H3"].id
        assert judged["H3"].verdict_id == revised.id
        # it cites the re-run (new rows on the board), not the old evidence
        (rerun,) = judged["H3"].rerun_evidence_ids
        assert revised.evidence_ids == (rerun,)
        assert "re-run" in board.list_links(hypothesis_id="H3")[-1].rationale
        # confirmed ones: the re-check's untouched; the judge's recorded again
        for untouched in ("H1", "H2", "H4", "H5"):
            assert board.latest_verdict(untouched).id == before[untouched].id
        assert board.latest_verdict("H6").status is before["H6"].status
        # only the stale branches and the reporter asked a model
        assert _calls_by_role(board, last) == Counter({"judge": 2, "reporter": 1})
        assert result.rejudge.usage.calls == 3
        # a new report version; the first stays readable
        versions = board.list_report_versions("I1")
        assert [v.version for v in versions] == [1, 2]
        assert versions[0].report == first_report and versions[1].recheck_run_id == "R1"
        report = versions[1].report
        assert report.startswith(f"## What changed since {versions[0].created_at[:10]}")
        assert "**H3**" in report.split("## Answer")[0]
        assert "supported (0.7) -> contradicted" in report
        assert "Confirmed by the re-check (their evidence came back the same): H1, H2, " \
               "H4, H5." in report
        assert board.get_investigation("I1").report == report
        assert "## Answer" in report and result.rejudge.claim_check.unverified == ()
        # re-judged verdicts are current again: no longer shown stale
        assert board.latest_verdict_checks("I1") == {
            h: c for h, c in board.latest_verdict_checks("I1").items()
            if h not in ("H3", "H6")}
        kinds = [e.kind for e in board.events() if e.kind.startswith(("rejudge.", "report."))]
        assert kinds == ["rejudge.started", "rejudge.revised", "rejudge.confirmed",
                         "report.version"]

        # The re-judged verdicts rest on the re-runs: the next re-check confirms them all
        # and a re-judge has nothing to send.
        again = recheck_sync(str(database), board, rejudge=True, model=_Refusing())
        assert again.stale == () and {"H3", "H6"} <= set(again.confirmed)
        assert again.rejudge.rejudges == () and again.rejudge.report_version is None
        assert len(board.list_report_versions("I1")) == 2


def test_unchanged_data_sends_nothing_to_a_model(copies) -> None:
    database, board_path = copies
    with Board.open(board_path) as board:
        last = _last_call(board)
        result = recheck_sync(str(database), board, rejudge=True, model=_Refusing())
        assert result.stale == () and result.rejudge.rejudges == ()
        assert "nothing stale, no model called" in str(result)
        assert _calls_by_role(board, last) == Counter()
        assert [v.version for v in board.list_report_versions("I1")] == [1]
        assert not [e for e in board.events() if e.kind.startswith("rejudge.")]


class _Refiner(NaivePolicy):
    """Re-judges by splitting the hypothesis by severity; a child's collector runs one
    query for its stratum and records it."""

    def collector(self, turn: Turn) -> list[Action] | str:
        stratum = self._statement(turn).rsplit(": ", 1)[-1]
        if turn.step == 0:
            return [("run_sql", {"sql": "SELECT t.drug, avg(CASE WHEN o.died THEN 1 ELSE 0 "
                                 "END) AS death_rate, count(*) AS n FROM outcomes o JOIN "
                                 "admissions a USING (admission_id) JOIN treatments t USING "
                                 f"(admission_id) WHERE a.severity = '{stratum}' GROUP BY 1 "
                                 "ORDER BY 1", "purpose": f"death rate by drug, {stratum}"})]
        return [("record_evidence", {"query_id": "Q1", "description": f"death rate by drug "
                                     f"among {stratum} cases", "stance": "contradicts",
                                     "reading": "Pulmorex close to standard care"}),
                ("submit_for_judgement", {"summary": "one stratum compared"})]

    def rejudge(self, turn: Turn) -> list[Action] | str:
        statement = self._statement(turn)
        ids = [e.rerun or e.id for e in turn.rechecked_evidence()]
        return [("refine", {"status": "inconclusive", "confidence": 0.4, "evidence_ids": ids,
                            "rationale": f"{', '.join(ids)}: may differ by severity",
                            "children": [
                                {"statement": f"{statement} within admissions.severity: "
                                              f"{s}"} for s in ("moderate", "critical")]})]


def test_a_refined_verdict_has_its_children_collected_and_judged(copies) -> None:
    database, board_path = copies
    _change(database)
    with Board.open(board_path) as board:
        last = _last_call(board)
        result = recheck_sync(str(database), board, rejudge=True, model=_Refiner().model())
        refined = {r.hypothesis_id: r for r in result.rejudge.rejudges}
        assert refined["H3"].outcome is RejudgeOutcome.REFINED
        children = refined["H3"].children
        assert len(children) == 2
        for child in children:  # collected (evidence linked) and judged, as in a run
            assert board.list_links(hypothesis_id=child)
            assert board.latest_verdict(child) is not None
            assert board.get_hypothesis(child).parent_id == "H3"
        kids = [c for r in result.rejudge.rejudges for c in r.children]
        agents = {c.agent for c in board.list_model_calls(investigation_id="I1")
                  if c.id > last}
        assert agents == {"rejudge-H3", "rejudge-H6", "reporter",
                          *(f"collector-{c}" for c in kids), *(f"judge-{c}" for c in kids)}
        assert "Refined into " + ", ".join(children) in result.rejudge.report_version.report


def test_rejudge_without_a_model_names_the_fix_and_writes_nothing(
        copies, monkeypatch: pytest.MonkeyPatch) -> None:
    database, board_path = copies
    monkeypatch.delenv("D2_MODEL", raising=False)
    _change(database)
    with Board.open(board_path) as board:
        with pytest.raises(InvalidRecordError, match="re-judging needs a model: pass model="):
            recheck_sync(str(database), board, rejudge=True)
        assert board.list_recheck_runs() == []
    done = CliRunner().invoke(main, ["board", "recheck", str(database), str(board_path),
                                     "--rejudge"])
    assert done.exit_code == 1
    assert "--policy naive" in done.output and len(done.output.strip().splitlines()) == 1
    lone = CliRunner().invoke(main, ["board", "recheck", str(database), str(board_path),
                                     "--policy", "naive"])
    assert lone.exit_code == 2 and "add --rejudge" in lone.output
    unknown = CliRunner().invoke(main, ["board", "recheck", str(database), str(board_path),
                                        "--rejudge", "--policy", "clever"])
    assert unknown.exit_code == 2 and "'naive'" in unknown.output
    with Board.open(board_path, read_only=True) as board:
        assert board.list_recheck_runs() == []


def test_a_board_with_no_finished_investigation_is_refused(tmp_path: Path) -> None:
    database = tmp_path / "h.duckdb"
    hospital.create(database, patients=200).close()
    board_path = tmp_path / "open.d2board"
    with Board.open(board_path) as board:
        board.start_investigation(hospital.QUESTION)
    with pytest.raises(InvalidRecordError, match=r"I1 is running, not finished.*--resume"):
        recheck_sync(str(database), board_path, rejudge=True, model=_Refusing())
    empty = tmp_path / "empty.d2board"
    Board.open(empty).close()
    done = CliRunner().invoke(main, ["board", "recheck", str(database), str(empty),
                                     "--rejudge", "--policy", "naive"])
    assert done.exit_code == 1 and "holds no investigation" in done.output
    with Board.open(board_path, read_only=True) as board:
        assert board.list_recheck_runs() == []


def test_the_cli_rejudges_offline_and_prints_the_new_report(copies) -> None:
    database, board_path = copies
    _change(database)
    done = CliRunner().invoke(main, ["board", "recheck", str(database), str(board_path),
                                     "--rejudge", "--policy", "naive"])
    assert done.exit_code == 0, done.output
    assert "re-judge: confirmed H6; revised H3; report version 2 (3 model call(s))" \
        in done.output
    assert "## What changed since" in done.output
    with Board.open(board_path, read_only=True) as board:
        assert board.latest_verdict("H3").status.value == "contradicted"


def test_the_magic_rejudges_through_the_python_api(copies, monkeypatch) -> None:
    database, board_path = copies
    _change(database)
    monkeypatch.delenv("D2_MODEL", raising=False)
    shell = InteractiveShell.instance()
    nb.load_ipython_extension(shell)
    with pytest.raises(UsageError, match="re-judging needs a model"):
        shell.run_line_magic("investigate", f"--db {database} --board {board_path} "
                                            "--recheck --rejudge")
    with pytest.raises(UsageError, match="add --rejudge"):
        shell.run_line_magic("investigate", f"--db {database} --board {board_path} "
                                            "--recheck --policy naive")
    result = shell.run_line_magic("investigate", f"--db {database} --board {board_path} "
                                                 "--recheck --rejudge --policy naive")
    assert result.rejudge.with_outcome(RejudgeOutcome.REVISED) == ("H3",)
    assert "## What changed since" in result._repr_markdown_()


def test_a_recorded_rejudge_replays_to_the_same_board(recorded, tmp_path: Path) -> None:
    """A notebook re-run later: replay the investigation, change the data the same way,
    re-judge from the recording: same verdicts, same report, no model."""
    database, recording, pristine = recorded
    first_board, again_board = tmp_path / "a.d2board", tmp_path / "b.d2board"
    shutil.copy(pristine, database)
    shutil.copy(recording, first_board)
    _change(database)
    recheck_sync(str(database), first_board, rejudge=True, model=NaivePolicy().model())

    shutil.copy(pristine, database)
    investigate_sync(str(database), None, board=again_board, replay=first_board).board.close()
    _change(database)
    replayed = recheck_sync(str(database), again_board, rejudge=True, replay=first_board)
    with Board.open(first_board, read_only=True) as a, \
            Board.open(again_board, read_only=True) as b:
        assert [(r.hypothesis_id, r.outcome) for r in b.list_rejudges()] == \
            [(r.hypothesis_id, r.outcome) for r in a.list_rejudges()]
        assert [(v.hypothesis_id, v.status, v.evidence_ids) for v in b.list_verdicts()] == \
            [(v.hypothesis_id, v.status, v.evidence_ids) for v in a.list_verdicts()]
        assert b.list_report_versions("I1")[-1].report.split("\n", 1)[1] == \
            a.list_report_versions("I1")[-1].report.split("\n", 1)[1]  # the dates may differ
    assert replayed.rejudge.usage.calls == 3
    _change(database, "UPDATE outcomes SET died = NOT died WHERE admission_id < 400")
    with pytest.raises(InvalidRecordError, match="holds 1 re-judge"):
        recheck_sync(str(database), again_board, rejudge=True, replay=first_board)


def test_verdicts_marked_stale_by_a_recheck_read_back(copies) -> None:
    database, board_path = copies
    _change(database)
    with Board.open(board_path) as board:
        recheck_sync(str(database), board)
        checks = board.latest_verdict_checks("I1")
        assert {h for h, c in checks.items() if c.check is VerdictCheck.STALE} == {"H3", "H6"}


def test_board_show_and_the_json_export_keep_the_rejudge_and_every_report_version(
        copies, tmp_path: Path) -> None:
    database, board_path = copies
    _change(database)
    recheck_sync(str(database), board_path, rejudge=True, model=NaivePolicy().model())
    shown = CliRunner().invoke(main, ["board", "show", str(board_path)])
    assert shown.exit_code == 0, shown.output
    assert "after R1: revised H3; confirmed H6" in shown.output
    assert "report versions: v1 " in shown.output and ", v2 " in shown.output
    exported = tmp_path / "board.json"
    done = CliRunner().invoke(main, ["board", "export", str(board_path), "--json", "-o",
                                     str(exported)])
    assert done.exit_code == 0, done.output
    copy = tmp_path / "imported.d2board"
    done = CliRunner().invoke(main, ["board", "import", str(exported), str(copy)])
    assert done.exit_code == 0, done.output
    with Board.open(board_path, read_only=True) as a, Board.open(copy, read_only=True) as b:
        assert b.list_rejudges() == a.list_rejudges()
        assert b.list_report_versions("I1") == a.list_report_versions("I1")


def test_the_hospital_walkthrough_rejudges_offline_too(tmp_path: Path) -> None:
    """The demo's scripted policy reads plain query results it cannot re-read: the
    verdicts on the changed drug become inconclusive, with the diff as the reason; the
    others keep their verdicts."""
    from d2_notebook.detective.policies.hospital import HospitalWalkthrough

    database, board_path = tmp_path / "h.duckdb", tmp_path / "h.d2board"
    hospital.create(database).close()
    investigate_sync(str(database), hospital.QUESTION, board=board_path,
                     model=HospitalWalkthrough().model()).board.close()
    _change(database, PULMOREX_WORSE.replace("Pulmorex", "Virexa").replace("20)", "200)"))
    with Board.open(board_path) as board:
        before = {h.id: board.latest_verdict(h.id) for h in board.list_hypotheses()}
        last = _last_call(board)
        result = recheck_sync(str(database), board, rejudge=True,
                              model=HospitalWalkthrough().model())
        assert result.stale and all("Virexa" in board.get_hypothesis(h).statement
                                    for h in result.stale)
        assert result.rejudge.with_outcome(RejudgeOutcome.REVISED) == result.stale
        for hypothesis_id in result.stale:
            verdict = board.latest_verdict(hypothesis_id)
            assert verdict.status.value == "inconclusive" and "->" in verdict.rationale
        for hypothesis_id in result.confirmed:
            assert board.latest_verdict(hypothesis_id).id == before[hypothesis_id].id
        agents = {c.agent for c in board.list_model_calls(investigation_id="I1")
                  if c.id > last}
        assert agents == {f"rejudge-{h}" for h in result.stale} | {"reporter"}


class _FailsOnH6(NaivePolicy):
    """The model fails for good when asked about H6 (after H3 was re-judged)."""

    def rejudge(self, turn: Turn) -> list[Action] | str:
        if turn.hypothesis_id == "H6":
            raise ModelAPIError("the provider is down")
        return super().rejudge(turn)


def test_a_rejudge_stopped_by_a_model_error_is_finished_by_the_next(copies) -> None:
    database, board_path = copies
    _change(database)
    with Board.open(board_path) as board:
        with pytest.raises(ModelAPIError, match="provider is down"):
            recheck_sync(str(database), board, rejudge=True, model=_FailsOnH6().model())
        assert [(r.hypothesis_id, r.outcome) for r in board.list_rejudges()] == [
            ("H3", RejudgeOutcome.REVISED)]
        assert len(board.list_report_versions("I1")) == 1  # no report from half a re-judge
        assert board.get_investigation("I1").state.value == "finished"

        last = _last_call(board)
        result = recheck_sync(str(database), board, rejudge=True, model=NaivePolicy().model())
        assert result.stale == ("H6",) and "H3" in result.confirmed  # H3 rests on E9 now
        assert {c.agent for c in board.list_model_calls(investigation_id="I1")
                if c.id > last} == {"rejudge-H6", "reporter"}
        report = result.rejudge.report_version.report.split("## Answer")[0]
        assert "**H3**" in report and "-> contradicted" in report  # R1's revision
        assert "**H6**" in report and "still supported" in report  # R2's confirmation
        assert "H3" not in report.split("Confirmed by the re-check")[-1]


def test_the_magic_rejudges_in_a_kernel_whose_loop_is_running(copies, monkeypatch) -> None:
    """In Jupyter a cell runs while the kernel's asyncio loop runs: the re-check and the
    re-judge must run on that loop, not fail for want of asyncio.run."""
    database, board_path = copies
    _change(database)
    shell = InteractiveShell.instance()
    nb.load_ipython_extension(shell)

    async def cell() -> object:  # the kernel's loop is running while the cell executes
        return shell.run_line_magic("investigate", f"--db {database} --board {board_path} "
                                                   "--recheck --rejudge --policy naive")

    import asyncio

    result = asyncio.run(cell())
    assert result.rejudge.with_outcome(RejudgeOutcome.REVISED) == ("H3",)


def _rejudge_turn(lines: str, earlier: str = "supported") -> list[tuple[str, dict]]:
    """What the generic offline re-judge answers to a first message with ``lines``."""
    from d2_notebook.llm import UserMessage

    text = (f"RE-JUDGE H1: something\nYOUR EARLIER VERDICT: {earlier} (confidence 0.8) "
            f"citing E1: as measured\nRefining it is not possible: depth.\n\n{lines}\n\n"
            "THE BOARD NOW:\n")
    request = ModelRequest(system="", messages=[UserMessage(text)], tools=[],
                           max_tokens=100, role="judge", agent="rejudge-H1")
    response = NaivePolicy()(request)
    return [(p.name, p.args) for p in response.parts]


CI = "crude effect {} (95% CI {} to {})."


@pytest.mark.parametrize(("then", "now", "other", "expected"), [
    (CI.format(-0.09, -0.15, -0.03), CI.format(-0.08, -0.14, -0.02), "supports",
     ("confirm_verdict",)),
    (CI.format(-0.09, -0.15, -0.03), CI.format(-0.01, -0.08, 0.05), "contradicts",
     ("give_verdict", "contradicted", 0.7)),
    (CI.format(-0.09, -0.15, -0.03), CI.format(-0.01, -0.08, 0.05), "supports",
     ("give_verdict", "inconclusive", 0.4)),
    (CI.format(-0.09, -0.15, -0.03), CI.format(0.09, 0.03, 0.15), "supports",
     ("give_verdict", "supported", 0.5)),
    ("a plain query", "a plain query", "supports", ("give_verdict", "inconclusive", 0.3)),
], ids=["still-holds", "now-none", "now-mixed", "turned-around", "unreadable"])
def test_the_generic_offline_rejudge_reads_the_effect_before_and_after(
        then: str, now: str, other: str, expected: tuple) -> None:
    lines = (f"EVIDENCE E1 changed -> re-run E9 | stance: supports | rows 4 -> 5\n"
             f"  reading then: {then}\n  reading now: {now}\n"
             f"EVIDENCE E2 same | stance: {other}")
    ((name, args),) = _rejudge_turn(lines)
    assert (name, *([args["status"], args["confidence"]] if name == "give_verdict" else [])) \
        == expected
    if name == "give_verdict":
        assert args["evidence_ids"] == ["E9", "E2"]


def test_the_generic_offline_rejudge_makes_a_verdict_on_failing_evidence_inconclusive(
        ) -> None:
    ((name, args),) = _rejudge_turn("EVIDENCE E1 fails | stance: supports | Binder Error: "
                                    'column "channel" not found\n  reading then: x\n'
                                    "EVIDENCE E4 not re-checked | stance: supports")
    assert (name, args["status"]) == ("give_verdict", "inconclusive")
    assert "E1 no longer runs (Binder Error" in args["rationale"]
    assert args["evidence_ids"] == ["E4"]
