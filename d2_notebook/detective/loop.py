"""The control loop of the Data Detective (PAPER §3.1) and its variants.

Full team, one investigation::

    hypothesizer ──(each hypothesis as it is added)──► queue ──► branches ∥ (at most
        │                                                         `collectors`; fewer
        │                                                         until the triage): collect
        └─► orchestrator: triage (abandon, ask for more)          ─► judge ⟲ hints
                                                                  └─(refine: children
    … queue empty ─► orchestrator: finish or ask for more ─► reporter     enter at once)

The loop, not a model, dispatches: every hypothesis enters the queue the moment it is
on the board. The orchestrator is consulted only for decisions: triage of new
hypotheses (while their collection already runs), and, once every hypothesis is
settled, whether coverage is enough to end. Limits are per branch (refinement depth,
evidence returns) plus the overall budgets; the reporter runs with its reserved share.
Every board write happens at a fixed point of the write order, so a replayed run
writes the same board.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from d2_notebook.board import HypothesisStatus
from d2_notebook.data import QueryResult
from d2_notebook.detective import roles
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.coverage_view import BoardCoverage, board_coverage
from d2_notebook.detective.decisions import Judgement, Steering
from d2_notebook.detective.refinement import unmade_refinements
from d2_notebook.detective.report import (
    board_sections,
    fallback_report,
    not_examined_table,
    with_missed_dismissals,
)
from d2_notebook.detective.scheduler import BranchScheduler
from d2_notebook.detective.variant import Role, Shape
from d2_notebook.errors import BoardError, BudgetExceededError, ModelError, ReplayDivergenceError

LOOP_ACTOR = "detective"

REPORT_GRACE_S = 120.0
"""Seconds the reporter may run past the end of ``max_seconds``. The reporter's time
limit is what is left of ``max_seconds`` plus this grace, so a run that stopped on its
time limit still gets its reporter's turn (one call writing ~2K tokens: 30–60 s on a
Sonnet-class model, more under load); past it, the report is built from the board
alone. A run with a time limit therefore ends at most this long after it (plus the
bookkeeping of writing the report)."""

_Result = TypeVar("_Result")


@dataclass(frozen=True)
class RunOutcome:
    """What one run of the loop produced.

    Attributes:
        report: the Markdown report (also stored on the investigation).
        stop_reason: why collection ended early (budget, time), or None.
        answer: the structured answer of the ``react_sql`` agent (None for the team,
            whose answer is read from the board).
        queries: the ``react_sql`` agent's queries by query id (empty for the team).
        started: the hypotheses whose examination started, in order.
    """

    report: str
    stop_reason: str | None = None
    answer: dict[str, Any] | None = None
    queries: dict[str, QueryResult] = field(default_factory=dict)
    started: list[str] = field(default_factory=list)


class ControlLoop:
    """Runs the team for one investigation on a prepared :class:`TeamContext`.

    ``reporter_model`` is the reporter's model with its reserved budget.
    ``hypothesizer_calls`` counts the hypothesizer's turns in earlier runs of the
    investigation (:func:`~d2_notebook.detective.resume.hypothesizer_turns`).
    ``time_stop`` replaces the wall clock of ``max_seconds`` (a replay: a recorded run
    stopped by its clock stops where it stopped, whatever the time): the time limit
    runs out when it returns, and the reporter has no time limit.
    """

    def __init__(self, ctx: TeamContext, *, reporter_model: Any,
                 hypothesizer_calls: int = 0,
                 time_stop: Callable[[], Awaitable[None]] | None = None) -> None:
        """Prepare to run; nothing happens until :meth:`run`."""
        team = ctx.settings.variant.shape is Shape.TEAM  # only a team has a queue
        hooks = {"on_new_hypothesis": self._offer, "on_steered": self._triaged} if team else {}
        self.ctx = replace(ctx, round=1, **hooks)
        self.reporter_model = reporter_model
        self.hypothesizer_calls = hypothesizer_calls
        self.time_stop = time_stop
        self.stop_reason: str | None = None
        self._deadline: float | None = None  # event-loop time; set when collection starts
        self.scheduler = BranchScheduler(ctx.settings.collectors, self._branch, self._begin)

    # --- entry point -----------------------------------------------------------------

    async def run(self) -> RunOutcome:
        """Investigate and return the outcome."""
        variant = self.ctx.settings.variant
        if variant.shape is Shape.REACT:
            return await self._run_react()
        if variant.shape is Shape.ALONE:
            decision = await self._guarded(roles.investigate_alone(self.ctx))
            written = decision.report if decision is not None else None
            return self._outcome(await self._report(use_reporter=False, written=written))
        await self._guarded(self._team())
        return self._outcome(await self._report(use_reporter=variant.runs(Role.REPORTER)))

    async def continue_with(self, work: Coroutine[Any, Any, Any]) -> RunOutcome:
        """Run ``work`` on an investigation already finished (a re-judge of its stale
        verdicts), then every branch it queued (refined children: collected and judged
        as in a run), within the same budgets and limits; then write the report."""

        async def then_branches() -> None:
            await work
            await self.scheduler.idle()

        await self._guarded(then_branches())
        return self._outcome(await self._report(
            use_reporter=self.ctx.settings.variant.runs(Role.REPORTER)))

    def _outcome(self, report: str) -> RunOutcome:
        return RunOutcome(report, self.stop_reason, started=list(self.scheduler.started))

    # --- the team ----------------------------------------------------------------------

    async def _team(self) -> None:
        for hyp in self._hypotheses():  # resumed: what is left is queued at once
            if hyp.status is HypothesisStatus.PROPOSED:
                self._offer(hyp.id)
        if self.ctx.settings.variant.runs(Role.PLANNER):
            await self._planned()
        else:
            await self._orchestrated()

    async def _orchestrated(self) -> None:
        new = [] if self._hypotheses() else await self._hypothesize(None)
        for _ in range(self.ctx.settings.max_hypothesizer_calls + 2):
            if new:  # triage, while the new hypotheses' collection runs
                decision = await roles.orchestrate(self.ctx, new=new,
                                                   can_ask_for_more=self._can_ask())
                self._triaged()  # already, unless the orchestrator steered nothing
                new = []
                if decision.steering is Steering.MORE_HYPOTHESES:
                    new = await self._hypothesize(decision.guidance)
                    continue
            await self.scheduler.idle()
            decision = await roles.orchestrate(self.ctx, new=[],
                                               can_ask_for_more=self._can_ask())
            if decision.steering is Steering.MORE_HYPOTHESES:
                new = await self._hypothesize(decision.guidance)
            elif decision.steering is not Steering.CARRY_ON:
                return  # finished, or no decision: the loop ends it
        await self.scheduler.idle()

    async def _planned(self) -> None:
        if not self._hypotheses():
            await roles.plan_merged(self.ctx)
            self.hypothesizer_calls += 1
        for _ in range(self.ctx.settings.max_hypothesizer_calls + 1):
            await self.scheduler.idle()
            decision = await roles.plan_merged(self.ctx)
            if not decision.added and decision.steering is not Steering.CARRY_ON:
                return
        await self.scheduler.idle()

    def _can_ask(self) -> bool:
        return self.hypothesizer_calls < self.ctx.settings.max_hypothesizer_calls

    async def _hypothesize(self, guidance: str | None) -> list[str]:
        """The hypothesizer's next call; what it adds waits for the orchestrator's triage
        with at most ``collectors_before_triage`` branches running (all of them once
        the orchestrator has steered, :meth:`_triaged`)."""
        self.hypothesizer_calls += 1
        settings = self.ctx.settings
        if settings.variant.runs(Role.ORCHESTRATOR):
            self.scheduler.set_slots(min(settings.collectors_before_triage, settings.collectors))
        decision = await roles.hypothesize(self.ctx, guidance=guidance)
        # Nothing added leaves the narrower limit until the orchestrator's next steering
        # call: widening here would start branches at a point a replay cannot fix.
        return decision.added

    def _triaged(self) -> None:
        """The orchestrator has steered (called inside its tool's turn): run up to
        ``collectors`` branches at once."""
        self.scheduler.set_slots(self.ctx.settings.collectors)

    # --- the queue and its branches ------------------------------------------------------

    def _offer(self, hypothesis_id: str) -> None:
        """A hypothesis is on the board: queue it (called inside the writing turn)."""
        parent = self.ctx.board.get_hypothesis(hypothesis_id).parent_id
        self.scheduler.offer(hypothesis_id, self._generation(hypothesis_id), parent)

    def _begin(self, hypothesis_id: str) -> bool:
        """Start examining a queued hypothesis, unless it was settled meanwhile."""
        hyp = self.ctx.board.get_hypothesis(hypothesis_id)
        if hyp.status is not HypothesisStatus.PROPOSED:
            return False
        self.ctx.board.set_status(hypothesis_id, HypothesisStatus.INVESTIGATING,
                                  actor=LOOP_ACTOR, reason="evidence collection under way")
        return True

    async def _branch(self, hypothesis_id: str) -> None:
        """Collect → judge (→ more evidence → judge), within the branch's limits."""
        settings = self.ctx.settings
        generation = self._generation(hypothesis_id)
        ctx = replace(self.ctx, round=generation)
        if not settings.variant.runs(Role.JUDGE):
            await roles.collect(ctx, hypothesis_id)
            self._settle_unjudged(hypothesis_id, generation)
            return
        hints = None
        for attempt in range(settings.max_evidence_returns + 1):
            handed = await roles.collect(ctx, hypothesis_id, hints=hints)
            decision = await roles.judge(
                ctx, hypothesis_id, can_send_back=attempt < settings.max_evidence_returns,
                can_refine=generation < settings.max_depth, summary=handed.summary)
            if decision.judgement is not Judgement.MORE_EVIDENCE:
                break
            hints = decision.hints
        self._settle_unjudged(hypothesis_id, generation)

    def _settle_unjudged(self, hypothesis_id: str, generation: int) -> None:
        """A branch that ended without a verdict leaves its hypothesis inconclusive."""
        hyp = self.ctx.board.get_hypothesis(hypothesis_id)
        if hyp.status.is_settled:
            return
        cited = [link.evidence_id for link in self.ctx.board.list_links(
            hypothesis_id=hypothesis_id)]
        self.ctx.board.add_verdict(
            hypothesis_id, HypothesisStatus.INCONCLUSIVE, 0.0,
            "no verdict was reached within the agent's step limit", cited,
            author=LOOP_ACTOR, round=generation)

    def _generation(self, hypothesis_id: str) -> int:
        """1 for a hypothesis without a parent, its parent's generation + 1 otherwise."""
        generation, hyp = 1, self.ctx.board.get_hypothesis(hypothesis_id)
        while hyp.parent_id:
            generation += 1
            hyp = self.ctx.board.get_hypothesis(hyp.parent_id)
        return generation

    # --- budgets, time and the end -------------------------------------------------------

    async def _guarded(self, work: Coroutine[Any, Any, _Result]) -> _Result | None:
        """Run the collection phase and return what ``work`` returned; a budget, a time
        limit or a stop ends it gracefully, and then None is returned.

        The time limit (``max_seconds``, counted from here) covers everything: ``work``,
        and after a budget stop the wait for branches still running. It is the run's
        own limit only when its clock expired; a ``TimeoutError`` raised by a model or a
        tool is a fault like any other. A branch's fault (not a budget stop) is raised
        whenever collection ends, also when the time limit ends it.
        """
        limit = self.ctx.settings.max_seconds
        by_wall_clock = limit is not None and self.time_stop is None
        self._deadline = asyncio.get_running_loop().time() + limit if by_wall_clock else None
        clock = asyncio.timeout_at(self._deadline)
        recorded_clock = (asyncio.ensure_future(self._expire_at_time_stop(clock))
                          if limit is not None and self.time_stop is not None else None)
        result = None
        try:
            try:
                async with clock:
                    try:
                        result = await self._until_fault(work)
                    except BudgetExceededError as exc:
                        self.stop_reason = str(exc)
                        await self.scheduler.finish_running()  # their next call stops
                        self.scheduler.raise_failure(budget_too=False)  # a fault fails
            except TimeoutError:
                if not clock.expired():
                    raise  # a model's or a tool's own timeout: a fault
                self.scheduler.raise_failure(budget_too=False)  # a fault meanwhile fails
                self.stop_reason = self.stop_reason or f"the time budget ({limit:g} s) ran out"
        except BaseException as exc:
            await self.scheduler.cancel()
            self._record_fault(exc)
            raise
        finally:
            if recorded_clock is not None:
                recorded_clock.cancel()
            await self.scheduler.cancel()
        if self.stop_reason:
            stopped: dict[str, Any] = {"reason": self.stop_reason}
            if clock.expired():  # where a replay's clock stops too (replay_runs)
                stopped["clock_expired"] = True
            self.ctx.board.log_event("collection.stopped", stopped,
                                     actor=LOOP_ACTOR, investigation_id=self.ctx.investigation_id)
            for hyp in self._open():  # in-flight work ended: back to the queue, with why
                if hyp.status is HypothesisStatus.INVESTIGATING:
                    self.ctx.board.set_status(
                        hyp.id, HypothesisStatus.PROPOSED, actor=LOOP_ACTOR,
                        reason=f"not examined to the end: {self.stop_reason}")
        return result

    async def _expire_at_time_stop(self, clock: asyncio.Timeout) -> None:
        """Expire ``clock`` (the time limit ran out) once :attr:`time_stop` returns."""
        assert self.time_stop is not None
        await self.time_stop()
        with contextlib.suppress(RuntimeError):  # its block has ended meanwhile
            clock.reschedule(asyncio.get_running_loop().time())

    async def _until_fault(self, work: Coroutine[Any, Any, _Result]) -> _Result:
        """Await ``work`` and return its result; a branch's fault (the board locked, full,
        a model error) stops it at once, whatever role is still thinking; the other
        running branches finish their work, then the fault is raised in its place."""
        task = asyncio.ensure_future(work)
        self.scheduler.on_fault = task.cancel
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            stopped_from_outside = current is not None and current.cancelling() > 0
            if self.scheduler.fault is None or stopped_from_outside:
                raise
        finally:
            self.scheduler.on_fault = None
        await self.scheduler.finish_running()
        raise self.scheduler.fault

    def _record_fault(self, exc: BaseException) -> None:
        """A fault stops the run: say on the board, if it still takes writes, which
        hypotheses it left unexamined and why (the run's error is recorded as well)."""
        if not isinstance(exc, Exception):
            return  # an interruption: the investigation is marked interrupted
        reason = f"a fault stopped the run: {type(exc).__name__}: {exc}"
        with contextlib.suppress(sqlite3.Error, BoardError):
            self.ctx.board.log_event(
                "collection.stopped",
                {"reason": reason, "not_examined": [h.id for h in self._open()]},
                actor=LOOP_ACTOR, investigation_id=self.ctx.investigation_id)

    async def _report(self, *, use_reporter: bool, written: str | None = None) -> str:
        """The investigation's report: the reporter's (``use_reporter``) or the single
        agent's (``written``), its own "Not examined" section completed with every
        dismissal, else one built from the board alone; either way followed by the
        sections taken from the board that it lacks (:func:`board_sections`), the splits
        not made among them.

        The reporter has what is left of ``max_seconds`` plus :data:`REPORT_GRACE_S`; when
        that runs out (or its model fails or is refused) the report is the board's.
        """
        ctx = self.ctx
        coverage = self._coverage()
        note = self._unexamined_note(coverage)
        not_refined = [u.line() for u in unmade_refinements(ctx.board, ctx.investigation_id,
                                                             ctx.settings)]
        report = written
        if use_reporter:
            reporter_ctx = replace(ctx, role_models={**ctx.role_models,
                                                     Role.REPORTER.value: self.reporter_model})
            clock = asyncio.timeout_at(self._report_deadline())
            try:
                async with clock:
                    report = (await roles.write_report(
                        reporter_ctx, unexamined_note=note, not_refined=not_refined,
                        coverage=coverage)).report
            except ReplayDivergenceError:
                raise  # a replay that took another path fails; no fallback hides it
            except ModelError as exc:
                note = (note + " " if note else "") + f"The reporter could not run: {exc}."
            except TimeoutError:
                if not clock.expired():
                    raise  # the model's own timeout: a fault, as for any other role
                note = (note + " " if note else "") + (
                    f"The reporter ran out of time ({REPORT_GRACE_S:g} s past the time "
                    f"budget of {ctx.settings.max_seconds:g} s).")
        if report is None:
            report = fallback_report(ctx.board, ctx.investigation_id, note=note)
        else:  # the writer's own "Not examined" section, if any, names every dismissal
            report = with_missed_dismissals(report, coverage.unexamined_dismissals
                                            if coverage else [])
        added = board_sections(ctx.board, ctx.investigation_id, report, note=note,
                               not_refined=not_refined)
        return f"{report.rstrip()}\n\n{added}\n" if added else report

    def _report_deadline(self) -> float | None:
        """When the reporter must stop (event-loop time): :data:`REPORT_GRACE_S` after
        the run's time limit, or never without one."""
        if self._deadline is None:
            return None
        return self._deadline + REPORT_GRACE_S

    def _unexamined_note(self, coverage: BoardCoverage | None) -> str:
        """What the team left unexamined: a sentence for an early stop and for open
        hypotheses, then one compact table of ``coverage``'s dismissed and untouched
        dimensions (:func:`not_examined_table`)."""
        still_open = [h.id for h in self._open()]
        parts = []
        if self.stop_reason:
            parts.append(f"Collection stopped early: {self.stop_reason}.")
        if still_open:
            parts.append(f"Left without a verdict: {', '.join(still_open)}.")
        table = (not_examined_table(coverage.unexamined_dismissals, coverage.untouched)
                 if coverage is not None else "")
        return "\n\n".join(p for p in (" ".join(parts), table) if p)

    def _coverage(self) -> BoardCoverage | None:
        return board_coverage(self.ctx.board, self.ctx.candidates, self.ctx.investigation_id)

    async def _run_react(self) -> RunOutcome:
        found = await self._guarded(roles.react_baseline(self.ctx))
        if found is not None:
            answer, log = found
            queries = dict(log.results)
            if answer.report:
                return RunOutcome(answer.report, self.stop_reason, answer.answer, queries)
            return RunOutcome(self._no_answer(), self.stop_reason, answer.answer, queries)
        return RunOutcome(self._no_answer(), self.stop_reason)

    def _no_answer(self) -> str:
        return "The agent gave no final answer" + (f" ({self.stop_reason})."
                                                   if self.stop_reason else ".")

    # --- board queries ---------------------------------------------------------------

    def _hypotheses(self) -> list[Any]:
        return self.ctx.board.list_hypotheses(investigation_id=self.ctx.investigation_id)

    def _open(self) -> list[Any]:
        return [h for h in self._hypotheses() if not h.status.is_settled]

