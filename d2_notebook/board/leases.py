"""Run leases: one live process per investigation.

The process that runs an investigation holds its lease: a row naming the owner (user,
host, process id) and a heartbeat it renews every :data:`HEARTBEAT_EVERY_S` seconds.
Another process that wants to run the same investigation (``--resume``) is refused
while the lease is *fresh*; the lease is *stale* when its heartbeat is older than
:data:`STALE_AFTER_S`, or at once when its owner ran on this host and that process no
longer exists (``kill -9``). A stale lease is taken over; ``force=True`` takes over a
fresh one (for a process the user knows is gone).

The heartbeat (:class:`LeaseKeeper`) runs in its own thread on its own SQLite
connection, so neither a busy event loop nor a long export on the board's connection can
starve it. A renewal that fails (the file locked by another writer, a moment of I/O
trouble) is retried; only when the lease could not be renewed before it would go stale,
or was taken over (``force``), is it *lost*: the run stops with
:class:`~d2_notebook.errors.RunLeaseLostError` rather than go on unleased while another
process may take the investigation over.

Leases are operational state, not history: they are not in the event log and not in
exports.
"""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import socket
import sqlite3
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from d2_notebook.board.store import BoardStore, now
from d2_notebook.errors import RunLeaseHeldError, RunLeaseLostError

_Result = TypeVar("_Result")

__all__ = ["HEARTBEAT_EVERY_S", "STALE_AFTER_S", "Lease", "LeaseKeeper", "LeaseRecords"]

HEARTBEAT_EVERY_S = 5.0
"""How often a running process renews its lease."""
STALE_AFTER_S = 30.0
"""A lease whose heartbeat is older than this is stale (its owner is presumed gone)."""


@dataclass(frozen=True)
class Lease:
    """Who runs an investigation right now.

    Attributes:
        investigation_id: The investigation the lease is for.
        token: Identifies this holder (a new one per run).
        owner: ``user@host pid N``, for messages.
        host, pid: Where the owner runs (to detect a dead owner on this host).
        acquired_at, heartbeat_at: ISO-8601 UTC times.
    """

    investigation_id: str
    token: str
    owner: str
    host: str
    pid: int
    acquired_at: str
    heartbeat_at: str

    def age_s(self) -> float:
        """Seconds since the last heartbeat."""
        beat = datetime.fromisoformat(self.heartbeat_at)
        return max(0.0, (datetime.now(UTC) - beat).total_seconds())

    def is_stale(self, stale_after_s: float = STALE_AFTER_S) -> bool:
        """True when the owner is presumed gone: no heartbeat for ``stale_after_s`` seconds,
        or the owner ran on this host and its process no longer exists."""
        if self.age_s() > stale_after_s:
            return True
        return self.host == socket.gethostname() and not _process_alive(self.pid)


class LeaseRecords(BoardStore):
    """Board methods for run leases."""

    def get_lease(self, investigation_id: str) -> Lease | None:
        """The lease of ``investigation_id``, or None when nobody holds one."""
        found = self._query("SELECT * FROM run_leases WHERE investigation_id = ?",
                            (investigation_id,))
        return _lease(found[0]) if found else None

    def acquire_lease(self, investigation_id: str, *, force: bool = False,
                      stale_after_s: float = STALE_AFTER_S) -> Lease:
        """Hold the lease of ``investigation_id`` for this process.

        Args:
            investigation_id: The investigation about to run.
            force: Take the lease over even while its holder's heartbeat is fresh.
            stale_after_s: How old a heartbeat must be for the lease to be stale.

        Raises:
            RunLeaseHeldError: Another live process holds a fresh lease; the message
                names it and how to take over.
        """
        host, pid = socket.gethostname(), os.getpid()
        stamp = now()
        mine = Lease(investigation_id, uuid.uuid4().hex, f"{_user()}@{host} pid {pid}", host,
                     pid, stamp, stamp)
        with self._write() as conn:
            row = conn.execute("SELECT * FROM run_leases WHERE investigation_id = ?",
                               (investigation_id,)).fetchone()
            held = _lease(row) if row is not None else None
            if held is not None and not force and not held.is_stale(stale_after_s):
                raise RunLeaseHeldError(_held_message(held, stale_after_s))
            conn.execute(
                "INSERT OR REPLACE INTO run_leases (investigation_id, token, owner, host, pid,"
                " acquired_at, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (mine.investigation_id, mine.token, mine.owner, mine.host, mine.pid,
                 mine.acquired_at, mine.heartbeat_at))
        return mine

    def renew_lease(self, lease: Lease) -> bool:
        """Renew the heartbeat; False when the lease was taken over (``force``)."""
        with self._write() as conn:
            return _renew(conn, lease)

    def release_lease(self, lease: Lease) -> None:
        """Give the lease up (a no-op when another process has taken it over)."""
        with self._write() as conn:
            conn.execute("DELETE FROM run_leases WHERE investigation_id = ? AND token = ?",
                         (lease.investigation_id, lease.token))


