"""``investigate()``: run the Data Detective on a database and get a result.

The one entry point the CLI, the notebook magic and Python users share::

    result = await investigate(con, "Which treatment is most effective for older COVID-19 "
                               "patients?", board="covid.d2board", model="anthropic:...",
                               models={"collector": "anthropic:claude-haiku-4-5"})
    result.report, result.conclusions, result.board, result.usage.by_role

It opens the data read-only, opens (or resumes) the board, wraps the model so every
call is recorded on the board and counted against the budget, runs the control loop,
and leaves the investigation ``finished`` (its report stored), ``interrupted`` (Ctrl-C,
cancel, a lost run lease) or ``failed`` (any other fault once it runs: a model error
beyond retries, the source lost, with the error recorded) — resumable in the last two
cases, never left ``running``. A finished run stopped early on its budget, with
hypotheses left open, resumes with a larger budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import duckdb

from d2_notebook.board import (
    Board,
    Evidence,
    Hypothesis,
    HypothesisStatus,
    InvestigationState,
    Verdict,
)
from d2_notebook.board.leases import LeaseKeeper
from d2_notebook.data import GuardedSQL, Relationship, SourceInfo, SQLSource, open_source
from d2_notebook.detective.claim_check import ClaimCheck, check_report
from d2_notebook.detective.context import TeamContext
from d2_notebook.detective.coverage_view import NO_CANDIDATES, read_candidates
from d2_notebook.detective.follow_up import choose_followed, prepare_follow_up, record_fingerprints
from d2_notebook.detective.loop import LOOP_ACTOR, ControlLoop, RunOutcome
from d2_notebook.detective.preset import Preset, preset_models
from d2_notebook.detective.replay_runs import (
    RecordedRun,
    recorded_runs,
    replayed_investigation,
)
from d2_notebook.detective.resume import (
    hypothesizer_turns,
    investigation_to_resume,
    resume_investigation,
    spent_so_far,
)
from d2_notebook.detective.sequencer import WriteSequencer
from d2_notebook.detective.settings import InvestigationSettings, check_role_names
from d2_notebook.detective.variant import Shape
from d2_notebook.errors import (
    BoardError,
    D2Error,
    InvalidRecordError,
    ReplayDivergenceError,
    RunLeaseLostError,
)
from d2_notebook.llm import (
    Budget,
    Ledger,
    Model,
    RecordingModel,
    Usage,
    default_model_name,
    get_model,
)
from d2_notebook.llm.replay import ReplayModel
from d2_notebook.safe_markdown import safe_markdown

Database = duckdb.DuckDBPyConnection | GuardedSQL | SQLSource | str | os.PathLike[str] | Any
"""A DuckDB connection or path, a SQLAlchemy URL or Engine, a SparkSession, or a source."""
SOURCE_KEY = "source"
"""Where an investigation's settings record its source (:meth:`SourceInfo.to_dict`)."""
FINGERPRINTS_FAILED = "data.fingerprints_failed"
"""The event logged when a finished investigation's tables could not be fingerprinted."""


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
    ``{"answers": [...], "candidates_considered": [...]}``. ``usage`` is the
    investigation's ledger: every call it sent, earlier runs of a resumed one included
    (refused requests are not calls); ``usage.by_role`` has each role's calls, tokens
    and cost. ``claim_check`` looked every number of the
    report up in the evidence it cites (``report`` has the unverified ones marked);
    ``unverified_claims`` counts those not found.
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
    claim_check: ClaimCheck = field(default_factory=lambda: ClaimCheck(0, (), ""))

    @property
    def unverified_claims(self) -> int:
        """Numbers of the report found neither in the evidence it cites nor the verdicts."""
        return len(self.claim_check.unverified)

    def _repr_markdown_(self) -> str:
        return safe_markdown(self.report)


