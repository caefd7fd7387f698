"""A fixed order for board writes made by agents running in parallel.

Collectors run concurrently, so without care the order of their board writes (and
so the ids ``E7``, ``E8`` they receive, and the event log) would depend on timing.
The sequencer hands every model response a ticket in the order responses arrive;
the response's model-call record and its board-writing tool calls run only once
every earlier ticket is released. Queries and model calls still overlap; only board
writes are serialised.

A replayed run answers requests in the recorded order
(:class:`~d2_notebook.llm.offline.ReplayModel` with ``ordered=True``), so tickets,
writes, ids and events come out exactly as in the original run.

Protocol, per model call of agent A:
``arrive(request)`` (awaited by the recording model once the response is there:
takes a ticket and waits for the turn) → the call is recorded → the agent loop
takes the ticket with ``held(A)``, runs the tools, and ``release``\\ s it.
"""

from __future__ import annotations

import asyncio

from d2_notebook.llm import ModelRequest


class WriteSequencer:
    """Tickets in arrival order; a ticket's turn comes when all earlier are released."""

    def __init__(self) -> None:
        """Start with no tickets issued."""
        self._next = 0
        self._low = 0  # every ticket below this is released
        self._released: set[int] = set()
        self._waiters: dict[int, asyncio.Future[None]] = {}
        self._held: dict[str, int] = {}

    def take(self) -> int:
        """Issue the next ticket (synchronously: its number is the arrival order)."""
        ticket = self._next
        self._next += 1
        return ticket

    async def wait(self, ticket: int) -> None:
        """Return once every ticket before ``ticket`` is released."""
        if self._low >= ticket:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters[ticket] = waiter
        try:
            await waiter
        finally:
            self._waiters.pop(ticket, None)

    def release(self, ticket: int) -> None:
        """Mark ``ticket`` finished and wake the next ticket in line, if it waits."""
        self._released.add(ticket)
        while self._low in self._released:
            self._released.discard(self._low)
            self._low += 1
        waiter = self._waiters.get(self._low)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def arrive(self, request: ModelRequest) -> None:
        """A response for ``request.agent`` arrived: take a ticket and wait for its turn.

        The ticket is held for the agent until :meth:`held` collects it.
        """
        ticket = self.take()
        try:
            await self.wait(ticket)
        except BaseException:
            self.release(ticket)
            raise
        self._held[request.agent] = ticket

    def held(self, agent: str) -> int | None:
        """Collect the ticket ``arrive`` holds for ``agent`` (None if there is none)."""
        return self._held.pop(agent, None)