class LeaseKeeper:
    """Holds one investigation's lease while a run lasts, renewing it from a thread on
    its own connection to the board file.

    Use :meth:`acquire` once the investigation is known, run the work through
    :meth:`guard` (it stops the work if the lease is lost), and :meth:`release`
    (always) when the run ends.

    Args:
        board: The board the lease is on (its file is opened again for the heartbeat;
            an in-memory board is renewed through the board itself).
        force: Take a fresh lease over (see :meth:`LeaseRecords.acquire_lease`).
        heartbeat_every_s: Seconds between renewals (default :data:`HEARTBEAT_EVERY_S`).
        stale_after_s: Age at which a lease is stale (default :data:`STALE_AFTER_S`);
            the keeper gives up when it could not renew for this long less one beat.
    """

    def __init__(self, board: LeaseRecords, *, force: bool = False,
                 heartbeat_every_s: float | None = None,
                 stale_after_s: float | None = None) -> None:
        self._board = board
        self._force = force
        self._every = HEARTBEAT_EVERY_S if heartbeat_every_s is None else heartbeat_every_s
        self._stale = STALE_AFTER_S if stale_after_s is None else stale_after_s
        self._lease: Lease | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._notify: Callable[[RunLeaseLostError], None] | None = None
        self._notify_lock = threading.Lock()
        self.lost: RunLeaseLostError | None = None
        """Why the lease was lost (None while it is held)."""
        self.failed_renewals = 0
        """Renewals that failed and were retried (transient faults survived)."""

    def acquire(self, investigation_id: str) -> Lease:
        """Acquire the lease (see :meth:`LeaseRecords.acquire_lease`) and start beating."""
        self._lease = self._board.acquire_lease(investigation_id, force=self._force,
                                                stale_after_s=self._stale)
        self._thread = threading.Thread(target=self._beat, args=(self._lease,),
                                        name="d2-run-lease", daemon=True)
        self._thread.start()
        return self._lease

    async def guard(self, work: Awaitable[_Result]) -> _Result:
        """Await ``work``; if the lease is lost meanwhile, cancel it and raise.

        Raises:
            RunLeaseLostError: the lease could not be renewed in time, or another
                process took it over; ``work`` was cancelled (an investigation is left
                ``interrupted``, resumable).
        """
        loop = asyncio.get_running_loop()
        lost: asyncio.Future[None] = loop.create_future()

        def notify(error: RunLeaseLostError) -> None:
            loop.call_soon_threadsafe(lambda: lost.done() or lost.set_exception(error))

        with self._notify_lock:
            self._notify = notify
            if self.lost is not None:
                notify(self.lost)
        task = asyncio.ensure_future(work)
        try:
            await asyncio.wait({task, lost}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:  # cancelled from outside: let the work wind down first
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        finally:
            with self._notify_lock:
                self._notify = None
        if task.done():
            lost.cancel()
            return task.result()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise lost.exception()  # type: ignore[misc]

    def release(self) -> None:
        """Stop the heartbeat and give the lease up (no-op if none was acquired).

        The heartbeat's own connection deletes the lease, so a board whose connection
        stopped taking writes still lets its lease go; if nothing can write the file,
        the lease goes stale instead.
        """
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
        self._lease = None

    # --- the heartbeat thread ----------------------------------------------------------

    def _beat(self, lease: Lease) -> None:
        renew = self._renewer(lease)
        if renew is None:
            return
        last_renewed = time.monotonic()
        give_up_after = max(self._stale - self._every, self._every)
        wait = self._every
        lost = False
        try:
            while not self._stop.wait(wait):
                try:
                    held = renew()
                except Exception as exc:  # locked, busy, I/O trouble: retried until late
                    self.failed_renewals += 1
                    silent = time.monotonic() - last_renewed
                    if silent >= give_up_after:
                        self._lose(lease, f"it could not be renewed for {silent:.0f} s "
                                   f"(last error: {exc})")
                        lost = True
                        break
                    wait = min(self._every, max(0.05, give_up_after - silent) / 4)
                    continue
                if not held:
                    self._lose(lease, "another process took it over (--force)")
                    lost = True
                    break
                last_renewed, wait = time.monotonic(), self._every
            if lost:
                self._stop.wait()  # the run is stopping; give the lease up with it
            _give_up(renew)
        finally:
            renew.close()

    def _renewer(self, lease: Lease) -> _Renewer | None:
        path = self._board.path
        if path == ":memory:":  # one process only: the board's own connection will do
            return _Renewer(None, lambda: self._board.renew_lease(lease),
                            lambda: self._board.release_lease(lease))
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                   timeout=min(self._every, 1.0))
        except sqlite3.Error as exc:
            self._lose(lease, f"the board file could not be opened for the heartbeat ({exc})")
            return None
        return _Renewer(conn, lambda: _renew_on(conn, lease),
                        lambda: _release_on(conn, lease))

    def _lose(self, lease: Lease, why: str) -> None:
        self.lost = RunLeaseLostError(
            f"the run lease of investigation {lease.investigation_id} was lost: {why}; the "
            "run stopped so that two processes never drive one investigation. Resume it "
            "with --resume (resume=True) once the board is reachable again")
        with self._notify_lock:
            if self._notify is not None:
                self._notify(self.lost)