async def investigate(
    database: Database,
    question: str | None,
    *,
    board: Board | str | os.PathLike[str] | None = None,
    model: Model | str | None = None,
    settings: InvestigationSettings | None = None,
    resume: bool = False,
    replay: Board | str | os.PathLike[str] | None = None,
    models: Mapping[str, Model | str] | None = None,
    preset: Preset | str | None = None,
    force: bool = False,
    follow_up: bool | str = False,
    relationships: Sequence[str | Relationship] = (),
    **options: Any,
) -> InvestigationResult:
    """Investigate ``question`` over ``database`` with the agent team.

    Args:
        database: a DuckDB connection (used as is, read-only), a path to a DuckDB
            file (opened read-only), a :class:`GuardedSQL`, a SQLAlchemy URL or Engine
            (``postgresql+psycopg://...``), a ``pyspark.sql.SparkSession``, or any
            :class:`SQLSource` (see :func:`~d2_notebook.data.open_source`). The board
            records the source's kind, dialect and URL (never a password).
        question: the investigative objective; may be None when resuming.
        board: where the board lives (a path, an open :class:`Board`, or None for an
            in-memory board). However the run ends, its write-ahead log is emptied
            into the file, so the ``.d2board`` alone is the whole board. A board opened
            here from a path is closed if the run raises; otherwise it is the result's
            ``board`` (close it when done, or it is closed when Python exits). An open
            :class:`Board` passed in stays open.
        model: a model or a model name (``anthropic:...``, ``openai:...``); None uses
            the configured default (``D2_MODEL``). It answers every role not in
            ``models``.
        settings: team settings; keyword ``options`` (``collectors=``, ``max_depth=``,
            ``max_usd=``, ``variant=`` ...) override single fields. Budgets count the
            whole investigation, earlier runs of a resumed one included; ``max_usd``
            is $5 unless given (``max_usd=None`` removes it).
        models: a model (or model name) per role, e.g. ``{"collector": "anthropic:..."}``.
            Names are stored with the settings, so a resumed run uses them again
            (models passed as objects must be passed again); a replay answers every
            role from the recording.
        preset: a role → model mapping by name (:mod:`~d2_notebook.detective.preset`):
            ``"economy"`` puts collectors, judges and the orchestrator on the default model's
            smaller sibling (e.g. ``anthropic:claude-haiku-4-5``); ``models`` win over it.
        resume: continue the board's last unfinished investigation, or its last
            finished one that stopped early on its budget (or time) with hypotheses left
            open: pass a larger budget (the budget counts earlier runs' spend).
        replay: a board recorded earlier: re-run its investigation with its recorded
            model responses (no API access), executing every query again.
        force: with ``resume``, take the run over even though another process's lease
            on it is still fresh (for a process known to be gone).
        follow_up: start a new investigation on ``board`` (which must exist) that follows
            up its newest finished investigation (True) or the one named (``"I2"``): its
            roles see the earlier conclusions, evidence and dismissed dimensions, and a
            query identical to an earlier evidence's on unchanged data links that
            evidence instead of running again (:mod:`~d2_notebook.detective.follow_up`).
        relationships: join edges to declare or veto where the inferred join graph is
            wrong (``"orders.customer_id -> customers.id"``, ``"!a.id -> b.id"``), for a
            ``database`` that is not a source already (see
            :func:`~d2_notebook.data.read_relationships_file` for the file form).

    Raises:
        ModelConfigError: no model is configured (the message names the fix).
        InvalidRecordError: bad settings, nothing to resume, or a replay against a
            different kind of source than the recorded one; a follow-up with no board,
            a board file that does not exist, no finished investigation to follow, or
            with ``resume`` or ``replay``.
        RunLeaseHeldError: ``resume`` while another live process runs the investigation.
        ModelError: the model failed beyond retries (the board is left ``failed``).
        Exception: any other fault once the investigation runs (the source lost while
            reading the schema, say) propagates as raised, the board left ``failed``
            with the error.
        RunLeaseLostError: the run lease could not be renewed; the run stopped (the
            board is left ``interrupted``, resumable).

    Whatever this call opened is closed when it raises (the board included; a board
    that was passed in stays open); a replay's recording is closed when it returns.
    """
    _check_follow_up(follow_up, board, resume=resume, replay=replay)
    with contextlib.ExitStack() as owned:  # what this call opened, closed on every path
        recorded: Board | None = None
        recorded_source: dict[str, Any] | None = None
        runs: list[RecordedRun] = []
        if replay is not None:
            recorded = replay if isinstance(replay, Board) else _open_existing_board(replay)
            if recorded is not replay:
                owned.callback(recorded.close)
            _refuse_replay_into_recording(recorded, board)
            runs = recorded_runs(recorded, replayed_investigation(recorded, question).id)
            _check_replayable(runs[0].settings)
            settings = InvestigationSettings.from_dict(runs[0].settings)
            recorded_source = runs[0].settings.get(SOURCE_KEY) or {
                "kind": "duckdb", "dialect": "duckdb", "url": ""}
            models = None
        # Everything that can fail on bad input fails before the board is touched.
        if preset is not None:
            if recorded is not None:
                raise InvalidRecordError("a replay answers every role from its recording; "
                                         "leave out the preset")
            default = model if isinstance(model, str) else (
                model.name if model is not None else default_model_name())
            models = {**preset_models(preset, default), **(models or {})}
        given = check_role_names(dict(models or {}))
        objects = {role: m for role, m in given.items() if not isinstance(m, str)}
        named = {role: m for role, m in given.items() if isinstance(m, str)}
        if named:
            stored = dict(settings.role_models) if settings is not None and not resume else {}
            options = {**options, "role_models": {**stored, **options.get("role_models", {}),
                                                  **named}}
        inner = (model if model is not None and not isinstance(model, str)
                 else get_model(model) if recorded is None
                 else ReplayModel(recorded))  # unused: _replay answers each run from its calls
        role_inner: dict[str, Model] | None = None
        if recorded is not None:
            role_inner = {}  # the recording answers every role
        elif not resume:
            stored = dict(settings.role_models) if settings is not None else {}
            role_inner = _resolve_role_models({**stored, **options.get("role_models", {})},
                                              objects)
        sql = open_source(database, relationships=relationships)
        own_sql = sql is not database
        try:
            if recorded_source is not None:
                _check_replay_source(recorded_source, sql.info)
            opened = board if isinstance(board, Board) else Board.open(board or ":memory:")
            if opened is not board:  # a run that raises closes the board it opened
                owned.push(lambda failed, *_: opened.close() if failed else None)
            owned.callback(_settle, opened)  # runs first: the log is emptied into the file
            if recorded is not None:
                return await _replay(opened, sql, recorded, runs, settings, options)
            lease = LeaseKeeper(opened, force=force)  # one live process per investigation
            try:
                if resume and opened.list_investigations():  # before anything changes
                    lease.acquire(investigation_to_resume(opened).id)
                followed = choose_followed(opened, follow_up) if follow_up else None
                investigation, settings, _ = _start_or_resume(opened, question, settings, options,
                                                              resume, sql.info)
                try:  # the investigation is running: however this ends, it is not left so
                    if followed is not None:
                        opened.record_follow_up(investigation.id, followed.id, actor="user")
                    if not resume:
                        lease.acquire(investigation.id)
                    if role_inner is None:  # resumed: the stored names, unless given again
                        role_inner = _resolve_role_models(settings.role_models, objects)
                    result = await lease.guard(_run(opened, sql, investigation, settings, inner,
                                                    role_inner))
                except BaseException as exc:
                    _record_stop(opened, investigation.id, exc)
                    raise
            finally:
                lease.release()
        finally:
            if own_sql:
                await _close_source(sql)  # closes only what it opened itself (a path, a URL)
    return result


