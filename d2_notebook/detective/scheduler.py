"""The work queue of the team: hypotheses waiting to be examined, and the branches
examining them, at most ``slots`` at once.

A hypothesis is offered the moment it is on the board (the hypothesizer's as each
is added, a judge's refinements as the judge refines); it starts at once if a slot
is free, else waits. A branch that refined its hypothesis hands its slot to its
first child unless shallower work waits; otherwise the queue follows
:func:`~d2_notebook.detective.refinement.queue_rank` (refinements first, refinements
of refinements after every top-level hypothesis), then first come, first served.

Replay needs every decision of the queue to fall at the same point of the board's
write order. So nothing here awaits: offering, starting a branch (its start is
written to the board by ``start``) and freeing a slot run synchronously, inside the
turn of the board write that caused them (a tool handler, or a branch's last step).

Nothing is lost and nothing hangs: a hypothesis whose branch could not be started
(the board locked or full) goes back to the queue, the fault is kept, no further
branch starts, and :meth:`BranchScheduler.idle` raises it once the running branches
have ended. Waiting is computed from the branches' tasks themselves, so there is no
state that could be left "busy" by a fault.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Awaitable, Callable

from d2_notebook.detective.refinement import queue_rank
from d2_notebook.errors import BudgetExceededError, D2Error

Branch = Callable[[str], Awaitable[None]]
"""Examines one hypothesis to the end (collect → judge ...)."""


class BranchStartError(D2Error):
    """Examining a hypothesis could not start (the board refused the write); the run
    stops and a resume examines it."""


class BranchScheduler:
    """At most ``slots`` branches at once over a priority queue of hypothesis ids.

    ``begin(hypothesis_id)`` is called synchronously when a hypothesis is taken from
    the queue: it returns False to skip it (e.g. abandoned meanwhile), else records
    the start on the board and returns True; the branch then runs as its own task.
    If ``begin`` raises, the hypothesis goes back to the queue, the fault is kept in
    :attr:`failures` and nothing more starts.
    """

    def __init__(self, slots: int, branch: Branch, begin: Callable[[str], bool]) -> None:
        """Prepare an empty queue."""
        self.slots = slots
        self._branch = branch
        self._begin = begin
        self._queue: list[tuple[int, int, str]] = []
        self._parent: dict[str, str | None] = {}
        self._order = itertools.count()
        self._queued: set[str] = set()
        self._running: dict[str, asyncio.Task[None]] = {}
        self.stopped = False
        self.failures: list[BaseException] = []
        self.started: list[str] = []
        self.on_fault: Callable[[], None] | None = None
        """Called (synchronously) when a branch fails with a fault that is not a budget
        stop, so the caller can stop its own work at once."""

    # --- the queue -------------------------------------------------------------------

    def offer(self, hypothesis_id: str, generation: int, parent_id: str | None = None) -> None:
        """Queue a hypothesis (once) and start what the free slots allow.

        Raises:
            BranchStartError: a branch could not be started; the hypothesis is still
                queued (and ``proposed`` on the board), and the run must stop.
        """
        if hypothesis_id in self._queued or hypothesis_id in self._running:
            return
        self._queued.add(hypothesis_id)
        self._parent[hypothesis_id] = parent_id
        heapq.heappush(self._queue, (queue_rank(generation), next(self._order), hypothesis_id))
        fault = self._fill()
        if fault is not None:
            raise fault

    def set_slots(self, slots: int) -> None:
        """Run at most ``slots`` branches at once from now on: more start at once if
        the queue holds them; fewer lets the running ones finish and starts none until
        fewer run.

        Raises:
            BranchStartError: as :meth:`offer`.
        """
        self.slots = slots
        fault = self._fill()
        if fault is not None:
            raise fault

    @property
    def busy(self) -> bool:
        """True while a branch runs or a hypothesis waits (and nothing stopped it)."""
        return bool(self._running) or (bool(self._queue) and not self.stopped)

    @property
    def waiting(self) -> list[str]:
        """The hypotheses still queued, in the order they would start."""
        return [entry[2] for entry in sorted(self._queue)]

    def _fill(self, freed_by: str | None = None) -> BranchStartError | None:
        """Start queued branches while slots are free; never raises. Returns the fault
        if a start failed (it is also kept in :attr:`failures`)."""
        while not self.stopped and self._queue and len(self._running) < self.slots:
            entry = self._take(freed_by)
            freed_by = None
            hypothesis_id = entry[2]
            try:
                if not self._begin(hypothesis_id):
                    continue
            except Exception as exc:  # locked, full, read-only ...: back to the queue
                self._requeue(entry)
                fault = BranchStartError(
                    f"could not start examining {hypothesis_id}: {exc}; it stays proposed "
                    "and a resume (--resume) examines it")
                fault.__cause__ = exc
                self.failures.append(fault)
                self.stopped = True
                return fault
            self.started.append(hypothesis_id)
            self._running[hypothesis_id] = asyncio.create_task(
                self._run(hypothesis_id), name=f"branch-{hypothesis_id}")
        return None

    def _take(self, freed_by: str | None) -> tuple[int, int, str]:
        """The next entry: the first queued child of ``freed_by`` if there is one
        (a refinement continues in its parent's slot), else the queue's head."""
        children = [entry for entry in self._queue if freed_by is not None
                    and self._parent.get(entry[2]) == freed_by
                    and entry[0] <= self._queue[0][0]]  # never ahead of a shallower one
        entry = min(children) if children else self._queue[0]
        self._queue.remove(entry)
        heapq.heapify(self._queue)
        self._queued.discard(entry[2])
        return entry

    def _requeue(self, entry: tuple[int, int, str]) -> None:
        heapq.heappush(self._queue, entry)
        self._queued.add(entry[2])

    async def _run(self, hypothesis_id: str) -> None:
        try:
            await self._branch(hypothesis_id)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # kept for idle(); other branches finish their work
            self.failures.append(exc)
            self.stopped = True
            if not isinstance(exc, BudgetExceededError) and self.on_fault is not None:
                self.on_fault()
        finally:
            # Synchronous from the branch's last board write on: the freed slot is
            # refilled at the same point of the write order in every run.
            self._running.pop(hypothesis_id, None)
            self._fill(freed_by=hypothesis_id)

    # --- waiting and stopping ----------------------------------------------------------

    async def idle(self, timeout: float | None = None) -> None:
        """Wait until no branch runs and none waits (a stopped queue waits for nothing).

        Args:
            timeout: seconds to wait at most (None: until the branches end; they are
                bounded by the run's own limits).

        Raises:
            Exception: the first failure of a branch (or of starting one) that was not a
                budget stop.
            BudgetExceededError: a branch stopped on the budget (the first one).
            TimeoutError: ``timeout`` passed first.
        """
        async with asyncio.timeout(timeout):
            await self._drain()
        self.raise_failure()

    async def _drain(self) -> None:
        while True:
            self._fill()  # a free slot and a waiting hypothesis: start it (or stop)
            if not self._running:
                return  # nothing runs: either nothing waits, or the queue is stopped
            await asyncio.wait(list(self._running.values()),
                               return_when=asyncio.FIRST_COMPLETED)

    @property
    def fault(self) -> BaseException | None:
        """The first failure that was not a budget stop, if any."""
        return next((f for f in self.failures if not isinstance(f, BudgetExceededError)),
                    None)

    def raise_failure(self, *, budget_too: bool = True) -> None:
        """Raise what stopped a branch, if anything did: a fault before a budget stop
        (a budget stop only when ``budget_too``)."""
        for failure in self.failures:
            if not isinstance(failure, BudgetExceededError):
                raise failure
        if self.failures and budget_too:
            raise self.failures[0]

    def stop(self) -> None:
        """Start no more branches (running ones go on)."""
        self.stopped = True

    async def finish_running(self) -> None:
        """Start no more branches and wait for the running ones to end."""
        self.stop()
        await self._drain()

    async def cancel(self) -> None:
        """Cancel every running branch and wait until they are gone."""
        self.stop()
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
