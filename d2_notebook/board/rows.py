"""Conversions between SQLite rows of the board file and its typed records.

A row that cannot be converted (an unknown status, garbled JSON, a result blob that
does not decode) means the file was damaged or edited by hand: it raises
:class:`~d2_notebook.errors.BoardDamagedError` naming the board and the record, never
a bare ``ValueError`` from deep inside.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

import pandas as pd
import pyarrow as pa

from d2_notebook.board.faults import damaged
from d2_notebook.board.frames import decode_frame
from d2_notebook.board.records import (
    ColumnSpec,
    Contribution,
    ContributionRole,
    DimensionDismissal,
    Discount,
    DiscountReason,
    Event,
    Evidence,
    FactorClaim,
    Hypothesis,
    HypothesisStatus,
    Investigation,
    InvestigationState,
    Link,
    ModelCall,
    ModelCallStatus,
    Stance,
    Verdict,
)

R = TypeVar("R")
_UNREADABLE = (ValueError, KeyError, TypeError, IndexError, OSError, pa.ArrowException)
"""What decoding a damaged row raises (json, enums, pyarrow, pandas)."""


def _decoded(what: str) -> Callable[[Callable[[sqlite3.Row], R]], Callable[[sqlite3.Row], R]]:
    """Turn a converter's failure on a damaged row into a BoardDamagedError."""

    def wrap(convert: Callable[[sqlite3.Row], R]) -> Callable[[sqlite3.Row], R]:
        @functools.wraps(convert)
        def checked(row: sqlite3.Row) -> R:
            try:
                return convert(row)
            except _UNREADABLE as exc:
                raise damaged(getattr(row, "board_path", None),
                              f"{_record_name(what, row)} cannot be read: {exc}") from exc

        return checked

    return wrap


def _record_name(what: str, row: sqlite3.Row) -> str:
    keys = row.keys()
    key = next((row[k] for k in ("id", "seq") if k in keys), None)
    return f"{what} {key}" if key is not None else what


@_decoded("the stored result of evidence")
def result_frame(row: sqlite3.Row) -> pd.DataFrame:
    """The query result an evidence row stores, as the DataFrame that was stored."""
    return decode_frame(row["result"], columns_from_text(row["columns"]))


def to_json_text(value: Any) -> str:
    """Compact, key-sorted JSON for columns that hold structured values."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


@_decoded("investigation")
def investigation(row: sqlite3.Row) -> Investigation:
    return Investigation(
        id=row["id"],
        question=row["question"],
        state=InvestigationState(row["state"]),
        settings=json.loads(row["settings"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        report=row["report"],
        error=row["error"],
    )


@_decoded("hypothesis")
def hypothesis(row: sqlite3.Row) -> Hypothesis:
    return Hypothesis(
        id=row["id"],
        statement=row["statement"],
        status=HypothesisStatus(row["status"]),
        confidence=row["confidence"],
        rationale=row["rationale"],
        parent_id=row["parent_id"],
        author_role=row["author_role"],
        author=row["author"],
        round=row["round"],
        investigation_id=row["investigation_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        status_reason=row["status_reason"],
        motivated_by=tuple(json.loads(row["motivated_by"])),
    )


def columns_from_text(text: str) -> tuple[ColumnSpec, ...]:
    return tuple(ColumnSpec(**spec) for spec in json.loads(text))


@_decoded("evidence")
def evidence(row: sqlite3.Row) -> Evidence:
    return Evidence(
        id=row["id"],
        sql=row["sql"],
        description=row["description"],
        columns=columns_from_text(row["columns"]),
        row_count=row["row_count"],
        stored_rows=row["stored_rows"],
        truncated=bool(row["truncated"]),
        result_hash=row["result_hash"],
        author_role=row["author_role"],
        author=row["author"],
        duration_s=row["duration_s"],
        round=row["round"],
        investigation_id=row["investigation_id"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        redundant=bool(row["redundant"]),
        redundant_reason=row["redundant_reason"],
    )


@_decoded("dimension dismissal")
def dimension_dismissal(row: sqlite3.Row) -> DimensionDismissal:
    return DimensionDismissal(
        id=row["id"],
        investigation_id=row["investigation_id"],
        dimension=row["dimension"],
        reason=row["reason"],
        author=row["author"],
        created_at=row["created_at"],
    )


@_decoded("link")
def link(row: sqlite3.Row) -> Link:
    return Link(
        id=row["id"],
        evidence_id=row["evidence_id"],
        hypothesis_id=row["hypothesis_id"],
        stance=Stance(row["stance"]),
        rationale=row["rationale"],
        author=row["author"],
        created_at=row["created_at"],
    )


@_decoded("verdict")
def verdict(row: sqlite3.Row) -> Verdict:
    return Verdict(
        id=row["id"],
        hypothesis_id=row["hypothesis_id"],
        status=HypothesisStatus(row["status"]),
        confidence=row["confidence"],
        rationale=row["rationale"],
        evidence_ids=tuple(json.loads(row["evidence_ids"])),
        author=row["author"],
        round=row["round"],
        investigation_id=row["investigation_id"],
        created_at=row["created_at"],
        discounted=tuple(
            Discount(d["evidence_id"], DiscountReason(d["reason"]), d["explanation"])
            for d in json.loads(row["discounted"])),
        contribution=contribution_from_text(row["contribution"]),
    )


def contribution_to_text(contribution: Contribution | None) -> str | None:
    """The JSON text a verdict's contribution is stored as (None: no contribution)."""
    return None if contribution is None else to_json_text(contribution.to_dict())


def contribution_from_text(text: str | None) -> Contribution | None:
    """The stored contribution (NULL: the verdict gave none; a size stored before the
    board kept the hypothesis's claim reads with claim None)."""
    if text is None:
        return None
    data = json.loads(text)
    claim = data.get("claim")
    return Contribution(**{**data, "role": ContributionRole(data["role"]),
                           "claim": None if claim is None else FactorClaim(claim)})


@_decoded("model call")
def model_call(row: sqlite3.Row) -> ModelCall:
    return ModelCall(
        id=row["id"],
        investigation_id=row["investigation_id"],
        role=row["role"],
        agent=row["agent"],
        model=row["model"],
        request=json.loads(row["request"]),
        response=json.loads(row["response"]) if row["response"] is not None else None,
        error=row["error"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cache_read_tokens=row["cache_read_tokens"],
        cache_write_tokens=row["cache_write_tokens"],
        cost_usd=row["cost_usd"],
        latency_s=row["latency_s"],
        created_at=row["created_at"],
        status=ModelCallStatus(row["status"]),
    )


@_decoded("event")
def event(row: sqlite3.Row) -> Event:
    return Event(
        seq=row["seq"],
        time=row["time"],
        actor=row["actor"],
        kind=row["kind"],
        payload=json.loads(row["payload"]),
        investigation_id=row["investigation_id"],
    )
