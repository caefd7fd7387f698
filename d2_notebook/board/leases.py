"""Run leases: one live process per investigation.

The process that runs an investigation holds its lease: a row naming the owner (user,
host, process id) and a heartbeat it renews every :data:`HEARTBEAT_EVERY_S` seconds.
Another process that wants to run the same investigation (``--resume``) is refused
while the lease is *fresh*; the lease is *stale* when its heartbeat is older than
:data:`STALE_AFTER_S`, or at once when its owner ran on this host and that process no
longer exists (``kill -9``). A stale lease is taken over; ``force=True`` takes over a
fresh one (for a process the user knows is gone).

Leases are operational state, not history: they are not in the event log and not in
exports.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
import sqlite3
import threading
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

from d2_notebook.board.store import BoardStore, now
from d2_notebook.errors import BoardError, RunLeaseHeldError

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
            cursor = conn.execute(
                "UPDATE run_leases SET heartbeat_at = ? WHERE investigation_id = ? AND token = ?",
                (now(), lease.investigation_id, lease.token))
        return cursor.rowcount == 1

    def release_lease(self, lease: Lease) -> None:
        """Give the lease up (a no-op when another process has taken it over)."""
        with self._write() as conn:
            conn.execute("DELETE FROM run_leases WHERE investigation_id = ? AND token = ?",
                         (lease.investigation_id, lease.token))


class LeaseKeeper:
    """Holds one investigation's lease while a run lasts, renewing it from a thread
    (so a busy event loop cannot starve the heartbeat).

    Use :meth:`acquire` once the investigation is known, and :meth:`release` (always)
    when the run ends.
    """

    def __init__(self, board: LeaseRecords, *, force: bool = False,
                 heartbeat_every_s: float = HEARTBEAT_EVERY_S) -> None:
        self._board = board
        self._force = force
        self._every = heartbeat_every_s
        self._lease: Lease | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self, investigation_id: str) -> Lease:
        """Acquire the lease (see :meth:`LeaseRecords.acquire_lease`) and start beating."""
        self._lease = self._board.acquire_lease(investigation_id, force=self._force)
        self._thread = threading.Thread(target=self._beat, name="d2-run-lease", daemon=True)
        self._thread.start()
        return self._lease

    def release(self) -> None:
        """Stop the heartbeat and give the lease up (no-op if none was acquired)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._lease is not None:
            with contextlib.suppress(sqlite3.Error, BoardError):  # closed: it goes stale
                self._board.release_lease(self._lease)
            self._lease = None

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            try:
                if not self._board.renew_lease(self._lease):  # type: ignore[arg-type]
                    return  # taken over with force: stop renewing
            except (sqlite3.Error, BoardError):  # the board was closed under us
                return


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
