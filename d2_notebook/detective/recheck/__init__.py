"""Re-check: re-run an investigation's evidence on the data as it is now, with no model.

:func:`recheck` runs every evidence query of a board's investigation (a follow-up's
included: the earlier evidence it reused) again through the same guard (analysis-tool
evidence from its stored call), compares each result with the stored one
(:mod:`.compare`) and records a re-check run on the board
(:mod:`d2_notebook.board.rechecks`): per evidence *same*, *changed* (with the diff and
the new rows) or *fails* (with the error); per verdict *confirmed* (everything it cites
came back the same) or *stale* (something it cites changed or failed). A verdict resting
on evidence that could not be re-run is neither, and is listed as not re-checked.

A re-check interrupted (Ctrl-C, kill -9) is continued by the next one: evidence already
re-run in the open run is not run again.

With ``rejudge=True`` the stale verdicts then go back to their judge, with the old and the
new evidence side by side, and the reporter writes a new report version
(:mod:`d2_notebook.detective.rejudge`); only that step calls a model.
"""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from d2_notebook.board import (
    Board,
    Evidence,
    Investigation,
    Recheck,
    RecheckOutcome,
    RecheckRun,
    ToolCall,
    VerdictCheck,
)
from d2_notebook.data import SQLSource, open_source
from d2_notebook.data.analysis import spec_for
from d2_notebook.detective.analysis_tools import analysis_tool_of
from d2_notebook.detective.investigate import SOURCE_KEY, Database
from d2_notebook.detective.recheck.compare import compare_results
from d2_notebook.detective.rejudge import (
    RejudgeResult,
    check_rejudge_budget,
    check_rejudgeable,
    rejudge_settings,
    rejudge_stale,
)
from d2_notebook.detective.rejudge.replay import rejudge_replay_model, rejudges_started
from d2_notebook.detective.settings import check_role_names
from d2_notebook.errors import D2Error, InvalidRecordError, NotFoundError
from d2_notebook.llm import Model, get_model
from d2_notebook.llm.settings import MODEL_ENV
from d2_notebook.safe_markdown import safe_markdown

__all__ = ["RecheckResult", "recheck", "recheck_sync"]

ACTOR = "recheck"


@dataclass(frozen=True, repr=False)
class RecheckResult:
    """What a re-check found.

    Attributes:
        run: The re-check run on the board (``R<n>``).
        rechecks: One record per evidence, in evidence order.
        stale: Hypotheses whose verdict cites evidence that changed or fails.
        confirmed: Hypotheses whose cited evidence all came back the same.
        not_rechecked: Hypotheses with a verdict resting on evidence that could not be
            re-run (and nothing that changed).
        rejudge: What the re-judge did (None unless ``rejudge=True``).
    """

    run: RecheckRun
    rechecks: tuple[Recheck, ...]
    stale: tuple[str, ...]
    confirmed: tuple[str, ...]
    not_rechecked: tuple[str, ...]
    rejudge: RejudgeResult | None = None

    def count(self, outcome: RecheckOutcome) -> int:
        """How many evidence re-checks ended in ``outcome``."""
        return sum(1 for r in self.rechecks if r.outcome is outcome)

    def summary(self) -> str:
        """Two lines: the evidence outcomes, then the verdicts."""
        evidence = ", ".join(f"{self.count(o)} {o.value}" for o in RecheckOutcome
                             if self.count(o))
        verdicts = [f"{len(self.stale)} stale" + (f" ({', '.join(self.stale)})"
                                                   if self.stale else ""),
                    f"{len(self.confirmed)} confirmed"]
        if self.not_rechecked:
            verdicts.append(f"{len(self.not_rechecked)} not re-checked")
        return (f"re-check {self.run.id} of {self.run.investigation_id}: evidence "
                f"{evidence or 'none'}\nverdicts: {', '.join(verdicts)}")

    def __repr__(self) -> str:
        return str(self)

    def _repr_markdown_(self) -> str:
        """The summary as a code block, then the new report version (if re-judged)."""
        text = f"```\n{self}\n```"
        version = self.rejudge.report_version if self.rejudge is not None else None
        if version is not None:
            text += f"\n\n{safe_markdown(version.report)}"
        return text

    def __str__(self) -> str:
        lines = [self.summary()]
        lines.extend(f"  {r.evidence_id} {r.outcome.value}" + (f": {r.detail}" if r.detail
                                                              else "")
                     for r in self.rechecks if r.outcome is not RecheckOutcome.SAME)
        if self.rejudge is not None:
            lines.append(self.rejudge.summary())
        return "\n".join(lines)


