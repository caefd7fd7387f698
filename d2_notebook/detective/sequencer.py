"""A fixed order for board writes made by agents running in parallel.

Collectors run concurrently, so without care the order of their board writes (and
so the ids ``E7``, ``E8`` they receive) would depend on timing. The sequencer gives
every model response a ticket in the order responses arrive — the order in which
they are recorded on the board — and lets a response's board-writing tool calls run
only after every earlier ticket has finished. Queries and model calls still overlap;
only board writes are serialised.

A replayed run answers requests in the recorded order
(:class:`~d2_notebook.llm.testing.ReplayModel`), so tickets, writes and ids come out
exactly as in the original run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class WriteSequencer:
    """Tickets in arrival order; ``turn(ticket)`` waits for every earlier ticket."""

    def __init__(self) -> None:
        """Start with no tickets issued."""
        self._next = 0
        self._done: set[int] = set()
        self._low = 0  # every ticket below this is done
        self._changed = asyncio.Condition()

    def take(self) -> int:
        """Issue the next ticket. Call it synchronously, right after a response arrives."""
        ticket = self._next
        self._next += 1
        return ticket

    async def skip(self, ticket: int) -> None:
        """Mark a ticket whose response writes nothing as done at once."""
        await asyncio.shield(self._finish(ticket))

    @asynccontextmanager
    async def turn(self, ticket: int) -> AsyncIterator[None]:
        """Wait until every earlier ticket is done, run the body, then mark this one done
        (also when the body fails or is cancelled)."""
        try:
            async with self._changed:
                await self._changed.wait_for(lambda: self._low >= ticket)
            yield
        finally:
            await asyncio.shield(self._finish(ticket))

    async def _finish(self, ticket: int) -> None:
        async with self._changed:
            self._done.add(ticket)
            while self._low in self._done:
                self._done.discard(self._low)
                self._low += 1
            self._changed.notify_all()
