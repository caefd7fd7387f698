"""The model-call audit trail: every request and response, with tokens and cost."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from d2_notebook.board import rows
from d2_notebook.board.records import ModelCall, ModelCallStatus
from d2_notebook.board.store import BoardStore, now


@dataclass(frozen=True)
class RoleSpend:
    """What one role's recorded calls of an investigation used (calls sent only:
    refused requests are not calls)."""

    role: str
    calls: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float


class ModelCallRecords(BoardStore):
    """Board methods for recorded model calls."""

    # --- model calls ---------------------------------------------------------

    def record_model_call(
        self,
        *,
        role: str,
        agent: str,
        model: str,
        request: Mapping[str, Any],
        response: Mapping[str, Any] | None,
        error: str | None = None,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        cost_usd: float = 0.0,
        latency_s: float = 0.0,
        investigation_id: str | None = None,
        status: ModelCallStatus | None = None,
    ) -> ModelCall:
        """Append one model request and its response (or error) to the audit trail.

        ``status`` defaults to ``failed`` when ``error`` is set, else ``answered``. The
        event logged is ``model_call.recorded`` for a call that was sent and
        ``model_call.refused`` for a request the budget refused (not a call: views
        that count calls from the log leave it out).
        """
        if status is None:
            status = ModelCallStatus.FAILED if error else ModelCallStatus.ANSWERED
        stamp = now()
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO model_calls (investigation_id, role, agent, model, request, response,"
                " error, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " cost_usd, latency_s, created_at, status)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (investigation_id, role, agent, model, rows.to_json_text(dict(request)),
                 None if response is None else rows.to_json_text(dict(response)), error,
                 input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
                 latency_s, stamp, status.value),
            )
            call_id = int(cursor.lastrowid or 0)
            kind = ("model_call.recorded" if status.was_sent else "model_call.refused")
            self._append_event(
                conn, kind,
                {"id": call_id, "role": role, "agent": agent, "model": model, "error": error,
                 "input_tokens": input_tokens, "output_tokens": output_tokens,
                 "cost_usd": cost_usd, "latency_s": latency_s, "status": status.value},
                actor=agent, investigation_id=investigation_id, time=stamp,
            )
            return rows.model_call(
                conn.execute("SELECT * FROM model_calls WHERE id = ?", (call_id,)).fetchone()
            )

    def list_model_calls(
        self, *, investigation_id: str | None = None, agent: str | None = None,
        refused: bool = False,
    ) -> list[ModelCall]:
        """Model calls in the order they were made, optionally for one agent.

        Requests the budget refused (never sent, status ``refused``) are left out
        unless ``refused`` is True (a replay reads them, to refuse at the same point).
        """
        found = self._select("model_calls", "id", investigation_id=investigation_id, agent=agent)
        calls = [rows.model_call(r) for r in found]
        return calls if refused else [c for c in calls if c.status.was_sent]

    def model_spend(self, investigation_id: str) -> list[RoleSpend]:
        """What the calls sent for ``investigation_id`` used so far, by role (in the
        order roles first called). Reads the counters only, never the prompts."""
        found = self._query(
            "SELECT role, count(*) AS calls, sum(input_tokens) AS input_tokens,"
            " sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens,"
            " sum(cache_write_tokens) AS cache_write_tokens, sum(cost_usd) AS cost_usd"
            " FROM model_calls WHERE investigation_id = ? AND status != ?"
            " GROUP BY role ORDER BY min(id)",
            (investigation_id, ModelCallStatus.REFUSED.value))
        return [RoleSpend(r["role"], int(r["calls"]), int(r["input_tokens"] or 0),
                          int(r["output_tokens"] or 0), int(r["cache_read_tokens"] or 0),
                          int(r["cache_write_tokens"] or 0), float(r["cost_usd"] or 0.0))
                for r in found]