async def recheck(database: Database, board: Board | str | os.PathLike[str], *,
                  investigation_id: str | None = None, force: bool = False,
                  rejudge: bool = False, model: Model | str | None = None,
                  models: Mapping[str, Model | str] | None = None,
                  replay: Board | str | os.PathLike[str] | None = None,
                  max_calls: int | None = None, max_tokens: int | None = None,
                  max_usd: float | None = None) -> RecheckResult:
    """Re-check ``investigation_id`` (default: the board's latest) on ``database``.

    Args:
        database: What :func:`~d2_notebook.detective.investigate` takes: a DuckDB
            connection or path, CSV/Parquet files, a SQLAlchemy URL or engine, a Spark
            session or a source.
        board: The board (open for writing), or the path of its file.
        investigation_id: The investigation to re-check.
        force: Re-check on a source other than the one the investigation ran on.
        rejudge: Then send each stale verdict to its judge with the old and the new
            evidence, and write a new report version (the investigation must be
            finished). Nothing stale: no model is called.
        model: The re-judge's model (an object, e.g. an offline policy's, or a name
            ``provider:model-id``); None: ``$D2_MODEL``, else an error naming the fix.
        models: A model per role (``{"reporter": ...}``), as for ``investigate``.
        replay: A board on which this re-judge was recorded: answer it from there (no
            API); the *n*-th re-judge of the investigation replays the *n*-th recorded.
        max_calls: With ``rejudge``: the investigation's call budget from now on. A
            re-judge spends from the investigation's budget, which counts every run of
            it; these raise the stored caps (None keeps them).
        max_tokens: With ``rejudge``: the investigation's token budget from now on.
        max_usd: With ``rejudge``: the investigation's dollar budget from now on.

    Raises:
        NotFoundError: The board has no such investigation.
        InvalidRecordError: The source differs from the recorded one and ``force`` is
            False (the message names both); ``rejudge`` on an unfinished investigation,
            without a model, or with no room left in the budget; a budget without
            ``rejudge``.
        ModelConfigError: ``model`` names a provider that is unknown or not configured.
    """
    if not isinstance(board, Board):
        with Board.open(board) as opened:
            return await recheck(database, opened, investigation_id=investigation_id,
                                 force=force, rejudge=rejudge, model=model, models=models,
                                 replay=replay, max_calls=max_calls, max_tokens=max_tokens,
                                 max_usd=max_usd)
    budget = {"max_calls": max_calls, "max_tokens": max_tokens, "max_usd": max_usd}
    given = [name for name, value in budget.items() if value is not None]
    if given and not rejudge:
        raise InvalidRecordError(f"{given[0]} is the re-judge's budget; a re-check alone "
                                 "calls no model: pass rejudge=True (--rejudge) or leave it out")
    investigation = _investigation(board, investigation_id)
    judge_model, role_models = (_rejudge_models(board, investigation, model, models, replay)
                                if rejudge else (None, {}))
    if rejudge and replay is None:  # before anything runs: no room, no re-check either
        check_rejudge_budget(board, investigation.id, rejudge_settings(investigation, budget))
    source = open_source(database)
    try:
        _check_source(investigation, source, force)
        run = _open_run(board, investigation, source)
        done = {r.evidence_id for r in board.list_rechecks(run.id)}
        for evidence in board.list_evidence(investigation_id=investigation.id,
                                            include_reused=True):  # a follow-up's too
            if evidence.id not in done:
                outcome, detail, frame, count = await asyncio.to_thread(
                    _recheck_one, board, source, evidence)
                board.record_recheck(run.id, evidence.id, outcome, detail, frame, count,
                                     actor=ACTOR)
        rechecks = {r.evidence_id: r for r in board.list_rechecks(run.id)}
        checks, unsure = _verdict_checks(board, investigation, rechecks)
        finished = board.finish_recheck(run.id, checks, actor=ACTOR)
        stale = tuple(h for h, (c, _) in checks.items() if c is VerdictCheck.STALE)
        confirmed = tuple(h for h, (c, _) in checks.items() if c is VerdictCheck.CONFIRMED)
        judged = None
        if judge_model is not None:
            judged = await rejudge_stale(board, source, finished, stale, confirmed,
                                         model=judge_model, role_models=role_models,
                                         budget=budget, replaying=replay is not None)
    finally:
        if source is not database:
            source.close()
    return RecheckResult(finished, tuple(rechecks.values()), stale, confirmed, tuple(unsure),
                         judged)


def recheck_sync(database: Database, board: Board | str | os.PathLike[str],
                 **kwargs: Any) -> RecheckResult:
    """:func:`recheck` for code without an event loop."""
    return asyncio.run(recheck(database, board, **kwargs))


def _investigation(board: Board, investigation_id: str | None) -> Investigation:
    if investigation_id is not None:
        return board.get_investigation(investigation_id)
    investigations = board.list_investigations()
    if not investigations:
        raise NotFoundError(f"board {board.path} holds no investigation to re-check")
    return investigations[-1]


