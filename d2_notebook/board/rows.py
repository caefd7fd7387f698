"""Conversions between SQLite rows of the board file and its typed records."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from d2_notebook.board.records import (
    ColumnSpec,
    DimensionDismissal,
    Event,
    Evidence,
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


def to_json_text(value: Any) -> str:
    """Compact, key-sorted JSON for columns that hold structured values."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


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


def dimension_dismissal(row: sqlite3.Row) -> DimensionDismissal:
    return DimensionDismissal(
        id=row["id"],
        investigation_id=row["investigation_id"],
        dimension=row["dimension"],
        reason=row["reason"],
        author=row["author"],
        created_at=row["created_at"],
    )


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
    )


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


def event(row: sqlite3.Row) -> Event:
    return Event(
        seq=row["seq"],
        time=row["time"],
        actor=row["actor"],
        kind=row["kind"],
        payload=json.loads(row["payload"]),
        investigation_id=row["investigation_id"],
    )
