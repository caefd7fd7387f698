"""What SQLite's errors on a board file mean for the user, as typed errors naming the fix.

SQLite reports a full disk, a lock held too long, a read-only file and a damaged page
as ``sqlite3.OperationalError`` / ``DatabaseError`` with a result code. Every board
read and write goes through :func:`board_fault`, so each of these reaches the CLI, the
notebook and the viewer as one line that names the board and what to do.
"""

from __future__ import annotations

import sqlite3

from d2_notebook.errors import (
    BoardDamagedError,
    BoardError,
    BoardFullError,
    BoardLockedError,
    BoardReadOnlyError,
)

__all__ = ["board_fault", "damaged"]

_DAMAGED = ("SQLITE_CORRUPT", "SQLITE_NOTADB", "SQLITE_FORMAT")


def board_fault(location: str, exc: sqlite3.Error, *, read_only: bool = False) -> BoardError:
    """The typed error for a SQLite error raised while using the board at ``location``.

    Args:
        location: the board file (named in the message).
        exc: what SQLite raised.
        read_only: the board was opened for reading only (a write is then refused as
            such, whatever SQLite called it).
    """
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc)
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return BoardFullError(f"board {location!r}: disk full ({text}) — free space, then "
                              "resume the run with --resume (nothing half-written was kept)")
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "is locked" in text:
        return BoardLockedError(
            f"board {location!r} is locked by another process ({text}); wait for that run "
            "to finish or stop it, then try again (an interrupted run resumes with --resume)")
    if read_only or name.startswith("SQLITE_READONLY") or "readonly" in text:
        if read_only:
            return BoardReadOnlyError(
                f"cannot write to board {location!r}: it is open read-only, for viewing "
                f"({text}); open it with Board.open(path) to add to it")
        return BoardReadOnlyError(
            f"cannot write to board {location!r}: the file, its folder or its disk is "
            f"read-only ({text}); check the permissions, or copy the board to a writable "
            "folder and pass that path")
    if name.startswith(_DAMAGED) or "malformed" in text or "not a database" in text:
        return damaged(location, text)
    if name.startswith("SQLITE_IOERR"):
        return BoardError(f"board {location!r}: the disk reported an error ({text}); check "
                          "the disk, or copy the board to another one, then resume with "
                          "--resume")
    if name.startswith("SQLITE_CANTOPEN"):
        return BoardError(f"cannot open board {location!r} ({text}); check that the file and "
                          "its folder exist and are readable")
    return BoardError(f"board {location!r}: {text}")


def damaged(location: str | None, detail: str) -> BoardDamagedError:
    """The error for a board whose file or records cannot be read back."""
    where = f"board {location!r}" if location else "the board"
    return BoardDamagedError(
        f"{where} is damaged ({detail}); it cannot be read: restore it from a copy, or "
        "start the investigation again on a new board")
