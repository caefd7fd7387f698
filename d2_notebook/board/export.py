"""Exporting a whole board to JSON and rebuilding it from that JSON.

The document holds every table row as stored, events included, so an import yields a
board whose ids, sequence numbers and history equal the original. Result rows travel
as base64 Arrow IPC (exact dtypes); everything else is plain JSON.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from d2_notebook.board.migrations import MIGRATIONS
from d2_notebook.errors import BoardFormatError

if TYPE_CHECKING:
    from d2_notebook.board.board import Board

FORMAT_NAME = "d2-board"
JSON_SCHEMA_VERSION = 1
"""Version of the JSON document's layout; bump it when the layout changes."""

TABLES = ("investigations", "hypotheses", "evidence", "links", "verdicts", "model_calls", "events")


def board_to_json(board: Board, *, indent: int | None = None) -> str:
    """Serialize every table of ``board`` (see module docstring)."""
    document: dict[str, Any] = {
        "format": FORMAT_NAME,
        "json_schema_version": JSON_SCHEMA_VERSION,
        "board_schema_version": MIGRATIONS[-1].version,
        "max_rows": board.max_rows,
    }
    for table in TABLES:
        records = board._raw_rows(table)
        if table == "evidence":
            for record in records:
                record["result"] = base64.b64encode(record["result"]).decode("ascii")
        document[table] = records
    return json.dumps(document, indent=indent, ensure_ascii=False)


def board_from_json(
    board_type: type[Board], document: str | Mapping[str, Any], path: str | Path
) -> Board:
    """Create a board at ``path`` holding exactly what ``document`` describes.

    Raises:
        BoardFormatError: not a d2 board export, a newer JSON layout, or ``path``
            already holds a board with records (import never merges).
    """
    data = json.loads(document) if isinstance(document, str) else dict(document)
    if data.get("format") != FORMAT_NAME:
        raise BoardFormatError("this JSON is not a d2 board export (missing format 'd2-board')")
    version = data.get("json_schema_version")
    if not isinstance(version, int) or version > JSON_SCHEMA_VERSION:
        raise BoardFormatError(
            f"board JSON version {version!r} is newer than this d2_notebook understands "
            f"({JSON_SCHEMA_VERSION}); upgrade with `pip install -U d2-notebook`"
        )
    board = board_type.open(path, max_rows=int(data.get("max_rows", 10_000)))
    if board.last_seq() or board.list_hypotheses() or board.list_evidence():
        board.close()
        raise BoardFormatError(
            f"{path} already holds a board; import into a new path (imports never merge)"
        )
    for table in TABLES:
        records = [dict(r) for r in data.get(table, [])]
        if table == "evidence":
            for record in records:
                record["result"] = base64.b64decode(record["result"])
        board._insert_raw(table, records)
    return board
