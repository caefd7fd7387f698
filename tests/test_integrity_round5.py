"""Integrity of resumed, re-checked, re-judged and followed-up investigations.

Each test is one rule: a run changes only its own investigation; settings given on a
resume are the investigation's from then on; a re-judge spends from the investigation's
budget; a re-judge's own writes do not count as the user's additions; a failed re-judge
leaves nothing half-examined; a verdict cites only evidence of its hypothesis; a
follow-up's re-check covers the evidence it reused; a stopped investigation can be
resumed after a follow-up.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import duckdb
import pytest
from test_rejudge import PULMOREX_WORSE, _Refiner

from d2_notebook import investigate, investigate_sync, recheck_sync
from d2_notebook.board import Board, RejudgeOutcome
from d2_notebook.board.render import render_tree
from d2_notebook.data import GuardedSQL
from d2_notebook.datasets import hospital
from d2_notebook.detective.policies.hospital import HospitalWalkthrough
from d2_notebook.detective.policies.naive import NaivePolicy
from d2_notebook.errors import InvalidRecordError, ModelAPIError
from d2_notebook.llm import ModelRequest, ModelResponse, ToolCallPart, ToolResult
from d2_notebook.llm.offline import FunctionModel
from d2_notebook.notebook import human

QUESTION = hospital.QUESTION


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    return hospital.create()


def _naive_run(tmp_path: Path, **options: object) -> tuple[Path, Path]:
    """A hospital database file and a finished naive investigation of it."""
    database, board_path = tmp_path / "hospital.duckdb", tmp_path / "hospital.d2board"
    hospital.create(database, patients=1500).close()
    investigate_sync(str(database), QUESTION, board=board_path, model=NaivePolicy().model(),
                     **options).board.close()
    return database, board_path


def _change(database: Path) -> None:
    with duckdb.connect(str(database)) as changed:
        changed.execute(PULMOREX_WORSE)


def _tool_results(request: ModelRequest) -> list[ToolResult]:
    return [m for m in request.messages if isinstance(m, ToolResult)]


# --- A. a follow-up changes only its own hypotheses ---------------------------------------


async def test_a_follow_up_cannot_abandon_or_judge_the_earlier_investigations_hypotheses(
        con, board_path: Path) -> None:
    first = await investigate(con, QUESTION, board=board_path,
                              model=HospitalWalkthrough().model())
    board = first.board
    proposed = board.add_hypothesis("Wards differ in how they record deaths",
                                    investigation_id="I1")
    judged = next(h for h in board.list_hypotheses(investigation_id="I1")
                  if h.status.value == "supported")
    before = {h.id: h.status for h in board.list_hypotheses(investigation_id="I1")}
    verdict_before = board.latest_verdict(judged.id)
    board.close()

    steps = iter([
        [("abandon", {"hypothesis_id": proposed.id, "reason": "off the asthma question"}),
         ("give_verdict", {"hypothesis_id": judged.id, "status": "inconclusive",
                           "confidence": 0.1, "rationale": "unclear", "evidence_ids": []})],
        [("write_report", {"markdown": "## Answer\nUnclear."})],
    ])
    requests: list[ModelRequest] = []

    def detective(request: ModelRequest) -> ModelResponse:
        requests.append(request)
        parts = [ToolCallPart(f"c{i}", name, args) for i, (name, args) in enumerate(next(steps))]
        return ModelResponse(parts=parts, stop_reason="tool_use")

    follow = await investigate(con, hospital.FOLLOW_UP_QUESTION, board=board_path,
                               follow_up=True, model=FunctionModel(detective),
                               variant="single_agent_board")
    board = follow.board
    assert {h.id: h.status for h in board.list_hypotheses(investigation_id="I1")} == before
    assert board.latest_verdict(judged.id) == verdict_before
    refusals = [r.content for r in _tool_results(requests[1]) if r.is_error]
    assert len(refusals) == 2
    assert all("of investigation I1" in text for text in refusals)
    board.close()


# --- B. settings given on a resume are stored -------------------------------------------


async def test_settings_given_on_a_resume_are_the_investigations_from_then_on(
        con, board_path: Path) -> None:
    first = await investigate(con, QUESTION, board=board_path,
                              model=HospitalWalkthrough().model(), max_calls=14)
    assert first.stop_reason, "the small budget stops the first run"
    first.board.close()
    second = await investigate(con, None, board=board_path, resume=True,
                               model=HospitalWalkthrough().model(), max_calls=200)
    board = second.board
    assert board.get_investigation("I1").settings["max_calls"] == 200
    assert "source" in board.get_investigation("I1").settings, "the source stays stored"
    started = board.events(kinds=["investigation.started"])[0]
    assert started.payload["settings"]["max_calls"] == 14, "the first run's stay in the log"

    board.add_hypothesis("Older patients on Cardiolix die less often than on standard care",
                         investigation_id="I1")
    board.close()
    third = await investigate(con, None, board=board_path, resume=True,
                              model=HospitalWalkthrough().model())
    added = third.board.list_hypotheses(investigation_id="I1")[-1]
    assert third.settings.max_calls == 200
    assert not third.stop_reason and added.status.is_settled
    third.board.close()


# --- C. a re-judge spends from the investigation's budget --------------------------------


def test_a_rejudge_counts_the_whole_investigations_budget(tmp_path: Path) -> None:
    database, board_path = _naive_run(tmp_path, max_calls=24)
    _change(database)
    with Board.open(board_path) as board:
        calls_before = len(board.list_model_calls(investigation_id="I1"))
        recorded = len(board.list_model_calls(investigation_id="I1", refused=True))
        with pytest.raises(InvalidRecordError, match=r"no room left.*--max-calls"):
            recheck_sync(str(database), board, rejudge=True, model=_Refiner().model())
        assert len(board.list_model_calls(investigation_id="I1", refused=True)) == recorded
        assert not board.list_recheck_runs(investigation_id="I1"), "refused before it ran"

        result = recheck_sync(str(database), board, rejudge=True, model=_Refiner().model(),
                              max_calls=40)
        assert result.rejudge.rejudges and result.rejudge.report_version is not None
        assert board.get_investigation("I1").settings["max_calls"] == 40
        sent = board.list_model_calls(investigation_id="I1")
        assert len(sent) <= 40
        assert result.rejudge.usage.calls == len(sent) - calls_before
        reporter = [c for c in sent[calls_before:] if c.role == "reporter"]
        assert reporter, "the reporter's reserve was kept for the new report"


# --- D. a re-judge's own writes are not additions for a resume ---------------------------


def test_a_resume_after_a_rejudge_reopens_only_what_the_user_added(tmp_path: Path) -> None:
    database, board_path = _naive_run(tmp_path)
    _change(database)
    with Board.open(board_path) as board:
        result = recheck_sync(str(database), board, rejudge=True, model=NaivePolicy().model())
        assert result.rejudge.rejudges
        with pytest.raises(InvalidRecordError, match="nothing was added since"):
            investigate_sync(str(database), None, board=board, resume=True,
                             model=NaivePolicy().model())
        latest = {h.id: board.latest_verdict(h.id) for h in board.list_hypotheses()}
        rejudged = {r.hypothesis_id for r in result.rejudge.rejudges}
        other = next(h for h, v in latest.items() if v is not None and h not in rejudged)
        with duckdb.connect(str(database), read_only=True) as con:
            rows = GuardedSQL(con).run("SELECT count(*) AS admissions FROM admissions")
            human.add_evidence(board, rows, hypothesis_id=other, stance="neutral",
                               rationale="how many admissions there are")
    resumed = investigate_sync(str(database), None, board=board_path, resume=True,
                               model=NaivePolicy().model())
    board = resumed.board
    judged_again = {h for h, v in latest.items() if board.latest_verdict(h) != v}
    assert judged_again == {other}
    board.close()


# --- E. a failed re-judge leaves nothing half-examined -----------------------------------


class _FailingChildren(_Refiner):
    """Refines like :class:`_Refiner`, but the children's collectors fail for good."""

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if request.role == "collector":
            raise ModelAPIError("the provider is overloaded (529) after 4 retries")
        return super().__call__(request)