def _check_follow_up(follow_up: bool | str, board: Board | str | os.PathLike[str] | None, *,
                     resume: bool, replay: object) -> None:
    """Refuse a follow-up that cannot be one, before anything is opened."""
    if not follow_up:
        return
    if resume or replay is not None:
        raise InvalidRecordError("a follow-up starts a new investigation: leave out "
                                 f"{'resume' if resume else 'replay'} (or the follow-up)")
    if board is None or (not isinstance(board, Board) and str(board) == ":memory:"):
        raise InvalidRecordError("a follow-up needs the board of the earlier investigation: "
                                 "pass board=PATH (--board PATH)")
    if not isinstance(board, Board) and not Path(board).is_file():
        raise InvalidRecordError(f"no board at {str(board)!r} to follow up; pass the .d2board "
                                 "file of the earlier investigation, or run the first "
                                 "question without --follow-up")


async def _replay(opened: Board, sql: SQLSource, recorded: Board, runs: list[RecordedRun],
                  settings: InvestigationSettings, options: dict[str, Any],
                  ) -> InvestigationResult:
    """Re-run the recorded ``runs`` (:func:`recorded_runs`) on ``opened``, in order.

    Each run starts as it was recorded (a new investigation, a follow-up of an earlier
    one, or a resume under the settings it was resumed with) and is answered by its own
    recorded calls only. A run recorded as stopped from outside stops at the same point
    of the board's history (its time limit runs out there, or it is interrupted there);
    a run recorded as failed fails again (the replayed error) and the next run resumes
    it. ``settings`` (with ``options``) are the first run's.

    Raises:
        ReplayDivergenceError: a run asked something else than recorded, ended
            otherwise than recorded, or left recorded calls unused; or the replay
            would give an investigation another id than recorded.
        Exception: the last run's own recorded failure, replayed.
    """
    result: InvestigationResult | None = None
    for number, run in enumerate(runs, 1):
        before = opened.last_seq()
        if run.resumed:
            investigation, chosen, _ = resume_investigation(
                opened, None, InvestigationSettings.from_dict(run.settings), {})
        else:
            first = settings if number == 1 else InvestigationSettings.from_dict(run.settings)
            investigation, chosen, _ = _start_or_resume(opened, run.question, first,
                                                        options if number == 1 else {},
                                                        False, sql.info)
        if investigation.id != run.investigation_id:
            raise ReplayDivergenceError(
                f"replay diverged: the recording's {run.investigation_id} would be "
                f"{investigation.id} on the new board (the recording holds investigations "
                "this one does not follow); replay into a copy of the recording's board "
                "taken before it, or re-record it")
        start = opened.events(since=before, kinds=["investigation.started",
                                                   "investigation.resumed"])[0].seq
        lease = LeaseKeeper(opened)
        try:
            try:
                if run.follows is not None:
                    opened.record_follow_up(investigation.id, run.follows, actor="user")
                lease.acquire(investigation.id)
                model = ReplayModel(recorded, run.investigation_id, ordered=True,
                                    call_ids=run.call_ids,
                                    until_stopped=run.stop_after is not None)
                stop = _recorded_stop(opened, start, run, model)
                work = _run(opened, sql, investigation, chosen, model, {}, replaying=True,
                            time_stop=stop if run.time_stopped else _never)
                if run.ended == "interrupted":
                    await _interrupt_at(lease.guard(work), stop, run)
                else:
                    result = await lease.guard(work)
                    if run.ended != "finished":
                        raise ReplayDivergenceError(
                            f"replay diverged: run {number} of {run.investigation_id} was "
                            f"recorded as {run.ended}, and its replay finished; re-record "
                            "it with a real model")
                _check_all_asked(model, run, number)
            except BaseException as exc:
                interrupted = isinstance(exc, _Interrupted)
                _record_stop(opened, investigation.id,
                             asyncio.CancelledError() if interrupted else exc)
                recorded_end = interrupted or (run.ended == "failed"
                                               and isinstance(exc, Exception)
                                               and not isinstance(exc, ReplayDivergenceError))
                if not recorded_end or number == len(runs):
                    raise
        finally:
            lease.release()
    assert result is not None  # recorded_runs ends with a run that finished or failed
    return result


