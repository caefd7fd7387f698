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

TABLES = ("investigations", "hypotheses", "evidence", "links", "verdicts", "model_calls",
          "dimension_dismissals", "evidence_tool_calls", "evidence_chart_requests",
          "recheck_runs", "rechecks", "recheck_verdicts", "rejudges", "report_versions",
          "follow_ups", "data_fingerprints", "evidence_reuses", "events")
_BLOBS = {"evidence": "result", "rechecks": "result"}
"""The blob column of each table that has one (base64 text in the document)."""


def board_to_json(board: Board, *, indent: int | None = None) -> str:
    """Serialize every table of ``board`` (see module docstring).

    All tables are read in one read transaction, so the document is a consistent
    snapshot even while other threads or processes write to the board.
    """
    document: dict[str, Any] = {
        "format": FORMAT_NAME,
        "json_schema_version": JSON_SCHEMA_VERSION,
        "board_schema_version": MIGRATIONS[-1].version,
        "max_rows": board.max_rows,
    }
    snapshot = board._snapshot_rows(TABLES)
    for table in TABLES:
        records = snapshot[table]
        blob = _BLOBS.get(table)
        for record in records if blob else ():
            if record[blob] is not None:
                record[blob] = base64.b64encode(record[blob]).decode("ascii")
        document[table] = records
    return json.dumps(document, indent=indent, ensure_ascii=False)


def board_from_json(
    board_type: type[Board], document: str | Mapping[str, Any], path: str | Path
) -> Board:
    """Create a board at ``path`` holding exactly what ``document`` describes.

    Every table is inserted in one transaction: a failed import leaves nothing behind
    (a new file is removed again; an existing empty board stays empty), so it can be
    retried.

    Raises:
        BoardFormatError: not JSON, not a d2 board export, a newer JSON layout, a
            malformed or inconsistent record (e.g. a link to missing evidence), or
            ``path`` already holds a board with records (import never merges).
    """
    max_rows, tables = _parse(document)
    location = str(path)
    existed = location == ":memory:" or Path(location).expanduser().exists()
    board = board_type.open(path, max_rows=max_rows)
    try:
        if board.last_seq() or board.list_hypotheses() or board.list_evidence():
            raise BoardFormatError(
                f"{path} already holds a board; import into a new path (imports never merge)"
            )
        board._insert_raw(tables)
    except BaseException:
        board.close()
        if not existed:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(location + suffix).expanduser().unlink(missing_ok=True)
        raise
    return board


def _parse(document: str | Mapping[str, Any]) -> tuple[int, dict[str, list[dict[str, Any]]]]:
    """Check the document's envelope and decode its records (no database involved)."""
    try:
        data = json.loads(document) if isinstance(document, str | bytes) else dict(document)
    except json.JSONDecodeError as exc:
        raise BoardFormatError(
            f"not JSON: {exc}; pass a file written by `d2 board export --json`"
        ) from exc
    except RecursionError:
        raise BoardFormatError(
            "the JSON nests too deeply to read; pass a file written by `d2 board export --json`"
        ) from None
    except (TypeError, ValueError) as exc:
        raise BoardFormatError(f"not a JSON object: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise BoardFormatError("this JSON is not a d2 board export (missing format 'd2-board')")
    version = data.get("json_schema_version")
    if not isinstance(version, int) or version > JSON_SCHEMA_VERSION:
        raise BoardFormatError(
            f"board JSON version {version!r} is newer than this d2_notebook understands "
            f"({JSON_SCHEMA_VERSION}); upgrade with `pip install -U d2-notebook`"
        )
    tables: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        try:
            found = data.get(table) or []
            if not isinstance(found, list) or not all(isinstance(r, dict) for r in found):
                raise BoardFormatError(
                    f"malformed {table} records: they must be a list of JSON objects")
            records = [dict(r) for r in found]
            blob = _BLOBS.get(table)
            for record in records if blob else ():
                if table != "evidence" and record.get(blob) is None:
                    continue  # a re-check that did not run has no result
                if not isinstance(record[blob], str):
                    raise BoardFormatError(
                        f"{table} record {record.get('id')!r}, field {blob!r} must be "
                        "base64 text")
                record[blob] = base64.b64decode(record[blob], validate=True)
        except KeyError as exc:
            raise BoardFormatError(f"a record of {table} lacks the field {exc}") from exc
        except (TypeError, ValueError) as exc:  # binascii.Error is a ValueError
            raise BoardFormatError(f"malformed {table} records: {exc}") from exc
        tables[table] = records
    max_rows = data.get("max_rows", 10_000)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows < 2**63:
        raise BoardFormatError(f"max_rows must be a whole number of at least 1, got {max_rows!r}")
    return max_rows, tables