def test_a_failed_rejudge_leaves_its_children_for_the_next_one(tmp_path: Path) -> None:
    database, board_path = _naive_run(tmp_path)
    _change(database)
    with Board.open(board_path) as board:
        with pytest.raises(ModelAPIError):
            recheck_sync(str(database), board, rejudge=True, model=_FailingChildren().model())
        children = [h for h in board.list_hypotheses(investigation_id="I1") if h.parent_id]
        assert children
        assert {h.status.value for h in children} == {"proposed"}
        assert board.get_investigation("I1").state.value == "finished"
        failed = board.events(kinds=["rejudge.failed"])
        assert "ModelAPIError" in failed[-1].payload["error"]
        assert "re-check with --rejudge to finish it" in render_tree(board)

        result = recheck_sync(str(database), board, rejudge=True, model=_Refiner().model())
        assert result.rejudge.report_version is not None
        for child in children:
            assert board.get_hypothesis(child.id).status.is_settled
            assert board.latest_verdict(child.id) is not None
        assert "re-check with --rejudge to finish it" not in render_tree(board)


# --- F. a re-judged verdict cites only evidence of its hypothesis -------------------------


class _CitesMotivation(NaivePolicy):
    """The naive team, whose judges also cite E1 (the exploration that motivated every
    hypothesis)."""

    def __call__(self, request: ModelRequest) -> ModelResponse:
        response = super().__call__(request)
        if not request.agent.startswith("judge-"):
            return response
        parts = [replace(p, args={**p.args, "evidence_ids": [*p.args["evidence_ids"], "E1"]})
                 if isinstance(p, ToolCallPart) and p.name == "give_verdict"
                 and p.args.get("evidence_ids") else p for p in response.parts]
        return replace(response, parts=parts)


