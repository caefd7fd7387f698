"""Replay model calls recorded on a board, so a finished run re-runs with no API.

Matching: the recorded calls are grouped by agent, in the order they were made. The
*n*-th request of agent A is answered by A's *n*-th recorded call, after checking
that its ``system``, ``tools`` and ``messages`` equal the recorded ones (``role``,
``max_tokens`` and ``cache_breakpoints`` are not compared). Agents may interleave in any
order — only each agent's own order matters.

With ``ordered=True`` the recorded calls are also answered in their *global*
recorded order: a request waits until every call recorded before it has been
answered. The Data Detective uses this so that parallel agents receive their
responses in the original order and so write the same board (same ids) again.
A wait longer than ``wait_timeout_s`` means the run took another path: it is
reported as a divergence naming the call that never came.

``compared`` names the request fields checked (default :data:`COMPARED_FIELDS`);
``compared=()`` answers each agent's calls in order whatever it asks — for re-reading
an old single-agent recording whose prompts have since changed (re-scoring a benchmark
board), never for reproducing a team's board.

A request that differs raises :class:`~d2_notebook.errors.ReplayDivergenceError`
naming the agent, call number, field and first difference; it is never answered.
A recorded *failed* call is replayed as the same error: the recorded class if it is
a :class:`~d2_notebook.errors.ModelError` subclass, else ``ModelAPIError``, with
the recorded text. A request the budget *refused* is refused again, at the same
point of the order and with the same message
(:class:`~d2_notebook.errors.BudgetExceededError`), so a budget-stopped run replays
to the same board. A call recorded as *cancelled* was out when the recorded run was
stopped from outside (its time limit, Ctrl-C): with ``until_stopped=True`` (the caller
stops the replay at the recorded point) it, and any call past an agent's recording,
is never answered and waits to be cancelled; otherwise asking for it is a divergence.
A *retried* send (failed, then sent again) is skipped: the request is answered as its
last send ended.

``call_ids`` restricts the recording to those calls (one run of an investigation that
took several). :meth:`unreplayed` names the recorded calls a run never asked for: a
replay that leaves any is not the recorded run.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Collection
from typing import Any, Protocol

from d2_notebook import errors
from d2_notebook.board.records import ModelCallStatus
from d2_notebook.errors import BudgetExceededError, ModelError, ReplayDivergenceError
from d2_notebook.llm.messages import ModelRequest, ModelResponse

COMPARED_FIELDS = ("system", "tools", "messages")


class RecordedCall(Protocol):
    """What replay reads of a board's ``ModelCall``."""

    agent: str
    request: dict[str, Any]
    response: dict[str, Any] | None
    error: str | None
    status: ModelCallStatus


class ModelCallSource(Protocol):
    """What :class:`ReplayModel` needs of a board (``Board`` satisfies it)."""

    def list_model_calls(self, *, investigation_id: str | None = None,
                         refused: bool = False) -> list[Any]:
        """Recorded calls in the order they were made (with ``refused``: the requests
        the budget refused too)."""
        ...