class _Renewer:
    """Renewing and releasing one lease, and the heartbeat's own connection to close at
    the end."""

    def __init__(self, conn: sqlite3.Connection | None, renew: Callable[[], bool],
                 release: Callable[[], None]) -> None:
        self._conn = conn
        self._renew = renew
        self.release = release

    def __call__(self) -> bool:
        return self._renew()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _renew(conn: sqlite3.Connection, lease: Lease) -> bool:
    """Renew ``lease``'s heartbeat inside the caller's transaction; False when another
    holder took it over."""
    cursor = conn.execute(
        "UPDATE run_leases SET heartbeat_at = ? WHERE investigation_id = ? AND token = ?",
        (now(), lease.investigation_id, lease.token))
    return cursor.rowcount == 1


def _renew_on(conn: sqlite3.Connection, lease: Lease) -> bool:
    """One renewal on the heartbeat's own connection, in its own short transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        held = _renew(conn, lease)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise
    return held


def _give_up(renewer: _Renewer, *, within_s: float = 2.0) -> None:
    """Release the lease, retrying a locked file for ``within_s`` seconds; if nothing
    can write the file, the lease is left to go stale."""
    deadline = time.monotonic() + within_s
    while True:
        try:
            renewer.release()
            return
        except Exception:
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)


def _release_on(conn: sqlite3.Connection, lease: Lease) -> None:
    """Delete ``lease`` on the heartbeat's own connection (a no-op once taken over)."""
    conn.execute("DELETE FROM run_leases WHERE investigation_id = ? AND token = ?",
                 (lease.investigation_id, lease.token))


def _held_message(held: Lease, stale_after_s: float) -> str:
    return (
        f"investigation {held.investigation_id} is being run by another process "
        f"({held.owner}, last heartbeat {held.age_s():.0f} s ago); wait for it to finish. "
        f"If that process is gone, its lease goes stale {stale_after_s:g} s after its last "
        "heartbeat and a resume takes over then; to take over now, pass --force "
        "(force=True in Python)")


def _lease(row: object) -> Lease:
    return Lease(row["investigation_id"], row["token"], row["owner"], row["host"],  # type: ignore[index]
                 int(row["pid"]), row["acquired_at"], row["heartbeat_at"])  # type: ignore[index]


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
