"""Opening a board's SQLite file: for writing (created and migrated) or read-only.

Reading never changes a file. Before SQLite sees a file, its first bytes are checked:
an empty file, a text file or anything else that is not SQLite is refused untouched.
A read-only open then writes nothing at all — no schema, no migration, no journal-mode
switch, no ``-wal``/``-shm`` sidecar files:

- a board whose write-ahead log is closed (no ``-wal`` beside it: a finished run, or a
  board from another machine) is opened ``immutable``: SQLite reads the file as it is,
  with no locks and no sidecars, so a board in a read-only folder, on read-only media or
  without write permission reads too;
- a board with a ``-wal`` beside it (a run in progress, or one killed mid-run) is opened
  ``mode=ro`` through its log, so a second process sees everything committed so far;
- a board from an older schema is copied into memory and the copy migrated: it is shown
  as a current board while the file keeps its version (the older d2 still opens it).

A writable open refuses a file that is not a board with the same read-only look first,
so refusing it changes nothing either.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from d2_notebook.board.faults import board_fault, damaged
from d2_notebook.board.migrations import MIGRATIONS, migrate, schema_version
from d2_notebook.errors import BoardError, BoardFormatError

__all__ = ["BoardRow", "connect_read_only", "connect_writable"]

SQLITE_MAGIC = b"SQLite format 3\x00"
BUSY_TIMEOUT_S = 30.0
"""How long a board operation waits for another connection's lock before giving up."""


class BoardRow(sqlite3.Row):
    """A row of a board file that knows which board it came from (for error messages)."""

    board_path: str | None = None


def row_type(location: str) -> type[BoardRow]:
    """A :class:`BoardRow` class whose rows name ``location``."""
    return type("BoardRow", (BoardRow,), {"board_path": location})


def connect_writable(location: str) -> sqlite3.Connection:
    """Create or reopen the board at ``location`` and migrate it to the current schema.

    An existing, non-empty file is first looked at read-only: one that is not a board,
    or is from a newer version, is refused before anything is written to it.

    Raises:
        BoardFormatError: the file is not a board, or was written by a newer version.
        BoardDamagedError: the file is a damaged board.
        BoardReadOnlyError: the file or its folder is read-only.
        BoardError: the file cannot be opened (missing folder, a folder, no permission).
    """
    if location != ":memory:":
        file = Path(location).expanduser()
        if file.is_dir():
            raise BoardError(f"{location!r} is a folder; pass the path of a .d2board file")
        parent = file.resolve().parent
        if not parent.is_dir():
            raise BoardError(
                f"cannot create board {location!r}: folder {str(parent)!r} does not exist"
            )
        if file.is_file() and file.stat().st_size > 0:
            _inspect(location, file, creating=True).close()
    conn: sqlite3.Connection | None = None
    try:
        conn = sqlite3.connect(location, isolation_level=None, check_same_thread=False,
                               timeout=BUSY_TIMEOUT_S)
        conn.row_factory = row_type(location)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if location != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise board_fault(location, exc) from exc
    except BaseException:
        if conn is not None:
            conn.close()
        raise
    return conn


def connect_read_only(location: str) -> sqlite3.Connection:
    """Open an existing board for reading only (nothing is ever written to the file).

    Raises:
        BoardError: no such file, or it cannot be read.
        BoardFormatError: the file is not a board (an empty file included), or was
            written by a newer version.
        BoardDamagedError: the file is a damaged board.
    """
    file = Path(location).expanduser()
    if location == ":memory:" or not file.is_file():
        raise BoardError(f"no board at {location!r}; pass the path of a .d2board file")
    conn = _inspect(location, file)
    try:
        if schema_version(conn) < MIGRATIONS[-1].version:
            conn = _migrated_copy(conn, location)
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        conn.close()
        raise board_fault(location, exc, read_only=True) from exc
    return conn


def _inspect(location: str, file: Path, *, creating: bool = False) -> sqlite3.Connection:
    """A read-only connection to ``file`` once it is known to be a board this version
    can read (see the module docstring for how it is opened). With ``creating`` (a
    writable open), a SQLite file with no table at all passes too: another process is
    creating the board there (its first migration not yet committed), and
    :func:`~d2_notebook.board.migrations.migrate` waits for it.

    Raises:
        BoardFormatError: not a board, or from a newer version.
        BoardDamagedError / BoardError: SQLite cannot read it.
    """
    header = _header(location, file)
    if not header:
        raise BoardFormatError(f"cannot open board {location!r}: the file is empty, it is not "
                               "a d2 board; pass the path of a .d2board file written by d2")
    if not header.startswith(SQLITE_MAGIC):
        raise BoardFormatError(f"cannot open board {location!r}: the file is not a d2 board "
                               "(not a SQLite file); pass the path of a .d2board file written "
                               "by d2")
    wal_mode = len(header) > 19 and header[18] == 2
    live_log = Path(f"{file}-wal").exists()
    uri = f"{file.resolve().as_uri()}?mode=ro"
    if wal_mode and not live_log:
        uri += "&immutable=1"
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False,
                               timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error as exc:
        raise board_fault(location, exc) from exc
    try:
        conn.row_factory = row_type(location)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        version = schema_version(conn)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.Error as exc:
        conn.close()
        if wal_mode and live_log and "unable to open" in str(exc):
            raise BoardError(
                f"cannot read board {location!r}: its write-ahead log ({file.name}-wal) needs "
                "a writable folder to be read; copy the board and its -wal file to a writable "
                "folder and open the copy") from exc
        if getattr(exc, "sqlite_errorname", "").startswith("SQLITE_NOTADB"):
            raise BoardFormatError(f"cannot open board {location!r}: the file is not a d2 "
                                   f"board ({exc}); pass the path of a .d2board file written "
                                   "by d2") from exc
        raise board_fault(location, exc) from exc
    known = MIGRATIONS[-1].version
    if creating and version == 0 and not tables:
        return conn
    if version == 0 or "investigations" not in tables:
        conn.close()
        raise BoardFormatError(f"cannot open board {location!r}: the file is not a d2 board "
                               "(a SQLite file of another program); pass the path of a "
                               ".d2board file written by d2")
    if version > known:
        conn.close()
        raise BoardFormatError(
            f"this board has schema version {version} but this d2_notebook knows only up to "
            f"{known}; upgrade with `pip install -U d2-notebook`"
        )
    return conn


def _migrated_copy(conn: sqlite3.Connection, location: str) -> sqlite3.Connection:
    """An in-memory copy of an older board, migrated; ``conn`` is closed."""
    copy = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    try:
        conn.backup(copy)
        copy.row_factory = row_type(location)
        migrate(copy)
    except sqlite3.Error as exc:
        copy.close()
        raise damaged(location, f"its older schema could not be read: {exc}") from exc
    finally:
        conn.close()
    return copy


def _header(location: str, file: Path) -> bytes:
    try:
        with file.open("rb") as handle:
            return handle.read(100)
    except OSError as exc:
        raise BoardError(f"cannot read board {location!r}: {exc.strerror or exc}; check the "
                         "file's permissions") from exc

