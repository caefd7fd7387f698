"""Continuing an investigation that is already on a board (``--resume``).

Three cases:

- the run stopped (``interrupted`` or ``failed``): settled hypotheses stay settled,
  hypotheses that were in flight go back to ``proposed`` and are redone; the queue
  starts again from what is left;
- the run ``finished`` and someone (a student, an analyst) has since added hypotheses
  or evidence to the board: the investigation reopens, new hypotheses are queued, and
  every settled hypothesis that received new evidence after its verdict goes back to
  ``proposed`` so it is judged again;
- the run ``finished`` early, its collection stopped on its budget or time (a
  ``collection.stopped`` event in its last run) with hypotheses left open: the
  investigation reopens and the open hypotheses are queued, provided the budget given
  now has room (budgets count every run's spend, so the same caps would stop it at
  once).

A reopened investigation's new report supersedes its old one, which stays on the board
as the report version before (:meth:`Board.add_report_version`).

A board may hold several investigations (follow-ups); each is kept apart: what counts
as added to one is only what belongs to it (records addressed to it, events logged for
it). The investigation resumed is the board's last one with something to resume (not
finished, additions, or an early stop with hypotheses open): an earlier one stopped on
its budget is still resumed after a follow-up was asked.
A finished investigation with nothing new and nothing left open is refused with a
message naming the fix.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from d2_notebook.board import Board, HypothesisStatus, Investigation, ModelCallStatus
from d2_notebook.detective.loop import LOOP_ACTOR
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.errors import BudgetExceededError, InvalidRecordError
from d2_notebook.llm import TokenUsage, Usage


def resume_investigation(
    board: Board, question: str | None, settings: InvestigationSettings | None,
    options: dict[str, Any],
) -> tuple[Investigation, InvestigationSettings, bool]:
    """Reopen the investigation :func:`investigation_to_resume` names; returns it, its
    settings, and whether it was finished (reopened for new material).

    Settings given now (``settings``, ``options``) become the investigation's stored
    settings, so the next resume or re-judge runs under them too; the ones before stay
    in the ``investigation.resumed`` events.
    """
    investigation = investigation_to_resume(board)
    if question and question.strip() != investigation.question.strip():
        asked = [i.id for i in board.list_investigations()
                 if i.question.strip() == question.strip()]
        if asked:
            raise InvalidRecordError(
                f"investigation {asked[-1]} asks that question and has nothing to resume: "
                "it finished and nothing was added since; add hypotheses or evidence to it "
                "first (e.g. %%evidence), or ask a new question")
        raise InvalidRecordError(
            f"the board's investigation asks {investigation.question!r}; pass the same "
            "question (or none) to resume it, or use a new board")
    finished = investigation.state.value == "finished"
    additions = _added_since_finished(board, investigation.id) if finished else []
    stopped = stopped_early(board, investigation.id) if finished else None
    if finished and not additions and stopped is None:
        raise InvalidRecordError(
            f"nothing to resume on {board.path}: investigation {investigation.id} is "
            "finished and nothing was added since; add hypotheses or evidence first "
            "(e.g. %%evidence), or start a new investigation without --resume")
    base = settings or InvestigationSettings.from_dict(investigation.settings)
    if "role_models" in options:  # a role's model given again replaces only that role's
        options = {**options, "role_models": {**base.role_models, **options["role_models"]}}
    chosen = replace(base, **options)
    if finished and not additions:
        _check_budget_has_room(board, investigation.id, chosen)
    if chosen != InvestigationSettings.from_dict(investigation.settings):
        # what was stored beside the settings (the source) stays
        board.set_investigation_settings(investigation.id,
                                         {**investigation.settings, **chosen.to_dict()},
                                         actor="user")
    board.set_investigation_state(investigation.id, "running", actor="user")
    board.log_event("investigation.resumed",
                    {"settings": chosen.to_dict(), "reopened": finished,
                     "additions": [e.kind for e in additions], "stopped_early": stopped},
                    actor="user", investigation_id=investigation.id)
    for hyp in board.list_hypotheses(investigation_id=investigation.id):
        if hyp.status is HypothesisStatus.INVESTIGATING:
            board.set_status(hyp.id, HypothesisStatus.PROPOSED, actor=LOOP_ACTOR,
                             reason="was being investigated when the run stopped; redone")
    for hyp_id, evidence_id in _new_evidence_on_settled(board, additions):
        board.set_status(hyp_id, HypothesisStatus.PROPOSED, actor=LOOP_ACTOR,
                         reason=f"new evidence {evidence_id} since its verdict; judged again")
    return board.get_investigation(investigation.id), chosen, finished


def investigation_to_resume(board: Board) -> Investigation:
    """The investigation a resume continues: the board's last one that has something to
    resume (it did not finish, it has additions since it finished, or it stopped early
    with hypotheses open), so an earlier one stays resumable after a follow-up; the
    board's last one when none has (a resume then refuses it, naming the fix).

    Raises:
        InvalidRecordError: the board holds no investigation.
    """
    investigations = board.list_investigations()
    if not investigations:
        raise InvalidRecordError(f"nothing to resume on {board.path}: it holds no "
                                 "investigation; start one without --resume")
    for investigation in reversed(investigations):
        if (investigation.state.value != "finished"
                or _added_since_finished(board, investigation.id)
                or stopped_early(board, investigation.id) is not None):
            return investigation
    return investigations[-1]


def _added_since_finished(board: Board, investigation_id: str) -> list[Any]:
    """Hypotheses and links added to this investigation after it last finished that no
    verdict has taken in since: a hypothesis or link counts only when it came after its
    hypothesis's latest verdict (or the hypothesis has none).

    So a re-judge's own writes (the re-runs it links, the children it refines, each
    judged in the same re-judge) are not additions, while what a user added, before or
    after a re-judge, is until a verdict weighs it.
    """
    finished_at = max((e.seq for e in board.events(kinds=["investigation.state"])
                       if e.investigation_id == investigation_id
                       and e.payload.get("state") == "finished"), default=0)
    judged_at = {e.payload["hypothesis_id"]: e.seq
                 for e in board.events(since=finished_at, kinds=["verdict.added"])
                 if e.investigation_id == investigation_id}  # the latest per hypothesis

    def hypothesis_of(event: Any) -> str:
        return str(event.payload["id" if event.kind == "hypothesis.added" else "hypothesis_id"])

    return [e for e in board.events(since=finished_at, kinds=["hypothesis.added",
                                                              "link.added"])
            if e.investigation_id == investigation_id
            and e.seq > judged_at.get(hypothesis_of(e), 0)]


def stopped_early(board: Board, investigation_id: str) -> str | None:
    """Why the investigation's last run stopped collecting early (the ``reason`` of its
    ``collection.stopped`` event: a budget or the time limit), when hypotheses are still
    open; None when the last run did not stop early or left nothing open.

    The last run is what came after the investigation's last ``investigation.resumed``
    event (its whole history if it was never resumed).
    """
    marks = [e for e in board.events(kinds=["investigation.resumed", "collection.stopped"])
             if e.investigation_id == investigation_id]
    if not marks or marks[-1].kind != "collection.stopped":
        return None
    if all(h.status.is_settled for h in board.list_hypotheses(
            investigation_id=investigation_id)):
        return None
    return str(marks[-1].payload.get("reason") or "collection stopped early")


def _check_budget_has_room(board: Board, investigation_id: str,
                           settings: InvestigationSettings) -> None:
    """Refuse to reopen a run that stopped early when ``settings``' collection budget is
    spent by what the investigation spent already: the run would stop at once.

    Raises:
        InvalidRecordError: the budget has no room; the message names the fix.
    """
    require_budget_room(board, investigation_id, settings,
                        f"investigation {investigation_id} stopped early and the budget "
                        "given has no room left", "to resume it")


def require_budget_room(board: Board, investigation_id: str,
                        settings: InvestigationSettings, refused: str, fix_for: str) -> None:
    """Refuse more work on ``investigation_id`` when ``settings``' collection budget (what
    the reporter's reserve leaves) is spent by what every earlier run of it spent.

    Args:
        refused: What is refused, the start of the message.
        fix_for: What the larger budget is for, the end of the message ("to resume it").

    Raises:
        InvalidRecordError: the budget has no room; the message names the options.
    """
    try:
        settings.collection_budget().check(spent_so_far(board, investigation_id))
    except BudgetExceededError as exc:
        spent = str(exc).split(";")[0]  # the cap reached, without the advice to finish
        raise InvalidRecordError(
            f"{refused} ({spent}); budgets count every run of an investigation: pass a "
            "larger max_calls, max_tokens or max_usd (--max-calls, --budget-usd) "
            f"{fix_for}") from exc


def hypothesizer_turns(board: Board, investigation_id: str) -> int:
    """The hypothesizer turns the investigation has had in earlier runs, which count
    against ``max_hypothesizer_calls``: each turn whose first call was answered, and at
    least one when hypotheses are on the board (the loop then skips the first pass)."""
    answered = sum(1 for call in board.list_model_calls(investigation_id=investigation_id,
                                                        agent="hypothesizer")
                   if call.role == "hypothesizer" and call.status is ModelCallStatus.ANSWERED
                   and len(call.request.get("messages", ())) == 1)
    has_hypotheses = bool(board.list_hypotheses(investigation_id=investigation_id))
    return max(answered, 1 if has_hypotheses else 0)


def _new_evidence_on_settled(board: Board, additions: list[Any]) -> list[tuple[str, str]]:
    """The settled hypotheses (abandoned ones aside) that ``additions`` link evidence to,
    each with its first new evidence; the links came after their latest verdict
    (:func:`_added_since_finished`)."""
    reopened: dict[str, str] = {}
    for event in additions:
        if event.kind != "link.added":
            continue
        hyp = board.get_hypothesis(event.payload["hypothesis_id"])
        if hyp.status.is_settled and hyp.status is not HypothesisStatus.ABANDONED:
            reopened.setdefault(hyp.id, event.payload["evidence_id"])
    return list(reopened.items())


def spent_so_far(board: Board, investigation_id: str) -> Usage:
    """What the investigation's recorded calls used, by role: the ledger's starting
    point, so budgets count the whole investigation across resumes (zero for a new one).

    Every call that was sent counts (answered, failed, cancelled); refused requests do
    not. Earlier calls count as priced (the board keeps their cost, not the price table
    that made it).
    """
    spent = Usage()
    for role in board.model_spend(investigation_id):
        spent.record(role.role, TokenUsage(role.input_tokens, role.output_tokens,
                                           role.cache_read_tokens, role.cache_write_tokens),
                     role.cost_usd, calls=role.calls)
    return spent
