"""Opening a board's SQLite file: for writing (created and migrated) or read-only.

A read-only open writes nothing at all — no schema, no migration, no journal-mode
switch — so ``d2 board show`` on a file that is not a board leaves it as it was, and a
board on read-only media can still be shown and exported.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from d2_notebook.board.migrations import MIGRATIONS, migrate, schema_version
from d2_notebook.errors import BoardError, BoardFormatError

__all__ = ["connect_read_only", "connect_writable"]


def connect_writable(location: str) -> sqlite3.Connection:
    """Create or reopen the board at ``location`` and migrate it to the current schema.

    Raises:
        BoardFormatError: the file is not a board, or was written by a newer version.
        BoardError: the file cannot be opened (missing folder, no permission).
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
    try:
        conn = sqlite3.connect(location, isolation_level=None, check_same_thread=False,
                               timeout=30.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 30000")
        if location != ":memory:":
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        migrate(conn)
    except sqlite3.DatabaseError as exc:
        hint = ("the file or its folder is read-only; check the permissions or pass another "
                "board path" if "readonly" in str(exc) else
                "pass the path of a d2 board file or of a new file")
        raise BoardError(f"cannot open board {location!r}: {exc}; {hint}") from exc
    return conn


def connect_read_only(location: str) -> sqlite3.Connection:
    """Open an existing board for reading only (nothing is ever written to the file).

    Raises:
        BoardError: no such file, or it cannot be read.
        BoardFormatError: the file is not a board (an empty file included), or was
            written by a newer version.
    """
    file = Path(location).expanduser()
    if location == ":memory:" or not file.is_file():
        raise BoardError(f"no board at {location!r}; pass the path of a .d2board file")
    try:
        conn = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True,
                               isolation_level=None, check_same_thread=False, timeout=30.0)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA busy_timeout = 30000")
        version = schema_version(conn)
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise BoardFormatError(
            f"cannot read board {location!r}: {exc}; pass the path of a d2 board file"
        ) from exc
    known = MIGRATIONS[-1].version
    if version == 0 or "investigations" not in tables:
        conn.close()
        raise BoardFormatError(f"{location!r} is not a d2 board; pass the path of a .d2board "
                               "file written by d2")
    if version > known:
        conn.close()
        raise BoardFormatError(
            f"this board has schema version {version} but this d2_notebook knows only up to "
            f"{known}; upgrade with `pip install -U d2-notebook`"
        )
    return conn
