"""``investigate()``: run the Data Detective on a DuckDB database and get a result.

The one entry point the CLI, the notebook magic and Python users share::

    result = await investigate(con, "Which treatment is most effective for older COVID-19 "
                               "patients?", board="covid.d2board", model="anthropic:...")
    result.report, result.conclusions, result.board, result.usage

It opens the data read-only, opens (or resumes) the board, wraps the model so every
call is recorded on the board and counted against the budget, runs the control loop,
and leaves the investigation ``finished``, ``interrupted`` (Ctrl-C, cancel) or
``failed`` (an unrecoverable model error) — resumable in the last two cases.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from d2_notebook.board import Board, Evidence, Hypothesis, HypothesisStatus, Verdict
from d2_notebook.board.leases import LeaseKeeper
from d2_notebook.data import GuardedSQL
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.loop import LOOP_ACTOR, ControlLoop
from d2_notebook.detective.resume import resume_investigation
from d2_notebook.detective.sequencer import WriteSequencer
from d2_notebook.detective.settings import InvestigationSettings
from d2_notebook.errors import D2Error, InvalidRecordError
from d2_notebook.llm import Budget, BudgetedModel, Model, RecordingModel, Usage, get_model
from d2_notebook.llm.replay import ReplayModel

Database = duckdb.DuckDBPyConnection | GuardedSQL | str | os.PathLike[str]


@dataclass(frozen=True)
class Conclusion:
    """A supported hypothesis with its verdict and the evidence the verdict cites."""

    hypothesis: Hypothesis
    verdict: Verdict | None
    evidence: list[Evidence]


@dataclass
class InvestigationResult:
    """What an investigation produced. ``board`` holds the complete history.

    ``answer`` is the structured answer every variant gives (for the benchmark):
    ``{"answers": [...], "candidates_considered": [...]}``.
    """

    investigation_id: str
    question: str
    state: str
    report: str
    conclusions: list[Conclusion]
    board: Board
    usage: Usage
    settings: InvestigationSettings
    answer: dict[str, list[str]] = field(default_factory=dict)
    stop_reason: str | None = None
    queries: list[Any] = field(default_factory=list)

    def _repr_markdown_(self) -> str:
        return self.report


async def investigate(
    database: Database,
    question: str | None,
    *,
    board: Board | str | os.PathLike[str] | None = None,
    model: Model | str | None = None,
    settings: InvestigationSettings | None = None,
    resume: bool = False,
    replay: Board | str | os.PathLike[str] | None = None,
    force: bool = False,
    **options: Any,
) -> InvestigationResult:
    """Investigate ``question`` over ``database`` with the agent team.

    Args:
        database: a DuckDB connection (used as is, read-only), a path to a DuckDB
            file (opened read-only), or a :class:`GuardedSQL`.
        question: the investigative objective; may be None when resuming.
        board: where the board lives (a path, an open :class:`Board`, or None for an
            in-memory board).
        model: a model or a model name (``anthropic:...``, ``openai:...``); None uses
            the configured default (``D2_MODEL``).
        settings: team settings; keyword ``options`` (``collectors=``, ``max_rounds=``,
            ``max_usd=``, ``variant=`` ...) override single fields.
        resume: continue the board's last unfinished investigation.
        replay: a board recorded earlier: re-run its investigation with its recorded
            model responses (no API access), executing every query again.
        force: with ``resume``, take the run over even though another process's lease
            on it is still fresh (for a process known to be gone).

    Raises:
        ModelConfigError: no model is configured (the message names the fix).
        InvalidRecordError: bad settings, or nothing to resume.
        RunLeaseHeldError: ``resume`` while another live process runs the investigation.
        ModelError: the model failed beyond retries (the board is left ``failed``).
    """
    recorded: Board | None = None
    if replay is not None:
        recorded = replay if isinstance(replay, Board) else _open_existing_board(replay)
        _refuse_replay_into_recording(recorded, board)
        if not recorded.list_investigations():
            raise InvalidRecordError(f"nothing to replay on {recorded.path}: it holds no "
                                     "investigation; pass the board of an earlier run")
        source = recorded.list_investigations()[-1]
        question = question or source.question
        settings = InvestigationSettings.from_dict(source.settings)
        model = ReplayModel(recorded, source.id, ordered=True)
    # Everything that can fail on bad input fails before the board is touched.
    inner = model if model is not None and not isinstance(model, str) else get_model(model)
    own_sql = not isinstance(database, GuardedSQL)
    sql = database if isinstance(database, GuardedSQL) else GuardedSQL(database)
    try:
        opened = board if isinstance(board, Board) else Board.open(board or ":memory:")
        lease = LeaseKeeper(opened, force=force)  # one live process per investigation
        try:
            if resume and opened.list_investigations():
                lease.acquire(opened.list_investigations()[-1].id)  # before anything changes
            investigation, settings, reopened = _start_or_resume(opened, question, settings,
                                                                 options, resume)
            if not resume:
                lease.acquire(investigation.id)
            return await _run(opened, sql, investigation, settings, inner, reopened)
        finally:
            lease.release()
    finally:
        if own_sql:
            sql.close()  # closes only a connection it opened itself from a path


async def _run(opened: Board, sql: GuardedSQL, investigation: Any,
               settings: InvestigationSettings, inner: Model,
               reopened: bool) -> InvestigationResult:
    usage = Usage()
    sequencer = WriteSequencer()
    recording = RecordingModel(inner, opened, investigation.id, before_record=sequencer.arrive)
    full_budget = Budget(settings.max_calls, settings.max_tokens, settings.max_usd)
    ctx = TeamContext(
        board=opened, sql=sql, model=BudgetedModel(recording, _reserve(settings), usage),
        investigation_id=investigation.id, question=investigation.question,
        schema_summary=await asyncio.to_thread(sql.schema_summary), settings=settings,
        sequencer=sequencer, round=_rounds_so_far(opened, investigation.id),
    )
    # A finished investigation reopened for new material gets a fresh round budget.
    round_limit = ctx.round + settings.max_rounds if reopened else settings.max_rounds
    loop = ControlLoop(ctx, reporter_model=BudgetedModel(recording, full_budget, usage),
                       round_limit=round_limit)
    if _hypotheses(opened, investigation.id):
        loop.hypothesizer_calls = 1
    try:
        report = await loop.run()
    except BaseException as exc:
        interrupted = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError)
        opened.set_investigation_state(
            investigation.id, "interrupted" if interrupted else "failed", actor=LOOP_ACTOR,
            error=f"{type(exc).__name__}: {exc}" if not interrupted else "interrupted")
        raise
    opened.set_investigation_state(investigation.id, "finished", actor=LOOP_ACTOR,
                                   report=report)
    return _result(opened, investigation.id, report, usage, settings, loop)


def investigate_sync(
    database: Database, question: str | None, **kwargs: Any
) -> InvestigationResult:
    """:func:`investigate` for scripts (runs its own event loop)."""
    return asyncio.run(investigate(database, question, **kwargs))


# --- starting and resuming -------------------------------------------------------------


def _start_or_resume(board: Board, question: str | None, settings: InvestigationSettings | None,
                     options: dict[str, Any], resume: bool,
                     ) -> tuple[Any, InvestigationSettings, bool]:
    if resume:
        return resume_investigation(board, question, settings, options)
    if not question or not question.strip():
        raise InvalidRecordError("pass the question to investigate")
    chosen = replace(settings or InvestigationSettings(), **options)
    return board.start_investigation(question, chosen.to_dict(), actor="user"), chosen, False


def _reserve(settings: InvestigationSettings) -> Budget:
    """The collection phase's budget: the whole budget less the reporter's share."""
    share = 1.0 - settings.reporter_reserve

    def part(cap: float | None, whole: bool) -> Any:
        if cap is None:
            return None
        return max(1, int(cap * share)) if whole else cap * share

    return Budget(part(settings.max_calls, True), part(settings.max_tokens, True),
                  part(settings.max_usd, False))


def _rounds_so_far(board: Board, investigation_id: str) -> int:
    return sum(1 for e in board.events(kinds=["round.started"])
               if e.investigation_id == investigation_id)


def _hypotheses(board: Board, investigation_id: str) -> list[Hypothesis]:
    return board.list_hypotheses(investigation_id=investigation_id)


def _open_existing_board(path: str | os.PathLike[str]) -> Board:
    if not Path(path).is_file():
        raise D2Error(f"no recorded board at {str(path)!r}; pass the board of an earlier run")
    return Board.open(path, read_only=True)  # a replay reads its recording, never writes it


def _refuse_replay_into_recording(recorded: Board, board: Board | str | os.PathLike[str] | None,
                                  ) -> None:
    target = board.path if isinstance(board, Board) else board
    if recorded is board or (target is not None and str(target) != ":memory:"
                             and recorded.path != ":memory:"
                             and Path(target).resolve() == Path(recorded.path).resolve()):
        raise InvalidRecordError("a replay never writes into its own recording: pass a new "
                                 "board (or none) to replay into")


# --- the result ---------------------------------------------------------------------------


def _result(board: Board, investigation_id: str, report: str, usage: Usage,
            settings: InvestigationSettings, loop: ControlLoop) -> InvestigationResult:
    hypotheses = _hypotheses(board, investigation_id)
    conclusions = []
    for hyp in hypotheses:
        if hyp.status is not HypothesisStatus.SUPPORTED:
            continue
        verdict = board.latest_verdict(hyp.id)
        cited = [board.get_evidence(e) for e in (verdict.evidence_ids if verdict else ())]
        conclusions.append(Conclusion(hyp, verdict, cited))
    if loop.answer is not None:
        answer = loop.answer
    else:
        examined = {link.hypothesis_id for link in board.list_links()}
        examined |= {v.hypothesis_id for v in board.list_verdicts()}
        answer = {"answers": [c.hypothesis.statement for c in conclusions],
                  "candidates_considered": [h.statement for h in hypotheses if h.id in examined]}
    queries = list(loop.react_log.results.values()) if loop.react_log else []
    investigation = board.get_investigation(investigation_id)
    return InvestigationResult(
        investigation_id=investigation_id, question=investigation.question,
        state=investigation.state.value, report=report, conclusions=conclusions, board=board,
        usage=usage, settings=settings, answer=answer, stop_reason=loop.stop_reason,
        queries=queries)