class _Interrupted(BaseException):
    """A replayed run was interrupted where its recording was (recorded ``interrupted``)."""


async def _never() -> None:
    """A replay's time limit when the recorded run's clock did not stop it."""
    await asyncio.Event().wait()


def _recorded_stop(board: Board, start: int, run: RecordedRun, model: ReplayModel,
                   ) -> Callable[[], Awaitable[None]]:
    """What returns once the replay of ``run`` (started at event ``start``) has written
    the board events its recording wrote before it was stopped from outside, and every
    call that was out at that moment has been asked again (so the same calls are
    cancelled)."""

    async def reached() -> None:
        if run.stop_after is None:
            await _never()
        while board.last_seq() - start < (run.stop_after or 0) or not model.out_at_stop():
            await asyncio.sleep(0.01)

    return reached


async def _interrupt_at(work: Awaitable[InvestigationResult],
                        stop: Callable[[], Awaitable[None]], run: RecordedRun) -> None:
    """Run ``work`` until ``stop`` returns, then cancel it, as the recorded run was.

    Raises:
        _Interrupted: always, once ``work`` is cancelled.
        ReplayDivergenceError: ``work`` ended before the recorded interruption.
    """
    task, stopper = asyncio.ensure_future(work), asyncio.ensure_future(stop())
    try:
        await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopper.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, stopper, return_exceptions=True)
    if not stopper.cancelled() and stopper.done():
        raise _Interrupted()
    task.result()  # a fault of the run, raised as recorded
    raise ReplayDivergenceError(
        f"replay diverged: a run of {run.investigation_id} was interrupted in the recording, "
        "and its replay ended before that point; re-record it with a real model")