class ReplayModel:
    """Answers each agent's requests with that agent's recorded responses, in order.

    All calls of ``investigation_id`` (every call on the board when None) are read
    once, when the model is made.
    """

    def __init__(
        self,
        board: ModelCallSource,
        investigation_id: str | None = None,
        *,
        name: str = "replay",
        ordered: bool = False,
        wait_timeout_s: float = 30.0,
        compared: tuple[str, ...] = COMPARED_FIELDS,
        call_ids: Collection[int] | None = None,
        until_stopped: bool = False,
    ) -> None:
        """Load the recording from ``board`` (only the calls ``call_ids`` names, if given)."""
        unknown = [f for f in compared if f not in COMPARED_FIELDS]
        if unknown:
            raise ValueError(f"cannot compare {unknown}; fields are {COMPARED_FIELDS}")
        self.compared = compared
        self.name = name
        self.investigation_id = investigation_id
        self.ordered = ordered
        self.wait_timeout_s = wait_timeout_s
        self.until_stopped = until_stopped
        self._calls: dict[str, list[RecordedCall]] = {}
        self._order: list[tuple[str, int]] = []  # global position -> (agent, index)
        wanted = None if call_ids is None else set(call_ids)
        for call in board.list_model_calls(investigation_id=investigation_id, refused=True):
            if call.status is ModelCallStatus.RETRIED:
                continue  # a send that failed and was sent again: its last send answers
            if wanted is not None and call.id not in wanted:
                continue
            calls = self._calls.setdefault(call.agent, [])
            if call.status is not ModelCallStatus.CANCELLED:  # never answered: no turn
                self._order.append((call.agent, len(calls)))
            calls.append(call)
        self._position = {key: position for position, key in enumerate(self._order)}
        self._next: dict[str, int] = {}
        self._lock = threading.Lock()
        self._served = 0
        self._waiters: dict[int, asyncio.Future[None]] = {}
        self._out_at_stop: set[tuple[str, int]] = set()
        self._cancelled = {(agent, index) for agent, calls in self._calls.items()
                           for index, call in enumerate(calls)
                           if call.status is ModelCallStatus.CANCELLED}

    def unreplayed(self) -> dict[str, int]:
        """Recorded calls not yet asked for, by agent (empty once the run matched).

        Calls recorded as cancelled are left out: they were out when the recorded run
        was stopped, and a replay stopped at the same point may not have sent them yet.
        """
        with self._lock:
            asked = dict(self._next)
        left = {a: sum(1 for c in calls[asked.get(a, 0):]
                       if c.status is not ModelCallStatus.CANCELLED)
                for a, calls in self._calls.items()}
        return {agent: n for agent, n in left.items() if n > 0}

    async def request(self, request: ModelRequest) -> ModelResponse:
        """The recorded response to ``request``.

        Raises:
            ReplayDivergenceError: the agent asks more, or something else, than recorded.
            ModelError: the recorded call failed (replayed as its error).
        """
        agent = request.agent
        with self._lock:
            index = self._next.get(agent, 0)
            self._next[agent] = index + 1
        if self.until_stopped and self._stopped_there(agent, index):
            with self._lock:
                self._out_at_stop.add((agent, index))
            # Out when the recorded run stopped: never answered, cancelled when the replay
            # stops at the same point. A replay that does not stop there took another path.
            try:
                await asyncio.wait_for(asyncio.Event().wait(), self.wait_timeout_s)
            except TimeoutError:
                raise ReplayDivergenceError(
                    f"replay diverged: agent {agent!r}'s call #{index + 1} was out when the "
                    f"recorded run stopped, but the replay did not stop within "
                    f"{self.wait_timeout_s:g} s of asking it; re-record the run with a real "
                    "model") from None
        position = self._position.get((agent, index))
        if self.ordered and position is not None:
            await self._wait_for_turn(position, agent, index + 1)
        try:
            return self._answer(request, agent, index)
        finally:
            if self.ordered and position is not None:
                self._mark_served()

    def _answer(self, request: ModelRequest, agent: str, index: int) -> ModelResponse:
        recorded = self._calls.get(agent, [])
        number = index + 1
        if index >= len(recorded):
            raise ReplayDivergenceError(
                f"replay diverged: agent {agent!r} made call #{number} but the recording "
                f"has only {len(recorded)} call(s) for it; re-record the run with a real model"
            )
        call = recorded[index]
        asked = request.to_dict()
        for field in self.compared:
            difference = first_difference(call.request.get(field), asked[field], field)
            if difference is not None:
                raise ReplayDivergenceError(
                    f"replay diverged: agent {agent!r}, call #{number}: {field} differ "
                    f"{difference}; the run asks something the recording does not contain "
                    "— re-record it with a real model"
                )
        if call.status is ModelCallStatus.REFUSED:
            _, _, message = (call.error or "").partition(": ")
            raise BudgetExceededError(message)
        if call.status is ModelCallStatus.CANCELLED:
            raise ReplayDivergenceError(
                f"replay diverged: agent {agent!r}, call #{number} was cancelled in the "
                "recorded run (it was stopped there), so the recording has no answer to "
                "it, and this replay went on past that point; re-record the run with a "
                "real model")
        if call.response is None:
            raise _recorded_error(call.error or "")
        return ModelResponse.from_dict(call.response)

    def out_at_stop(self) -> bool:
        """Whether every call recorded as out when the run was stopped (cancelled) has
        been asked again and waits: the replay has reached the recorded stop's moment."""
        with self._lock:
            return self._cancelled <= self._out_at_stop

    def _stopped_there(self, agent: str, index: int) -> bool:
        """Whether the recorded run was stopped while this call was out (recorded as
        cancelled) or before it was made (past the agent's recorded calls)."""
        recorded = self._calls.get(agent, [])
        return index >= len(recorded) or recorded[index].status is ModelCallStatus.CANCELLED

    async def _wait_for_turn(self, position: int, agent: str, number: int) -> None:
        if self._served >= position:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[position] = waiter
        try:
            await asyncio.wait_for(waiter, self.wait_timeout_s)
        except TimeoutError:
            expected_agent, expected_index = self._order[self._served]
            raise ReplayDivergenceError(
                f"replay diverged: agent {agent!r}, call #{number} waited "
                f"{self.wait_timeout_s:g} s for agent {expected_agent!r}'s call "
                f"#{expected_index + 1}, recorded before it, which the run never made; "
                "re-record the run with a real model"
            ) from None
        finally:
            self._waiters.pop(position, None)

    def _mark_served(self) -> None:
        """One more call answered, in order: wake the request recorded next."""
        self._served += 1
        waiter = self._waiters.get(self._served)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


