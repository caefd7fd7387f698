"""Running an investigation from a notebook cell: to the end, or in the background.

Inside a Jupyter kernel a cell runs while the kernel's asyncio loop is running, so a
cell cannot simply block on a coroutine. Two ways out:

- **to the end** (the default, so Run All, nbconvert and papermill give a finished
  board): the loop is made re-entrant with ``nest_asyncio2`` — only then, only that
  loop — and the cell drives the investigation task on it. Other tasks on the loop
  (the widget following the board) keep running, so the graph updates live.
  Ctrl-C / kernel interrupt cancels the task; ``investigate()`` marks the board
  ``interrupted``, so it resumes later.
- **in the background**: the task is left on the kernel's loop and the cell returns
  an :class:`InvestigationRun` at once; clicks and other cells run meanwhile.

Without a running loop (terminal IPython, tests) a private loop is used for a
foreground run, and a private loop in a daemon thread for a background one. A private
loop is closed when its run ends, its worker threads (``asyncio.to_thread``) shut down
first, so a run leaves no thread behind; the kernel's own loop is never closed.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any

Follower = Callable[[asyncio.Event], Awaitable[None]]


class InvestigationRun:
    """A handle on one investigation started by :func:`start_run`.

    ``done`` tells whether it ended; ``result`` is the result once it ended well (else
    None); ``error`` the exception it ended with; :meth:`wait` blocks until the end
    and returns the result (re-raising its error); :meth:`cancel` stops it, leaving
    a resumable board. In a kernel cell, ``await run`` works too.
    """

    def __init__(self, task: asyncio.Future[Any] | concurrent.futures.Future[Any],
                 loop: asyncio.AbstractEventLoop, *, owns_loop: bool = False,
                 thread: threading.Thread | None = None) -> None:
        """Wrap a task on ``loop`` (or a concurrent future of a loop in ``thread``).

        ``owns_loop``: the loop is private to this run and is closed when it ends.
        """
        self._task = task
        self._loop = loop
        self._owns_loop = owns_loop
        self._thread = thread

    @property
    def done(self) -> bool:
        """True once the investigation has finished, failed or been cancelled."""
        return self._task.done()

    @property
    def result(self) -> Any:
        """The investigation's result once it ended well; None while running or after
        a failure or cancellation."""
        if not self._task.done() or self._task.cancelled() or self._task.exception():
            return None
        return self._task.result()

    @property
    def error(self) -> BaseException | None:
        """What the run ended with, if it failed or was cancelled."""
        if not self._task.done():
            return None
        if self._task.cancelled():
            return asyncio.CancelledError()
        return self._task.exception()

    def add_done_callback(self, callback: Callable[[InvestigationRun], None]) -> None:
        """Call ``callback(run)`` when the run ends (in the thread that ran it)."""
        self._task.add_done_callback(lambda _task: callback(self))

    def cancel(self) -> None:
        """Stop the investigation; the board is left ``interrupted`` (resumable)."""
        if self._task.done():
            return
        if isinstance(self._task, concurrent.futures.Future):
            self._task.cancel() or self._loop.call_soon_threadsafe(_cancel_all, self._loop)
        elif not self._task.done():
            self._loop.call_soon_threadsafe(self._task.cancel)

    def wait(self) -> Any:
        """Block until the run ends and return its result (or raise its error).

        A KeyboardInterrupt while waiting cancels the run, waits for it to wind down
        (the board is marked ``interrupted``), then propagates.
        """
        try:
            if isinstance(self._task, concurrent.futures.Future):
                return self._task.result()
            if not self._task.done():
                if self._loop.is_running():
                    make_reentrant(self._loop)
                self._loop.run_until_complete(self._task)
            return self._task.result()
        except KeyboardInterrupt:
            self._wind_down()
            raise
        finally:
            if self._thread is not None and self._task.done():
                self._thread.join(timeout=30)  # it closes its loop, then ends
            elif self._owns_loop and self._task.done() and not self._loop.is_closed():
                close_loop(self._loop)

    def __await__(self) -> Generator[Any, None, Any]:
        if isinstance(self._task, concurrent.futures.Future):
            return asyncio.wrap_future(self._task).__await__()
        return self._task.__await__()

    def __repr__(self) -> str:
        state = "running" if not self.done else ("failed" if self.error else "done")
        return f"<InvestigationRun {state}; use .wait(), .cancel(), .result, .done>"

    def _wind_down(self) -> None:
        """After an interrupt: cancel the task and let it record the interruption."""
        if isinstance(self._task, concurrent.futures.Future):
            self.cancel()
            with contextlib.suppress(BaseException):
                self._task.result(timeout=30)
            return
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(BaseException):
                self._loop.run_until_complete(self._task)


def start_run(coro: Coroutine[Any, Any, Any], *, background: bool) -> InvestigationRun:
    """Start ``coro`` on the running loop (or a private one); the caller then either
    keeps the handle (``background``) or drives the run with :meth:`~InvestigationRun.wait`.

    For a foreground run on a running loop, the loop is made re-entrant first.
    """
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        if not background:
            make_reentrant(loop)
        run = InvestigationRun(loop.create_task(coro), loop)
    elif background:
        run = _in_thread(coro)
    else:
        private = asyncio.new_event_loop()
        run = InvestigationRun(private.create_task(coro), private, owns_loop=True)
    return run


async def with_follower(coro: Coroutine[Any, Any, Any], follow: Follower | None) -> Any:
    """Await ``coro`` while ``follow(stop)`` runs beside it (the widget following the
    board); ``stop`` is set when ``coro`` ends, however it ends."""
    if follow is None:
        return await coro
    stop = asyncio.Event()
    follower = asyncio.ensure_future(follow(stop))
    try:
        return await coro
    finally:
        stop.set()
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(follower, timeout=10)


def make_reentrant(loop: asyncio.AbstractEventLoop) -> None:
    """Let a running loop run a nested ``run_until_complete`` (kernel cells)."""
    if getattr(loop, "_nest_patched", False):
        return
    import nest_asyncio2

    nest_asyncio2.apply(loop)


def close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Close a private loop that has stopped: its async generators and worker threads
    (``asyncio.to_thread``) are shut down first, so none is left running."""
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.run_until_complete(loop.shutdown_default_executor())
    finally:
        loop.close()


def _in_thread(coro: Coroutine[Any, Any, Any]) -> InvestigationRun:
    loop = asyncio.new_event_loop()

    def drive() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            close_loop(loop)

    thread = threading.Thread(target=drive, name="d2-investigation", daemon=True)
    thread.start()
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    future.add_done_callback(lambda _f: loop.call_soon_threadsafe(loop.stop))
    return InvestigationRun(future, loop, thread=thread)


def _cancel_all(loop: asyncio.AbstractEventLoop) -> None:
    for task in asyncio.all_tasks(loop):
        task.cancel()
