"""The control loop of the Data Detective (PAPER §3.1) and its variants.

Full team, one investigation::

    hypothesizer ─► [ orchestrator ─► collectors ∥ (each: collect ─► judge ⟲ hints) ]*
                 ─► reporter

Rounds repeat until the orchestrator finishes (only allowed when every hypothesis not
abandoned has a verdict) or a budget ends collection; the reporter then runs with its
reserved share of the budget. Writes made by the loop itself happen only between
parallel phases, so a replayed run writes the same board.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from d2_notebook.board import HypothesisStatus
from d2_notebook.detective import roles
from d2_notebook.detective.context import QueryLog, TeamContext
from d2_notebook.detective.report import fallback_report
from d2_notebook.errors import BudgetExceededError, ModelError

LOOP_ACTOR = "detective"


class CollectionStopped(Exception):
    """Collection ended early (budget or time); the reason is the message."""


class ControlLoop:
    """Runs the team for one investigation on a prepared :class:`TeamContext`.

    ``reporter_model`` is the model with the reporter's reserved budget.
    """

    def __init__(self, ctx: TeamContext, *, reporter_model: Any,
                 round_limit: int | None = None) -> None:
        """Prepare to run; nothing happens until :meth:`run`. Rounds stop at
        ``round_limit`` (default: the settings' ``max_rounds``)."""
        self.ctx = ctx
        self.round_limit = round_limit or ctx.settings.max_rounds
        self.reporter_model = reporter_model
        self.stop_reason: str | None = None
        self.hypothesizer_calls = 0
        self.react_log: QueryLog | None = None
        self.answer: dict[str, Any] | None = None

    # --- entry point -----------------------------------------------------------------

    async def run(self) -> str:
        """Investigate and return the report (also stored on the investigation)."""
        variant = self.ctx.settings.variant
        if variant == "react_sql":
            return await self._run_react()
        if variant == "single_agent_board":
            await self._guarded(roles.investigate_alone(self.ctx))
            return await self._report(use_reporter=False)
        await self._guarded(self._rounds())
        return await self._report(use_reporter=variant != "no_reporter")

    # --- rounds ------------------------------------------------------------------------

    async def _rounds(self) -> None:
        ctx, merged = self.ctx, self.ctx.settings.variant == "merged_planner"
        if not merged and not self._hypotheses():
            await self._hypothesize(None)
        while ctx.round < self.round_limit:
            ctx.round += 1
            ctx.board.log_event("round.started", {"round": ctx.round}, actor=LOOP_ACTOR,
                                investigation_id=ctx.investigation_id)
            decision = await self._decide(merged)
            if decision.finished is not None:
                return
            dispatched = decision.dispatched or self._fallback_dispatch()
            if not dispatched:
                if self._open():
                    continue
                return
            await self._collect_all(dispatched)
            self._settle_unjudged(dispatched)
        if self._open():
            self.stop_reason = f"the round limit ({ctx.settings.max_rounds}) was reached"

    async def _decide(self, merged: bool) -> roles.TurnOutcome:
        if merged:
            return await roles.plan_merged(self.ctx)
        dispatched: list[str] = []  # a dispatch made alongside a request for more counts
        while True:
            can_ask = self.hypothesizer_calls < self.ctx.settings.max_hypothesizer_calls
            decision = await roles.orchestrate(self.ctx, can_ask_for_more=can_ask)
            dispatched += [h for h in decision.dispatched if h not in dispatched]
            if decision.guidance is None:
                decision.dispatched = dispatched
                return decision
            await self._hypothesize(decision.guidance)

    async def _hypothesize(self, guidance: str | None) -> None:
        self.hypothesizer_calls += 1
        await roles.hypothesize(self.ctx, guidance=guidance)

    def _fallback_dispatch(self) -> list[str]:
        """When the orchestrator decided nothing, dispatch every proposed hypothesis."""
        waiting = [h.id for h in self._hypotheses() if h.status is HypothesisStatus.PROPOSED]
        for hyp_id in waiting:
            self.ctx.board.set_status(hyp_id, HypothesisStatus.INVESTIGATING, actor=LOOP_ACTOR,
                                      reason="dispatched by the loop: the orchestrator "
                                             "made no decision")
        return waiting

    async def _collect_all(self, hypothesis_ids: list[str]) -> None:
        limit = asyncio.Semaphore(self.ctx.settings.collectors)

        async def branch(hyp_id: str) -> None:
            async with limit:
                await self._collect_and_judge(hyp_id)

        # Every branch finishes (or fails) before the loop goes on: a failing branch
        # leaves the others' work complete on the board.
        results = await asyncio.gather(*(branch(h) for h in hypothesis_ids),
                                       return_exceptions=True)
        failures = [r for r in results if isinstance(r, BaseException)]
        for failure in failures:
            if not isinstance(failure, BudgetExceededError):
                raise failure
        if failures:
            raise CollectionStopped(str(failures[0]))

    async def _collect_and_judge(self, hypothesis_id: str) -> None:
        settings = self.ctx.settings
        if settings.variant == "no_judge":
            await roles.collect(self.ctx, hypothesis_id, judge_themselves=True)
            return
        hints = None
        for attempt in range(settings.max_evidence_returns + 1):
            await roles.collect(self.ctx, hypothesis_id, hints=hints)
            decision = await roles.judge(self.ctx, hypothesis_id,
                                         can_send_back=attempt < settings.max_evidence_returns)
            if decision.hints is None:
                return
            hints = decision.hints

    def _settle_unjudged(self, hypothesis_ids: list[str]) -> None:
        """A dispatched hypothesis whose judge gave no verdict becomes inconclusive."""
        for hyp_id in sorted(hypothesis_ids, key=lambda h: int(h[1:])):
            hyp = self.ctx.board.get_hypothesis(hyp_id)
            if hyp.status.is_settled:
                continue
            cited = [link.evidence_id for link in self.ctx.board.list_links(hypothesis_id=hyp_id)]
            self.ctx.board.add_verdict(
                hyp_id, HypothesisStatus.INCONCLUSIVE, 0.0,
                "no verdict was reached within the agent's step limit", cited,
                author=LOOP_ACTOR, round=self.ctx.round)

    # --- budgets, time and the end -------------------------------------------------------

    async def _guarded(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run the collection phase; a budget, a time limit or a stop ends it gracefully."""
        limit = self.ctx.settings.max_seconds
        try:
            async with asyncio.timeout(limit):
                await work
        except TimeoutError:
            self.stop_reason = f"the time budget ({limit:g} s) ran out"
        except (BudgetExceededError, CollectionStopped) as exc:
            self.stop_reason = str(exc)
        if self.stop_reason:
            self.ctx.board.log_event("collection.stopped", {"reason": self.stop_reason},
                                     actor=LOOP_ACTOR, investigation_id=self.ctx.investigation_id)
            for hyp in self._open():  # in-flight work ended: back to the queue, with why
                if hyp.status is HypothesisStatus.INVESTIGATING:
                    self.ctx.board.set_status(
                        hyp.id, HypothesisStatus.PROPOSED, actor=LOOP_ACTOR,
                        reason=f"not examined to the end: {self.stop_reason}")

    async def _report(self, *, use_reporter: bool) -> str:
        ctx = self.ctx
        note = self._unexamined_note()
        report = None
        if use_reporter:
            reporter_ctx = _with_model(ctx, self.reporter_model)
            try:
                outcome = await roles.write_report(reporter_ctx, unexamined_note=note)
                report = outcome.report
            except ModelError as exc:
                note = (note + " " if note else "") + f"The reporter could not run: {exc}."
        if report is None:
            report = fallback_report(ctx.board, ctx.investigation_id, note=note)
        elif note and "## Not examined" not in report:
            report += f"\n\n## Not examined\n\n{note}\n"
        return report

    def _unexamined_note(self) -> str:
        still_open = [h.id for h in self._open()]
        if not still_open and not self.stop_reason:
            return ""
        parts = []
        if self.stop_reason:
            parts.append(f"Collection stopped early: {self.stop_reason}.")
        if still_open:
            parts.append(f"Left without a verdict: {', '.join(still_open)}.")
        return " ".join(parts)

    async def _run_react(self) -> str:
        ctx = self.ctx
        outcome_log: list[Any] = []

        async def work() -> None:
            outcome_log.append(await roles.react_baseline(ctx))

        await self._guarded(work())
        if outcome_log:
            outcome, self.react_log = outcome_log[0]
            self.answer = outcome.answer
            if outcome.report:
                return outcome.report
        return "The agent gave no final answer" + (f" ({self.stop_reason})."
                                                   if self.stop_reason else ".")

    # --- board queries ---------------------------------------------------------------

    def _hypotheses(self) -> list[Any]:
        return self.ctx.board.list_hypotheses(investigation_id=self.ctx.investigation_id)

    def _open(self) -> list[Any]:
        return [h for h in self._hypotheses() if not h.status.is_settled]


def _with_model(ctx: TeamContext, model: Any) -> TeamContext:
    return replace(ctx, model=model)