def _rejudge_models(board: Board, investigation: Investigation, model: Model | str | None,
                    models: Mapping[str, Model | str] | None,
                    replay: Board | str | os.PathLike[str] | None,
                    ) -> tuple[Model, dict[str, Model]]:
    """The re-judge's model and per-role models, checked before anything runs."""
    check_rejudgeable(investigation)
    if replay is not None:
        recorded = replay if isinstance(replay, Board) else _recording(replay)
        index = len(rejudges_started(board, investigation.id))
        try:  # the replay model reads every recorded call when it is made
            return rejudge_replay_model(recorded, investigation.id, index), {}
        finally:
            if recorded is not replay:
                recorded.close()
    if model is None and not os.environ.get(MODEL_ENV):
        raise InvalidRecordError(
            "re-judging needs a model: pass model='provider:model-id' or an offline "
            "policy's model (Python), --model or --policy naive (d2 board recheck, "
            "%investigate --rejudge), or set $D2_MODEL")
    chosen = model if model is not None and not isinstance(model, str) else get_model(model)
    per_role = {role: m if not isinstance(m, str) else get_model(m)
                for role, m in check_role_names(dict(models or {})).items()}
    return chosen, per_role


def _recording(path: str | os.PathLike[str]) -> Board:
    if not os.path.isfile(path):
        raise InvalidRecordError(f"no recorded board at {str(path)!r}; pass the board the "
                                 "re-judge was recorded on")
    return Board.open(path, read_only=True)


def _check_source(investigation: Investigation, source: SQLSource, force: bool) -> None:
    recorded = investigation.settings.get(SOURCE_KEY) or {}
    current = source.info.to_dict()
    differs = recorded and (recorded.get("kind") != current["kind"] or (
        recorded.get("url") not in ("", "connection", None)
        and current["url"] not in ("", "connection")
        and recorded.get("url") != current["url"]))
    if differs and not force:
        raise InvalidRecordError(
            f"{investigation.id} ran on {recorded.get('kind')} {recorded.get('url')!r}, not "
            f"on {current['kind']} {current['url']!r}; re-check on the same data, or pass "
            "--force (force=True) to compare with this source anyway")


def _open_run(board: Board, investigation: Investigation, source: SQLSource) -> RecheckRun:
    """The investigation's unfinished run (an interrupted re-check), or a new one."""
    runs = board.list_recheck_runs(investigation_id=investigation.id)
    if runs and runs[-1].finished_at is None:
        return runs[-1]
    return board.start_recheck(investigation.id, source.info.describe(), actor=ACTOR)


def _recheck_one(board: Board, source: SQLSource, evidence: Evidence) -> tuple[
        RecheckOutcome, str, pd.DataFrame | None, int | None]:
    call = board.tool_call_of(evidence.id)
    if call is None and analysis_tool_of(evidence) is not None:
        return (RecheckOutcome.UNCHECKED, "an analysis result recorded before tool calls "
                "were stored; investigate again to re-check it", None, None)
    unusable = _unusable_call(call, source) if call is not None else None
    if unusable is not None:
        return RecheckOutcome.UNCHECKED, unusable, None, None
    try:
        if call is not None:
            result = spec_for(call.tool).function(source, **call.args)
        else:
            result = source.run(evidence.sql, max_rows=board.max_rows)
    except (D2Error, ValueError) as exc:
        return RecheckOutcome.FAILS, f"{type(exc).__name__}: {exc}", None, None
    count = result.row_count if result.row_count is not None else len(result.frame)
    comparison = compare_results(board.evidence_frame(evidence.id), evidence.row_count,
                                 result.frame, count)
    if comparison.same:
        return RecheckOutcome.SAME, "", None, count
    return RecheckOutcome.CHANGED, comparison.detail, result.frame, count


def _unusable_call(call: ToolCall, source: SQLSource) -> str | None:
    """Why this version cannot replay a stored analysis call (a tool renamed or gone, its
    arguments changed), or None: the data is not at fault, so the evidence is unchecked."""
    try:
        spec = spec_for(call.tool)
    except KeyError:
        return (f"its analysis tool {call.tool!r} is not in this version of d2_notebook; "
                "investigate again to re-check it")
    try:
        inspect.signature(spec.function).bind(source, **call.args)
    except TypeError as exc:
        return (f"its stored {call.tool} call no longer fits the tool ({exc}); investigate "
                "again to re-check it")
    return None


def _verdict_checks(board: Board, investigation: Investigation, rechecks: dict[str, Recheck],
                    ) -> tuple[dict[str, tuple[VerdictCheck, list[str]]], list[str]]:
    checks: dict[str, tuple[VerdictCheck, list[str]]] = {}
    unsure: list[str] = []
    for hypothesis in board.list_hypotheses(investigation_id=investigation.id):
        verdict = board.latest_verdict(hypothesis.id)
        if verdict is None:
            continue
        cited = list(verdict.evidence_ids) or [
            link.evidence_id for link in board.list_links(hypothesis_id=hypothesis.id)]
        outcomes = [rechecks[e].outcome for e in cited if e in rechecks]
        if any(o in (RecheckOutcome.CHANGED, RecheckOutcome.FAILS) for o in outcomes):
            checks[hypothesis.id] = (VerdictCheck.STALE, cited)
        elif outcomes and len(outcomes) == len(cited) and all(
                o is RecheckOutcome.SAME for o in outcomes):
            checks[hypothesis.id] = (VerdictCheck.CONFIRMED, cited)
        else:
            unsure.append(hypothesis.id)
    return checks, unsure
