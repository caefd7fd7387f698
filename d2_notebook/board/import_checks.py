"""Checking every field of an imported board record before it is inserted.

``board import`` must be all-or-nothing and name the field at fault, so that a bad
document never produces a board that fails later with a traceback. Each field is
checked against the column's declared SQLite type (whole numbers within 64 bits, text,
blobs), the enums (states, statuses, stances), the JSON text fields, the confidence
range, and each evidence result must decode as the Arrow data its column list says.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from d2_notebook.board import rows
from d2_notebook.board.records import (
    HypothesisStatus,
    InvestigationState,
    RecheckOutcome,
    Stance,
    VerdictCheck,
)
from d2_notebook.errors import BoardFormatError

__all__ = ["Column", "check_record"]

Column = tuple[str, bool]
"""A column's declared type (``INTEGER``, ``TEXT``, ...) and whether it is NOT NULL."""

_ENUMS: dict[tuple[str, str], type] = {
    ("investigations", "state"): InvestigationState,
    ("hypotheses", "status"): HypothesisStatus,
    ("verdicts", "status"): HypothesisStatus,
    ("links", "stance"): Stance,
    ("rechecks", "outcome"): RecheckOutcome,
    ("recheck_verdicts", "state"): VerdictCheck,
}
_JSON_FIELDS = frozenset({
    ("investigations", "settings"), ("hypotheses", "motivated_by"), ("evidence", "columns"),
    ("verdicts", "evidence_ids"), ("verdicts", "discounted"), ("model_calls", "request"),
    ("model_calls", "response"),
    ("events", "payload"), ("evidence_tool_calls", "args"), ("rechecks", "columns"),
    ("recheck_verdicts", "evidence_ids"), ("verdicts", "contribution"),
})  # fmt: skip
_CONFIDENCE = frozenset({("hypotheses", "confidence"), ("verdicts", "confidence")})
_INT64 = (-(2**63), 2**63 - 1)


def check_record(table: str, record: Mapping[str, Any], columns: Mapping[str, Column]) -> None:
    """Refuse a record whose fields the board could not store or read back.

    Raises:
        BoardFormatError: naming the table, the record and the field.
    """
    for name, value in record.items():
        declared, not_null = columns[name]
        where = f"{table} record {record.get('id', record.get('seq', '?'))!r}, field {name!r}"
        if value is None:
            if not_null:
                raise BoardFormatError(f"{where} must not be null")
            continue
        _check_type(where, declared, value)
        enum = _ENUMS.get((table, name))
        if enum is not None and value not in {m.value for m in enum}:
            allowed = ", ".join(m.value for m in enum)
            raise BoardFormatError(f"{where}: unknown value {value!r}; use one of: {allowed}")
        if (table, name) in _JSON_FIELDS:
            try:
                json.loads(value)
            except (ValueError, RecursionError) as exc:
                raise BoardFormatError(f"{where} must hold JSON text: {exc}") from None
        if (table, name) in _CONFIDENCE and not 0.0 <= float(value) <= 1.0:
            raise BoardFormatError(f"{where}: confidence must be between 0 and 1, got {value}")
    if table == "evidence":
        _check_result(record)
    if table == "verdicts" and record.get("contribution") is not None:
        _check_contribution(record)


def _check_type(where: str, declared: str, value: Any) -> None:
    if declared == "INTEGER":
        if isinstance(value, bool) or not isinstance(value, int):
            raise BoardFormatError(f"{where} must be a whole number, got {value!r}")
        if not _INT64[0] <= value <= _INT64[1]:
            raise BoardFormatError(f"{where} is out of range (64-bit integers only): {value}")
    elif declared == "REAL":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BoardFormatError(f"{where} must be a number, got {value!r}")
        if not math.isfinite(float(value)):
            raise BoardFormatError(f"{where} must be a finite number, got {value!r}")
    elif declared == "TEXT" and not isinstance(value, str):
        raise BoardFormatError(f"{where} must be text, got {type(value).__name__}")
    elif declared == "BLOB" and not isinstance(value, bytes):
        raise BoardFormatError(f"{where} must be base64 data, got {type(value).__name__}")


def _check_contribution(record: Mapping[str, Any]) -> None:
    """The size a verdict gives reads back as a :class:`Contribution`."""
    try:
        rows.contribution_from_text(record["contribution"])
    except (ValueError, KeyError, TypeError) as exc:
        raise BoardFormatError(
            f"verdicts record {record.get('id')!r}, field 'contribution' is not a size the "
            f"board can read ({exc}); import a file written by `d2 board export --json`"
        ) from None


def _check_result(record: Mapping[str, Any]) -> None:
    """The result blob is an Arrow stream with one column per entry of ``columns`` (read
    with Arrow alone: decoding to pandas would make large imports slow)."""
    where = f"evidence record {record.get('id')!r}, field 'result'"
    try:
        specs = rows.columns_from_text(record["columns"])
        table = pa.ipc.open_stream(io.BytesIO(record["result"])).read_all()
    except (pa.ArrowException, ValueError, KeyError, TypeError, RecursionError) as exc:
        raise BoardFormatError(
            f"{where} is not the Arrow data its 'columns' describe ({exc}); import a file "
            "written by `d2 board export --json`") from None
    expected = [f"c{i}" for i in range(len(specs))]
    if table.column_names != expected:
        raise BoardFormatError(
            f"{where} is not the Arrow data its 'columns' describe (it holds "
            f"{table.num_columns} columns, 'columns' lists {len(specs)})")
    stored = record.get("stored_rows")
    if isinstance(stored, int) and stored != table.num_rows:
        raise BoardFormatError(
            f"{where} holds {table.num_rows} rows but stored_rows says {stored}")
