"""The runs a replay re-runs, read from a recorded board's event log.

An investigation may have taken several runs: it was interrupted, failed, or stopped on
its budget or time and was then resumed (an ``investigation.resumed`` event, with the
settings the resume ran under); a follow-up question is an investigation of its own
that starts after the one it follows. A replay re-runs them all, in the order they
were recorded, each run answered by that run's recorded calls only
(:func:`recorded_runs`), so that every run meets the board its original met.

A run stopped from outside (its time limit, Ctrl-C) stopped wherever the clock found
it; its replay stops at the same point of the board's history instead: after as many
board events as the original wrote before the first one the stop caused (a cancelled
call's row, the ``collection.stopped`` or ``investigation.state`` event).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from d2_notebook.board import Board, Investigation
from d2_notebook.errors import InvalidRecordError

TIME_STOP_PREFIX = "the time budget ("
"""How the loop's reason for a time stop begins (boards from before ``clock_expired``)."""

_RUN_STARTS = ("investigation.started", "investigation.resumed")
_RUN_EVENTS = (*_RUN_STARTS, "investigation.state", "collection.stopped",
               "model_call.recorded", "model_call.refused")


@dataclass(frozen=True)
class RecordedRun:
    """One recorded run of an investigation.

    Attributes:
        investigation_id: the investigation the run belongs to.
        question: its question.
        settings: the settings the run ran under (the stored ones for the first run,
            the ``investigation.resumed`` event's for a resumed one).
        resumed: whether the run resumed the investigation (else it started it).
        follows: the investigation a starting run follows up, if any.
        call_ids: the ids of the model calls the run recorded, refused ones included.
        ended: the investigation's state when the run ended (``finished``, ``failed``,
            ``interrupted``; ``running`` if the record ends mid-run).
        time_stopped: the run's collection stopped on its time limit (``max_seconds``).
        stop_after: for a run stopped from outside (time limit, interruption), how many
            board events it wrote after its start event and before the stop; else None.
    """

    investigation_id: str
    question: str
    settings: dict[str, Any]
    resumed: bool
    follows: str | None
    call_ids: tuple[int, ...]
    ended: str
    time_stopped: bool
    stop_after: int | None


def replayed_investigation(recorded: Board, question: str | None = None) -> Investigation:
    """The investigation a replay of ``recorded`` ends with: the newest one asking
    ``question`` when it is given, else the newest finished one (a failed or
    interrupted attempt after it is not what a reader wants repeated), else the newest.

    Raises:
        InvalidRecordError: the board holds no investigation, or none asks ``question``
            (the message lists the questions it holds).
    """
    investigations = recorded.list_investigations()
    if not investigations:
        raise InvalidRecordError(f"nothing to replay on {recorded.path}: it holds no "
                                 "investigation; pass the board of an earlier run")
    if question is not None and question.strip():
        asked = [i for i in investigations if i.question.strip() == question.strip()]
        if not asked:
            held = "; ".join(f"{i.id}: {i.question!r}" for i in investigations)
            raise InvalidRecordError(f"no investigation on {recorded.path} asks {question!r}; "
                                     f"it holds {held}. Pass one of these questions (or none "
                                     "for the newest finished one) to replay it")
        return asked[-1]
    finished = [i for i in investigations if i.state.value == "finished"]
    return (finished or investigations)[-1]


def recorded_runs(recorded: Board, investigation_id: str) -> list[RecordedRun]:
    """Every run a replay of ``investigation_id`` re-runs, in recorded order: the runs of
    the investigations it follows up (the earliest first), then its own.

    Raises:
        InvalidRecordError: the investigation's last run did not end (it was
            interrupted, or the record ends mid-run): there is nothing finished to
            reproduce; the message names the fix (resume it first).
    """
    chain = [investigation_id]
    while (followed := recorded.follows(chain[0])) is not None:
        chain.insert(0, followed)
    investigations = {i: recorded.get_investigation(i) for i in chain}
    events = [e for e in recorded.events(kinds=_RUN_EVENTS) if e.investigation_id in chain]
    starts = [k for k, e in enumerate(events) if e.kind in _RUN_STARTS]
    runs = []
    for n, k in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(events)
        start, own = events[k], events[k + 1:end]
        own = [e for e in own if e.investigation_id == start.investigation_id]
        investigation = investigations[start.investigation_id]
        runs.append(_run(recorded, investigation, start, own))
    last = runs[-1]
    if last.ended in ("interrupted", "running"):
        raise InvalidRecordError(
            f"investigation {last.investigation_id} on {recorded.path} never finished: its "
            f"last run was {last.ended}; resume it (--resume) to the end, then replay it")
    return runs


def _run(recorded: Board, investigation: Investigation, start: Any, own: list[Any],
         ) -> RecordedRun:
    resumed = start.kind == "investigation.resumed"
    # Each run's own settings are in its start event: the investigation's stored ones
    # are the last run's (a resume stores what it was given).
    settings = dict(start.payload.get("settings") or (
        {} if resumed else investigation.settings))
    ends = [k for k, e in enumerate(own) if e.kind == "investigation.state"
            and e.payload.get("state") != "running"]  # a resume's comes before its event
    own = own[:ends[0] + 1] if ends else own  # calls after it are a re-judge's, not the run's
    states = [e for e in own if e.kind == "investigation.state"
              and e.payload.get("state") != "running"]
    ended = str(states[-1].payload.get("state")) if states else "running"
    stops = [e for e in own if e.kind == "collection.stopped"]
    time_stopped = any(e.payload.get("clock_expired") or str(
        e.payload.get("reason", "")).startswith(TIME_STOP_PREFIX) for e in stops)
    calls = [e for e in own if e.kind.startswith("model_call.")]
    stop_after = None
    if time_stopped or ended == "interrupted":
        cancelled = [e.seq for e in calls if e.payload.get("status") == "cancelled"]
        caused = cancelled + [e.seq for e in (stops if time_stopped else states[-1:])]
        stop_after = min(caused) - 1 - start.seq
    return RecordedRun(
        investigation_id=investigation.id, question=investigation.question,
        settings=settings, resumed=resumed,
        follows=None if resumed else recorded.follows(investigation.id),
        call_ids=tuple(int(e.payload["id"]) for e in calls), ended=ended,
        time_stopped=time_stopped, stop_after=stop_after)