def _check_all_asked(model: ReplayModel, run: RecordedRun, number: int) -> None:
    """A run whose replay never asked for some of its recorded calls is not the recorded
    run, whatever board it left.

    Raises:
        ReplayDivergenceError: naming the calls left unused.
    """
    unused = model.unreplayed()
    if unused:
        left = ", ".join(f"{agent} ({n})" for agent, n in sorted(unused.items()))
        raise ReplayDivergenceError(
            f"replay diverged: run {number} of {run.investigation_id} ended with recorded "
            f"calls never asked for: {left}; the replay took another path than the "
            "recorded run; re-record it with a real model")


async def _close_source(sql: SQLSource, *, wait_s: float = 30.0) -> None:
    """Close a source this call opened. A run stopped mid-query (a fault, Ctrl-C) may
    leave the query finishing in its worker thread, and the connection refuses to close
    until it has: wait for it (``wait_s`` at most)."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            sql.close()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


async def _run(opened: Board, sql: SQLSource, investigation: Any,
               settings: InvestigationSettings, inner: Model,
               role_inner: dict[str, Model], *, replaying: bool = False,
               time_stop: Callable[[], Awaitable[None]] | None = None,
               ) -> InvestigationResult:
    """Run the team on the running ``investigation`` and finish it: the report is stored
    (and the investigation ``finished``) before the tables its evidence read are
    fingerprinted. A fault or interruption before that propagates with the investigation
    still ``running``; the caller records it (:func:`_record_stop`).

    A replay (``replaying``) sets no budget caps, and its ``time_stop`` stands for the
    wall clock of ``max_seconds`` (:class:`ControlLoop`)."""
    # One ledger for every role and model, starting from what earlier runs spent. A
    # replay sets no caps of its own: its budget stops are the recording's refusals.
    ledger = Ledger(spent_so_far(opened, investigation.id))
    sequencer = WriteSequencer()
    collection = Budget() if replaying else settings.collection_budget()
    whole = collection.whole or collection

    def recorded(model: Model) -> RecordingModel:
        return RecordingModel(model, opened, investigation.id, ledger=ledger,
                              budget=collection, before_record=sequencer.arrive)

    recording = recorded(inner)
    role_recording = {role: recorded(model) for role, model in role_inner.items()}
    follows = opened.follows(investigation.id)
    follow_up = None if follows is None else await asyncio.to_thread(
        prepare_follow_up, opened, sql, opened.get_investigation(follows), sql.info.to_dict())
    ctx = TeamContext(
        board=opened, sql=sql, model=recording,
        investigation_id=investigation.id, question=investigation.question,
        schema_summary=await asyncio.to_thread(sql.schema_summary), settings=settings,
        sequencer=sequencer, role_models=role_recording,
        candidates=(NO_CANDIDATES if settings.variant.shape is Shape.REACT
                    else await asyncio.to_thread(read_candidates, sql)),
        follow_up=follow_up,
    )
    reporter_model = role_recording.get("reporter", recording).with_budget(whole)
    loop = ControlLoop(ctx, reporter_model=reporter_model,
                       hypothesizer_calls=hypothesizer_turns(opened, investigation.id),
                       time_stop=time_stop)
    outcome = await loop.run()
    queries = {query_id: r.frame for query_id, r in outcome.queries.items()}
    check = check_report(opened, investigation.id, outcome.report, queries=queries)
    outcome = replace(outcome, report=check.marked_report)
    _finish(opened, investigation.id, outcome.report)
    await _fingerprint(opened, sql, investigation.id)
    return replace(_result(opened, investigation.id, outcome, ledger.usage, settings),
                   claim_check=check)


def _finish(board: Board, investigation_id: str, report: str) -> None:
    """Store ``report`` and mark the investigation ``finished``. An investigation that
    already has a report (reopened: for additions, or after a budget stop) keeps it as
    the report version before; ``report`` becomes the next version and the current one."""
    if board.get_investigation(investigation_id).report:
        board.add_report_version(investigation_id, report, recheck_run_id=None,
                                 actor=LOOP_ACTOR)
        board.set_investigation_state(investigation_id, "finished", actor=LOOP_ACTOR)
    else:
        board.set_investigation_state(investigation_id, "finished", actor=LOOP_ACTOR,
                                      report=report)


async def _fingerprint(board: Board, sql: SQLSource, investigation_id: str) -> None:
    """Fingerprint the tables a finished investigation's evidence read (a follow-up
    reuses its evidence on unchanged data by them).

    The report is stored already, so this is best effort: a fault (the source lost, the
    board full) is logged as a ``data.fingerprints_failed`` event with the error, and a
    follow-up then runs its queries again (the investigation "has no data
    fingerprints"). An interruption propagates; the investigation stays ``finished``.
    """
    try:
        await asyncio.to_thread(record_fingerprints, board, sql, investigation_id)
    except Exception as exc:
        with contextlib.suppress(sqlite3.Error, BoardError):  # the board may be the fault
            board.log_event(FINGERPRINTS_FAILED, {"error": f"{type(exc).__name__}: {exc}"},
                            actor=LOOP_ACTOR, investigation_id=investigation_id)


def _record_stop(board: Board, investigation_id: str, exc: BaseException) -> None:
    """A run ended by ``exc`` before it finished: leave the investigation resumable,
    ``interrupted`` (Ctrl-C, a cancel, a lost run lease) or ``failed`` with the error.
    An investigation no longer ``running`` (it finished, its report stored, before the
    interruption came) keeps its state. Best effort: the board itself may be the fault."""
    interrupted = isinstance(exc, KeyboardInterrupt | asyncio.CancelledError
                             | RunLeaseLostError)
    with contextlib.suppress(sqlite3.Error, BoardError):
        if board.get_investigation(investigation_id).state is not InvestigationState.RUNNING:
            return
        error = (f"{type(exc).__name__}: {exc}" if isinstance(exc, Exception)
                 else "interrupted")
        board.set_investigation_state(investigation_id,
                                      "interrupted" if interrupted else "failed",
                                      actor=LOOP_ACTOR, error=error)


def investigate_sync(
    database: Database, question: str | None, **kwargs: Any
) -> InvestigationResult:
    """:func:`investigate` for scripts (runs its own event loop)."""
    return asyncio.run(investigate(database, question, **kwargs))


# --- starting and resuming -------------------------------------------------------------


def _start_or_resume(board: Board, question: str | None, settings: InvestigationSettings | None,
                     options: dict[str, Any], resume: bool, source: SourceInfo,
                     ) -> tuple[Any, InvestigationSettings, bool]:
    if resume:
        return resume_investigation(board, question, settings, options)
    if not question or not question.strip():
        raise InvalidRecordError("pass the question to investigate")
    chosen = replace(settings or InvestigationSettings(), **options)
    stored = {**chosen.to_dict(), SOURCE_KEY: source.to_dict()}
    return board.start_investigation(question, stored, actor="user"), chosen, False


def _check_replay_source(recorded: dict[str, Any], current: SourceInfo) -> None:
    """A replay re-runs the recorded SQL: it must meet the same kind of source."""
    try:
        then = SourceInfo.from_dict(recorded)
    except (KeyError, ValueError):
        return  # an unreadable record is not a reason to refuse
    if (then.kind, then.dialect) != (current.kind, current.dialect):
        raise InvalidRecordError(
            f"the recorded investigation ran on {then.describe()}, and its recorded model "
            f"responses hold {then.dialect.title} SQL; it cannot be replayed against "
            f"{current.describe()}. Replay it against a {then.dialect.title} source.")


def _resolve_role_models(names: Mapping[str, str],
                         objects: Mapping[str, Model]) -> dict[str, Model]:
    """The model of each role with its own: objects as given, names resolved.

    Raises:
        ModelConfigError: a name names no known provider, or one not configured.
    """
    resolved = {role: get_model(name) for role, name in names.items() if role not in objects}
    return {**resolved, **objects}


def _hypotheses(board: Board, investigation_id: str) -> list[Hypothesis]:
    return board.list_hypotheses(investigation_id=investigation_id)


def _check_replayable(stored: Mapping[str, Any]) -> None:
    """Refuse, before any query runs, a team recorded by the round-based loop.

    Boards stored before the streaming scheduler have ``max_rounds`` and no
    ``max_depth``: their settings still load (and such a board resumes), but their
    team's requests (rounds, dispatch) are not the ones this version makes, so a
    replay would diverge at the first orchestrator call. ``react_sql`` boards replay.

    Raises:
        ReplayDivergenceError: the board's team cannot be replayed by this version.
    """
    settings = InvestigationSettings.from_dict(dict(stored))
    if "max_depth" in stored or settings.variant.shape is Shape.REACT:
        return
    raise ReplayDivergenceError(
        f"this board's {settings.variant.name!r} team was recorded by the round-based "
        "loop (its settings have max_rounds), whose orchestrator dispatched hypotheses "
        "round by round; this version streams them, so its requests differ from the "
        "recorded ones. Replay it with d2-notebook from before the streaming scheduler, "
        "or record it again; the board itself still opens (d2 board show) and resumes")


def _settle(board: Board) -> None:
    """At the end of a run, however it ends: empty the write-ahead log into the board
    file, so the ``.d2board`` alone is the whole board (best effort: a full disk or a
    reader still in the log leaves the log, and nothing is lost)."""
    with contextlib.suppress(D2Error):
        board.checkpoint()


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


def _result(board: Board, investigation_id: str, outcome: RunOutcome, usage: Usage,
            settings: InvestigationSettings) -> InvestigationResult:
    hypotheses = _hypotheses(board, investigation_id)
    conclusions = []
    for hyp in hypotheses:
        if hyp.status is not HypothesisStatus.SUPPORTED:
            continue
        verdict = board.latest_verdict(hyp.id)
        cited = [board.get_evidence(e) for e in (verdict.evidence_ids if verdict else ())]
        conclusions.append(Conclusion(hyp, verdict, cited))
    if outcome.answer is not None:
        answer = outcome.answer
    else:
        examined = {link.hypothesis_id for link in board.list_links()}
        examined |= {v.hypothesis_id for v in board.list_verdicts()}
        answer = {"answers": [c.hypothesis.statement for c in conclusions],
                  "candidates_considered": [h.statement for h in hypotheses if h.id in examined]}
    investigation = board.get_investigation(investigation_id)
    return InvestigationResult(
        investigation_id=investigation_id, question=investigation.question,
        state=investigation.state.value, report=outcome.report, conclusions=conclusions,
        board=board, usage=usage, settings=settings, answer=answer,
        stop_reason=outcome.stop_reason, queries=list(outcome.queries.values()))