def _recorded_error(text: str) -> ModelError:
    class_name, _, message = text.partition(": ")
    error_class = getattr(errors, class_name, None)
    if not (isinstance(error_class, type) and issubclass(error_class, ModelError)):
        error_class = errors.ModelAPIError
        message = text
    return error_class(f"replayed from the recording: {message}")


def first_difference(recorded: Any, asked: Any, path: str) -> str | None:
    """Where two JSON values first differ, as ``"at <path>: recorded ..., now ..."``;
    None when they are equal."""
    if recorded == asked:
        return None
    if isinstance(recorded, dict) and isinstance(asked, dict):
        for key in sorted(set(recorded) | set(asked)):
            if key not in recorded or key not in asked:
                return (f"at {path}.{key}: recorded {_short(recorded.get(key, '<absent>'))}, "
                        f"now {_short(asked.get(key, '<absent>'))}")
            found = first_difference(recorded[key], asked[key], f"{path}.{key}")
            if found is not None:
                return found
    if isinstance(recorded, list) and isinstance(asked, list):
        for i, (old, new) in enumerate(zip(recorded, asked, strict=False)):
            found = first_difference(old, new, f"{path}[{i}]")
            if found is not None:
                return found
        shorter = min(len(recorded), len(asked))
        extra = recorded[shorter] if len(recorded) > shorter else asked[shorter]
        return (f"in length at {path}: recorded {len(recorded)} item(s), now {len(asked)}; "
                f"first unmatched {path}[{shorter}] = {_short(extra)}")
    if isinstance(recorded, str) and isinstance(asked, str):
        i = next((k for k, (a, b) in enumerate(zip(recorded, asked, strict=False)) if a != b),
                 min(len(recorded), len(asked)))
        start = max(0, i - 20)  # a little context before the first differing character
        return (f"at {path} character {i}: recorded {_short(recorded[start:])}, "
                f"now {_short(asked[start:])}")
    return f"at {path}: recorded {_short(recorded)}, now {_short(asked)}"


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
