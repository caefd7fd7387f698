"""Re-judge: after a re-check, send each stale verdict back to its judge with the old and
the new evidence side by side, then write a new report version.

:func:`rejudge_stale` is the second half of ``recheck(..., rejudge=True)``
(:mod:`d2_notebook.detective.recheck`). For the re-check run just finished it:

1. records each changed query's new result as new evidence (a *re-run*, linked to the
   hypotheses that cited the old one with the old stance), so the new verdicts and the
   new report cite rows that are on the board;
2. asks the judge, stale hypothesis by stale hypothesis (:func:`.judge.judge_again`), to
   confirm, revise or refine; a refinement's children are collected and judged as in a
   run (the same :class:`~d2_notebook.detective.loop.ControlLoop`);
3. has the reporter write the updated report; the new report version starts with
   "What changed since <date of the earlier report>" (:func:`.brief.what_changed`).

A re-judge stopped midway (a model error, Ctrl-C) keeps what it decided, puts the
hypotheses it was examining back to ``proposed`` and logs a ``rejudge.failed`` event
with the error; the next ``recheck(..., rejudge=True)`` finds those verdicts confirmed
(they cite the re-runs), re-judges the rest, examines the refined children left
unjudged (:func:`unfinished_children`), and its report version names every change since
the last version.

Only the stale branches reach a model (and the reporter, once): no re-check, no
hypothesizer, no orchestrator. Every call is recorded on the board like a run's, under
the investigation, after a ``rejudge.started`` event; :func:`rejudge_replay_model`
answers a later re-judge from them (no API). Verdicts are never overwritten.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from d2_notebook.board import (
    Board,
    Evidence,
    HypothesisStatus,
    Investigation,
    InvestigationState,
    Recheck,
    RecheckOutcome,
    RecheckRun,
    Rejudge,
    RejudgeOutcome,
    ReportVersion,
    VerdictCheck,
)
from d2_notebook.data import SQLSource
from d2_notebook.data.analysis import spec_for
from d2_notebook.detective.claim_check import ClaimCheck, check_report
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.coverage_view import read_candidates
from d2_notebook.detective.decisions import Judgement
from d2_notebook.detective.loop import ControlLoop
from d2_notebook.detective.rejudge.brief import what_changed
from d2_notebook.detective.rejudge.judge import judge_again
from d2_notebook.detective.rejudge.replay import STARTED, rejudge_replay_model
from d2_notebook.detective.resume import require_budget_room, spent_so_far
from d2_notebook.detective.sequencer import WriteSequencer
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.errors import BoardError, D2Error, InvalidRecordError
from d2_notebook.llm import (
    Budget,
    Ledger,
    Model,
    RecordingModel,
    TokenUsage,
    Usage,
    UsageTotals,
)

__all__ = ["ACTOR", "FAILED", "RejudgeResult", "check_rejudge_budget", "check_rejudgeable",
           "rejudge_replay_model", "rejudge_settings", "rejudge_stale", "unfinished_children"]

ACTOR = "rejudge"
FAILED = "rejudge.failed"
"""The event a re-judge stopped by a fault or an interruption leaves, with the error."""


@dataclass(frozen=True)
class RejudgeResult:
    """What a re-judge did.

    Attributes:
        rejudges: One record per stale hypothesis, in the order they were judged.
        report_version: The new report version (None when nothing was stale).
        usage: The re-judge's model calls, tokens and cost (``usage.by_role``).
        claim_check: The numbers of the new report looked up in the evidence it cites.
    """

    rejudges: tuple[Rejudge, ...] = ()
    report_version: ReportVersion | None = None
    usage: Usage = field(default_factory=Usage)
    claim_check: ClaimCheck = field(default_factory=lambda: ClaimCheck(0, (), ""))

    def with_outcome(self, outcome: RejudgeOutcome) -> tuple[str, ...]:
        """The hypotheses whose re-judge ended in ``outcome``."""
        return tuple(r.hypothesis_id for r in self.rejudges if r.outcome is outcome)

    def summary(self) -> str:
        """One line: what the judge did with each stale verdict, and the report version."""
        if not self.rejudges:
            return "re-judge: nothing stale, no model called"
        parts = [f"{o.value} {', '.join(self.with_outcome(o))}" for o in RejudgeOutcome
                 if self.with_outcome(o)]
        version = (f"; report version {self.report_version.version}"
                   if self.report_version is not None else "")
        return f"re-judge: {'; '.join(parts)}{version} ({self.usage.calls} model call(s))"


def check_rejudgeable(investigation: Investigation) -> None:
    """Refuse, before anything runs, an investigation that has no report to follow up.

    Raises:
        InvalidRecordError: the investigation is not finished (the message names the fix).
    """
    if investigation.state is not InvestigationState.FINISHED or not investigation.report:
        raise InvalidRecordError(
            f"{investigation.id} is {investigation.state.value}, not finished: there is no "
            "verdict and report to re-judge yet; finish it first (d2 investigate --resume, "
            "or %%investigate --resume), then re-check with --rejudge")


def rejudge_settings(investigation: Investigation,
                     budget: Mapping[str, float | int | None] | None = None,
                     ) -> InvestigationSettings:
    """The settings a re-judge of ``investigation`` runs under: its stored ones, with the
    caps given in ``budget`` (``max_calls``, ``max_tokens``, ``max_usd``) replaced."""
    stored = InvestigationSettings.from_dict(investigation.settings)
    return replace(stored, **{k: v for k, v in (budget or {}).items() if v is not None})


def check_rejudge_budget(board: Board, investigation_id: str,
                         settings: InvestigationSettings) -> None:
    """Refuse a re-judge for which ``settings``' budget has no room left: budgets count
    every run of an investigation (its first run, resumes and earlier re-judges), and
    the judges spend from the share the reporter's reserve leaves, as in a run.

    Raises:
        InvalidRecordError: no room left; the message names the options to raise.
    """
    require_budget_room(board, investigation_id, settings,
                        f"the budget of investigation {investigation_id} has no room left "
                        "for a re-judge", "with the re-judge")


async def rejudge_stale(board: Board, source: SQLSource, run: RecheckRun,
                        stale: tuple[str, ...], confirmed: tuple[str, ...], *, model: Model,
                        role_models: Mapping[str, Model] | None = None,
                        budget: Mapping[str, float | int | None] | None = None,
                        replaying: bool = False) -> RejudgeResult:
    """Re-judge the ``stale`` hypotheses of finished re-check ``run`` (see the module
    docstring); ``confirmed`` are those the re-check confirmed (named in the report's
    "What changed" section). Nothing is stale: nothing is sent to a model.

    The re-judge spends from the investigation's budget like a resumed run: its ledger
    starts from what every earlier run of the investigation spent, the judges and any
    refined children's collectors get the collection share and the reporter the whole
    (:meth:`InvestigationSettings.collection_budget`). ``budget`` replaces caps of the
    stored settings (``max_calls``, ``max_tokens``, ``max_usd``); the settings it runs
    under are stored as the investigation's. ``replaying``: the model answers from a
    recording, whose refusals are its budget stops (no caps of its own).

    Raises:
        InvalidRecordError: the run is not finished, or its investigation is not; or
            the budget has no room left (:func:`check_rejudge_budget`).
        ModelError: the model failed beyond retries (what was judged stays recorded).
    """
    investigation = board.get_investigation(run.investigation_id)
    check_rejudgeable(investigation)
    done = {r.hypothesis_id for r in board.list_rejudges(run.id)}
    todo = [h for h in stale if h not in done]
    unfinished = unfinished_children(board, investigation.id)
    if not todo and not unfinished:
        return RejudgeResult(tuple(board.list_rejudges(run.id)))
    settings = rejudge_settings(investigation, budget)
    if not replaying:
        check_rejudge_budget(board, investigation.id, settings)
    if settings != InvestigationSettings.from_dict(investigation.settings):
        board.set_investigation_settings(investigation.id,
                                         {**investigation.settings, **settings.to_dict()},
                                         actor="user")
    since = board.list_report_versions(investigation.id)[-1].created_at
    calls = board.list_model_calls(investigation_id=investigation.id, refused=True)
    board.log_event(STARTED, {"run": run.id, "stale": todo, "unfinished": unfinished,
                              "after_model_call": calls[-1].id if calls else 0},
                    actor=ACTOR, investigation_id=investigation.id)
    before = spent_so_far(board, investigation.id)
    ledger, sequencer = Ledger(spent_so_far(board, investigation.id)), WriteSequencer()
    collection = Budget() if replaying else settings.collection_budget()
    whole = collection.whole or collection

    def recorded(inner: Model) -> RecordingModel:
        return RecordingModel(inner, board, investigation.id, ledger=ledger,
                              budget=collection, before_record=sequencer.arrive)

    recording = recorded(model)
    role_recording = {role: recorded(m) for role, m in (role_models or {}).items()}
    ctx = TeamContext(
        board=board, sql=source, model=recording, investigation_id=investigation.id,
        question=investigation.question,
        schema_summary=await asyncio.to_thread(source.schema_summary), settings=settings,
        sequencer=sequencer, role_models=role_recording,
        candidates=await asyncio.to_thread(read_candidates, source))
    loop = ControlLoop(ctx, reporter_model=role_recording.get("reporter",
                                                              recording).with_budget(whole),
                       hypothesizer_calls=settings.max_hypothesizer_calls)
    rechecks = {r.evidence_id: r for r in board.list_rechecks(run.id)}
    reruns = await asyncio.to_thread(_record_reruns, board, source, run, todo, rechecks)

    async def judge_each() -> None:
        for child in unfinished:  # collected and judged beside the re-judges
            loop.ctx.on_new_hypothesis(child)
        for hypothesis_id in todo:
            await _judge_one(loop, hypothesis_id, run, rechecks, reruns)

    try:
        outcome = await loop.continue_with(judge_each())
    except BaseException as exc:
        _record_failure(board, investigation.id, run, exc)
        raise
    rejudges = _rejudged_since(board, investigation.id, since)
    judged = {r.hypothesis_id for r in rejudges}
    section = what_changed(board, rejudges, [h for h in confirmed if h not in judged], since,
                           run)
    check = check_report(board, investigation.id, outcome.report)
    version = board.add_report_version(investigation.id, f"{section}\n{check.marked_report}",
                                       recheck_run_id=run.id, actor=ACTOR)
    return RejudgeResult(rejudges, version, _used_since(before, ledger.usage), check)


async def _judge_one(loop: ControlLoop, hypothesis_id: str, run: RecheckRun,
                     rechecks: Mapping[str, Recheck], reruns: Mapping[str, Evidence]) -> None:
    board = loop.ctx.board
    previous = board.latest_verdict(hypothesis_id)
    if previous is None:
        return
    generation = _generation(board, hypothesis_id)
    ctx = replace(loop.ctx, round=generation)
    found = await judge_again(ctx, hypothesis_id, previous, run, rechecks, reruns)
    decision = found.decision
    outcome = (RejudgeOutcome.CONFIRMED if found.confirmed
               else RejudgeOutcome.REFINED if decision.judgement is Judgement.REFINED
               else RejudgeOutcome.REVISED if decision.judgement is Judgement.VERDICT
               else RejudgeOutcome.UNDECIDED)
    latest = board.latest_verdict(hypothesis_id)
    given = latest.id if latest is not None and latest.id != previous.id else None
    own = [reruns[e].id for e in previous.evidence_ids if e in reruns]
    board.record_rejudge(run.id, hypothesis_id, outcome, previous_verdict_id=previous.id,
                         verdict_id=given, rerun_evidence_ids=own,
                         children=decision.children, actor=ACTOR)


def unfinished_children(board: Board, investigation_id: str) -> list[str]:
    """The hypotheses an earlier re-judge refined into that were never judged (it failed
    or stopped on its budget before they were): the next re-judge examines them."""
    refined = {child for run in board.list_recheck_runs(investigation_id=investigation_id)
               for r in board.list_rejudges(run.id) for child in r.children}
    return [h.id for h in board.list_hypotheses(investigation_id=investigation_id)
            if h.id in refined and h.status is HypothesisStatus.PROPOSED]


def _record_failure(board: Board, investigation_id: str, run: RecheckRun,
                    exc: BaseException) -> None:
    """A fault or interruption stopped the re-judge: what it decided stays; hypotheses
    it was examining go back to ``proposed`` (the next re-judge, or a resume, examines
    them) and a ``rejudge.failed`` event records why. Best effort: the board itself may
    be the fault."""
    error = f"{type(exc).__name__}: {exc}" if isinstance(exc, Exception) else "interrupted"
    with contextlib.suppress(sqlite3.Error, BoardError):
        for hyp in board.list_hypotheses(investigation_id=investigation_id):
            if hyp.status is HypothesisStatus.INVESTIGATING:
                board.set_status(hyp.id, HypothesisStatus.PROPOSED, actor=ACTOR,
                                 reason=f"the re-judge after {run.id} stopped ({error}); "
                                 "the next re-judge examines it")
        board.log_event(FAILED, {"run": run.id, "error": error}, actor=ACTOR,
                        investigation_id=investigation_id)


def _used_since(before: Usage, now: Usage) -> Usage:
    """What was used after ``before`` (the re-judge's own calls), by role."""
    used = Usage()
    for role, totals in now.by_role.items():
        earlier = before.by_role.get(role, UsageTotals())
        calls = totals.calls - earlier.calls
        if calls:
            used.record(role, TokenUsage(totals.input_tokens - earlier.input_tokens,
                                         totals.output_tokens - earlier.output_tokens,
                                         totals.cache_read_tokens - earlier.cache_read_tokens,
                                         totals.cache_write_tokens - earlier.cache_write_tokens),
                        totals.cost_usd - earlier.cost_usd, calls=calls)
            used.unpriced_calls += totals.unpriced_calls - earlier.unpriced_calls
            used.by_role[role].unpriced_calls += totals.unpriced_calls - earlier.unpriced_calls
    return used


def _rejudged_since(board: Board, investigation_id: str, since: str) -> tuple[Rejudge, ...]:
    """Every re-judge of the investigation after its latest report version: this one's,
    and those of a re-judge stopped before it wrote its report (a model error, Ctrl-C)."""
    return tuple(r for run in board.list_recheck_runs(investigation_id=investigation_id)
                 for r in board.list_rejudges(run.id) if r.created_at > since)


def _generation(board: Board, hypothesis_id: str) -> int:
    generation, hypothesis = 1, board.get_hypothesis(hypothesis_id)
    while hypothesis.parent_id:
        generation += 1
        hypothesis = board.get_hypothesis(hypothesis.parent_id)
    return generation


def _record_reruns(board: Board, source: SQLSource, run: RecheckRun, stale: list[str],
                   rechecks: Mapping[str, Recheck]) -> dict[str, Evidence]:
    """New evidence for every changed query a stale verdict cites, related to each stale
    hypothesis that cited the old one as the old one was: linked (with the old link's
    stance) or motivating it; by the old id. So a verdict citing the re-run in place of
    the old evidence cites evidence of its hypothesis."""
    cited_by: dict[str, list[str]] = {}
    checks = {v.hypothesis_id: v for v in board.rechecked_verdicts(run.id)
              if v.check is VerdictCheck.STALE}
    for hypothesis_id in stale:
        for evidence_id in checks[hypothesis_id].evidence_ids if hypothesis_id in checks else ():
            found = rechecks.get(evidence_id)
            if found is not None and found.outcome is RecheckOutcome.CHANGED:
                cited_by.setdefault(evidence_id, []).append(hypothesis_id)
    reruns: dict[str, Evidence] = {}
    for evidence_id in sorted(cited_by, key=lambda e: int(e[1:])):
        reruns[evidence_id] = _rerun(board, source, run, board.get_evidence(evidence_id),
                                     rechecks[evidence_id])
        stances = {link.hypothesis_id: link for link in board.list_links()
                   if link.evidence_id == evidence_id}
        for hypothesis_id in cited_by[evidence_id]:
            link = stances.get(hypothesis_id)
            if link is not None:
                board.link(reruns[evidence_id].id, hypothesis_id, link.stance,
                           f"re-run of {evidence_id} on the data as of {run.id} (stance "
                           f"carried over from {evidence_id}; the re-judge weighs it)",
                           actor=ACTOR)
            if evidence_id in board.get_hypothesis(hypothesis_id).motivated_by:
                board.add_motivating_evidence(hypothesis_id, reruns[evidence_id].id,
                                              actor=ACTOR)
    return reruns


def _rerun(board: Board, source: SQLSource, run: RecheckRun, old: Evidence,
           recheck: Recheck) -> Evidence:
    """The changed result of ``old`` as new evidence of the re-checked investigation (a
    follow-up's re-run of evidence it reused is its own): an analysis result is run
    again from its call (for its summary, the reading a judge needs); a query's new rows
    are the ones the re-check stored."""
    call = board.tool_call_of(old.id)
    description = f"{old.description} (re-run of {old.id}, re-check {run.id})"
    if call is not None:
        try:
            result = spec_for(call.tool).function(source, **call.args)
        except (D2Error, ValueError):
            result = None
        if result is not None:
            evidence = board.add_evidence(
                result.sql, result.frame, description=result.summary,
                row_count=result.row_count, author_role="recheck", author=ACTOR,
                investigation_id=run.investigation_id, round=old.round)
            board.record_tool_call(evidence.id, call, actor=ACTOR)
            return evidence
    frame = board.recheck_frame(run.id, old.id)
    if frame is None:  # cannot happen for a changed re-check; keep the old rows' shape
        raise InvalidRecordError(f"re-check {run.id} kept no rows for {old.id}")
    return board.add_evidence(old.sql, frame, description=description,
                              row_count=recheck.row_count, author_role="recheck",
                              author=ACTOR, investigation_id=run.investigation_id,
                              round=old.round)