class _Confirms(NaivePolicy):
    """Confirms every stale verdict."""

    def __call__(self, request: ModelRequest) -> ModelResponse:
        if request.agent.startswith("rejudge-"):
            return ModelResponse(parts=[ToolCallPart("c1", "confirm_verdict",
                                                     {"rationale": "still holds"})],
                                 stop_reason="tool_use")
        return super().__call__(request)


def test_a_confirmed_verdict_cites_reruns_related_to_its_hypothesis(tmp_path: Path) -> None:
    database, board_path = tmp_path / "hospital.duckdb", tmp_path / "hospital.d2board"
    hospital.create(database, patients=1500).close()
    run = investigate_sync(str(database), QUESTION, board=board_path,
                           model=_CitesMotivation().model())
    citing = [v.hypothesis_id for v in run.board.list_verdicts() if "E1" in v.evidence_ids]
    assert citing and all("E1" in run.board.get_hypothesis(h).motivated_by for h in citing)
    run.board.close()
    _change(database)  # E1, the exploration, changes too
    with Board.open(board_path) as board:
        result = recheck_sync(str(database), board, rejudge=True, model=_Confirms().model())
        assert result.rejudge.with_outcome(RejudgeOutcome.CONFIRMED)
        links = {(link.evidence_id, link.hypothesis_id) for link in board.list_links()}
        for hyp in board.list_hypotheses():
            verdict = board.latest_verdict(hyp.id)
            if verdict is None:
                continue
            unrelated = [e for e in verdict.evidence_ids
                         if (e, hyp.id) not in links and e not in hyp.motivated_by]
            assert not unrelated, f"{hyp.id}'s verdict cites {unrelated}"
        assert any(board.get_evidence(e).author == "rejudge"
                   for h in citing for e in board.get_hypothesis(h).motivated_by)


# --- G. a follow-up's re-check covers the evidence it reused -----------------------------


def test_a_follow_ups_recheck_reruns_the_evidence_it_reused(tmp_path: Path) -> None:
    database, board_path = tmp_path / "hospital.duckdb", tmp_path / "hospital.d2board"
    hospital.create(database).close()
    investigate_sync(str(database), QUESTION, board=board_path,
                     model=HospitalWalkthrough().model()).board.close()
    follow = investigate_sync(str(database), hospital.FOLLOW_UP_QUESTION, board=board_path,
                              follow_up=True, model=HospitalWalkthrough().model())
    board = follow.board
    own = {e.id for e in board.list_evidence(investigation_id="I2")}
    resting = {h.id: [e for e in board.latest_verdict(h.id).evidence_ids if e not in own]
               for h in board.list_hypotheses(investigation_id="I2")
               if board.latest_verdict(h.id) is not None}
    reused = {e for ids in resting.values() for e in ids}
    assert reused, "the follow-up's verdicts rest on evidence of I1"
    board.close()
    with duckdb.connect(str(database)) as changed:  # every asthma patient on Virexa dies
        changed.execute("UPDATE outcomes SET died = true WHERE admission_id IN (SELECT "
                        "admission_id FROM treatments WHERE drug = 'Virexa')")
    result = recheck_sync(str(database), board_path, investigation_id="I2")
    assert reused <= {r.evidence_id for r in result.rechecks}
    assert not result.not_rechecked
    assert {h for h, ids in resting.items() if ids} <= set(result.stale)


# --- H. an investigation stopped on its budget stays resumable after a follow-up ---------


async def test_a_budget_stopped_investigation_resumes_after_a_follow_up(
        con, board_path: Path) -> None:
    first = await investigate(con, QUESTION, board=board_path,
                              model=HospitalWalkthrough().model(), max_calls=14)
    assert first.stop_reason
    first.board.close()
    follow = await investigate(con, hospital.FOLLOW_UP_QUESTION, board=board_path,
                               follow_up=True, model=HospitalWalkthrough().model())
    assert follow.state == "finished"
    follow.board.close()

    resumed = await investigate(con, QUESTION, board=board_path, resume=True,
                                model=HospitalWalkthrough().model(), max_calls=300)
    assert resumed.investigation_id == "I1" and not resumed.stop_reason
    assert all(h.status.is_settled
               for h in resumed.board.list_hypotheses(investigation_id="I1"))
    resumed.board.close()
    with pytest.raises(InvalidRecordError, match="I1 asks that question and has nothing"):
        await investigate(con, QUESTION, board=board_path, resume=True,
                          model=HospitalWalkthrough().model())
