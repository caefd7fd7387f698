"""Where boards live: checking a board path a user typed, and naming new boards.

A board is only ever written to a ``.d2board`` file, so a typo can never turn an
unrelated file (a CSV, another application's SQLite database) into a board.
"""

from __future__ import annotations

import os
import re
from datetime import datetime
from pathlib import Path

from d2_notebook.board import Board
from d2_notebook.errors import BoardError

BOARD_SUFFIX = ".d2board"


def check_board_path(path: str | os.PathLike[str]) -> Path:
    """The path as a :class:`Path` if a board may be created or reopened there.

    Raises:
        BoardError: the path is a folder, does not end in ``.d2board``, or its folder
            does not exist (the message names the fix).
    """
    location = Path(path).expanduser()
    if location.is_dir():
        raise BoardError(f"{str(path)!r} is a folder; pass a board file such as "
                         f"{str(location / ('investigation' + BOARD_SUFFIX))!r}")
    if location.suffix != BOARD_SUFFIX:
        what = "an existing file that is not a board" if location.exists() else "not a board"
        raise BoardError(f"{str(path)!r} is {what}: board files end in {BOARD_SUFFIX}; "
                         f"pass e.g. {str(location.with_suffix(BOARD_SUFFIX))!r}")
    if not location.parent.resolve().is_dir():
        raise BoardError(f"folder {str(location.parent)!r} does not exist; create it or "
                         "pass a board path in an existing folder")
    return location


def open_existing_board(path: str | os.PathLike[str], *, read_only: bool = False) -> Board:
    """Open a board file that must already exist: ``read_only`` to show it (nothing is
    written to the file or beside it), else to add to it (``%%evidence --board``).

    Raises:
        BoardError: no such file, a folder, or not a board (left untouched).
    """
    location = Path(path).expanduser()
    if not location.is_file():
        raise BoardError(f"no board file at {str(path)!r}; pass the path of a .d2board file "
                         "written by an earlier investigation")
    return Board.open(location, read_only=read_only)


def new_board_path(folder: str | os.PathLike[str], question: str,
                   now: datetime | None = None) -> Path:
    """A fresh board name in ``folder`` from the question and the time, e.g.
    ``which-treatment-is-most-effective-20250101-120000.d2board``."""
    words = re.findall(r"[a-z0-9]+", question.lower())[:6]
    slug = "-".join(words) or "investigation"
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    return Path(folder).expanduser() / f"{slug}-{stamp}{BOARD_SUFFIX}"


def next_free_board_path(path: str | os.PathLike[str]) -> Path:
    """The first of ``name-2.d2board``, ``name-3.d2board`` … beside ``path`` that does
    not exist yet."""
    location = Path(path).expanduser()
    stem = re.sub(r"-\d+$", "", location.stem)
    number = 2
    while (candidate := location.with_name(f"{stem}-{number}{BOARD_SUFFIX}")).exists():
        number += 1
    return candidate
