"""The model-call audit trail: every request and response, with tokens and cost."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from d2_notebook.board import rows
from d2_notebook.board.records import (
    ModelCall,
)
from d2_notebook.board.store import BoardStore, now


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
    ) -> ModelCall:
        """Append one model request and its response (or error) to the audit trail."""
        stamp = now()
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO model_calls (investigation_id, role, agent, model, request, response,"
                " error, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,"
                " cost_usd, latency_s, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (investigation_id, role, agent, model, rows.to_json_text(dict(request)),
                 None if response is None else rows.to_json_text(dict(response)), error,
                 input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
                 latency_s, stamp),
            )
            call_id = int(cursor.lastrowid or 0)
            self._append_event(
                conn, "model_call.recorded",
                {"id": call_id, "role": role, "agent": agent, "model": model, "error": error,
                 "input_tokens": input_tokens, "output_tokens": output_tokens,
                 "cost_usd": cost_usd, "latency_s": latency_s},
                actor=agent, investigation_id=investigation_id, time=stamp,
            )
            return rows.model_call(
                conn.execute("SELECT * FROM model_calls WHERE id = ?", (call_id,)).fetchone()
            )

    def list_model_calls(
        self, *, investigation_id: str | None = None, agent: str | None = None
    ) -> list[ModelCall]:
        """Model calls in the order they were made, optionally for one agent."""
        found = self._select("model_calls", "id", investigation_id=investigation_id, agent=agent)
        return [rows.model_call(r) for r in found]
